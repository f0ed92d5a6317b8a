"""The demo's stream of jobs and its reclaim scene (development only, from beat)."""
from celery import shared_task

from portal.demo_jobs import demo_jobs_top_up
from portal.demo_scenes import demo_reclaim_scene


@shared_task(name="scheduler.demo_top_up")
def demo_top_up() -> int:
    demo_reclaim_scene()
    return demo_jobs_top_up()
