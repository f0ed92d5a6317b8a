"""The real Slurm path under concurrency: bulk submits from several clients while ticks report runs never
deadlock or lose a job, two ticks of one pool at once never make two Slurm jobs for one attempt, and a start
goes out while another worker polls the pool."""
import threading

import pytest
from django.db import connections
from django.utils import timezone

from quotas.models import Pool
from scheduler.sync.pool_lock import POLL, pool_lock
from scheduler.sync.tick import backend_tick
from scheduler.sync import tick as tick_module
from scheduler.backends.registry import backend_for_pool
from scheduler.runs.services import run_record_report
from scheduler.cycle.services import scheduler_cycle_run
from scheduler.models import Job, JobRun, TickRequest
from tests import factories
from tests.slurm.conftest import slurm
from tests.slurm.helpers import api_for, squeue, status, submit, until
from tests.workers import in_thread

CLIENTS, REQUESTS, BULK = 4, 5, 100


def _body(world, client: int, request: int) -> dict:
    # Mixed tenants and GPU models in one request: each insert's foreign-key checks touch several rows that
    # a run report used to lock whole.
    return {"jobs": [{"tenant": "alpha" if i % 2 else "beta", "project": "train", "name": f"c{client}-r{request}-{i}",
                      "workload_class": "training", "pool": world.pool.name,
                      "gpu_model": "H100-80G" if i % 3 else "A100-40G", "gpus": 1, "command": "sleep 1"}
                     for i in range(BULK)]}


@pytest.mark.django_db(transaction=True)
def test_four_clients_bulk_submitting_while_ticks_report_runs_lose_nothing(slurm_world):
    from quotas.models import Membership, Project, Tenant

    beta = Tenant.objects.create(slug="beta", name="Beta team")
    Project.objects.create(tenant=beta, slug="train", name="Training")
    user = slurm_world.member
    Membership.objects.create(user=user, tenant=beta, role=Membership.Role.MEMBER)
    # Runs that report at every poll while the clients submit: every GPU of the cluster busy.
    running = [submit(slurm_world, name=f"long-{i}", command="sleep 300", gpu_model=("H100-80G", "A100-40G")[i % 3 > 0])
               for i in range(12)]
    scheduler_cycle_run(pool=slurm_world.pool)
    until(lambda: Job.objects.filter(pk__in=[j.pk for j in running], status=Job.Status.RUNNING).count() == 12,
          step=backend_tick, what="twelve jobs running")
    answers: list[int] = []
    failures: list[BaseException] = []
    done = threading.Event()

    def client(index: int) -> None:
        try:
            api = api_for(user)
            for request in range(REQUESTS):
                answers.append(api.post("/api/v1/jobs/bulk/", _body(slurm_world, index, request),
                                        format="json").status_code)
        except BaseException as exc:  # noqa: BLE001 - surfaced in the main thread
            failures.append(exc)
        finally:
            connections.close_all()

    def ticker() -> None:
        try:
            pool = Pool.objects.get(pk=slurm_world.pool.pk)
            while not done.is_set():
                scheduler_cycle_run(pool=pool)
                result = backend_tick()
                assert result.errors == 0, result
        except BaseException as exc:  # noqa: BLE001
            failures.append(exc)
        finally:
            connections.close_all()

    def reporter() -> None:
        # What every tick does for each active run, as fast as the cluster answers: poll, then report.
        try:
            backend = backend_for_pool(Pool.objects.get(pk=slurm_world.pool.pk))
            while not done.is_set():
                active = list(JobRun.objects.filter(state="running").select_related("job"))
                backend._squeue = backend._listing = None  # a fresh listing each round, as each tick reads
                for run_id, report in backend.poll(active, now=timezone.now()).items():
                    run_record_report(run=next(r for r in active if r.pk == run_id), report=report,
                                      now=timezone.now())
        except BaseException as exc:  # noqa: BLE001
            failures.append(exc)
        finally:
            connections.close_all()

    tick_thread = threading.Thread(target=ticker)
    tick_thread.start()
    reporters = [threading.Thread(target=reporter) for _ in range(2)]
    for t in reporters:
        t.start()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    done.set()
    tick_thread.join(timeout=120)
    for t in reporters:
        t.join(timeout=60)
    assert not failures, failures
    assert answers == [201] * (CLIENTS * REQUESTS), answers
    assert Job.objects.filter(name__startswith="c").count() == CLIENTS * REQUESTS * BULK


@pytest.mark.django_db(transaction=True)
def test_two_ticks_of_one_pool_at_once_make_one_slurm_job_per_attempt(slurm_world, monkeypatch):
    jobs = [submit(slurm_world, name=f"twin-{i}", command="sleep 30", gpu_model=("H100-80G", "A100-40G")[i % 2])
            for i in range(6)]
    assert scheduler_cycle_run(pool=slurm_world.pool).admitted == 6
    # The first tick is held inside its starts (before any sbatch) while a second tick of the same pool runs
    # from start to end: the race of two backend_tick_pool tasks, made certain.
    first_in_start, second_done = threading.Event(), threading.Event()
    failures: list[BaseException] = []
    real_backend_for_pool = tick_module.backend_for_pool

    def backend_for_pool(pool):
        backend = real_backend_for_pool(pool)
        if threading.current_thread().name == "first-tick":
            start = backend.start

            def held_start(request, *, now):
                first_in_start.set()
                second_done.wait(timeout=30)
                return start(request, now=now)

            backend.start = held_start
        return backend

    monkeypatch.setattr(tick_module, "backend_for_pool", backend_for_pool)

    def tick(done: threading.Event | None = None) -> None:
        try:
            backend_tick(pools=[Pool.objects.get(pk=slurm_world.pool.pk)])
        except BaseException as exc:  # noqa: BLE001
            failures.append(exc)
        finally:
            if done is not None:
                done.set()
            connections.close_all()

    first = threading.Thread(target=tick, name="first-tick")
    first.start()
    assert first_in_start.wait(timeout=30)
    second = threading.Thread(target=tick, args=(second_done,), name="second-tick")
    second.start()
    second.join(timeout=120)
    first.join(timeout=120)
    assert not failures, failures
    until(lambda: JobRun.objects.filter(job__in=jobs, state__in=("pending", "running")).count() == 6,
          step=backend_tick, what="every job submitted")
    names = [j["name"] for j in squeue(slurm_world, every=True)]
    for job in jobs:
        assert names.count(f"portal-{job.pk}-1") == 1, sorted(names)


@pytest.mark.django_db(transaction=True)
def test_a_start_goes_out_while_another_worker_holds_the_poll(slurm_world):
    running = submit(slurm_world, name="running", command="sleep 60")
    scheduler_cycle_run(pool=slurm_world.pool)
    until(lambda: status(running) == Job.Status.RUNNING, step=backend_tick, what="a run to poll")
    job = submit(slurm_world, name="admitted", command="sleep 60", gpu_model="A100-40G")
    assert scheduler_cycle_run(pool=slurm_world.pool).admitted == 1
    holding, release, failures = threading.Event(), threading.Event(), []

    def poller() -> None:  # another worker, in the midst of the pool's poll
        with pool_lock(POLL, slurm_world.pool.pk) as mine:
            assert mine
            holding.set()
            assert release.wait(timeout=60)

    thread = in_thread(poller, "poller", failures)
    assert holding.wait(timeout=30)
    try:
        result = backend_tick(pools=[slurm_world.pool])
        assert result.skipped == 1 and result.errors == 0, result  # the poll was the other worker's
        run = job.runs.get()
        assert run.state == JobRun.State.PENDING and run.external_id
        assert [j["name"] for j in squeue(slurm_world, every=True) if str(j["job_id"]) == run.external_id] == [
            f"portal-{job.pk}-1"]
        assert TickRequest.objects.filter(pool=slurm_world.pool, kind=TickRequest.Kind.POLL).exists()
    finally:
        release.set()
        thread.join(timeout=60)
    assert not failures, failures
    # The poll, once free, takes the request and sees the job Slurm runs.
    until(lambda: status(job) == Job.Status.RUNNING, step=backend_tick, what="the job running")
    assert job.runs.count() == 1


def test_a_twin_found_later_is_cancelled_and_audited(slurm_world):
    from audit.models import AuditEvent

    job = submit(slurm_world, name="twinned", command="sleep 60")
    scheduler_cycle_run(pool=slurm_world.pool)
    until(lambda: status(job) == Job.Status.RUNNING, step=backend_tick, what="the job running")
    kept = job.runs.get().external_id
    # A second Slurm job for the same attempt, as a start that raced before the start lock left one.
    twin = slurm(slurm_world.cluster, "sbatch", "--parsable", f"--partition={slurm_world.cluster.partition}",
                 f"--job-name=portal-{job.pk}-1", "--gres=gpu:a100:1", f"--chdir={slurm_world.jobs_dir}",
                 "--wrap=sleep 60").strip()
    until(lambda: AuditEvent.objects.filter(event_type="job.twin_cancelled", object_id=str(job.pk)).exists(),
          step=backend_tick, what="the twin cancelled")
    event = AuditEvent.objects.get(event_type="job.twin_cancelled", object_id=str(job.pk))
    assert event.payload["cancelled"] == [twin] and event.payload["attempt"] == 1
    assert job.runs.get().external_id == kept and status(job) == Job.Status.RUNNING
    states = {str(j["job_id"]): j["job_state"] for j in squeue(slurm_world, every=True)}
    assert states[twin] in ("CANCELLED", "COMPLETING") and states[kept] == "RUNNING", states
