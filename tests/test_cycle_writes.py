"""A cycle writes only what changed: unchanged waits are not touched, a changed number rewrites exactly
its job, and the positions pages and API show are the engine's order of the last cycle."""
import re
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.db import connection
from django.test import Client
from django.urls import reverse

from quotas import services as quota_services
from scheduler.cycle.snapshot import build_snapshot
from scheduler.engine import decide, reasons
from scheduler.models import Job, PoolCycle
from tests.jobs import beta, borrowing_off, cycle, reload, submit

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def row_versions() -> dict[int, int]:
    """Each job row's xmin: it changes whenever the row is written, whatever the column."""
    with connection.cursor() as cursor:
        cursor.execute(f'SELECT id, xmin::text::bigint FROM "{Job._meta.db_table}"')
        return dict(cursor.fetchall())


@pytest.fixture
def settled(world):
    """Alpha holds its whole base quota; three alpha and two beta jobs wait, decided once."""
    borrowing_off(world)
    with time_machine.travel(T0, tick=False):
        submit(gpus=8, replicas=2, name="holder")
        submit(**beta(gpus=8, name="b-admitted"))
        waiting = [submit(gpus=8, name=f"a{i}") for i in range(3)] + [submit(**beta(gpus=8, name="b0"))]
        cycle(world)
    return waiting


def test_a_cycle_over_an_unchanged_snapshot_writes_no_job_row(world, settled):
    before = row_versions()
    with time_machine.travel(T0 + timedelta(minutes=1), tick=False):
        result = cycle(world)
    assert result.ran and result.waiting == 4
    assert (result.admitted, result.changed) == (0, 0)
    assert row_versions() == before
    assert result.rows_written <= 1  # at most the pool's order row


def test_a_changed_blocker_number_rewrites_exactly_that_job(world, settled):
    a0, a1, a2, b0 = settled
    assert reload(b0).wait_code == reasons.QUOTA_EXCEEDED
    before = row_versions()
    with time_machine.travel(T0 + timedelta(minutes=2), tick=False):
        # Beta's base quota grows to 12: beta's waiting job now reads "4 free of 12", alpha's do not change.
        quota_services.quota_set(actor=None, tenant=world.beta, pool=world.pool, gpu_model=world.h100, gpus=12,
                                 reason="more for beta", acknowledge_oversubscription=True)
        result = cycle(world)
    after = row_versions()
    assert result.changed == 1 and result.admitted == 0
    assert {job_id for job_id in before if before[job_id] != after[job_id]} == {b0.pk}
    [blocker] = [b for b in reload(b0).wait["blockers"] if b["kind"] == "quota_exceeded"]
    assert (blocker["details"]["quota"], blocker["details"]["free"]) == (12, 4)


def test_positions_on_the_page_and_the_api_equal_the_engines_order_of_the_last_cycle(world, settled, member, api):
    with time_machine.travel(T0 + timedelta(minutes=3), tick=False):
        cycle(world)
        expected = {w.job_id: w for w in decide(build_snapshot(pool=world.pool).snapshot).waits}
    assert set(expected) == {job.pk for job in settled}
    client = api(member)
    queue = client.get("/api/v1/pools/gpu-a/queue/").json()["jobs"]
    assert [entry["position"] for entry in queue] == sorted(w.position_in_pool for w in expected.values())
    assert [entry["tenant"] for entry in queue] == [
        "alpha" if Job.objects.get(pk=w.job_id).tenant_id == world.alpha.pk else "beta"
        for w in sorted(expected.values(), key=lambda w: w.position_in_pool)]
    page = Client()
    page.force_login(member)
    body = page.get(reverse("tenant-queue", args=["alpha"])).content.decode()
    for job in settled[:3]:
        wait = expected[job.pk]
        detail = client.get(f"/api/v1/jobs/{job.pk}/").json()["wait"]
        assert detail["position"] == {"tenant": wait.position_in_tenant, "pool": wait.position_in_pool}
        assert detail["gpus_ahead"] == wait.gpus_ahead
        row = re.search(rf'<tr id="job-{job.pk}".*?</tr>', body, re.S).group(0)
        assert f"<td>{wait.position_in_tenant} / {wait.position_in_pool}</td>" in row
        assert f"<td>{wait.gpus_ahead}</td>" in row
    listed = {j["id"]: j["queue_position"] for j in client.get("/api/v1/jobs/?status=queued").json()["results"]}
    assert listed == {job.pk: expected[job.pk].position_in_pool for job in settled[:3]}


def test_the_order_row_is_written_only_when_the_order_changed(world, settled):
    stored = PoolCycle.objects.get(pool=world.pool)
    with time_machine.travel(T0 + timedelta(minutes=4), tick=False):
        cycle(world)
    again = PoolCycle.objects.get(pool=world.pool)
    assert again.order_digest == stored.order_digest and again.order_at == stored.order_at
    assert again.runs == stored.runs + 1
    with time_machine.travel(T0 + timedelta(minutes=5), tick=False):
        submit(gpus=8, name="a-late")
        cycle(world)
    changed = PoolCycle.objects.get(pool=world.pool)
    assert changed.order_digest != stored.order_digest and len(changed.order["ids"]) == 5
