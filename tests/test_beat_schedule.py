"""Every periodic service runs in the live system: each `*_due` / `*_expire` service that needs no
arguments is called by a registered task, and that task is in the one beat table."""
import importlib
import inspect
import pkgutil

from celery import current_app
from django.conf import settings

DOMAIN = ("quotas", "scheduler", "audit")


def _periodic_services():
    for app in DOMAIN:
        package = importlib.import_module(app)
        for info in pkgutil.walk_packages(package.__path__, prefix=f"{app}."):
            if ".migrations" in info.name or ".management" in info.name or info.name.endswith(".tasks"):
                continue
            module = importlib.import_module(info.name)
            for name, fn in inspect.getmembers(module, inspect.isfunction):
                if fn.__module__ != module.__name__ or not name.endswith(("_due", "_expire")) or name.startswith("_"):
                    continue
                required = [p for p in inspect.signature(fn).parameters.values() if p.default is p.empty]
                if not required:
                    yield f"{module.__name__}.{name}", name


def _tasks_calling(service_name: str) -> set[str]:
    return {task_name for task_name, task in current_app.tasks.items() if not task_name.startswith("celery.")
            and service_name in inspect.getsource(task.run)}


def test_every_periodic_service_has_a_task_in_the_beat_table():
    scheduled = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    services = dict(_periodic_services())
    assert {"quotas.services.quota_activate_due", "quotas.services.node_maintenance_expire",
            "quotas.leases.expiry.lease_expire_due", "scheduler.preemption.stop.preemption_grace_due"} <= set(services)
    unscheduled = {path: sorted(_tasks_calling(name)) for path, name in services.items()
                   if not _tasks_calling(name) & scheduled}
    assert unscheduled == {}


def test_every_beat_entry_names_a_registered_task():
    assert {e["task"] for e in settings.CELERY_BEAT_SCHEDULE.values()} - set(current_app.tasks) == set()


def test_cluster_work_has_its_own_queue_so_decisions_never_wait_behind_it():
    router = current_app.amqp.router
    for name in ("scheduler.backend_tick_pool", "scheduler.backend_tick_fanout", "scheduler.run_stop",
                 "scheduler.run_signal", "scheduler.inventory_sync", "scheduler.native_intake"):
        assert name in current_app.tasks, name
        assert router.route({}, name)["queue"].name == "cluster", name
    for name in ("scheduler.evaluate_pool", "scheduler.evaluate_all_pools", "scheduler.preemption_grace_tick"):
        assert name in current_app.tasks, name
        assert router.route({}, name)["queue"].name == "celery", name
    # A worker started without -Q consumes both queues: one worker still runs everything.
    assert {q.name for q in current_app.amqp.queues.values()} >= {"celery", "cluster"}
