"""Forms of the rollout switches page: the platform defaults and one pool's override."""
from django import forms
from django.utils.translation import gettext_lazy as _

from quotas.leases.models import PolicySwitch
from quotas.models import Pool

FOLLOW_DEFAULT = "default"


class BorrowingSwitchForm(forms.Form):
    borrowing_enabled = forms.TypedChoiceField(choices=[("true", _("On")), ("false", _("Paused"))],
                                               coerce=lambda v: v == "true", widget=forms.RadioSelect)
    on_pause = forms.ChoiceField(choices=[("run", _("Existing leases run to their expiry")),
                                          ("return", _("Return every open lease now"))],
                                 widget=forms.RadioSelect, initial="run", required=False)
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}))


class PreemptionSwitchForm(forms.Form):
    preemption_mode = forms.ChoiceField(choices=PolicySwitch.PreemptionMode.choices)
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}))


class ReclaimSwitchForm(forms.Form):
    reclaim_mode = forms.ChoiceField(choices=PolicySwitch.ReclaimMode.choices)
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}))


class SchedulingSwitchForm(forms.Form):
    scheduling_mode = forms.ChoiceField(choices=PolicySwitch.SchedulingMode.choices)
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}))


class PoolSwitchForm(forms.Form):
    """One pool's stage: set a switch for that pool only, or let it follow the platform default."""

    pool = forms.ModelChoiceField(queryset=Pool.objects.order_by("name"), to_field_name="name")
    key = forms.ChoiceField(choices=PolicySwitch.Key.choices, label=_("Switch"))
    value = forms.ChoiceField(choices=lambda: PoolSwitchForm.value_choices())
    return_leases_now = forms.BooleanField(required=False, label=_("When pausing borrowing, return the pool's open leases now"))
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}))

    KEY_OF_VALUE = {"on": PolicySwitch.Key.BORROWING_ENABLED, "off": PolicySwitch.Key.BORROWING_ENABLED,
                    "preemption": PolicySwitch.Key.PREEMPTION_MODE, "reclaim": PolicySwitch.Key.RECLAIM_MODE,
                    "scheduling": PolicySwitch.Key.SCHEDULING_MODE, "outside": PolicySwitch.Key.OUTSIDE_JOBS,
                    "min_age": PolicySwitch.Key.RESERVE_MIN_AGE}
    VALUE_DOES_NOT_FIT = _("That value is not one of this switch's.")

    def clean(self):
        cleaned = super().clean()
        key, value = cleaned.get("key"), cleaned.get("value")
        if key and value and value != FOLLOW_DEFAULT and self.KEY_OF_VALUE[value.split(":")[0]] != key:
            self.add_error("value", self.VALUE_DOES_NOT_FIT)
        return cleaned

    @staticmethod
    def value_choices() -> list[tuple[str, str]]:
        """Built per form, so the labels speak the request's language (at import they would be English)."""
        return [
            (FOLLOW_DEFAULT, _("Follow the platform default")),
            ("on", _("Borrowing on")), ("off", _("Borrowing paused")),
            *((f"preemption:{v}", _("Preemption: %(mode)s") % {"mode": label})
              for v, label in PolicySwitch.PreemptionMode.choices),
            *((f"reclaim:{v}", _("Reclaim: %(mode)s") % {"mode": label}) for v, label in PolicySwitch.ReclaimMode.choices),
            *((f"scheduling:{v}", _("Scheduling: %(mode)s") % {"mode": label})
              for v, label in PolicySwitch.SchedulingMode.choices),
            *((f"outside:{v}", _("Jobs outside the portal: %(mode)s") % {"mode": label})
              for v, label in PolicySwitch.OutsideJobsMode.choices),
            *((f"min_age:{minutes}", _("Reservations after %(minutes)s min waiting") % {"minutes": minutes})
              for minutes in PolicySwitch.RESERVE_MIN_AGE_CHOICES),
        ]

    @staticmethod
    def typed_value(key: str, value: str):
        if key == PolicySwitch.Key.BORROWING_ENABLED:
            return value == "on"
        if key == PolicySwitch.Key.RESERVE_MIN_AGE:
            return int(value.split(":", 1)[1])
        return value.split(":", 1)[1]
