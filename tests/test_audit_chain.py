"""The audit chain: sealed events link by hash, tampering is found, and nothing rewrites or removes evidence.
(Signed heads, their export and concurrent writers: tests/test_audit_sealing.py.)"""
import threading
import time
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from audit.chain import hashing as chain
from audit.chain import verify
from audit.chain.sealing import audit_seal
from audit.chain.services import audit_record, audit_record_bulk
from audit.models import APPEND_ONLY, AppendOnlyError, AuditEvent, AuditSeal

pytestmark = pytest.mark.django_db
postgres_only = pytest.mark.skipif("connection.vendor != 'postgresql'")


def _three_events(world):
    audit_record(event_type="job.submitted", object_type="job", object_id=1, tenant=world.alpha,
                 payload={"project": "train", "gpus": 8, "name": "resnet"})
    audit_record(event_type="job.started", object_type="job", object_id=1, tenant=world.alpha, payload={"gpus": 8})
    last = audit_record(event_type="job.failed", object_type="job", object_id=1, tenant=world.alpha,
                        payload={"error_type": "OOM", "ratio": 0.1, "tags": ("a", "b")})
    audit_seal()
    last.refresh_from_db()
    return last


def test_events_link_into_a_chain_that_verifies(world):
    last = _three_events(world)
    rows = list(AuditEvent.objects.order_by("seq"))
    assert [r.seq for r in rows] == list(range(1, len(rows) + 1))
    assert all(b.prev_hash == a.hash for a, b in zip(rows, rows[1:]))
    head = AuditSeal.objects.get()
    assert (head.seq, head.hash, head.events) == (last.seq, last.hash, len(rows))
    assert last.payload["tags"] == ["a", "b"]  # stored as the database gives it back, so the hash holds
    report = verify.audit_chain_verify()
    assert report.ok and report.checked == len(rows)


def _tamper(sql: str, params) -> None:
    """Rewrite a row behind the ORM's back; on PostgreSQL the guard trigger must be switched off first."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # Deferred foreign-key checks from the inserts would block the ALTER; run them now.
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            cursor.execute("ALTER TABLE audit_auditevent DISABLE TRIGGER audit_event_append_only")
        cursor.execute(sql, params)
        if connection.vendor == "postgresql":
            cursor.execute("ALTER TABLE audit_auditevent ENABLE TRIGGER audit_event_append_only")


def test_verification_names_the_first_altered_row(world):
    _three_events(world)
    target = AuditEvent.objects.get(event_type="job.started")
    _tamper("UPDATE audit_auditevent SET payload = %s WHERE id = %s", ['{"gpus": 1}', target.id])
    report = verify.audit_chain_verify()
    assert not report.ok
    assert (report.broken_seq, report.broken_id, report.problem) == (target.seq, target.id, chain.BROKEN_HASH)


def test_verification_finds_a_removed_row_and_a_rehashed_row(world):
    _three_events(world)
    middle = AuditEvent.objects.get(event_type="job.started")
    _tamper("DELETE FROM audit_auditevent WHERE id = %s", [middle.id])
    report = verify.audit_chain_verify()
    assert not report.ok and report.problem == chain.BROKEN_GAP.format(expected=middle.seq, found=middle.seq + 1)


def test_verification_finds_a_cut_off_tail(world):
    last = _three_events(world)
    _tamper("DELETE FROM audit_auditevent WHERE id = %s", [last.id])
    report = verify.audit_chain_verify()
    assert not report.ok
    assert report.problem == verify.BROKEN_HEAD_BEYOND.format(
        source=f"seal #{last.seq} in the database", seq=last.seq, last_seq=last.seq - 1)


def test_audit_verify_command_exits_non_zero_on_tampering(world):
    _three_events(world)
    out = StringIO()
    call_command("audit_verify", stdout=out)
    assert out.getvalue().startswith("OK:")
    target = AuditEvent.objects.get(event_type="job.submitted")
    _tamper("UPDATE audit_auditevent SET event_type = 'job.cancelled' WHERE id = %s", [target.id])
    with pytest.raises(SystemExit) as exit_info:
        call_command("audit_verify", stdout=out, stderr=out)
    assert exit_info.value.code == 1
    assert f"BROKEN at seq {target.seq} (id {target.id})" in out.getvalue()


def test_orm_refuses_update_and_delete(world):
    event = _three_events(world)
    with pytest.raises(AppendOnlyError, match="update is refused"):
        AuditEvent.objects.filter(pk=event.pk).update(event_type="x")
    with pytest.raises(AppendOnlyError, match="delete is refused"):
        AuditEvent.objects.filter(pk=event.pk).delete()
    with pytest.raises(AppendOnlyError) as info:
        event.payload = {}
        event.save()
    assert str(info.value) == APPEND_ONLY.format(operation="update")
    with pytest.raises(AppendOnlyError):
        event.delete()
    with pytest.raises(AppendOnlyError):
        AuditEvent.objects.bulk_update([event], ["payload"])
    assert verify.audit_chain_verify().ok


def test_admin_offers_no_change_or_delete(world, rf):
    from django.contrib.admin.sites import site

    admin = site._registry[AuditEvent]
    request = rf.get("/")
    assert not admin.has_change_permission(request) and not admin.has_delete_permission(request)
    assert not admin.has_add_permission(request)


@postgres_only
def test_postgres_trigger_refuses_raw_update_delete_and_truncate(world):
    event = _three_events(world)
    unsealed = audit_record(event_type="job.started", object_type="job", object_id=2)
    for sql, params in (("UPDATE audit_auditevent SET payload = '{}' WHERE id = %s", [event.id]),
                        ("UPDATE audit_auditevent SET seq = NULL, hash = NULL WHERE id = %s", [event.id]),
                        ("DELETE FROM audit_auditevent WHERE id = %s", [event.id]),
                        # An unsealed row only takes its seal: its recorded fields cannot change either.
                        ("UPDATE audit_auditevent SET payload = '{\"gpus\": 1}', seq = 99, prev_hash = 'x', hash = 'y' "
                         "WHERE id = %s", [unsealed.id]),
                        ("DELETE FROM audit_auditevent WHERE id = %s", [unsealed.id]),
                        ("TRUNCATE audit_auditevent CASCADE", [])):
        with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # else TRUNCATE stops at pending FK checks
                cursor.execute(sql, params)
    assert audit_seal() == 1
    assert verify.audit_chain_verify().ok


def test_bulk_events_chain_in_list_order(world):
    audit_record(event_type="pool.created", object_type="pool", object_id=1)
    specs = [{"event_type": "job.waiting", "object_type": "job", "object_id": i, "tenant_id": world.alpha.id,
              "payload": {"code": "POOL_FULL", "position": i, "note": "tab\there\nnew line \\ back"}}
             for i in range(50)]
    assert audit_record_bulk(specs) == 50
    unsealed = AuditEvent.objects.filter(seq__isnull=True).count()
    assert unsealed >= 51  # unchained until the sealer runs (the world's own events too)
    assert audit_seal() == unsealed
    rows = list(AuditEvent.objects.filter(event_type="job.waiting").order_by("seq"))
    assert [r.payload["position"] for r in rows] == list(range(50))
    assert rows[0].seq + 49 == rows[-1].seq == AuditSeal.objects.get().seq
    assert rows[0].tenant_id == world.alpha.id
    assert rows[0].payload["note"] == "tab\there\nnew line \\ back"  # COPY escaping round-trips
    assert audit_record_bulk([]) == 0
    assert verify.audit_chain_verify().ok


@postgres_only
@pytest.mark.django_db(transaction=True)
def test_concurrent_writers_keep_one_unbroken_chain(world):
    """Writers in separate connections and transactions; the sealer orders their events afterwards."""
    errors = []

    def writer(n):
        try:
            for i in range(10):
                with transaction.atomic():
                    if i % 3 == 0:
                        audit_record_bulk([{"event_type": "job.waiting", "object_type": "job", "object_id": n * 100 + i,
                                            "payload": {"code": "POOL_FULL"}} for _ in range(5)])
                    else:
                        audit_record(event_type="job.submitted", object_type="job", object_id=n * 100 + i)
                    time.sleep(0.001)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            connection.close()

    before = AuditEvent.objects.count()
    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert AuditEvent.objects.count() == before + 4 * (4 * 5 + 6)
    audit_seal()
    assert verify.audit_chain_verify().ok


@postgres_only
def test_bulk_append_of_ten_thousand_events_is_fast(world):
    """A regression guard (row-by-row inserts take many seconds). The target, well under 1 s, is
    measured on a quiet machine by `manage.py bench_reports` (audit_bulk_10k_s); under a parallel
    suite on a shared two-core box the same code can take just over a second."""
    timings = []
    for batch in range(3):
        specs = [{"event_type": "job.waiting", "object_type": "job", "object_id": i, "tenant_id": world.alpha.id,
                  "occurred_at": timezone.now() - timedelta(milliseconds=i),  # within the clock guard
                  "payload": {"code": "POOL_FULL", "position": i, "gpus_ahead": 16}} for i in range(10_000)]
        started = time.perf_counter()
        assert audit_record_bulk(specs) == 10_000
        timings.append(time.perf_counter() - started)
    print(f"audit_record_bulk: 10,000 events in {min(timings):.3f}s (best of 3: {timings})")
    assert min(timings) < 3.0, timings
    audit_seal()
    assert verify.audit_chain_verify().ok
