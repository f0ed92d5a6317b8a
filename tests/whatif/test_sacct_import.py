"""What-if before adoption as a platform admin meets it: a Slurm site's sacct history uploaded on the what-if
page (or the API, or the command) is replayed on a pool under the portal's rules and shown as a what-if run,
with the accounts that map to no tenant listed, in both languages."""
import json
import re
from datetime import datetime, timedelta, timezone
from io import StringIO

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.test import Client

from audit.models import AuditEvent
from scheduler.whatif.models import WhatIfRun
from scheduler.whatif.sacct_parse import SACCT_FORMAT
from scheduler.whatif.services import whatif_execute

T0 = (datetime.now(timezone.utc) - timedelta(days=3)).replace(minute=0, second=0, microsecond=0)


def _at(minutes: float | None) -> str:
    return "Unknown" if minutes is None else str(int((T0 + timedelta(minutes=minutes)).timestamp()))


def _row(job, account, qos, submit, start, end, state, gpus, gres="h100", nodes=1, partition="gpu", limit="02:00:00"):
    tres = f"cpu=4,gres/gpu:{gres}={gpus},gres/gpu={gpus},node={nodes}" if gpus else "cpu=4,node=1"
    alloc = tres if start is not None else ""
    return "|".join((str(job), account, qos, partition, _at(submit), _at(start), _at(end), state, limit, str(nodes),
                     "n-1" if start is not None else "None assigned", alloc, tres))


# The site's month, in short: Slurm made ml-alpha's second job wait 40 min on a pool with room (behind a
# reservation, say) and beta's 2-GPU job waited until its owner cancelled it; the portal had room for both.
HISTORY = "\n".join((
    SACCT_FORMAT.replace(",", "|"),
    _row(101, "ml-alpha", "normal", 0, 0, 60, "COMPLETED", 8),
    _row(102, "ml-alpha", "urgent", 5, 45, 105, "COMPLETED", 8),
    _row(103, "beta", "normal", 10, 10, 70, "COMPLETED", 4),
    _row(104, "beta", "normal", 20, None, 30, "CANCELLED by 1000", 2),
    _row(105, "physics", "normal", 0, 0, 120, "COMPLETED", 4),
    _row(106, "physics", "normal", 30, 30, 90, "TIMEOUT", 2),
    _row(107, "ml-alpha", "normal", 0, 0, 30, "COMPLETED", 0),
    _row(108, "ml-alpha", "normal", 0, 0, 30, "COMPLETED", 8, partition="debug"),
)) + "\n"


@pytest.fixture
def site(world):
    """gpu-a as a Slurm pool of the site: its partition, GRES types, one renamed account and a QOS class."""
    world.pool.backend = "slurm"
    world.pool.backend_settings = {
        "partition": "gpu", "gres_models": {"h100": "H100-80G", "a100": "A100-40G"},
        "account_tenants": {"ml-alpha": "alpha"}, "qos_classes": {"urgent": "online_inference"}}
    world.pool.save()
    return world


def _upload(client, text=HISTORY, **headers):
    return client.post("/what-if/sacct/", {"pool": "gpu-a", "label": "last month",
                                           "file": SimpleUploadedFile("sacct.txt", text.encode())}, **headers)


def test_an_uploaded_history_is_replayed_under_the_portals_rules_with_unmapped_accounts_listed(
        site, platform_admin, django_capture_on_commit_callbacks):
    client = Client()
    client.force_login(platform_admin)
    page = client.get("/what-if/").content.decode()
    assert 'enctype="multipart/form-data"' in page and SACCT_FORMAT in page
    ids = re.findall(r'\bid="([^"]+)"', page)
    assert "id_sacct_file" in ids and len(ids) == len(set(ids))  # beside the replay form, ids of its own
    with django_capture_on_commit_callbacks() as callbacks:
        response = _upload(client)
    assert response.status_code == 302, response.content.decode()[:2000]
    run = WhatIfRun.objects.get()
    assert response["Location"] == f"/what-if/{run.pk}/" and len(callbacks) == 1
    assert (run.window_start, run.window_end) == (T0, T0 + timedelta(minutes=120, seconds=1))
    assert whatif_execute(run_id=run.pk) == WhatIfRun.Status.DONE

    run.refresh_from_db()
    imported = run.result["import"]
    assert (imported["jobs_read"], imported["jobs_imported"]) == (8, 4)
    assert imported["skipped"] == {"no_gpus": 1, "other_partition": 1, "outside_window": 0}
    assert imported["accounts_without_tenant"] == [
        {"account": "physics", "tenant": "physics", "jobs": 2, "gpu_hours": 10.0}]
    baseline = run.result["baseline"]
    # The QOS picked the class: ml-alpha's urgent job is alpha's production work.
    assert {(c["tenant"], c["priority_class"]) for c in baseline["classes"]} >= {("alpha", "production"),
                                                                                 ("alpha", "training")}
    live = run.result["fidelity"]["live"]
    # What the portal would have done otherwise: beta's job that Slurm left queued until its owner gave up
    # would have started at once, and alpha's urgent job would not have waited 40 minutes.
    assert (live["started"]["live"], live["started"]["replay"]) == (3, 4)
    assert live["wait_p95_seconds"]["live"] == 40 * 60 and live["wait_p95_seconds"]["replay"] == 0
    assert {"started", "wait_p95_seconds"} <= set(run.result["fidelity"]["differs"])
    assert AuditEvent.objects.get(event_type="whatif.created", object_id=str(run.pk)).payload["source"] == "sacct"

    english = client.get(f"/what-if/{run.pk}/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "Imported from Slurm (sacct)" in english and "4 of 8 jobs replayed" in english
    assert "These Slurm accounts map to no tenant" in english and "<th scope=\"row\">physics</th>" in english
    chinese = client.get(f"/what-if/{run.pk}/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "从 Slurm 导入（sacct）" in chinese and "这些 Slurm 账户没有对应的租户" in chinese


@pytest.mark.parametrize("text, words", [
    (HISTORY.replace("|COMPLETED|", "|DONE|", 1), "Line 2, field State: unknown state DONE"),
    (SACCT_FORMAT.replace(",", "|") + "\n", "The sacct output holds no job."),
    ("JobID|Account\n1|x\n", "Line 1, field QOS: missing from the header"),
])
def test_a_bad_history_is_refused_on_the_form_naming_the_line(text, words, site, platform_admin):
    client = Client()
    client.force_login(platform_admin)
    response = _upload(client, text)
    assert response.status_code == 200 and words in response.content.decode()
    assert not WhatIfRun.objects.exists()
    chinese = _upload(client, HISTORY.replace("|COMPLETED|", "|DONE|", 1), HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert "第 2 行，字段 State：未知状态 DONE" in chinese.content.decode()


def test_the_api_takes_the_same_upload_and_refuses_others(site, platform_admin, member, api):
    body = {"pool": "gpu-a", "file": SimpleUploadedFile("sacct.txt", HISTORY.encode())}
    assert api(member).post("/api/v1/what-if/sacct/", body, format="multipart").status_code == 403
    body["file"] = SimpleUploadedFile("sacct.txt", HISTORY.encode())
    response = api(platform_admin).post("/api/v1/what-if/sacct/", body, format="multipart")
    assert response.status_code == 202, response.content
    bad = {"pool": "gpu-a", "file": SimpleUploadedFile("sacct.txt", HISTORY.replace("|1|n-1|", "|0|n-1|", 1).encode())}
    refused = api(platform_admin).post("/api/v1/what-if/sacct/", bad, format="multipart")
    assert refused.status_code == 400 and refused.json()["file"] == ["Line 2, field NNodes: at least 1, not 0"]


def test_the_command_imports_a_captured_file_and_prints_the_summary(site, platform_admin, tmp_path):
    captured = tmp_path / "sacct.txt"
    captured.write_text(HISTORY)
    out = StringIO()
    call_command("whatif_import_sacct", "--pool", "gpu-a", "--actor", platform_admin.username, "--file",
                 str(captured), stdout=out)
    printed = json.loads(out.getvalue())
    assert (printed["status"], printed["jobs"], printed["started"]) == ("done", 4, 4)
    assert [a["account"] for a in printed["import"]["accounts_without_tenant"]] == ["physics"]
