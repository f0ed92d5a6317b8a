"""Issue 38, item 2: evidence a forger cannot backdate or cut. The database sets an event's time when the
writer leaves it out and refuses one far from its clock; the sealer refuses (and reports) an event older
than the head signed before it; production refuses to start without an export folder; and cutting the
last sealed batch with its head is detected against the exported heads."""
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest
from django.db import DataError, IntegrityError, InternalError, connection, transaction
from django.utils import timezone

from audit.chain import verify
from audit.chain.sealing import EVENTS_REFUSED, audit_seal
from audit.chain.services import audit_record, audit_record_bulk
from audit.migrations._clock_guard import occurred_at_guard_sql
from audit.models import AuditEvent, AuditRefusal, AuditSeal

ROOT = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.django_db,
              pytest.mark.skipif(connection.vendor != "postgresql", reason="the guards are PostgreSQL's")]
PRODUCTION_TOLERANCE = 300
REFUSED_BY_THE_DATABASE = (IntegrityError, DataError, InternalError, psycopg.errors.CheckViolation)


@pytest.fixture
def export_dir(tmp_path, settings):
    settings.AUDIT_SEAL_EXPORT_DIR = str(tmp_path / "seals")
    return tmp_path / "seals"


@pytest.fixture
def production_clock_guard():
    """The trigger function as production's migration builds it (the test profile widens the bound because
    the suite moves Python's clock); DDL is transactional, so the test's rollback restores it."""
    with connection.cursor() as cursor:
        cursor.execute(occurred_at_guard_sql(PRODUCTION_TOLERANCE))


def _forge(occurred_at=None, event_type="quota.set") -> int:
    """What the application's own database role can do: a plain INSERT behind the services' back."""
    columns = "event_type, actor_kind, object_type, object_id, payload" + (", occurred_at" if occurred_at else "")
    values = [event_type, "user", "quota", "1", '{"gpus": 64}'] + ([occurred_at] if occurred_at else [])
    with connection.cursor() as cursor:
        cursor.execute(f"INSERT INTO audit_auditevent ({columns}) VALUES ({', '.join(['%s'] * len(values))}) "
                       "RETURNING id", values)
        return cursor.fetchone()[0]


def _events(n):
    return audit_record_bulk([{"event_type": "job.waiting", "object_type": "job", "object_id": i,
                               "payload": {"code": "POOL_FULL"}} for i in range(n)])


def test_the_database_sets_the_time_of_an_event_written_without_one(world):
    with connection.cursor() as cursor:
        cursor.execute("SELECT clock_timestamp()")
        before = cursor.fetchone()[0]
        event_id = _forge()
        cursor.execute("SELECT clock_timestamp()")
        after = cursor.fetchone()[0]
    assert before <= AuditEvent.objects.get(pk=event_id).occurred_at <= after


def test_the_database_refuses_a_time_far_from_its_clock(world, production_clock_guard):
    with pytest.raises(REFUSED_BY_THE_DATABASE, match="from the database clock"), transaction.atomic():
        _forge(timezone.now() - timedelta(days=3))
    with pytest.raises(REFUSED_BY_THE_DATABASE), transaction.atomic():
        audit_record(event_type="quota.set", object_type="quota", object_id=1,
                     occurred_at=timezone.now() - timedelta(hours=1))
    with pytest.raises(REFUSED_BY_THE_DATABASE), transaction.atomic():  # the bulk (COPY) path too
        audit_record_bulk([{"event_type": "job.waiting", "object_type": "job", "object_id": 1,
                            "occurred_at": timezone.now() + timedelta(days=1)}])
    # Honest writers pass: their service's clock is the database's, give or take a transaction.
    assert audit_record(event_type="quota.set", object_type="quota", object_id=1,
                        occurred_at=timezone.now() - timedelta(seconds=20)).pk
    assert _events(3) == 3


def test_a_forged_backdated_event_is_refused_by_the_sealer_and_verification_fails(world, export_dir):
    _events(5)
    audit_seal()
    head = AuditSeal.objects.order_by("-seq").first()
    forged = _forge(head.sealed_at - timedelta(days=2))  # past the database's guard, as its owner could
    _events(3)

    sealed = audit_seal()

    assert sealed == 4  # the three honest events and the refusal's own event; not the forgery
    assert AuditEvent.objects.get(pk=forged).seq is None
    refusal = AuditRefusal.objects.get()
    assert (refusal.event_id, refusal.head_seq, refusal.event_type) == (forged, head.seq, "quota.set")
    reported = AuditEvent.objects.get(event_type=EVENTS_REFUSED)
    assert reported.seq is not None and reported.payload == {"event_ids": [forged], "count": 1, "head_seq": head.seq}
    report = verify.audit_chain_verify()
    assert not report.ok and report.broken_id == forged
    assert report.problem.startswith("1 audit events were refused by the sealer")
    assert audit_seal() == 0 and AuditRefusal.objects.count() == 1  # refused once, not again each run


def test_an_honest_late_commit_within_the_grace_is_sealed(world, export_dir):
    _events(2)
    audit_seal()
    head = AuditSeal.objects.order_by("-seq").first()
    late = audit_record(event_type="job.started", object_type="job", object_id=9,
                        occurred_at=head.sealed_at - timedelta(seconds=60))
    assert audit_seal() == 1
    assert AuditEvent.objects.get(pk=late.pk).seq is not None and not AuditRefusal.objects.exists()
    assert verify.audit_chain_verify().ok


def test_production_refuses_to_start_without_an_export_folder():
    env = {**os.environ, "PORTAL_ENV": "production", "SECRET_KEY": "x" * 20 + "production-secret-for-check-deploy-1",
           "ALLOWED_HOSTS": "portal.example.com", "AUDIT_SEAL_KEY": "k" * 40}
    env.pop("AUDIT_SEAL_EXPORT_DIR", None)
    result = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode != 0 and "AUDIT_SEAL_EXPORT_DIR must be set in production" in result.stderr


def test_cutting_the_last_sealed_batch_and_its_head_is_detected(world, export_dir):
    _events(4)
    audit_seal()
    kept = AuditSeal.objects.order_by("-seq").first().seq
    _events(4)
    audit_seal()
    last = AuditSeal.objects.order_by("-seq").first()
    assert verify.audit_chain_verify().ok
    with connection.cursor() as cursor:  # the cut, by the tables' owner
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute("ALTER TABLE audit_auditevent DISABLE TRIGGER audit_event_append_only")
        cursor.execute("DELETE FROM audit_auditevent WHERE seq > %s", [kept])
        cursor.execute("ALTER TABLE audit_auditevent ENABLE TRIGGER audit_event_append_only")
        cursor.execute("DELETE FROM audit_auditseal WHERE seq > %s", [kept])
    report = verify.audit_chain_verify()
    assert not report.ok and report.broken_seq == last.seq
    assert "past the chain's last event" in report.problem
