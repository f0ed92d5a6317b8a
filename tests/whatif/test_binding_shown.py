"""A what-if over a window where jobs asked memory says what bound the waiting time, through the running
system: jobs submitted through the API, the pool's real cycles and backend ticks make the history, the
replay runs as the worker runs it, and the API and the run page say it in both languages."""
from datetime import timedelta

import time_machine
from django.utils import timezone

from scheduler.models import Job
from scheduler.whatif.models import WhatIfRun
from scheduler.whatif.services import whatif_execute
from tests.jobs import reload, submit_api
from tests.running import beat


def test_a_replay_where_memory_bound_the_waits_says_so_on_the_api_and_the_page(world, member, platform_admin, api):
    t0 = timezone.now() + timedelta(hours=1)
    with time_machine.travel(t0, tick=False):  # 400 GB each of a node's 512: one per node at a time
        jobs = [submit_api(api, member, name=f"mem-{i}", gpus=1, memory_gb=400, max_runtime_minutes=30)
                for i in range(6)]
    for minutes in (0, 30, 31, 60, 61):
        beat(world, t0 + timedelta(minutes=minutes))
    assert all(reload(j).status != Job.Status.QUEUED for j in jobs)
    with time_machine.travel(t0 + timedelta(hours=4), tick=False):
        client = api(platform_admin)
        response = client.post("/api/v1/what-if/", {
            "pool": world.pool.name, "window_start": (t0 - timedelta(minutes=5)).isoformat(),
            "window_end": (t0 + timedelta(hours=3)).isoformat(),
            "changes": [{"kind": "quota", "tenant": "alpha", "gpu_model": "H100-80G", "gpus": 16}]}, format="json")
        assert response.status_code == 202, response.content
        run_id = response.json()["id"]
        assert whatif_execute(run_id=run_id) == WhatIfRun.Status.DONE
        body = client.get(f"/api/v1/what-if/{run_id}/").json()
        assert body["result"]["baseline"]["binding"]["top"] == "memory_gb"
        overall = body["binding"][0]
        assert overall["tenant"] == "All tenants" and overall["dimension"] == "memory_gb"
        assert overall["baseline"].startswith("memory bound 100.0% of waiting time")
        chinese = client.get(f"/api/v1/what-if/{run_id}/", HTTP_ACCEPT_LANGUAGE="zh-hans").json()
        assert chinese["binding"][0]["baseline"].startswith("100.0% 的等待时间受限于内存")
        client.force_login(platform_admin)
        page = client.get(f"/what-if/{run_id}/").content.decode()
        assert "What bound the waiting time" in page and "memory bound 100.0% of waiting time" in page
