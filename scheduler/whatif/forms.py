"""The what-if page's form: a pool, a window and one change (the API takes any list of changes)."""
from datetime import timedelta

from django import forms
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from quotas.labels import priority_class_label
from quotas.models import GpuModel, Pool, Tenant, WorkloadClass
from quotas.orgs.models import OrgUnit
from scheduler.engine.types import DEFAULT_PRIORITY_CLASSES
from scheduler.whatif.sacct_parse import SACCT_FORMAT
from scheduler.whatif.serializers import ChangeSerializer, WhatIfCreateSerializer, WhatIfSacctSerializer

KIND_LABELS = [
    ("quota", _("Set a tenant's base quota")), ("borrowing", _("Borrowing on or off")),
    ("borrowing_limit", _("A tenant's borrowing limit")), ("lending_limit", _("A tenant's lending limit")),
    ("lease_length", _("Longest lease")), ("preemption_mode", _("Preemption mode")),
    ("reclaim_mode", _("A pool's reclaim mode")),
    ("grace", _("Grace before a stop")), ("priority_class", _("Priority class of a workload class")),
    ("nodes_add", _("Add nodes")), ("nodes_remove", _("Remove nodes")),
    ("unit_quota", _("Set an organisation unit's quota")), ("unit_weight", _("An organisation unit's weight")),
    ("unit_borrowing_limit", _("An organisation unit's borrowing limit")),
    ("unit_lending_limit", _("An organisation unit's lending limit")),
]


def _choices(values):
    return [("", "—"), *[(v, v) for v in values]]


def _errors_onto(form: forms.Form, errors: dict) -> None:
    """A serializer's field errors on the form's fields of those names; the others on the whole form."""
    for field, messages in errors.items():
        for text in messages:
            form.add_error(field if field in form.fields else None, text)


class WhatIfForm(forms.Form):
    pool = forms.ChoiceField(label=_("Pool"))
    # datetime-local takes "2026-11-03T08:00" in the portal's time zone (TIME_ZONE).
    window_start = forms.DateTimeField(label=_("From"), widget=forms.DateTimeInput(
        attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"))
    window_end = forms.DateTimeField(label=_("To"), widget=forms.DateTimeInput(
        attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"))
    kind = forms.ChoiceField(label=_("Change"), choices=KIND_LABELS)
    tenant = forms.ChoiceField(label=_("Tenant"), required=False)
    gpu_model = forms.ChoiceField(label=_("GPU model"), required=False)
    gpus = forms.IntegerField(label=_("GPUs"), required=False, min_value=0)
    enabled = forms.TypedChoiceField(label=_("Borrowing"), required=False, coerce=lambda v: v == "true",
                                     choices=[("true", _("on")), ("false", _("off"))])
    minutes = forms.IntegerField(label=_("Minutes"), required=False, min_value=1)
    mode = forms.ChoiceField(label=_("Mode"), required=False,
                             choices=[("auto", _("Automatic")), ("manual", _("Manual approval")), ("paused", _("Paused"))])
    workload_class = forms.ChoiceField(label=_("Workload class"), required=False,
                                       choices=[("", "—"), *WorkloadClass.choices])
    priority_class = forms.ChoiceField(label=_("Priority class"), required=False)  # the class rows: __init__
    count = forms.IntegerField(label=_("Nodes"), required=False, min_value=1)
    unit = forms.ChoiceField(label=_("Organisation unit"), required=False)
    weight = forms.FloatField(label=_("Weight"), required=False, min_value=0.01)
    label = forms.CharField(label=_("Label"), required=False, max_length=200)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["pool"].choices = [(p, p) for p in Pool.objects.values_list("name", flat=True)]
        self.fields["tenant"].choices = _choices(Tenant.objects.values_list("slug", flat=True))
        self.fields["gpu_model"].choices = _choices(GpuModel.objects.values_list("name", flat=True))
        self.fields["unit"].choices = _choices(OrgUnit.objects.values_list("slug", flat=True))
        # Labels in the reader's language: worked out per form, not once at import in the default language.
        self.fields["priority_class"].choices = [("", "—"), *(
            (name, priority_class_label(name)) for name in DEFAULT_PRIORITY_CLASSES)]
        if not self.is_bound:
            now = timezone.now().replace(second=0, microsecond=0)
            self.initial.setdefault("window_end", now)
            self.initial.setdefault("window_start", now - timedelta(days=30))

    def clean(self):
        """The API's serializer decides what a valid change is; its field errors land on the fields."""
        data = super().clean()
        if self.errors:
            return data
        fields = ChangeSerializer.REQUIRED_AND_OPTIONAL(data["kind"])
        change = {"kind": data["kind"], **{f: data[f] for f in fields if data.get(f) not in (None, "")}}
        serializer = WhatIfCreateSerializer(data={"pool": data["pool"], "window_start": data["window_start"],
                                                  "window_end": data["window_end"], "changes": [change],
                                                  "label": data.get("label", "")})
        if not serializer.is_valid():
            errors = dict(serializer.errors)
            # The one change's errors are the form's fields' (the form asks one change at a time).
            _errors_onto(self, errors.pop("changes")[0] if "changes" in errors else {})
            _errors_onto(self, errors)
            return data
        data["validated"] = serializer.validated_data
        return data


class SacctImportForm(forms.Form):
    """What-if before adoption: a Slurm site's sacct output replayed on a pool under the portal's rules."""

    pool = forms.ChoiceField(label=_("Pool"))
    file = forms.FileField(label=_("sacct output"), help_text=SACCT_FORMAT)
    label = forms.CharField(label=_("Label"), required=False, max_length=200)

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("auto_id", "id_sacct_%s")  # beside the replay form on one page: ids of its own
        super().__init__(*args, **kwargs)
        self.fields["pool"].choices = [(p, p) for p in Pool.objects.values_list("name", flat=True)]

    def clean(self):
        """The API's serializer decides what a valid history is (one rule); its errors land on the fields."""
        data = super().clean()
        if self.errors:
            return data
        data["file"].seek(0)
        serializer = WhatIfSacctSerializer(data={"pool": data["pool"], "file": data["file"],
                                                 "label": data.get("label", "")})
        if not serializer.is_valid():
            _errors_onto(self, serializer.errors)
            return data
        data["validated"] = serializer.validated_data
        return data
