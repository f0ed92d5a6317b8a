"""Beat's heartbeat task: scheduled every HEALTH_HEARTBEAT_SECONDS, it keeps an idle worker's
heartbeat fresh (the task_postrun signal records it)."""
from celery import shared_task


@shared_task(name="portal.heartbeat", ignore_result=True)
def heartbeat() -> bool:
    return True
