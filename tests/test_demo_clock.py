"""One demo clock: with the demo's settings (its simulated jobs 60× faster than the wall, and so its lease
lengths, protected windows and grace periods), a newcomer sees within ten minutes a lease expire, a reclaim
with its notice, and a preemption reach its deadline. Driven the way the demo runs: the demo data, then the
beat's periodic services at their periods, on a moving clock. Production keeps the wall clock."""
import os
import subprocess
import sys
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
import time_machine

from portal.demo import load_demo
from portal.tasks import demo_top_up
from quotas.leases.models import Lease
from scheduler.sync.tick import backend_tick
from scheduler.models import Preemption
from scheduler.notices.models import Notice
from scheduler.preemption.tasks import lease_expiry_tick, preemption_grace_tick
from tests.jobs import evaluate_every_pool
from tests.processes import ROOT

pytestmark = pytest.mark.django_db

TEN_MINUTES = 600
# A fixed moment: the demo's job stream draws its jobs from the clock, so the run is the same every time.
START = datetime(2026, 12, 7, 2, 0, tzinfo=UTC)
STEP_SECONDS = 10  # beat evaluates every 5 s, ticks backends every 3 s, leases every 30 s: 10 s is coarser


@pytest.fixture
def demo_settings(settings):
    settings.SIMULATED_TIME_SCALE = 60
    settings.POLICY_TIME_SCALE = 60
    settings.PREEMPTION_GRACE_MINUTES = 20
    settings.LEASE_RECLAIM_GRACE_MINUTES = 10
    settings.SIMULATED_FAILURE_RATE = 0.05
    return settings


def _seen(since):
    expired = Lease.objects.filter(state=Lease.State.EXPIRED, ended_at__gte=since).exists()
    reclaim = Preemption.objects.filter(kind=Preemption.Kind.RECLAIM, notice_id__isnull=False,
                                        planned_at__gte=since).first()
    deadline = next((p for p in Preemption.objects.filter(state=Preemption.State.STOPPED, planned_at__gte=since)
                     if p.grace_until and p.ended_at and p.ended_at >= p.grace_until), None)
    return expired, reclaim, deadline


def _what_it_saw(since) -> str:
    """What the ten minutes showed instead, for a failure message: leases by state, stops by kind and state."""
    leases = sorted(Lease.objects.filter(started_at__gte=since).values_list("lender__slug", "state"),
                    key=lambda ls: (ls[0] or "", ls[1]))
    lent = Counter(f"{'pool' if lender is None else 'tenant'} lease {state}" for lender, state in leases)
    stops = Counter(f"{kind} {state}{'' if notice else ' (no notice)'}" for kind, state, notice in
                    Preemption.objects.filter(planned_at__gte=since).values_list("kind", "state", "notice_id"))
    return f"leases: {dict(lent) or 'none'}; stops: {dict(stops) or 'none'}"


# The simulated backend draws each job's run time and outcome from its id (simulated.unit), and ids come from
# PostgreSQL's sequences, which a rolled-back test does not reset: after other tests the same demo drew other
# jobs, and the scenes moved (it failed after some files, passed alone). Sequences restart for this test.
@pytest.mark.django_db(transaction=True, reset_sequences=True)
def test_a_newcomer_sees_expiry_reclaim_and_a_deadline_within_ten_minutes(demo_settings):
    start = START
    with time_machine.travel(start, tick=False):
        load_demo()
    found_at = {}
    for second in range(0, TEN_MINUTES + 1, STEP_SECONDS):
        with time_machine.travel(start + timedelta(seconds=second), tick=False):
            if second % 20 == 0:
                demo_top_up()
            evaluate_every_pool()
            backend_tick()
            preemption_grace_tick()
            if second % 30 == 0:
                lease_expiry_tick()
        for name, what in zip(("lease expired", "reclaim with notice", "deadline reached"), _seen(start)):
            if what and name not in found_at:
                found_at[name] = second
        if len(found_at) == 3:
            break
    print("demo clock: first seen at second", found_at)
    missing = [scene for scene in ("lease expired", "reclaim with notice", "deadline reached") if scene not in found_at]
    assert not missing, (f"within {TEN_MINUTES} s the demo never showed: {', '.join(missing)} "
                         f"(seen: {found_at or 'nothing'}); it saw {_what_it_saw(start)}")
    _, reclaim, deadline = _seen(start)
    notice = Notice.objects.get(pk=reclaim.notice_id)
    assert notice.job_id == reclaim.victim_id
    # The grace is the demo's: 10 or 20 policy minutes are 10 or 20 wall seconds.
    assert deadline.grace_until - deadline.planned_at <= timedelta(seconds=20 + STEP_SECONDS)


def test_production_keeps_the_wall_clock_whatever_the_simulation_scale(tmp_path):
    # Production also needs its audit seal export folder (issue 38), or settings refuse to load.
    env = {**os.environ, "PORTAL_ENV": "production", "SECRET_KEY": "x" * 50, "AUDIT_SEAL_KEY": "y" * 32,
           "AUDIT_SEAL_EXPORT_DIR": str(tmp_path),
           "SIMULATED_TIME_SCALE": "60", "DJANGO_SETTINGS_MODULE": "portal.settings"}
    code = "from django.conf import settings; print(settings.POLICY_TIME_SCALE)"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "1.0", done.stderr


def test_the_demo_runs_policies_on_the_simulated_clock():
    env = {**os.environ, "PORTAL_ENV": "development", "DJANGO_SETTINGS_MODULE": "portal.settings"}
    env.pop("SIMULATED_TIME_SCALE", None)
    code = "from django.conf import settings; print(settings.POLICY_TIME_SCALE, settings.SIMULATED_TIME_SCALE)"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "60.0 60.0", done.stderr
