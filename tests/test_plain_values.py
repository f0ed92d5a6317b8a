"""Rows read with the driver's timestamp loader (quotas/common/plain_values.py) are the ORM's rows, value for value
and type for type (the same `timezone.utc` on every timestamp, JSON decoded), and the connection keeps Django's
loader for every other read."""
from datetime import datetime, timezone

import psycopg
import pytest
from django.db import connection
from django.db.models import Value

from quotas.common.plain_values import plain_values
from scheduler.cycle.services import scheduler_cycle_run
from scheduler.models import HOLDING_STATUSES, PENDING_STATUSES, Job
from scheduler.sync.tick import backend_tick
from tests.jobs import borrowing_off, submit

pytestmark = pytest.mark.django_db


def _typed(rows):
    return [[(type(value), getattr(value, "tzinfo", None), value) for value in row] for row in rows]


def test_the_rows_are_the_orms_with_the_same_timestamps_and_json(world):
    borrowing_off(world)  # alpha's third job of 8 waits over its 16 GPUs
    submit(gpus=8)
    submit(gpus=8, name="second")
    submit(gpus=8, name="waits")
    scheduler_cycle_run(pool=world.pool)
    backend_tick()  # the admitted jobs start: their started_at, expected_end and placements are set
    holding = Job.objects.filter(pool=world.pool, status__in=HOLDING_STATUSES).order_by("id").values_list(
        "id", "placements", "admitted_at", "started_at", "expected_end", "last_checkpoint_at")
    waiting = Job.objects.filter(pool=world.pool, status__in=PENDING_STATUSES).order_by("id").values_list(
        "id", "submitted_at", "name", "wait_code")
    assert holding.count() == 2 and waiting.count() == 1
    for rows in (holding, waiting):
        plain = plain_values(rows.all())
        assert _typed(plain) == _typed(list(rows.all()))
        moments = [value for row in plain for value in row if isinstance(value, datetime)]
        assert moments and all(moment.tzinfo is timezone.utc for moment in moments)
    assert isinstance(plain_values(holding.all())[0][1], list)  # placements decoded, as JSONField decodes them


def test_the_connection_keeps_djangos_loader(world):
    submit()
    plain_values(Job.objects.values_list("id", "submitted_at"))
    oid = psycopg.postgres.types["timestamptz"].oid
    loader = connection.connection.adapters.get_loader(oid, psycopg.pq.Format.TEXT)
    assert loader.__module__.startswith("django.")


def test_annotations_among_the_fields_and_empty_sets_read_as_the_orm_does(world):
    job = submit()
    mixed = Job.objects.annotate(tag=Value("x")).values_list("tag", "id", "submitted_at")
    assert plain_values(mixed.all()) == list(mixed.all()) == [("x", job.id, job.submitted_at)]
    assert plain_values(Job.objects.filter(pk__in=[]).values_list("id")) == []
