"""A request's session and user are read with plain statements (portal/accounts/session_user.py); Django's
rules around them still hold: a signed-out, expired, deactivated or re-passworded session opens no page, and
the user loaded is the user the ORM loads, field by field."""
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.contrib.sessions.models import Session
from django.forms.models import model_to_dict
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from portal.accounts.session_user import user_by_pk

pytestmark = pytest.mark.django_db
QUEUE = reverse("tenant-queue", args=["alpha"])
PASSWORD = "s3cret-pass-2026"


def signed_in(member) -> Client:
    member.set_password(PASSWORD)
    member.save()
    client = Client()
    assert client.post("/login/", {"username": member.username, "password": PASSWORD}).status_code == 302
    assert client.get(QUEUE).status_code == 200
    return client


def signed_out(response) -> bool:
    return response.status_code == 302 and response["Location"].startswith(reverse("login"))


def test_the_user_read_plainly_is_the_user_the_orm_reads(member):
    member.last_login = timezone.now()
    member.first_name = "Ada"
    member.save()
    plain, orm = user_by_pk(str(member.pk)), get_user_model().objects.get(pk=member.pk)
    assert model_to_dict(plain) == model_to_dict(orm) and plain.password == orm.password
    assert plain._state.adding is False and plain._state.db == "default"
    assert user_by_pk(str(member.pk + 1000)) is None


def test_a_session_that_ended_opens_no_page(world, member):
    client = signed_in(member)
    cookie = client.cookies["sessionid"].value
    client.post(reverse("logout"))
    stolen = Client()
    stolen.cookies["sessionid"] = cookie  # the signed-out session's cookie, kept by someone
    assert signed_out(stolen.get(QUEUE))

    client = signed_in(member)
    Session.objects.filter(session_key=client.cookies["sessionid"].value).update(
        expire_date=timezone.now() - timedelta(seconds=1))
    assert signed_out(client.get(QUEUE))


def test_a_deactivated_or_re_passworded_user_is_signed_out(world, member):
    client = signed_in(member)
    get_user_model().objects.filter(pk=member.pk).update(is_active=False)
    assert signed_out(client.get(QUEUE))

    get_user_model().objects.filter(pk=member.pk).update(is_active=True)
    client = signed_in(member)
    member.set_password("another-pass-2026")  # the session's auth hash no longer matches
    member.save()
    assert signed_out(client.get(QUEUE))
