"""The command line `gpuq`, installed as a user installs it, against the portal served by gunicorn: what a
terminal user sees, what `--json` gives scripts, and the exit codes of each kind of failure."""
import re

import pytest
from django.test import Client as WebClient

from portal.accounts.authentication import BAD_TOKEN
from portal.accounts.tokens import personal_token_create
from quotas.models import Membership
from scheduler.jobs.runtime_limits import runtime_default
from scheduler.models import Job
from tests import factories
from tests.cli_helpers import Gpuq, install_gpuq
from tests.jobs import borrowing_off, cycle
from tests.processes import free_port
from tests.web_server import Gunicorn


@pytest.fixture(scope="module")
def server(django_db_setup, django_db_blocker, tmp_path_factory):
    web = Gunicorn(tmp_path_factory.mktemp("gunicorn") / "web.log").start()
    yield web
    web.stop()


@pytest.fixture(scope="module")
def gpuq_site(tmp_path_factory):
    return install_gpuq(tmp_path_factory.mktemp("gpuq"))


@pytest.fixture
def gpuq(gpuq_site, tmp_path):
    return Gpuq(gpuq_site, tmp_path)


@pytest.fixture
def dev(transactional_db):
    world = factories.make_world()
    user = factories.member(world.alpha, "alpha-dev", Membership.Role.MEMBER)
    _, key = personal_token_create(user=user, name="laptop", lifetime_days=30)
    return world, user, key


def submit_args(*extra: str) -> list[str]:
    return ["submit", "--project", "train", "--name", "resnet", "--pool", "gpu-a", "--gpu-model", "H100-80G", *extra]


def test_version_is_the_package_version(gpuq):
    import tomllib

    from tests.processes import ROOT

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    result = gpuq("--version")
    assert (result.code, result.out.strip()) == (0, f"gpuq {declared}")


def test_submit_then_jobs_lists_one_line_per_job(gpuq, server, dev):
    world, user, key = dev
    first = gpuq(*submit_args("--gpus", "4", "--runtime", "90", "--checkpoint-interval", "30"), url=server.url,
                 token=key)
    second = gpuq(*submit_args("--gpus", "8", "--replicas", "2", "--class", "evaluation"), url=server.url, token=key)
    assert first.code == second.code == 0, (first.err, second.err)
    jobs = list(Job.objects.order_by("id"))
    assert [(j.tenant.slug, j.total_gpus, j.max_runtime_minutes, j.checkpoint_interval_minutes) for j in jobs] == [
        ("alpha", 4, 90, 30), ("alpha", 16, runtime_default("evaluation"), None)]
    assert first.out.strip() == f"Submitted job {jobs[0].pk} to gpu-a (submitted)."
    cycle(world)

    listing = gpuq("jobs", url=server.url, token=key)
    assert listing.code == 0, listing.err
    header, *lines = listing.out.strip().splitlines()
    assert header.split()[:3] == ["JOBID", "TENANT", "PROJECT"]
    assert len(lines) == 2
    # Newest first, as the job list API orders them.
    assert [line.split()[:3] for line in lines] == [[str(j.pk), "alpha", "train"] for j in reversed(jobs)]
    assert "2x8 H100-80G" in lines[0]
    assert all(Job.objects.get(pk=line.split()[0]).status in line for line in lines)

    as_json = gpuq("jobs", "--json", url=server.url, token=key)
    assert as_json.code == 0
    assert [j["id"] for j in as_json.json()["results"]] == [j.pk for j in reversed(jobs)]


def test_why_gives_the_wait_in_the_terminals_language(gpuq, server, dev):
    world, user, key = dev
    borrowing_off(world)
    gpuq(*submit_args("--gpus", "8", "--replicas", "2"), url=server.url, token=key)
    over = gpuq(*submit_args("--gpus", "8"), url=server.url, token=key)
    assert over.code == 0, over.err
    cycle(world)
    job = Job.objects.order_by("-id").first()
    assert job.status == Job.Status.QUEUED

    api = WebClient().get(f"/api/v1/jobs/{job.pk}/", HTTP_AUTHORIZATION=f"Token {key}").json()
    english = gpuq("why", str(job.pk), url=server.url, token=key)
    assert english.code == 0, english.err
    assert f"Why: {api['wait']['message']}" in english.out
    assert english.out.startswith(f"Job {job.pk} (resnet) is queued in gpu-a: position 1 in the pool")

    chinese_api = WebClient().get(f"/api/v1/jobs/{job.pk}/", HTTP_AUTHORIZATION=f"Token {key}",
                                  HTTP_ACCEPT_LANGUAGE="zh-Hans").json()
    chinese = gpuq("why", str(job.pk), url=server.url, token=key, lang="zh_CN.UTF-8")
    assert chinese_api["wait"]["message"] != api["wait"]["message"]
    assert chinese_api["wait"]["message"] in chinese.out

    as_json = gpuq("why", str(job.pk), "--json", url=server.url, token=key)
    assert as_json.json()["wait"]["code"] == job.wait_code


def test_unknown_job_exits_4_with_the_portals_words(gpuq, server, dev):
    _, _, key = dev
    result = gpuq("why", "987654", url=server.url, token=key)
    assert (result.code, result.out, result.err.strip()) == (4, "", "gpuq: No such job.")
    as_json = gpuq("cancel", "987654", "--json", url=server.url, token=key)
    assert as_json.code == 4
    assert '"exit_code": 4' in as_json.err


def test_a_bad_token_exits_3(gpuq, server, dev):
    result = gpuq("jobs", url=server.url, token="gqp_not-a-real-token")
    assert (result.code, result.err.strip()) == (3, f"gpuq: {BAD_TOKEN}")


def test_refused_input_exits_5_with_the_field(gpuq, server, dev):
    _, _, key = dev
    result = gpuq(*submit_args("--gpus", "0"), url=server.url, token=key)
    assert result.code == 5
    assert result.err.strip() == "gpuq: gpus: Must be at least 1."
    assert not Job.objects.exists()


def test_cancel(gpuq, server, dev):
    _, _, key = dev
    gpuq(*submit_args("--gpus", "4"), url=server.url, token=key)
    job = Job.objects.get()
    result = gpuq("cancel", str(job.pk), "--reason", "wrong data", url=server.url, token=key)
    assert (result.code, result.out.strip()) == (0, f"Job {job.pk} is cancelled.")
    job.refresh_from_db()
    assert job.status == Job.Status.CANCELLED
    again = gpuq("cancel", str(job.pk), url=server.url, token=key)  # cancelling twice changes nothing
    assert (again.code, again.out.strip()) == (0, f"Job {job.pk} is cancelled.")


def test_quota_picks_the_callers_only_tenant(gpuq, server, dev):
    world, _, key = dev
    gpuq(*submit_args("--gpus", "4"), url=server.url, token=key)
    cycle(world)
    result = gpuq("quota", url=server.url, token=key)
    assert result.code == 0, result.err
    header, row = (re.split(r"\s{2,}", line) for line in result.out.strip().splitlines())
    assert dict(zip(header, row)) | {"FROM": ""} == {
        "POOL": "gpu-a", "GPU MODEL": "H100-80G", "CLASSES": "-", "PROJECT": "-", "GPUS": "16", "USED": "4",
        "FROM": "", "TO": "-", "STATUS": "active"}
    as_json = gpuq("quota", "--json", url=server.url, token=key).json()
    assert as_json["tenant"] == "alpha" and as_json["quotas"][0]["used_gpus"] == 4
    outsider = gpuq("quota", "--tenant", "beta", url=server.url, token=key)
    assert outsider.code == 4


def test_leases_show_what_a_tenant_borrows(gpuq, server, dev):
    world, _, key = dev
    gpuq(*submit_args("--gpus", "8", "--replicas", "2"), url=server.url, token=key)
    gpuq(*submit_args("--gpus", "8", "--class", "experiment"), url=server.url, token=key)
    cycle(world)
    result = gpuq("leases", url=server.url, token=key)
    assert result.code == 0, result.err
    lines = result.out.strip().splitlines()[1:]
    assert lines, "alpha borrowed nothing: the world changed"
    assert lines[0].split()[1:3] in (["alpha", "beta"], ["alpha", "-"])
    assert gpuq("leases", "--json", url=server.url, token=key).json()["count"] == len(lines)
    bad = gpuq("leases", "--state", "sideways", url=server.url, token=key)
    assert bad.code == 5 and "Unknown state 'sideways'" in bad.err


def test_requests_and_the_approvers_inbox(gpuq, server, dev):
    world, user, key = dev
    lead = factories.member(world.alpha, "alpha-lead", Membership.Role.TENANT_ADMIN)
    web = WebClient()
    web.force_login(lead)
    created = web.post("/api/v1/quota-requests/", {
        "tenant": "alpha", "pool": "gpu-a", "gpu_model": "H100-80G", "kind": "increase", "gpus": 20,
        "justification": "bigger runs"}, content_type="application/json")
    assert created.status_code == 201, created.content
    result = gpuq("requests", url=server.url, token=key)
    assert result.code == 0, result.err
    header, row = result.out.strip().splitlines()
    assert row.split()[:6] == [str(created.json()["id"]), "alpha", "gpu-a", "H100-80G", "increase", "16->20"]
    mine = gpuq("requests", "--awaiting-me", "--json", url=server.url, token=key)
    assert mine.json()["count"] == 0


def test_report_csv_and_a_bad_month(gpuq, server, dev):
    _, _, key = dev
    csv = gpuq("report", "2026-11", "--csv", url=server.url, token=key)
    assert csv.code == 0, csv.err
    assert not csv.out.startswith("\ufeff")
    assert csv.out.splitlines()[0] == "Month,Tenant,Project,GPU model,GPU-hours,Weight,Chargeback units"
    text = gpuq("report", "2026-11", url=server.url, token=key)
    assert text.out.startswith("Usage of alpha in 2026-11: 0.0 GPU-hours")
    bad = gpuq("report", "2026-13", url=server.url, token=key)
    assert bad.code == 5 and bad.err.startswith("gpuq: month: ")
    both = gpuq("report", "2026-11", "--csv", "--json", url=server.url, token=key)
    assert both.code == 2


def test_configuration_errors_exit_2_and_an_unreachable_portal_6(gpuq, tmp_path):
    missing = gpuq("jobs")
    assert missing.code == 2 and "GPUQ_URL" in missing.err
    no_token = gpuq("jobs", url="http://127.0.0.1:1")
    assert no_token.code == 2 and "/account/tokens/" in no_token.err
    config = tmp_path / "gpuq.toml"
    config.write_text(f'url = "http://127.0.0.1:{free_port()}"\ntoken = "gqp_x"\n')
    down = gpuq("jobs", gpuq_config=str(config))
    assert down.code == 6 and "Cannot reach the portal" in down.err
    config.write_text("url = [broken")
    assert gpuq("jobs", gpuq_config=str(config)).code == 2


def test_the_command_line_imports_only_the_standard_library_and_itself():
    """It is installed alone (pyproject packages = ["portal.cli"]): an import of Django or of another part of
    the portal would work in the checkout and break on a laptop."""
    import ast
    import sys

    from tests.processes import ROOT

    for path in (ROOT / "portal" / "cli").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.module else []
            for name in names:
                assert name.startswith("portal.cli") or name.split(".")[0] in sys.stdlib_module_names, (path, name)
