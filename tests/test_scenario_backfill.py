"""A big gang among a steady stream of 1-GPU jobs, through the running system: the pool's mode is set on
the switches API, jobs are submitted through the jobs API, and the real cycle and the simulated backend's
tick run every two minutes of a moved clock.

The world: two schedulable 8-GPU H100 nodes (the other two cordoned), alpha 16 H100, beta 8. beta submits
a 1-GPU job (limit 60 min) every 4 minutes for three hours, which keeps part of the pool busy at all times;
alpha's 2 x 8 gang arrives after 20 minutes. Under best effort every GPU that frees is taken by a beta job
behind the gang, so it waits until the stream ends. Under backfill it gets a reservation in its first cycle,
its page says when, and it starts by then; a 10-minute probe beta sends after the gang runs in the gap before
the reservation and its page says by when it must end; the pool queue page marks the reserved nodes."""
from datetime import timedelta

import pytest
import time_machine
from django.test import Client
from django.utils import timezone

from quotas.models import Node
from scheduler.sync.tick import backend_tick
from scheduler.cycle.services import scheduler_cycle_run
from scheduler.models import Job
from tests.jobs import spec

pytestmark = pytest.mark.django_db

STEP = timedelta(minutes=2)
STREAM_EVERY = timedelta(minutes=4)
STREAM_FOR = timedelta(hours=3)
GANG_AT = timedelta(minutes=20)


@pytest.fixture
def pool_of_two(world):
    """Two schedulable H100 nodes: the gang needs both whole."""
    h100 = list(Node.objects.filter(pool=world.pool, gpu_model=world.h100).order_by("id"))
    Node.objects.filter(pk__in=[n.pk for n in h100[2:]]).update(state=Node.State.CORDONED)
    return world


def _post(client, path, data):
    response = client.post(path, data, format="json")
    assert response.status_code in (200, 201), response.content
    return response.json()


def _run(world, api, platform_admin, member, mode, settings, min_age=None):
    settings.SIMULATED_FAILURE_RATE = 0
    _post(api(platform_admin), "/api/v1/switches/",
          {"key": "scheduling_mode", "pool": "gpu-a", "value": mode, "reason": "scenario"})
    if min_age is not None:
        _post(api(platform_admin), "/api/v1/switches/",
              {"key": "reserve_min_age_minutes", "pool": "gpu-a", "value": min_age, "reason": "scenario"})
    first_reserved = None  # (the moment the gang's wait first said RESERVED, the start it said)
    beta_user = _beta_member(world)
    start = timezone.now().replace(microsecond=0) + timedelta(minutes=1)
    now, gang, first_eta, page_text, started_at, held_page = start, None, None, None, None, None
    gap_page = pool_page = None
    short_sent = False
    stream_end = start + STREAM_FOR
    next_small = start
    while now < start + timedelta(hours=6):
        with time_machine.travel(now, tick=False):
            while next_small <= now and next_small < stream_end:
                _post(api(beta_user), "/api/v1/jobs/", spec(tenant="beta", project="exp", name="probe", gpus=1,
                                                           workload_class="experiment", max_runtime_minutes=60))
                next_small += STREAM_EVERY
            if gang is not None and not short_sent:  # a short probe: ends well before any reservation
                _post(api(beta_user), "/api/v1/jobs/", spec(tenant="beta", project="exp", name="short", gpus=1,
                                                           workload_class="experiment", max_runtime_minutes=10))
                short_sent = True
            if gang is None and now >= start + GANG_AT:
                gang = _post(api(member), "/api/v1/jobs/", spec(name="big-gang", gpus=8, replicas=2,
                                                               max_runtime_minutes=120))["id"]
            scheduler_cycle_run(pool=world.pool)
            backend_tick()
            if gang is not None and first_eta is None:
                detail = api(member).get(f"/api/v1/jobs/{gang}/").json()
                first_eta = detail["wait"]["eta"]["earliest"] if detail.get("wait") else None
                browser = Client()
                browser.force_login(member)
                page = browser.get(f"/jobs/{gang}/")
                assert page.status_code == 200
                page_text = page.content.decode()
                pool_page = browser.get("/pools/gpu-a/queue/").content.decode()
                first_code = detail["wait"]["code"] if detail.get("wait") else None
            if gang is not None and first_reserved is None and started_at is None:
                wait = api(member).get(f"/api/v1/jobs/{gang}/").json().get("wait")
                if wait and wait["code"] == "RESERVED":
                    first_reserved = (now, timezone.datetime.fromisoformat(wait["eta"]["earliest"]))
            if gang is not None and held_page is None:
                held = Job.objects.filter(tenant=world.beta, wait_code="BACKFILL_HELD").first()
                if held is not None:
                    browser = Client()
                    browser.force_login(beta_user)
                    held_page = browser.get(f"/jobs/{held.pk}/").content.decode()
            if gang is not None and gap_page is None and started_at is None:
                backfilled = Job.objects.filter(tenant=world.beta, status__in=(Job.Status.ADMITTED, Job.Status.RUNNING),
                                                backfill_gap__isnull=False).first()
                if backfilled is not None:
                    browser = Client()
                    browser.force_login(beta_user)
                    gap_page = browser.get(f"/jobs/{backfilled.pk}/").content.decode()
            if gang is not None and started_at is None:
                job = Job.objects.get(pk=gang)
                if job.status in (Job.Status.RUNNING, Job.Status.SUCCEEDED):
                    started_at = job.started_at
        now += STEP
    return {"started_at": started_at, "first_eta": first_eta, "first_code": first_code, "page": page_text,
            "stream_end": stream_end, "gang_submitted": start + GANG_AT, "held_page": held_page,
            "gap_page": gap_page, "gang": gang, "pool_page": pool_page, "first_reserved": first_reserved}


def _beta_member(world):
    from quotas.models import Membership
    from tests import factories
    return factories.member(world.beta, "beta-dev", Membership.Role.MEMBER)


def test_under_best_effort_the_gang_waits_until_the_stream_ends(pool_of_two, api, platform_admin, member, settings):
    outcome = _run(pool_of_two, api, platform_admin, member, "best_effort", settings)
    assert outcome["first_code"] != "RESERVED" and outcome["held_page"] is None and outcome["gap_page"] is None
    assert "Reserved nodes" not in outcome["pool_page"]
    assert outcome["started_at"] is not None and outcome["started_at"] >= outcome["stream_end"]


def test_under_backfill_the_gang_starts_by_the_reservation_its_page_showed_from_its_first_cycle(
        pool_of_two, api, platform_admin, member, settings):
    outcome = _run(pool_of_two, api, platform_admin, member, "backfill", settings)
    assert outcome["first_code"] == "RESERVED"
    reserved_from = timezone.datetime.fromisoformat(outcome["first_eta"])
    assert reserved_from <= outcome["gang_submitted"] + timedelta(minutes=60)  # the running jobs' limits
    assert "reserved for this job from" in outcome["page"]
    assert "16 x H100-80G on gpu-a-h100-80g-[0-1] reserved for this job from" in outcome["page"], outcome["page"]
    # It starts at the first cycle at or after its reservation (cycles run every STEP), long before the
    # stream ends.
    assert outcome["started_at"] is not None and outcome["started_at"] <= reserved_from + STEP
    assert outcome["started_at"] < outcome["stream_end"]
    # A probe held for the reservation says so, and offers the same job with a limit that fits the gap.
    held = outcome["held_page"]
    assert held is not None and "Would delay job #" in held
    assert "max_runtime_minutes=" in held and "Resubmit with a runtime limit of at most" in held
    # A probe that ends by its limit before the reservation starts runs in the gap, and its page says by when.
    assert outcome["gap_page"] is not None
    assert f"Runs in a gap: its nodes are reserved for job #{outcome['gang']} from" in outcome["gap_page"]
    assert "so this job must end by" in outcome["gap_page"]
    # The pool queue page marks the reserved nodes, from the gang's first cycle.
    assert "Reserved nodes" in outcome["pool_page"]
    assert "gpu-a-h100-80g-[0-1]" in outcome["pool_page"] and f"#{outcome['gang']}" in outcome["pool_page"]


def test_with_a_minimum_age_the_gang_is_passed_until_it_has_waited_it_then_starts_by_its_reservation(
        pool_of_two, api, platform_admin, member, settings):
    """The pool's switch says a job waits 30 min before it gets a reservation (Slurm's bf_min_age_reserve): the
    gang's first page says so and the stream passes it meanwhile; from its first cycle 30 min on it holds its
    reservation, and it starts by it, long before the stream ends."""
    outcome = _run(pool_of_two, api, platform_admin, member, "backfill", settings, min_age=30)
    assert outcome["first_code"] != "RESERVED"
    assert ("No reservation yet: reservations start after a job has waited 30 min; this job has waited 0 min"
            in outcome["page"]), outcome["page"]
    reserved_seen, reserved_from = outcome["first_reserved"]
    assert outcome["gang_submitted"] + timedelta(minutes=30) <= reserved_seen <= (
        outcome["gang_submitted"] + timedelta(minutes=30) + STEP)
    assert outcome["started_at"] is not None and outcome["started_at"] <= reserved_from + STEP
    assert outcome["started_at"] < outcome["stream_end"]
