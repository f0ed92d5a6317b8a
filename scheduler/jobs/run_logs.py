"""Where each run of a job wrote its output on the cluster, for the job page. Shown only to those who may
see what the job runs (its owner, tenant admins, platform admins): paths can name datasets."""
from scheduler.backends.base import BackendError
from scheduler.backends.registry import backend_for_pool
from scheduler.models import Job


def run_log_files(job: Job, *, visible: bool) -> list:
    runs = list(job.runs.all())
    backend = None
    if visible and runs:
        try:
            backend = backend_for_pool(job.pool)
        except BackendError:
            backend = None  # the page still shows the runs; the paths come back with the pool's settings
    for run in runs:
        run.log_files = backend.log_files(run) if backend is not None else ()
    return runs
