"""Issue 38, item 1: what a job runs (command, script, working directory, environment variables) is read
by its owner and its tenant's admins only; a platform admin reveals it with a reason, audited; every other
reader sees that the parts exist. The matrix covers every role, through the API and the job page."""
import pytest
from django.test import Client
from django.urls import reverse

from audit.models import AuditEvent
from scheduler.jobs.contents import CONTENTS_REVEALED
from tests import factories
from tests.jobs import submit_api

SECRET = "s3cr3t-value-of-the-run"
COMMAND = "torchrun train.py --data /datasets/private-corpus"
VARIABLES = {"WANDB_API_KEY": SECRET, "SEED": "7"}


@pytest.fixture
def job(api, member):
    """Submitted by `member` (the owner) through the API, as a user does."""
    return submit_api(api, member, command=COMMAND, working_dir="/home/alpha-dev/run",
                      environment={"image": "pytorch:24.05", "variables": VARIABLES})


@pytest.fixture
def teammate(world):
    """A member of the job's tenant who did not submit it."""
    from quotas.models import Membership

    return factories.member(world.alpha, "alpha-other", Membership.Role.MEMBER)


SHOWN, HIDDEN, NOT_FOUND = "shown", "hidden", "404"
MATRIX = [("member", SHOWN), ("tenant_admin", SHOWN), ("teammate", HIDDEN), ("outsider", NOT_FOUND),
          ("quota_approver", HIDDEN), ("auditor", HIDDEN), ("platform_admin", HIDDEN)]


@pytest.mark.parametrize("role, expected", MATRIX)
def test_the_api_shows_what_a_job_runs_only_to_its_owner_and_tenant_admins(request, api, job, role, expected):
    user = request.getfixturevalue(role)
    response = api(user).get(f"/api/v1/jobs/{job.pk}/")
    if expected == NOT_FOUND:
        assert response.status_code == 404
        return
    body = response.json()
    assert response.status_code == 200
    assert body["contents"] == {"shown": expected == SHOWN, "has_command": True, "has_script": False,
                                "has_working_dir": True, "variable_count": 2}
    if expected == SHOWN:
        assert body["command"] == COMMAND and body["environment"]["variables"] == VARIABLES
        assert body["working_dir"] == "/home/alpha-dev/run"
    else:
        assert body["command"] is None and body["script"] is None and body["working_dir"] is None
        assert body["environment"]["variables"] is None and body["environment"]["image"] == "pytorch:24.05"
        assert SECRET not in response.content.decode() and "WANDB_API_KEY" not in response.content.decode()


@pytest.mark.parametrize("role, expected", MATRIX)
def test_the_job_page_shows_what_a_job_runs_only_to_its_owner_and_tenant_admins(request, job, role, expected):
    client = Client()
    client.force_login(request.getfixturevalue(role))
    response = client.get(reverse("job-detail", args=[job.pk]))
    if expected == NOT_FOUND:
        assert response.status_code == 404
        return
    html = response.content.decode()
    assert response.status_code == 200
    assert (SECRET in html) == (expected == SHOWN) and ("private-corpus" in html) == (expected == SHOWN)
    if expected == HIDDEN:
        assert "Command: yes; script: no; environment variables: 2." in html
        assert ('name="reason"' in html) == (role == "platform_admin")


def test_a_platform_admin_reveals_with_a_reason_and_the_audit_trail_keeps_it(api, job, platform_admin):
    client = api(platform_admin)
    refused = client.post(f"/api/v1/jobs/{job.pk}/contents/", {"reason": "why"}, format="json")
    assert refused.status_code == 400 and "Say why you need to see" in refused.json()["reason"][0]
    assert not AuditEvent.objects.filter(event_type=CONTENTS_REVEALED).exists()

    response = client.post(f"/api/v1/jobs/{job.pk}/contents/", {"reason": "incident INC-4411: leaked key"},
                           format="json")
    assert response.status_code == 200
    assert response.json() == {"command": COMMAND, "script": "", "working_dir": "/home/alpha-dev/run",
                               "variables": VARIABLES}
    event = AuditEvent.objects.get(event_type=CONTENTS_REVEALED)
    assert event.actor_id == platform_admin.pk and event.object_id == str(job.pk)
    assert event.payload["reason"] == "incident INC-4411: leaked key"
    assert SECRET not in str(event.payload) and COMMAND not in str(event.payload)


@pytest.mark.parametrize("role", ["auditor", "quota_approver", "teammate"])
def test_nobody_else_may_reveal(request, api, job, role):
    response = api(request.getfixturevalue(role)).post(f"/api/v1/jobs/{job.pk}/contents/",
                                                       {"reason": "curious about the command"}, format="json")
    assert response.status_code == 403
    assert not AuditEvent.objects.filter(event_type=CONTENTS_REVEALED).exists()


def test_a_platform_admin_reveals_on_the_job_page(job, platform_admin):
    client = Client()
    client.force_login(platform_admin)
    url = reverse("job-contents", args=[job.pk])
    assert SECRET not in client.post(url, {"reason": "short"}).content.decode()
    response = client.post(url, {"reason": "support ticket 1234 from alpha"})
    assert response.status_code == 200 and SECRET in response.content.decode()
    assert response["Cache-Control"] == "no-store"
    assert AuditEvent.objects.filter(event_type=CONTENTS_REVEALED, actor_id=platform_admin.pk).count() == 1
