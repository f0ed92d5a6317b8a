"""The login page (with the lockout message and 429) and the personal API tokens page."""
from django import forms
from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.shortcuts import redirect, render
from django.utils.translation import gettext_lazy as _, ngettext
from django.views.decorators.http import require_POST

from portal.accounts.lockout import client_ip, locked_for
from portal.accounts.tokens import LIFETIME_DAYS, personal_token_create, personal_token_revoke
from portal.accounts.models import PersonalToken
from portal.accounts.sso.errors import SSO_FAILED
from portal.accounts.sso.views import oidc_provider_name

REVOKED = _("Token revoked.")
NOTHING_TO_REVOKE = _("That token was already revoked.")


def locked_message(seconds: int) -> str:
    minutes = max(1, (seconds + 59) // 60)
    return ngettext("Too many failed sign-ins. Try again in %(n)d minute.",
                    "Too many failed sign-ins. Try again in %(n)d minutes.", minutes) % {"n": minutes}


class LoginView(auth_views.LoginView):
    def get_context_data(self, **kwargs):
        # "Sign in with <provider>" when OpenID Connect is configured; local accounts stay below it.
        context = super().get_context_data(**kwargs)
        context["sso_provider"] = oidc_provider_name()
        if self.request.GET.get("sso") == "failed":
            context["sso_failed"] = SSO_FAILED
        return context

    def post(self, request, *args, **kwargs):
        wait = locked_for(username=request.POST.get("username", ""), ip=client_ip(request))
        if wait:
            form = self.get_form()
            return self.render_to_response(self.get_context_data(form=form, locked=locked_message(wait)), status=429)
        return super().post(request, *args, **kwargs)


def admin_login(request, **kwargs):
    """The admin's sign-in answers a locked name with 429 and the lockout message, as the portal's does
    (it showed its ordinary form error with 200, so neither a person nor a script could tell)."""
    from django.contrib import admin
    from django.contrib.admin.forms import AdminAuthenticationForm

    wait = request.method == "POST" and locked_for(username=request.POST.get("username", ""), ip=client_ip(request))
    if not wait:
        return admin.site.login(request, **kwargs)
    messages.error(request, locked_message(wait))
    context = {**admin.site.each_context(request), "title": _("Log in"), "app_path": request.get_full_path(),
               "form": AdminAuthenticationForm(request), "username": request.user.get_username(),
               "site_header": admin.site.site_header}
    return render(request, "admin/login.html", context, status=429)


def _lifetime_choices():
    # A callable, so the labels are rendered in the request's language, not the import's.
    return [(d, ngettext("%(d)d day", "%(d)d days", d) % {"d": d}) for d in LIFETIME_DAYS]


class TokenForm(forms.Form):
    name = forms.CharField(label=_("Name"), max_length=100)
    lifetime_days = forms.TypedChoiceField(
        label=_("Expires after"), coerce=int, initial=90,
        choices=_lifetime_choices)


@login_required
def tokens_page(request):
    form = TokenForm(request.POST or None)
    new_key = None
    if request.method == "POST" and form.is_valid():
        try:
            _token, new_key = personal_token_create(user=request.user, **form.cleaned_data)
            form = TokenForm()
        except ValidationError as exc:
            for field, errors in exc.message_dict.items():
                form.add_error(field if field in form.fields else None, errors)
    tokens = PersonalToken.objects.filter(user=request.user)[:100]
    return render(request, "accounts/tokens.html", {"form": form, "tokens": tokens, "new_key": new_key},
                  status=400 if form.errors else 200)


@login_required
@require_POST
def token_revoke(request, token_id: int):
    if personal_token_revoke(user=request.user, token_id=token_id):
        messages.success(request, REVOKED)
    else:
        messages.info(request, NOTHING_TO_REVOKE)
    return redirect("account-tokens")
