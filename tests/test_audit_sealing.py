"""Sealing the audit chain: writers never wait on one another, one sealer chains their events in
order, signs each head with a key the database does not hold and exports it, and a chain rewritten
and rehashed inside the database fails verification against those heads."""
import json
import threading
import time
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import OperationalError, connection, connections, transaction

from audit.chain.hashing import GENESIS_HASH, HASHED_FIELDS, row_hash
from audit.models import AuditEvent, AuditSeal
from audit.chain import verify
from audit.chain.export import exported_heads
from audit.chain.sealing import audit_seal
from audit.chain.services import audit_record, audit_record_bulk
from portal.celery import app
from scheduler.models import Job
from tests.jobs import submit

pytestmark = [pytest.mark.django_db,
              pytest.mark.skipif(connection.vendor != "postgresql", reason="the guard trigger is PostgreSQL's")]


@pytest.fixture
def world(world):
    """The shared world with its own setup events already sealed, so counts below are the test's."""
    audit_seal()
    return world


def _sealed_to() -> int:
    return AuditSeal.objects.order_by("-seq").values_list("seq", flat=True).first() or 0


@pytest.fixture
def export_dir(tmp_path, settings):
    settings.AUDIT_SEAL_EXPORT_DIR = str(tmp_path / "seals")
    return tmp_path / "seals"


def _events(n, **payload):
    return audit_record_bulk([{"event_type": "job.waiting", "object_type": "job", "object_id": i,
                               "payload": {"code": "POOL_FULL", "position": i, **payload}} for i in range(n)])


def _raw(sql: str, params=()) -> None:
    """Write behind the ORM's back as a database owner can: switch the guard off, write, switch it on."""
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute("ALTER TABLE audit_auditevent DISABLE TRIGGER audit_event_append_only")
        cursor.execute(sql, params)
        cursor.execute("ALTER TABLE audit_auditevent ENABLE TRIGGER audit_event_append_only")


def _rewrite_and_rehash(event_id: int, payload: dict) -> None:
    """The forgery the unkeyed chain could not detect: change one event, then recompute every later
    hash and the head so the walk is clean again."""
    _raw("UPDATE audit_auditevent SET payload = %s WHERE id = %s", [json.dumps(payload), event_id])
    fields = ("id", "prev_hash", "hash", *HASHED_FIELDS)
    prev = GENESIS_HASH
    for row in AuditEvent.objects.filter(seq__isnull=False).order_by("seq").values(*fields):
        row["prev_hash"] = prev
        prev = row_hash(row)
        _raw("UPDATE audit_auditevent SET prev_hash = %s, hash = %s WHERE id = %s", [row["prev_hash"], prev, row["id"]])
    with connection.cursor() as cursor:
        cursor.execute("UPDATE audit_auditseal SET hash = %s WHERE seq = (SELECT max(seq) FROM audit_auditseal)", [prev])


def test_sealing_signs_and_exports_each_batch(world, export_dir, settings):
    settings.AUDIT_SEAL_BATCH = 40
    base = _sealed_to()
    AuditSeal.objects.all().delete()  # the world's own head is not the subject here
    _events(100)
    assert audit_seal() == 100
    seals = list(AuditSeal.objects.order_by("seq"))
    assert [(s.seq - base, s.events) for s in seals] == [(40, 40), (80, 40), (100, 20)]
    assert all(s.exported_at for s in seals)
    heads = list(exported_heads(export_dir))
    assert [(h["seq"], h["hash"], h["signature"]) for h in heads] == [(s.seq, s.hash, s.signature) for s in seals]
    assert audit_seal() == 0 and AuditSeal.objects.count() == 3  # nothing new, no empty head
    report = verify.audit_chain_verify()
    assert report.ok and (report.checked, report.heads, report.exported_heads) == (base + 100, 3, 3)


def test_a_rewritten_and_rehashed_chain_fails_against_the_signed_heads(world, export_dir):
    _events(30)
    audit_seal()
    AuditSeal.objects.filter(seq__lt=_sealed_to()).delete()
    target = AuditEvent.objects.get(seq=7)
    _rewrite_and_rehash(target.id, {"code": "POOL_FULL", "position": 999})
    # The walk alone is fooled: every hash and link is consistent again.
    from audit.chain.hashing import chain_walk
    assert chain_walk().report.ok
    report = verify.audit_chain_verify()
    assert not report.ok
    last = _sealed_to()
    assert report.problem == verify.BROKEN_SIGNATURE.format(source=f"seal #{last} in the database")
    # Deleting the database's heads does not help: the exported ones still disagree.
    export_file = f"audit-seals-{AuditSeal.objects.get().sealed_at:%Y-%m}.jsonl"
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM audit_auditseal")
    report = verify.audit_chain_verify()
    assert not report.ok
    assert report.broken_seq == last
    assert report.problem.startswith(verify.BROKEN_HEAD_HASH.format(seq=last, source=f"{export_file}:"))
    out = StringIO()
    with pytest.raises(SystemExit) as exit_info:
        call_command("audit_verify", stdout=out, stderr=out)
    assert exit_info.value.code == 1 and "does not match signed head" in out.getvalue()


def test_a_head_signed_with_another_key_is_refused(world, export_dir, settings):
    _events(5)
    audit_seal()
    settings.AUDIT_SEAL_KEY = "someone-elses-key"
    report = verify.audit_chain_verify()
    assert not report.ok and "uses key" in report.problem


def test_events_appended_without_a_signed_head_are_found(world):
    _events(5)
    audit_seal()
    # Someone with write access appends a chained event of their own and cannot sign a head for it.
    end = _sealed_to()
    last = AuditEvent.objects.get(seq=end)
    forged = audit_record(event_type="quota.set", object_type="quota", object_id=1)
    row = AuditEvent.objects.filter(pk=forged.pk).values("id", *HASHED_FIELDS).get()
    row.update(seq=end + 1, prev_hash=last.hash)
    with connection.cursor() as cursor:
        cursor.execute("UPDATE audit_auditevent SET seq = %s, prev_hash = %s, hash = %s WHERE id = %s",
                       [end + 1, last.hash, row_hash(row), forged.pk])
    report = verify.audit_chain_verify()
    assert not report.ok and report.problem == verify.BROKEN_UNSIGNED.format(seq=end)


def test_a_transaction_that_commits_late_is_sealed_in_the_next_batch(world):
    """The sealer takes only committed rows and never waits for an open writer."""
    _events(3)
    opened, release = threading.Event(), threading.Event()

    def slow_writer():
        try:
            with transaction.atomic():
                audit_record(event_type="quota.set", object_type="quota", object_id=1)
                opened.set()
                release.wait(10)
        finally:
            connections.close_all()

    writer = threading.Thread(target=slow_writer)
    writer.start()
    opened.wait(10)
    started = time.perf_counter()
    assert audit_seal() == 3
    assert time.perf_counter() - started < 2
    release.set()
    writer.join()
    assert audit_seal() == 1
    assert AuditEvent.objects.get(seq=_sealed_to()).event_type == "quota.set"
    assert verify.audit_chain_verify().ok


def test_the_sealer_is_in_the_beat_schedule(settings):
    entry = next(e for e in app.conf.beat_schedule.values() if e["task"] == "audit.seal")
    assert entry["schedule"] == settings.AUDIT_SEAL_INTERVAL_SECONDS
    out = StringIO()
    call_command("audit_seal", stdout=out)
    assert out.getvalue().startswith("Sealed ")


def _is_deadlock(exc: BaseException) -> bool:
    return isinstance(exc, OperationalError) and "deadlock" in str(exc).lower()


@pytest.mark.django_db(transaction=True)
def test_concurrent_audited_writers_and_the_sealer_never_deadlock(export_dir):
    """Six writers submit jobs (each submit is one audited transaction, plus bulk waits) while a
    sealer runs in a loop beside them. The old single chain-head row deadlocked here."""
    from tests import factories

    factories.make_world()
    setup_events = AuditEvent.objects.count()
    deadlocks, failures = [], []
    done = threading.Event()

    def writer(n):
        try:
            for i in range(25):
                try:
                    with transaction.atomic():
                        submit(name=f"w{n}-{i}", gpus=1)
                        _events(3, writer=n)
                except OperationalError as exc:
                    (deadlocks if _is_deadlock(exc) else failures).append(exc)
        except Exception as exc:  # surfaced in the main thread
            failures.append(exc)
        finally:
            connections.close_all()

    def sealer():
        try:
            while not done.is_set():
                audit_seal(batch_size=50)
        except Exception as exc:
            (deadlocks if _is_deadlock(exc) else failures).append(exc)
        finally:
            connections.close_all()

    seal_thread = threading.Thread(target=sealer)
    seal_thread.start()
    started = time.perf_counter()
    threads = [threading.Thread(target=writer, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - started
    done.set()
    seal_thread.join()
    audit_seal()
    print(f"concurrency: 6 writers x 25 audited transactions in {elapsed:.2f}s, deadlocks: {len(deadlocks)}")
    assert deadlocks == [] and failures == []
    assert Job.objects.count() == 150
    assert AuditEvent.objects.filter(seq__isnull=True).count() == 0
    report = verify.audit_chain_verify()
    assert report.ok and report.checked == AuditEvent.objects.count() == setup_events + 150 * 4


def test_sealing_throughput(world):
    """Sealing cost, reported in the closing note: events per second for 20,000 events."""
    _events(20_000)
    started = time.perf_counter()
    assert audit_seal() == 20_000
    elapsed = time.perf_counter() - started
    print(f"sealing: 20,000 events in {elapsed:.2f}s = {20_000 / elapsed:,.0f} events/s")
    assert verify.audit_chain_verify().ok
