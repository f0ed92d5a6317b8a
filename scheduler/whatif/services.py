"""Writes for what-if runs: create (and enqueue), execute (claim, replay with progress, store), and attach
a finished result as evidence to a decision. Each writes its audit event in the same transaction."""
from datetime import datetime

from celery import current_app
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from audit.chain.services import audit_record
from quotas.access import PLATFORM_ADMIN, QUOTA_APPROVER, has_platform_role
from quotas.models import Pool
from scheduler.whatif import errors
from scheduler.whatif.models import WhatIfRun
from scheduler.whatif.sacct_parse import parse_sacct
from scheduler.whatif.sim.whatif import run_whatif

PROGRESS_STEP = 0.02  # write progress at most this often (share of the run)
# Enqueued by name after commit: the task module builds on this one, not the reverse.
RUN_TASK = "whatif.run"
# sacct's local times (ISO without an offset) are read in the portal's time zone; epoch seconds need none.
SITE_TIME_ZONE = timezone.get_default_timezone
SACCT_LABEL = _("Slurm history (sacct) under the portal's rules")


def may_run_whatif(user) -> bool:
    return user is not None and has_platform_role(user, PLATFORM_ADMIN, QUOTA_APPROVER)


def _payload(run: WhatIfRun, **extra) -> dict:
    return {"pool": run.pool.name, "window_start": run.window_start.isoformat(),
            "window_end": run.window_end.isoformat(), "changes": run.changes, "label": run.label, **extra}


def whatif_create(*, actor, pool: Pool, window_start: datetime, window_end: datetime, changes: list[dict],
                  label: str = "", quota_request=None, sacct: str = "") -> WhatIfRun:
    """`sacct`: a site's own history to replay (what-if before adoption), already parsed without error."""
    if not may_run_whatif(actor):
        raise PermissionDenied(errors.NOT_ALLOWED)
    with transaction.atomic():
        run = WhatIfRun.objects.create(pool=pool, window_start=window_start, window_end=window_end,
                                       changes=list(changes), label=label[:200], created_by=actor,
                                       quota_request=quota_request, sacct=sacct)
        extra = {"source": "sacct", "sacct_lines": len(sacct.splitlines())} if sacct else {}
        audit_record(event_type="whatif.created", target=run, actor=actor, payload=_payload(run, **extra))
        run_id = run.pk
        transaction.on_commit(lambda: current_app.signature(RUN_TASK, args=(run_id,)).delay())
    return run


def whatif_import_sacct(*, actor, pool: Pool, file: str, window_start: datetime, window_end: datetime,
                        label: str = "") -> WhatIfRun:
    """What-if before adoption: replay a Slurm site's own history (validated sacct text) on `pool` under the
    portal's rules, as a run like any other (the baseline is the portal's rules, no change proposed)."""
    return whatif_create(actor=actor, pool=pool, window_start=window_start, window_end=window_end, changes=[],
                         label=label or str(SACCT_LABEL), sacct=file)


def whatif_execute(*, run_id: int, now: datetime | None = None) -> str | None:
    """Claim a queued run (compare-and-swap, so two workers never replay it twice), replay the baseline
    and the proposal outside any transaction, then store the result. Returns the final status, or None
    when another worker had claimed it."""
    from scheduler.whatif.sacct_trace import sacct_trace
    from scheduler.whatif.selectors import trace_build

    now = now or timezone.now()
    if not WhatIfRun.objects.filter(pk=run_id, status=WhatIfRun.Status.QUEUED).update(
            status=WhatIfRun.Status.RUNNING, started_at=now, progress=0.0):
        return None
    run = WhatIfRun.objects.select_related("pool").get(pk=run_id)
    written = [0.0]

    def progress(share: float) -> None:
        if share - written[0] >= PROGRESS_STEP or share >= 1.0:
            written[0] = share
            WhatIfRun.objects.filter(pk=run_id, status=WhatIfRun.Status.RUNNING).update(progress=min(share, 1.0))

    try:
        if run.sacct:
            trace, imported = sacct_trace(pool=run.pool, jobs=parse_sacct(run.sacct, tz=SITE_TIME_ZONE()),
                                          start=run.window_start, end=run.window_end, now=now)
        else:
            trace, imported = trace_build(pool=run.pool, start=run.window_start, end=run.window_end), None
        result = run_whatif(trace, run.changes, progress=progress)
        if imported is not None:
            result["import"] = imported
    except Exception as failure:  # stored on the run, so the page says it failed instead of spinning
        with transaction.atomic():
            WhatIfRun.objects.filter(pk=run_id).update(status=WhatIfRun.Status.FAILED, finished_at=timezone.now(),
                                                       error=f"{type(failure).__name__}: {failure}"[:300])
            audit_record(event_type="whatif.failed", target=run, payload=_payload(run, error=type(failure).__name__))
        raise
    with transaction.atomic():
        WhatIfRun.objects.filter(pk=run_id).update(status=WhatIfRun.Status.DONE, progress=1.0, result=result,
                                                   finished_at=timezone.now())
        audit_record(event_type="whatif.completed", target=run, payload=_payload(
            run, jobs=result["baseline"]["jobs"], fidelity=result["fidelity"]))
    return WhatIfRun.Status.DONE


def _evidence(result: dict) -> dict:
    """The figures kept in the audit chain: per tenant, baseline against proposal."""
    rows = []
    for row in result["comparison"]:
        b, p = row["baseline"], row["proposal"]
        rows.append({"tenant": row["tenant"],
                     **{f"{key}_{side}": figures.get(key) for side, figures in (("baseline", b), ("proposal", p))
                        for key in ("wait_p50_seconds", "wait_p95_seconds", "gpu_hours", "borrowed_gpu_hours",
                                    "preemptions")}})
    return {"tenants": rows, "utilisation_baseline": result["baseline"]["utilisation"]["overall"],
            "utilisation_proposal": result["proposal"]["utilisation"]["overall"],
            "fairness_baseline": result["baseline"]["fairness"], "fairness_proposal": result["proposal"]["fairness"],
            "fidelity": result["fidelity"]}


def whatif_attach(*, actor, run: WhatIfRun, decision: str, now: datetime | None = None) -> WhatIfRun:
    """Attach a finished result to a decision (a quota request, a switch change) as audit evidence."""
    if not may_run_whatif(actor):
        raise PermissionDenied(errors.NOT_ALLOWED)
    now = now or timezone.now()
    with transaction.atomic():
        run = WhatIfRun.objects.select_for_update(of=("self",)).select_related(
            "pool", "quota_request__tenant").defer("sacct").get(pk=run.pk)
        if run.status != WhatIfRun.Status.DONE:
            raise ValidationError(errors.NOT_DONE.format(id=run.pk, status=run.status), code="not_done")
        run.attached_at = now
        run.save(update_fields=["attached_at"])
        tenant = run.quota_request.tenant if run.quota_request_id else None
        audit_record(event_type="whatif.attached", target=run, actor=actor, tenant=tenant, occurred_at=now,
                     payload=_payload(run, decision=decision[:200], quota_request_id=run.quota_request_id,
                                      evidence=_evidence(run.result)))
    return run
