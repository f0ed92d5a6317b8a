"""The HTML form a team member submits a job with; it only parses input, `job_submit` decides."""
from django import forms
from django.utils.translation import gettext_lazy as _

from quotas.models import GpuModel, Pool, Project, WorkloadClass


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
