"""The team queue page is rendered once per version and shared by the team's readers (issue 41): each reader
still gets a page that is right for them now. A decision shows on the next read, another team's member gets
their own team's page, a language switch gets the page in that language, a reader without the member's
rights gets no cancel buttons, and each reader's forms carry a CSRF token that works for them.

Transactions commit here (transaction=True), as in the running system: a page's version is read from what
committed rows say (scheduler/jobs/page_version.py)."""
import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from quotas.models import Membership
from scheduler.jobs.services import job_cancel
from scheduler.models import Job
from scheduler.sync.tick import backend_tick
from tests import factories
from tests.jobs import beta, borrowing_off, cycle, submit, submit_api

QUEUE = reverse("tenant-queue", args=["alpha"])
TOKEN = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
REGION = re.compile(r'data-live-frame="([^"]*)" data-live-version="([^"]*)"')


def client_for(user, **kwargs):
    client = Client(**kwargs)
    client.force_login(user)
    return client


def row_of(html: str, job: Job) -> str:
    found = re.search(rf'<tr id="job-{job.pk}"[^>]*>.*?</tr>', html, re.S)
    assert found, f"job {job.pk} is not on the page"
    return found.group(0)


@pytest.mark.django_db(transaction=True)
def test_a_decision_shows_on_the_next_read_of_a_page_its_readers_share(world, member, api):
    borrowing_off(world)  # the test is about waiting on base quota, not borrowing
    blocker = submit_api(api, member, name="holds-all", gpus=8, replicas=2)  # alpha's whole base quota of 16
    cycle(world)
    backend_tick()
    big = submit_api(api, member, name="big", gpus=8)
    reader = client_for(member)
    first = reader.get(QUEUE).content.decode()
    assert "Not evaluated yet" in row_of(first, big)
    assert reader.get(QUEUE).content.decode().count("Not evaluated yet") == first.count("Not evaluated yet")

    cycle(world)  # the decision: big waits on the quota
    decided = reader.get(QUEUE).content.decode()
    assert "QUOTA_EXCEEDED" in row_of(decided, big) and "Not evaluated yet" not in row_of(decided, big)
    # The live poll of the page read before the decision gets the changed row, not "unchanged".
    frame, version = REGION.search(first).groups()
    poll = reader.get(QUEUE, HTTP_HX_REQUEST="true", HTTP_X_LIVE_HAVE=f"{frame};{version}")
    assert poll.status_code == 200 and "QUOTA_EXCEEDED" in poll.content.decode()

    job_cancel(actor=member, job=blocker)  # the quota frees; the next cycle admits big and the tick starts it
    cycle(world)
    backend_tick()
    started = reader.get(QUEUE).content.decode()
    assert 'data-status="running"' in row_of(started, big)
    assert 'data-status="cancelled"' in row_of(started, blocker)


@pytest.mark.django_db(transaction=True)
def test_readers_of_one_team_share_one_render_each_with_a_token_that_works(world, member):
    second = factories.member(world.alpha, "alpha-dev-2", Membership.Role.MEMBER)
    submit(name="shared-row")
    first_page = client_for(member).get(QUEUE).content.decode()
    reader = client_for(second, enforce_csrf_checks=True)
    with CaptureQueriesContext(connection) as queries:
        page = reader.get(QUEUE).content.decode()
    # The second reader's page came from the first one's render: no job row was read for it.
    assert not [q for q in queries.captured_queries if '"scheduler_job"."name"' in q["sql"]]
    assert "shared-row" in page and REGION.search(page).groups() == REGION.search(first_page).groups()
    tokens = set(TOKEN.findall(page))
    assert tokens and "csrf-token-of-this-request" not in page
    data = {"csrfmiddlewaretoken": tokens.pop(), "name": "from-shared-page", "project": "train",
            "workload_class": "training", "pool": "gpu-a", "gpu_model": "H100-80G", "gpus": "1", "replicas": "1",
            "max_runtime_minutes": "60"}
    assert reader.post(QUEUE, data).status_code == 302
    assert Job.objects.filter(name="from-shared-page", submitted_by=second).exists()
    # A new job is a new version: the next read shows it.
    assert "from-shared-page" in client_for(member).get(QUEUE).content.decode()


@pytest.mark.django_db(transaction=True)
def test_another_teams_member_gets_their_own_teams_page(world, member, outsider):
    submit(name="alpha-secret-run")
    submit(**beta(name="beta-own-run", gpus=1))
    alpha_page = client_for(member).get(QUEUE).content.decode()
    beta_reader = client_for(outsider)
    beta_page = beta_reader.get(reverse("tenant-queue", args=["beta"])).content.decode()
    assert "alpha-secret-run" in alpha_page and "beta-own-run" not in alpha_page
    assert "beta-own-run" in beta_page and "alpha-secret-run" not in beta_page
    assert beta_reader.get(QUEUE).status_code == 404
    assert beta_reader.get(QUEUE, HTTP_HX_REQUEST="true", HTTP_X_LIVE_HAVE="x;y").status_code == 404


@pytest.mark.django_db(transaction=True)
def test_a_language_switch_gets_the_page_in_that_language(world, member):
    submit(name="polyglot")
    reader = client_for(member)
    english = reader.get(QUEUE).content.decode()
    assert '<html lang="en">' in english and "Job queue" in english
    reader.post(reverse("set_language"), {"language": "zh-hans", "next": QUEUE})
    chinese = reader.get(QUEUE).content.decode()
    assert '<html lang="zh-hans">' in chinese and "任务队列" in chinese and "Job queue" not in chinese
    assert "polyglot" in chinese
    reader.post(reverse("set_language"), {"language": "en", "next": QUEUE})
    assert "Job queue" in reader.get(QUEUE).content.decode()


@pytest.mark.django_db(transaction=True)
def test_a_reader_without_the_members_rights_gets_no_cancel_buttons(world, member, auditor):
    job = submit(name="cancellable")
    assert 'form="cancel-form"' in row_of(client_for(member).get(QUEUE).content.decode(), job)
    page = client_for(auditor).get(QUEUE).content.decode()
    assert 'form="cancel-form"' not in row_of(page, job) and 'id="submit-job"' not in page


@pytest.mark.django_db(transaction=True)
def test_bad_filters_are_a_400_for_the_page_the_region_and_the_poll(world, member):
    submit(name="filtered")
    reader = client_for(member)
    assert reader.get(QUEUE).status_code == 200  # the good page is stored for its readers
    bad = {"q-code": "NOT_A_CODE"}
    assert reader.get(QUEUE, bad).status_code == 400
    assert reader.get(QUEUE, bad, HTTP_HX_REQUEST="true").status_code == 400
    assert reader.get(QUEUE, bad, HTTP_HX_REQUEST="true", HTTP_X_LIVE_HAVE="x;y").status_code == 400


@pytest.mark.django_db(transaction=True)
def test_the_page_is_served_when_the_shared_renders_store_is_down(world, member, settings, caplog):
    """Redis away (nothing listens on the port): every reader gets the page rendered for them, and the
    failure is logged, not shown. (Signing in needs the store: the login lockout counts there.)"""
    reader = client_for(member)
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                                   "LOCATION": "redis://127.0.0.1:1/0"}}
    submit(name="while-redis-is-down")
    for _ in range(2):
        page = reader.get(QUEUE)
        assert page.status_code == 200 and "while-redis-is-down" in page.content.decode()
    frame, version = REGION.search(page.content.decode()).groups()
    poll = reader.get(QUEUE, HTTP_HX_REQUEST="true", HTTP_X_LIVE_HAVE=f"{frame};{version}")
    assert poll.status_code in (200, 204)
    assert any("shared render" in r.getMessage() for r in caplog.records)


WHOAMI = re.compile(r'<span class="whoami">([^<]*)</span>')
NONCE = re.compile(r'nonce="([^"]+)"')


@pytest.mark.django_db(transaction=True)
def test_each_reader_gets_their_own_frame_around_the_shared_content_and_its_changes_on_the_next_read(
        world, member):
    """The frame (head, navigation, who is signed in) is kept per reader (scheduler/jobs/queue_frame.py): a
    kept one is never another reader's, what changes in it shows on the next read, and each response's script
    nonce is the one its policy header names."""
    second = factories.member(world.alpha, "alpha-dev-2", Membership.Role.MEMBER)
    submit(name="framed")
    first, other = client_for(member), client_for(second)
    for _ in range(2):  # the second read of each is served from the kept frame
        mine, theirs = first.get(QUEUE), other.get(QUEUE)
        assert WHOAMI.findall(mine.content.decode()) == ["alpha-dev"]
        assert WHOAMI.findall(theirs.content.decode()) == ["alpha-dev-2"]
        for page in (mine, theirs):
            nonces = set(NONCE.findall(page.content.decode()))
            assert len(nonces) == 1 and f"'nonce-{nonces.pop()}'" in page["Content-Security-Policy"]
    assert "Queue: Beta" not in first.get(QUEUE).content.decode()
    Membership.objects.create(user=member, tenant=world.beta, role=Membership.Role.MEMBER)
    refreshed = first.get(QUEUE, HTTP_IF_NONE_MATCH=mine["ETag"])
    assert refreshed.status_code == 200 and "Queue: Beta" in refreshed.content.decode()
    assert "Queue: Beta" not in other.get(QUEUE).content.decode()
