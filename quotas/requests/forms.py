"""The HTML form of a quota change request; it only parses input, the service decides."""
from django import forms

from quotas.models import GpuModel, Pool, QuotaRequest, WorkloadClass


class DateTimeLocalInput(forms.DateTimeInput):
    input_type = "datetime-local"

    def __init__(self, **kwargs):
        super().__init__(format="%Y-%m-%dT%H:%M", **kwargs)


class QuotaRequestForm(forms.Form):
    kind = forms.ChoiceField(choices=QuotaRequest.Kind.choices, initial=QuotaRequest.Kind.INCREASE,
                             widget=forms.RadioSelect)
    pool = forms.ModelChoiceField(queryset=Pool.objects.order_by("name"), to_field_name="name",
                                  empty_label=None)
    gpu_model = forms.ModelChoiceField(queryset=GpuModel.objects.order_by("name"), to_field_name="name",
                                       empty_label=None, label="GPU model")
    workload_classes = forms.MultipleChoiceField(
        choices=WorkloadClass.choices, required=False, widget=forms.CheckboxSelectMultiple,
        help_text="Leave all unticked for a quota that covers every class.")
    gpus = forms.IntegerField(label="New base quota (GPUs)", min_value=0,
                              help_text="The value you want, not the difference.")
    effective_at = forms.DateTimeField(required=False, widget=DateTimeLocalInput(),
                                       help_text="Empty: as soon as it is approved.")
    ends_at = forms.DateTimeField(required=False, widget=DateTimeLocalInput(),
                                  help_text="Temporary grants only: when the extra GPUs go back.")
    justification = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}),
                                    help_text="Why, for how long, and what happens without it.")
    acknowledge_oversubscription = forms.BooleanField(
        required=False, label="I understand this change oversubscribes the pool")

    def clean(self):
        data = super().clean()
        start, end = data.get("effective_at"), data.get("ends_at")
        if start and end and end <= start:
            self.add_error("ends_at", "The end must be after the start.")
        return data
