"""The form a tenant admin adds a notice channel with; the target's rules live in channels.validate_target."""
from django import forms
from django.utils.translation import gettext_lazy as _

from scheduler.notices.models import NoticeChannel


class NoticeChannelForm(forms.Form):
    kind = forms.ChoiceField(label=_("Kind"), choices=NoticeChannel.Kind.choices)
    name = forms.CharField(label=_("Name"), max_length=100, required=False)
    target = forms.CharField(
        label=_("Addresses or webhook URL"), max_length=2000,
        help_text=_("Email: addresses separated by commas. IM: the bot's URL, e.g. feishu://…, dingtalk://…, "
                    "wecombot://…, slack://…, or json://host/path for a JSON webhook. Only a masked form is shown "
                    "afterwards."))
    enabled = forms.BooleanField(label=_("Enabled"), required=False, initial=True)
