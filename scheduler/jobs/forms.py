"""The HTML forms of the job pages: submitting a job (it only parses input, `job_submit` decides) and
the queue page's filters."""
from django import forms
from django.utils.translation import gettext_lazy as _

from quotas.models import GpuModel, Pool, Project, WorkloadClass
from scheduler.engine.reasons import PRECEDENCE
from scheduler.engine.texts import CODE_TITLES
from scheduler.jobs.queue import SORT_POSITION, SORT_SUBMITTED, QueueFilter
from scheduler.models import PENDING_STATUSES


class JobSubmitForm(forms.Form):
    name = forms.CharField(label=_("Job name"), max_length=200)
    project = forms.ChoiceField(label=_("Project"))
    workload_class = forms.ChoiceField(label=_("Workload class"), choices=WorkloadClass.choices,
                                       initial=WorkloadClass.TRAINING)
    pool = forms.ChoiceField(label=_("Pool"))
    gpu_model = forms.ChoiceField(label=_("GPU model"))
    gpus = forms.IntegerField(label=_("GPUs per replica"), min_value=1, initial=1)
    replicas = forms.IntegerField(label=_("Replicas"), min_value=1, initial=1)
    max_runtime_minutes = forms.IntegerField(label=_("Maximum runtime (minutes)"), min_value=1, initial=60)
    env_image = forms.CharField(label=_("Container image"), required=False, max_length=300)
    command = forms.CharField(label=_("Command"), required=False, widget=forms.Textarea(attrs={"rows": 3}),
                              help_text=_("What the job runs, e.g. python train.py --epochs 3"))
    working_dir = forms.CharField(label=_("Working directory"), required=False, max_length=500)

    def __init__(self, *args, tenant, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["project"].choices = [
            (p.slug, p.name or p.slug) for p in Project.objects.filter(tenant=tenant, state=Project.State.ACTIVE)
            .order_by("slug")]
        self.fields["pool"].choices = [(p.name, p.display_name or p.name) for p in Pool.objects.order_by("name")]
        self.fields["gpu_model"].choices = [(m.name, m.name) for m in GpuModel.objects.order_by("name")]

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
