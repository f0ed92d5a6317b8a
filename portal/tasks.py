"""The demo's stream of jobs (development only, from beat)."""
from celery import shared_task

from portal.demo_jobs import demo_jobs_top_up


@shared_task(name="scheduler.demo_top_up")
def demo_top_up() -> int:
    return demo_jobs_top_up()
