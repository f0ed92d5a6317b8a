"""The what-if worker task: thin, takes the run's id; the service's compare-and-swap makes it idempotent."""
from celery import shared_task

from scheduler.whatif.services import RUN_TASK, whatif_execute


@shared_task(name=RUN_TASK)
def whatif_run(run_id: int) -> str | None:
    return whatif_execute(run_id=run_id)
