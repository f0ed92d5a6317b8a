"""What a victim hears: the notice of a planned stop (and its run's checkpoint signal), and the notice that a
stop was called off."""
from datetime import datetime


from scheduler.models import Preemption
from scheduler.notices import content
from scheduler.notices.models import Notice
from scheduler.notices.selectors import notice_recipients
from scheduler.notices.services import notice_enqueue
from scheduler.preemption.events import gpu_hours_at_risk
from scheduler.preemption.rules import REASONS, WITHDRAWN_WHY
from scheduler.runs.services import preemption_signal, run_signal_request  # noqa: F401 (preemption_signal: the name callers knew)


def stop_notify(p: Preemption, now: datetime) -> Notice:
    victim = p.victim
    by_tenant = p.preemptor.tenant.name if p.preemptor_id else ""
    common = dict(content.victim_from_job(victim), reason=REASONS.get(p.rule, p.rule), reason_code=p.rule, at=now,
                  grace_deadline=p.grace_until, gpu_hours_at_risk=gpu_hours_at_risk(victim, now),
                  last_checkpoint_at=victim.last_checkpoint_at)
    if p.kind == Preemption.Kind.RECLAIM:
        built = content.reclaim_notice(**common, reclaiming_tenant=by_tenant, lease_id=p.lease_id)
    else:
        built = content.preemption_notice(**common, preempting_tenant=by_tenant)
    notice = notice_enqueue(kind=built.kind, tenant=victim.tenant, job_id=victim.pk, facts=built.facts,
                            subject=built.subject, body=built.body, dedupe_key=f"preemption-{p.pk}",
                            recipients=notice_recipients(tenant=victim.tenant, owner=victim.submitted_by))
    Preemption.objects.filter(pk=p.pk).update(notice_id=notice.pk)
    p.notice_id = notice.pk
    # The job itself hears it too: its run gets the checkpoint signal (Slurm: USR1 to the batch step).
    run_signal_request(job=victim, signal=preemption_signal())
    return notice


def withdrawn_notify(p: Preemption, now: datetime, why: str, at_risk: float) -> Notice:
    victim = p.victim
    built = content.stop_withdrawn_notice(
        **content.victim_from_job(victim), reason=WITHDRAWN_WHY[why], reason_code=why, at=now,
        grace_deadline=p.grace_until, gpu_hours_at_risk=at_risk,
        last_checkpoint_at=victim.last_checkpoint_at, reclaim=p.kind == Preemption.Kind.RECLAIM,
        by_tenant=p.preemptor.tenant.name if p.preemptor_id else "", lease_id=p.lease_id)
    return notice_enqueue(kind=built.kind, tenant=victim.tenant, job_id=victim.pk, facts=built.facts,
                          subject=built.subject, body=built.body, dedupe_key=f"preemption-{p.pk}-withdrawn",
                          recipients=notice_recipients(tenant=victim.tenant, owner=victim.submitted_by))
