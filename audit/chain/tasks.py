"""The sealer as a periodic task; beat runs it every AUDIT_SEAL_INTERVAL_SECONDS."""
from celery import shared_task

from audit.chain.sealing import audit_seal


@shared_task(name="audit.seal")
def seal_audit_chain() -> int:
    return audit_seal()
