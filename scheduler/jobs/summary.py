"""Counts for dashboards: jobs by status and waiting jobs by wait code, for a pool or a tenant, in two
aggregate queries, so a dashboard never needs the full listing."""
from django.db.models import Count, QuerySet
from django.utils.translation import gettext

from scheduler.engine.reasons import PRECEDENCE
from scheduler.engine.texts import CODE_TITLES
from scheduler.models import PENDING_STATUSES, Job


def job_summary(jobs: QuerySet[Job]) -> dict:
    by_status = dict(jobs.order_by().values_list("status").annotate(n=Count("id")))
    by_code = dict(jobs.filter(status__in=PENDING_STATUSES).exclude(wait_code="").order_by()
                   .values_list("wait_code").annotate(n=Count("id")))
    known = [code for code in PRECEDENCE if code in by_code]
    other = sorted(code for code in by_code if code not in CODE_TITLES)
    return {
        "total": sum(by_status.values()),
        "by_status": {status: by_status.get(status, 0) for status in Job.Status.values},
        "waiting": sum(by_status.get(status, 0) for status in PENDING_STATUSES),
        "wait_codes": [{"code": code, "title": gettext(CODE_TITLES[code]) if code in CODE_TITLES else code,
                        "count": by_code[code]} for code in (*known, *other)],
    }
