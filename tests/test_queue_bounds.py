"""Bounded reads: the team queue page is paginated and filterable, an unchanged refresh is a 304, the
job list has a maximum page size, and the summaries count what a full listing shows."""
import re
from collections import Counter

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import translation

from scheduler.engine import reasons
from scheduler.engine.texts import CODE_TITLES
from scheduler.runs.pending_bound import CLUSTER_PENDING
from quotas.common.pagination import MAX_PAGE_SIZE as MAX_LIMIT
from scheduler.jobs.queue import PAGE_SIZE
from scheduler.jobs.services import job_submit_bulk
from scheduler.models import Job
from tests.jobs import beta, borrowing_off, cycle, spec, submit


def client_for(user):
    c = Client()
    c.force_login(user)
    return c


@pytest.fixture
def deep_queue(world):
    """Alpha holds its quota; 120 alpha jobs wait (20 experiments with a broken environment), 10 beta jobs too."""
    borrowing_off(world)
    submit(gpus=8, replicas=2, name="holder")
    job_submit_bulk(actor=None, specs=[spec(name=f"a{i}", gpus=4, project="train") for i in range(100)]
                    + [spec(name=f"m{i}", gpus=1, workload_class="experiment",
                            environment={"image": "reg/x:1", "ready": False, "detail": "pull failed"})
                       for i in range(20)]
                    + [beta(name=f"b{i}", gpus=8) for i in range(10)])
    cycle(world)
    return world


def test_every_wait_code_has_a_title_in_english_and_chinese():
    # The engine's codes, and the one the backend tick writes for a job the cluster keeps pending.
    assert set(CODE_TITLES) == set(reasons.PRECEDENCE) | {CLUSTER_PENDING}
    with translation.override("zh-hans"):
        for code, title in CODE_TITLES.items():
            assert translation.gettext(title) != title, code


def test_the_queue_page_shows_40_waiting_jobs_a_page_with_filters(member, deep_queue):
    client = client_for(member)
    url = reverse("tenant-queue", args=["alpha"])
    body = client.get(url).content.decode()
    assert PAGE_SIZE == 40
    assert body.count('data-status="queued"') == 40 and re.search(r'id="waiting-count" data-v="\w+">120<', body)
    positions = [int(p) for p in re.findall(r"<td>(\d+) / \d+</td>", body)]
    assert positions == list(range(1, 41))
    assert len(body.encode()) < 100_000
    last = client.get(url, {"q-page": 3}).content.decode()
    assert last.count('data-status="queued"') == 40 and "Page 3 of 3" in last
    broken = client.get(url, {"q-code": reasons.ENV_NOT_READY, "q-workload_class": "experiment"}).content.decode()
    assert broken.count('data-status="queued"') == 20 and re.search(r'id="waiting-count" data-v="\w+">20<', broken)
    assert client.get(url, {"q-code": reasons.ENV_NOT_READY, "q-workload_class": "training"}).content.decode().count(
        'data-status="queued"') == 0
    by_submit = client.get(url, {"q-sort": "submitted", "q-page": 3}).content.decode()
    ids = [int(i) for i in re.findall(r'<tr id="job-(\d+)" data-status="queued"', by_submit)]
    # The last page by submit time: the last 40 submitted, the 20 experiments the newest of them.
    assert ids == sorted(ids) and len(ids) == 40
    assert set(ids[-20:]) == set(Job.objects.filter(name__startswith="m").values_list("id", flat=True))
    bad = client.get(url, {"q-code": "NOT_A_CODE"})
    assert bad.status_code == 400 and "Why it waits" in bad.content.decode()


def test_an_unchanged_live_refresh_is_answered_304_and_a_change_is_not(member, deep_queue):
    client = client_for(member)
    url = reverse("tenant-queue", args=["alpha"])
    first = client.get(url, HTTP_HX_REQUEST="true")
    etag = first["ETag"]
    again = client.get(url, HTTP_HX_REQUEST="true", HTTP_IF_NONE_MATCH=etag)
    assert again.status_code == 304 and again.content == b""
    submit(gpus=4, name="one-more")
    cycle(deep_queue)
    changed = client.get(url, HTTP_HX_REQUEST="true", HTTP_IF_NONE_MATCH=etag)
    assert changed.status_code == 200 and changed["ETag"] != etag and "121<" in changed.content.decode()


def test_the_job_list_never_returns_more_than_the_maximum_page(api, member, deep_queue):
    body = api(member).get("/api/v1/jobs/", {"limit": 10_000}).json()
    assert len(body["results"]) == min(MAX_LIMIT, body["count"]) and body["count"] == 121


def _full_listing(client, **query) -> list[dict]:
    rows, url = [], "/api/v1/jobs/"
    params = {"limit": 50, **query}
    while url:
        body = client.get(url, params).json()
        rows += body["results"]
        url, params = body["next"], None
    return rows


def test_the_summaries_count_what_a_full_listing_shows(api, member, platform_admin, deep_queue):
    admin = api(platform_admin)
    rows = _full_listing(admin, pool="gpu-a")
    pool = admin.get("/api/v1/pools/gpu-a/summary/").json()
    statuses = Counter(row["status"] for row in rows)
    assert pool["total"] == len(rows) == 131
    assert {k: v for k, v in pool["by_status"].items() if v} == dict(statuses)
    codes = Counter(row["wait_code"] for row in rows if row["status"] in ("submitted", "queued", "requeued"))
    assert {c["code"]: c["count"] for c in pool["wait_codes"]} == dict(codes)
    mine = api(member).get("/api/v1/tenants/alpha/summary/").json()
    alpha_rows = _full_listing(api(member), tenant="alpha")
    assert mine["total"] == len(alpha_rows) == 121
    assert {c["code"]: c["count"] for c in mine["wait_codes"]} == dict(
        Counter(r["wait_code"] for r in alpha_rows if r["status"] == "queued"))
    assert api(member).get("/api/v1/tenants/beta/summary/").status_code == 404
