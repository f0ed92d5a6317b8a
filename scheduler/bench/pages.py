"""Page and API timings for bench_cycle: the team queue page (a page of 50) and its unchanged live
refresh, and the job list API, served in-process through the whole middleware stack (the server's
share of a request: no network). Reports p95 milliseconds and bytes."""
import time

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db.models import Count
from django.test import Client

from quotas.models import Membership
from scheduler.models import PENDING_STATUSES, Job

SAMPLES = 20


def _p95(values: list[float]) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(0.95 * (len(values) - 1))))]


def _timed(get, samples: int = SAMPLES) -> tuple[float, int, object]:
    timings, response = [], None
    for _ in range(samples):
        start = time.perf_counter()
        response = get()
        timings.append((time.perf_counter() - start) * 1000.0)
    return _p95(timings), len(response.content), response


def page_figures(world) -> dict:
    busiest = (Job.objects.filter(pool=world.pool, status__in=PENDING_STATUSES).values("tenant_id")
               .annotate(n=Count("id")).order_by("-n").first())
    tenant = next(t for t in world.tenants if t.pk == busiest["tenant_id"])
    user = get_user_model().objects.create_user(username=f"{world.prefix}reader")
    Membership.objects.create(user=user, tenant=tenant, role=Membership.Role.MEMBER)
    host = next((h for h in settings.ALLOWED_HOSTS if h not in ("*", "")), "localhost").lstrip(".")
    client = Client(HTTP_HOST=host)
    client.force_login(user)
    secure = bool(getattr(settings, "SECURE_SSL_REDIRECT", False))
    url = f"/tenants/{tenant.slug}/queue/"
    page_ms, page_bytes, page = _timed(lambda: client.get(url, secure=secure))
    etag = client.get(url, secure=secure, HTTP_HX_REQUEST="true").get("ETag", "")  # what the live region polls with
    poll_ms, poll_bytes, poll = _timed(lambda: client.get(url, secure=secure, HTTP_HX_REQUEST="true",
                                                          HTTP_IF_NONE_MATCH=etag))
    api_ms, api_bytes, _ = _timed(lambda: client.get("/api/v1/jobs/", {"tenant": tenant.slug, "status": "queued"},
                                                     secure=secure))
    return {"page_tenant_waiting": busiest["n"], "queue_page_p95_ms": round(page_ms, 1), "queue_page_bytes": page_bytes,
            "queue_page_status": page.status_code, "unchanged_refresh_p95_ms": round(poll_ms, 1),
            "unchanged_refresh_status": poll.status_code, "unchanged_refresh_bytes": poll_bytes,
            "job_list_api_p95_ms": round(api_ms, 1), "job_list_api_bytes": api_bytes}
