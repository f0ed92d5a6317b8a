"""docs/design.md §10: reports, exports and audit payloads never hold commands, arguments, environment
variables, dataset paths or prompts. The guard refuses them at the door; the sweep checks the outputs."""
import io
import json

import pytest
from openpyxl import load_workbook

from audit.chain.services import (
    SENSITIVE_KEY_REFUSED,
    SENSITIVE_PAYLOAD_KEYS,
    SensitivePayloadError,
    audit_record,
    audit_record_bulk,
)
from audit.models import AuditEvent
from audit.reports.exports import report_csv, report_xlsx
from audit.reports.selectors import usage_report
from tests import live_month as lm

pytestmark = pytest.mark.django_db

FORBIDDEN_WORDS = ("command", "args", "argv", "env", "environment", "dataset", "prompt", "script", "entrypoint")


@pytest.mark.parametrize("payload, key", [
    ({"command": "python train.py"}, "command"),
    ({"job": {"Args": ["--lr", "3e-4"]}}, "job.Args"),
    ({"env": {"HF_TOKEN": "x"}}, "env"),
    ({"environment-variables": {}}, "environment-variables"),
    ({"replicas": [{"dataset_path": "/mnt/data"}]}, "replicas[0].dataset_path"),
    ({"prompt": "summarise …"}, "prompt"),
])
def test_audit_record_refuses_sensitive_keys(world, payload, key):
    before = AuditEvent.objects.count()
    with pytest.raises(SensitivePayloadError) as info:
        audit_record(event_type="job.submitted", object_type="job", object_id=1, tenant=world.alpha, payload=payload)
    assert str(info.value) == SENSITIVE_KEY_REFUSED.format(key=key)
    with pytest.raises(SensitivePayloadError):
        audit_record_bulk([{"event_type": "job.submitted", "object_type": "job", "object_id": 2, "payload": payload}])
    assert AuditEvent.objects.count() == before


def test_allowed_payload_passes(world):
    event = audit_record(event_type="job.failed", object_type="job", object_id=3, tenant=world.alpha,
                         payload={"project": "train", "name": "resnet", "gpus": 8, "state": "failed",
                                  "error_type": "OOMKilled", "started_at": "2026-03-01T00:00:00Z"})
    assert event.payload["error_type"] == "OOMKilled"


def _keys(value) -> set[str]:
    if isinstance(value, dict):
        return {str(k).lower() for k in value} | {k for v in value.values() for k in _keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in _keys(v)}
    return set()


def _assert_clean_keys(keys):
    assert not {k for k in keys if k.replace("-", "_") in SENSITIVE_PAYLOAD_KEYS}
    assert not {k for k in keys for word in FORBIDDEN_WORDS if word in k.split("_")}


def test_reports_exports_and_recorded_payloads_hold_no_sensitive_fields(db, api, settings):
    month = lm.build(settings)
    for scope in ({}, {"tenant": month.alpha}, {"project": month.train}):
        report = usage_report(month=lm.MONTH, now=lm.NOW, **scope)
        _assert_clean_keys(_keys(report))
        text = report_csv(report).decode("utf-8-sig").lower()
        assert not any(f"{word}," in text or f",{word}" in text for word in FORBIDDEN_WORDS)
        book = load_workbook(io.BytesIO(report_xlsx(report)))
        cells = {str(c).lower() for sheet in book for row in sheet.iter_rows(values_only=True) for c in row if c}
        _assert_clean_keys(cells)
    _assert_clean_keys({k for payload in AuditEvent.objects.values_list("payload", flat=True) for k in _keys(payload)})
    assert json.dumps(list(AuditEvent.objects.values_list("payload", flat=True)))  # every payload is plain JSON


SECRETS = {"command": "python leak_cmd_7f3a.py --data /mnt/secret-dataset-7f3a",
           "working_dir": "/home/secret-dir-7f3a", "variables": {"HF_TOKEN": "hf_secret_token_7f3a"}}


def test_what_a_job_runs_never_reaches_audit_usage_notices_or_reports(world, api, member):
    """A job's command, working directory and environment, submitted through the API and run through the
    cycle and backend, appear in no audit payload, usage record, notice or report."""
    from django.utils import timezone

    from audit.models import UsageRecord
    from scheduler.sync.tick import backend_tick
    from scheduler.cycle.services import scheduler_cycle_run
    from scheduler.jobs.services import job_cancel
    from scheduler.models import Job, JobRun
    from scheduler.notices.models import Notice

    body = {"tenant": "alpha", "project": "train", "name": "plain-name", "workload_class": "training",
            "pool": "gpu-a", "gpu_model": "H100-80G", "gpus": 8, "command": SECRETS["command"],
            "working_dir": SECRETS["working_dir"], "environment": {"image": "img:1", "variables": SECRETS["variables"]}}
    response = api(member).post("/api/v1/jobs/", body, format="json")
    assert response.status_code == 201, response.content
    job = Job.objects.get(pk=response.json()["id"])
    assert (job.command, job.working_dir, job.env_vars) == (SECRETS["command"], SECRETS["working_dir"],
                                                            SECRETS["variables"])
    scheduler_cycle_run(pool=world.pool)
    backend_tick()
    assert JobRun.objects.get(job=job).state == "running"
    job_cancel(actor=member, job=job, reason="done")
    backend_tick()
    report = usage_report(month=timezone.now().date().replace(day=1), now=timezone.now())
    evidence = json.dumps([
        list(AuditEvent.objects.values_list("payload", flat=True)),
        list(UsageRecord.objects.values()), list(Notice.objects.values("subject", "body", "facts")),
        report, report_csv(report).decode("utf-8-sig"),
    ], default=str)
    for secret in ("leak_cmd_7f3a", "secret-dataset-7f3a", "secret-dir-7f3a", "hf_secret_token_7f3a", "HF_TOKEN"):
        assert secret not in evidence
