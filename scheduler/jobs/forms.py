"""The HTML forms of the job pages: submitting a job (it only parses input, `job_submit` decides) and
the queue page's filters."""
from django import forms
from django.utils.translation import gettext_lazy as _

from quotas.common import limits
from quotas.models import GpuModel, Node, Pool, Project, WorkloadClass
from scheduler.engine.reasons import PRECEDENCE
from scheduler.engine.texts import CODE_TITLES
from scheduler.jobs.queue import SORT_POSITION, SORT_SUBMITTED, QueueFilter
from scheduler.jobs.runtime_limits import class_limits, limits_help, limits_of
from scheduler.models import PENDING_STATUSES


# What the submit form proposes per workload class for the checkpoint interval (minutes; None: no checkpoints):
# training is long and should checkpoint well inside the preemption grace. Only a proposal of the form: the person
# submitting may change it. The runtime limit it proposes is the class row's default, the server's own rule
# (runtime_limits.py).
CHECKPOINT_DEFAULTS = {
    WorkloadClass.ONLINE_INFERENCE: None, WorkloadClass.EVALUATION: 30, WorkloadClass.TRAINING: 15,
    WorkloadClass.BATCH_INFERENCE: 30, WorkloadClass.EXPERIMENT: 15, WorkloadClass.VALIDATION: None,
}


class OptionDataSelect(forms.Select):
    """A select whose options carry data attributes (`option_data`: value -> {name: text}), read by
    portal/static/portal/submit.js: which pools have a GPU model, a class's defaults."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.option_data: dict[str, dict[str, str]] = {}

    def create_option(self, name, value, label, selected, index, subindex=None, attrs=None):
        option = super().create_option(name, value, label, selected, index, subindex, attrs)
        for key, text in self.option_data.get(str(value), {}).items():
            option["attrs"][f"data-{key}"] = text
        return option


class JobSubmitForm(forms.Form):
    name = forms.CharField(label=_("Job name"), max_length=200)
    project = forms.ChoiceField(label=_("Project"))
    workload_class = forms.ChoiceField(label=_("Workload class"), choices=WorkloadClass.choices,
                                       initial=WorkloadClass.TRAINING, widget=OptionDataSelect)
    pool = forms.ChoiceField(label=_("Pool"))
    gpu_model = forms.ChoiceField(label=_("GPU model"), widget=OptionDataSelect,
                                  help_text=_("Only the models the chosen pool has are offered."))
    gpus = forms.IntegerField(label=_("GPUs per replica"), min_value=1, initial=1)
    replicas = forms.IntegerField(label=_("Replicas"), min_value=1, initial=1)
    max_runtime_minutes = forms.IntegerField(label=_("Maximum runtime (minutes)"), min_value=1, required=False,
                                             max_value=limits.JOB_MAX_RUNTIME_MINUTES)
    checkpoint_interval_minutes = forms.IntegerField(
        label=_("Checkpoint interval (minutes)"), required=False, min_value=1, max_value=limits.JOB_CHECKPOINT_MINUTES,
        initial=CHECKPOINT_DEFAULTS[WorkloadClass.TRAINING],
        help_text=_("How often the job saves a checkpoint; preemption notices say when the next one is due. "
                    "Empty: it does not checkpoint."))
    env_image = forms.CharField(label=_("Container image"), required=False, max_length=300)
    command = forms.CharField(label=_("Command"), required=False, widget=forms.Textarea(attrs={"rows": 3}),
                              help_text=_("What the job runs: one command line, as typed in a terminal"))
    working_dir = forms.CharField(label=_("Working directory"), required=False, max_length=500)

    def __init__(self, *args, tenant, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["project"].choices = [
            (p.slug, p.name or p.slug) for p in Project.objects.filter(tenant=tenant, state=Project.State.ACTIVE)
            .order_by("slug")]
        self.fields["pool"].choices = [(p.name, p.display_name or p.name) for p in Pool.objects.order_by("name")]
        self.fields["gpu_model"].choices = [(m.name, m.name) for m in GpuModel.objects.order_by("name")]
        pools_of: dict[str, set[str]] = {}
        for pool, model in Node.objects.values_list("pool__name", "gpu_model__name").distinct():
            pools_of.setdefault(model, set()).add(pool)
        self.fields["gpu_model"].widget.option_data = {
            model: {"pools": " ".join(sorted(pools))} for model, pools in pools_of.items()}
        table = class_limits()  # the class rows' limits: what the server gives a job that names none
        self.fields["workload_class"].widget.option_data = {
            str(cls): {"runtime": str(limits_of(cls, table)[0]), "max-runtime": str(limits_of(cls, table)[1]),
                       "checkpoint": "" if checkpoint is None else str(checkpoint)}
            for cls, checkpoint in CHECKPOINT_DEFAULTS.items()}
        self.fields["max_runtime_minutes"].initial = limits_of(WorkloadClass.TRAINING, table)[0]
        self.fields["max_runtime_minutes"].help_text = limits_help(table)  # in the request's language

    def job_spec(self, tenant) -> dict:
        data = dict(self.cleaned_data)
        image = data.pop("env_image")
        return {**data, "tenant": tenant.slug, "environment": {"image": image, "ready": True}}


class QueueFilterForm(forms.Form):
    """The team queue page's filters and sort, from the query string; a bad value is a 400 naming it."""

    status = forms.ChoiceField(label=_("Status"), required=False)
    code = forms.ChoiceField(label=_("Why it waits"), required=False)
    project = forms.ChoiceField(label=_("Project"), required=False)
    workload_class = forms.ChoiceField(label=_("Workload class"), required=False,
                                       choices=[("", _("All")), *WorkloadClass.choices])
    sort = forms.ChoiceField(label=_("Sort by"), required=False,
                             choices=[(SORT_POSITION, _("Position in queue")), (SORT_SUBMITTED, _("Submit time"))])
    page = forms.IntegerField(label=_("Page"), required=False, min_value=1)
    running_page = forms.IntegerField(label=_("Page of running jobs"), required=False, min_value=1)

    def __init__(self, *args, tenant, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["status"].choices = [("", _("All")), *((s.value, s.label) for s in PENDING_STATUSES)]
        self.fields["code"].choices = [("", _("All")), *((code, _(CODE_TITLES[code])) for code in PRECEDENCE)]
        self.fields["project"].choices = [("", _("All")), *(
            (slug, slug) for slug in Project.objects.filter(tenant=tenant).order_by("slug").values_list("slug", flat=True))]

    def chosen(self) -> QueueFilter:
        data = self.cleaned_data
        return QueueFilter(status=data["status"], code=data["code"], project=data["project"],
                           workload_class=data["workload_class"], sort=data["sort"] or SORT_POSITION,
                           page=data["page"] or 1, running_page=data["running_page"] or 1)
