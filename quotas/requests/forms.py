"""The HTML form of a quota change request; it only parses input, the service decides."""
from django import forms
from django.utils.translation import gettext_lazy as _

from quotas import errors as quota_errors
from quotas.common import limits
from quotas.models import GpuModel, Pool, QuotaRequest, WorkloadClass


class DateTimeLocalInput(forms.DateTimeInput):
    input_type = "datetime-local"

    def __init__(self, **kwargs):
        super().__init__(format="%Y-%m-%dT%H:%M", **kwargs)


class QuotaRequestForm(forms.Form):
    kind = forms.ChoiceField(label=_("Kind"), choices=QuotaRequest.Kind.choices, initial=QuotaRequest.Kind.INCREASE,
                             widget=forms.RadioSelect)
    pool = forms.ModelChoiceField(label=_("Pool"), queryset=Pool.objects.order_by("name"), to_field_name="name",
                                  empty_label=None)
    gpu_model = forms.ModelChoiceField(queryset=GpuModel.objects.order_by("name"), to_field_name="name",
                                       empty_label=None, label=_("GPU model"))
    workload_classes = forms.MultipleChoiceField(
        label=_("Workload classes"), choices=WorkloadClass.choices, required=False,
        widget=forms.CheckboxSelectMultiple, help_text=_("Leave all unticked for a quota that covers every class."))
    gpus = forms.IntegerField(label=_("New base quota (GPUs)"), min_value=0,
                              help_text=_("The value you want, not the difference."))
    cpu_cores = forms.IntegerField(label=_("CPU cores"), min_value=0, max_value=limits.QUOTA_CPU_CORES, required=False,
                                   help_text=_("Empty: keep the quota's CPU cores. 0: not set (unlimited)."))
    memory_gb = forms.IntegerField(label=_("Memory (GB)"), min_value=0, max_value=limits.QUOTA_MEMORY_GB, required=False,
                                   help_text=_("Empty: keep the quota's memory. 0: not set (unlimited)."))
    effective_at = forms.DateTimeField(label=_("Effective at"), required=False, widget=DateTimeLocalInput(),
                                       help_text=_("Empty: as soon as it is approved."))
    ends_at = forms.DateTimeField(label=_("Ends at"), required=False, widget=DateTimeLocalInput(),
                                  help_text=_("Temporary grants only: when the extra GPUs go back."))
    justification = forms.CharField(label=_("Justification"), widget=forms.Textarea(attrs={"rows": 4}),
                                    max_length=limits.JUSTIFICATION_LENGTH,
                                    help_text=_("Why, for how long, and what happens without it."))
    acknowledge_oversubscription = forms.BooleanField(
        required=False, label=_("I understand this change oversubscribes the pool"))

    def clean(self):
        data = super().clean()
        start, end = data.get("effective_at"), data.get("ends_at")
        if start and end and end <= start:
            self.add_error("ends_at", quota_errors.WINDOW_ORDER)
        return data


class UnitQuotaRequestForm(QuotaRequestForm):
    """An org unit's guarantee: every class, no temporary grants (the unit's own quota rules)."""

    kind = forms.ChoiceField(label=_("Kind"), initial=QuotaRequest.Kind.INCREASE, widget=forms.RadioSelect,
                             choices=[c for c in QuotaRequest.Kind.choices if c[0] != QuotaRequest.Kind.TEMPORARY])
    gpus = forms.IntegerField(label=_("New guarantee (GPUs)"), min_value=0,
                              help_text=_("The guarantee the unit's subtree shares: the value you want, not the "
                                          "difference."))
    acknowledge_oversubscription = forms.BooleanField(
        required=False, label=_("I understand this guarantee does not fit the tree"))

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        del self.fields["workload_classes"], self.fields["ends_at"]
