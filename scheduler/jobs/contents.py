"""What a job runs (command, script, working directory, environment variables): who may read it, what
everyone else sees instead, and a platform admin's audited reveal (DESIGN.md §8: owner and tenant
admins only; the schema calls the variables secrets)."""
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils.translation import gettext_lazy as _

from audit.chain.services import audit_record
from quotas.access import is_platform_admin
from quotas.models import Membership
from scheduler.models import Job

REVEAL_NEEDS_PLATFORM_ADMIN = _("Only a platform admin may reveal what another tenant's job runs.")
REVEAL_NEEDS_REASON = _("Say why you need to see what this job runs (at least {min} characters).")
REVEAL_REASON_TOO_LONG = _("At most {limit} characters.")
REVEAL_REASON_MIN = 10
REVEAL_REASON_MAX = 500
CONTENTS_REVEALED = "job.contents_revealed"


def may_read_contents(user, job: Job) -> bool:
    """The job's owner and its tenant's admins. Platform roles alone are not enough: they reveal."""
    if not user.is_authenticated:
        return False
    if job.submitted_by_id is not None and job.submitted_by_id == user.pk:
        return True
    return Membership.objects.filter(user=user, tenant_id=job.tenant_id,
                                     role=Membership.Role.TENANT_ADMIN).exists()


def contents_of(job: Job) -> dict:
    return {"command": job.command, "script": job.script, "working_dir": job.working_dir,
            "variables": dict(job.env_vars or {})}


def contents_outline(job: Job) -> dict:
    """What a reader without the right sees: that the parts exist, never their text or names."""
    return {"has_command": bool(job.command), "has_script": bool(job.script),
            "has_working_dir": bool(job.working_dir), "variable_count": len(job.env_vars or {})}


def _checked_reason(reason: str) -> str:
    reason = (reason or "").strip()
    if len(reason) < REVEAL_REASON_MIN:
        raise ValidationError({"reason": [REVEAL_NEEDS_REASON.format(min=REVEAL_REASON_MIN)]})
    if len(reason) > REVEAL_REASON_MAX:
        raise ValidationError({"reason": [REVEAL_REASON_TOO_LONG.format(limit=REVEAL_REASON_MAX)]})
    return reason


def job_contents_reveal(*, actor, job: Job, reason: str) -> dict:
    """A platform admin reads what a job runs, with a reason; the audit row names who, which job and why
    (never the contents). Readers who already may read get the contents without a row."""
    if may_read_contents(actor, job):
        return contents_of(job)
    if not is_platform_admin(actor):
        raise PermissionDenied(REVEAL_NEEDS_PLATFORM_ADMIN)
    reason = _checked_reason(reason)
    with transaction.atomic():
        audit_record(event_type=CONTENTS_REVEALED, target=job, actor=actor, tenant=job.tenant,
                     payload={"job": job.pk, "name": job.name, "reason": reason})
    return contents_of(job)
