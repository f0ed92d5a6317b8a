"""`/metrics` for Prometheus: a collector that reads the database at scrape time, so every worker process
serves the same numbers, behind a bearer token (`METRICS_TOKEN`). Production without a token serves nothing
(`METRICS_REQUIRE_TOKEN`): queue depths per tenant-facing pool are not for anonymous readers."""
import hmac
from datetime import timedelta

from django.conf import settings
from django.db.models import Count, DurationField, ExpressionWrapper, F, Q, Sum
from django.http import HttpResponse
from django.utils import timezone
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.core import (
    CollectorRegistry,
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
)

from audit.models import AuditEvent
from quotas.leases.models import Lease
from scheduler.models import PENDING_STATUSES, Job

WAIT_BUCKETS_SECONDS = (10, 30, 60, 300, 900, 1800, 3600, 4 * 3600, 12 * 3600, 24 * 3600)
WAIT_WINDOW = timedelta(hours=24)
TOKEN_REQUIRED = "A valid bearer token is required."
TOKEN_NOT_SET = "Metrics are closed: set METRICS_TOKEN (production requires one) and scrape with it."
# A pending job the cycle has not evaluated yet has no wait code.
NOT_EVALUATED = "NOT_EVALUATED"


class PortalCollector:
    """Each metric is one aggregate query; nothing is kept in process memory between scrapes."""

    def collect(self):
        depth = GaugeMetricFamily("gpu_portal_queue_depth", "Pending jobs per pool, GPU model and wait code",
                                  labels=["pool", "gpu_model", "wait_code"])
        for row in Job.objects.filter(status__in=PENDING_STATUSES) \
                .values("pool__name", "gpu_model__name", "wait_code") \
                .annotate(n=Count("id")).order_by("pool__name", "gpu_model__name", "wait_code"):
            depth.add_metric([row["pool__name"], row["gpu_model__name"], row["wait_code"] or NOT_EVALUATED], row["n"])
        yield depth

        counts = dict(AuditEvent.objects.filter(event_type__in=("job.admitted", "job.preempted"))
                      .order_by().values("event_type").annotate(n=Count("id")).values_list("event_type", "n"))
        admissions = CounterMetricFamily("gpu_portal_admissions", "Jobs admitted by the scheduler")
        admissions.add_metric([], counts.get("job.admitted", 0))
        yield admissions
        preemptions = CounterMetricFamily("gpu_portal_preemptions", "Jobs preempted")
        preemptions.add_metric([], counts.get("job.preempted", 0))
        yield preemptions

        yield self._wait_histogram()

        leases = GaugeMetricFamily("gpu_portal_leases_active", "Open leases (active or reclaiming)",
                                   labels=["pool", "gpu_model"])
        for row in Lease.objects.filter(state__in=Lease.OPEN_STATES).values("pool__name", "gpu_model__name") \
                .annotate(n=Count("id")).order_by("pool__name", "gpu_model__name"):
            leases.add_metric([row["pool__name"], row["gpu_model__name"]], row["n"])
        yield leases

    def _wait_histogram(self) -> HistogramMetricFamily:
        waited = ExpressionWrapper(F("started_at") - F("submitted_at"), output_field=DurationField())
        buckets = {f"le_{b}": Count("id", filter=Q(waited__lte=timedelta(seconds=b))) for b in WAIT_BUCKETS_SECONDS}
        row = Job.objects.filter(started_at__gte=timezone.now() - WAIT_WINDOW).annotate(waited=waited) \
            .aggregate(total=Count("id"), seconds=Sum("waited"), **buckets)
        hist = HistogramMetricFamily("gpu_portal_job_wait_seconds",
                                     "Submit-to-start wait of jobs started in the last 24 hours")
        seconds = row["seconds"].total_seconds() if row["seconds"] else 0.0
        hist.add_metric([], [(str(float(b)), row[f"le_{b}"]) for b in WAIT_BUCKETS_SECONDS]
                        + [("+Inf", row["total"])], sum_value=seconds)
        return hist


def _authorised(request) -> bool:
    token = getattr(settings, "METRICS_TOKEN", "")
    if not token:
        return not settings.METRICS_REQUIRE_TOKEN
    header = request.headers.get("Authorization", "")
    return header.startswith("Bearer ") and hmac.compare_digest(header[7:].encode(), token.encode())


def metrics_view(request):
    if not _authorised(request):
        return HttpResponse(TOKEN_REQUIRED if settings.METRICS_TOKEN else TOKEN_NOT_SET, status=401, content_type="text/plain",
                            headers={"WWW-Authenticate": "Bearer"})
    registry = CollectorRegistry(auto_describe=False)
    registry.register(PortalCollector())
    return HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)
