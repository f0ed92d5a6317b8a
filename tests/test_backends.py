"""Backend choice per pool and the Slurm backend's parsing, without a cluster: production refuses the
simulated backend unless allowed, pool settings are validated with field messages, a failing backend
call is recorded on its run with backoff and does not stop the tick, Slurm's output parses."""
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from scheduler.backends import base as B
from scheduler.backends.registry import backend_for_pool, backend_settings_validate
from scheduler.backends.slurm import parse
from scheduler.backends.slurm.config import validate
from scheduler.runs.services import retry_delay

SLURM_OK = {"partition": "gpu", "gres_models": {"h100": "H100-80G"}}


def test_production_refuses_the_simulated_backend_unless_allowed(world, settings):
    settings.SCHEDULER_ALLOW_SIMULATED = False
    with pytest.raises(B.BackendError) as info:
        backend_for_pool(world.pool)
    assert str(info.value).startswith("Pool gpu-a uses the simulated backend, which production refuses")
    settings.SCHEDULER_ALLOW_SIMULATED = True
    assert backend_for_pool(world.pool).name == "simulated"


def test_a_refused_backend_leaves_admitted_jobs_admitted_and_says_so(world, settings):
    from scheduler.sync.tick import backend_tick
    from scheduler.backends.models import BackendStatus
    from tests.jobs import cycle, reload, submit

    job = submit(gpus=8)
    cycle(world)
    settings.SCHEDULER_ALLOW_SIMULATED = False
    assert backend_tick().started == 0
    assert reload(job).status == "admitted"
    assert not BackendStatus.objects.get(pool=world.pool).ok
    settings.SCHEDULER_ALLOW_SIMULATED = True
    assert backend_tick().started == 1
    assert BackendStatus.objects.get(pool=world.pool).ok


@pytest.mark.parametrize("values, field, message", [
    ({"gres_models": {"h100": "H100-80G"}}, "partition", "the governed Slurm partition is required"),
    ({"partition": "gpu"}, "gres_models", 'a map of GRES type to GPU model is required, e.g. {"h100": "H100-80G"}'),
    ({**SLURM_OK, "timeout_seconds": 0}, "timeout_seconds", "a number of seconds between 0 and 600"),
    ({**SLURM_OK, "qos_classes": {"high": "urgent"}}, "qos_classes", "workload classes are online_inference, "
     "evaluation, training, batch_inference, experiment, validation"),
    ({**SLURM_OK, "partiton": "typo"}, "settings", "unknown keys partiton"),
    ({**SLURM_OK, "rest_socket": "var/slurmrestd.sock"}, "rest_socket",
     'the absolute path of slurmrestd\'s unix socket, or "" to submit with sbatch'),
])
def test_slurm_settings_are_checked_field_by_field(values, field, message):
    assert validate(values) == {field: message}
    assert backend_settings_validate("slurm", values) == {"backend_settings": [f"{field}: {message}"]}


def test_valid_settings_and_unknown_backends():
    assert backend_settings_validate("slurm", SLURM_OK) == {}
    assert backend_settings_validate("k8s", {}) == {
        "backend": ["Unknown backend 'k8s': use one of simulated, slurm."]}


def test_a_failing_start_is_recorded_on_its_run_and_the_other_jobs_start(world, monkeypatch):
    from scheduler.sync.tick import backend_tick
    from scheduler.backends.simulated import SimulatedBackend
    from tests.jobs import cycle, reload, submit

    broken, fine = submit(gpus=8, name="broken"), submit(gpus=8, name="fine")
    cycle(world)
    original = SimulatedBackend.start

    def start(self, request, *, now):
        if request.job.name == "broken":
            raise B.BackendError("sbatch failed: Requested node configuration is not available")
        return original(self, request, now=now)

    monkeypatch.setattr(SimulatedBackend, "start", start)
    now = timezone.now()
    assert backend_tick(now=now).started == 1
    assert reload(fine).status == "running"
    run = broken.runs.get()
    assert (run.state, run.failures, run.last_error) == (
        "starting", 1, "sbatch failed: Requested node configuration is not available")
    assert run.next_retry_at == now + timedelta(seconds=5)
    backend_tick(now=now + timedelta(seconds=1))  # not due yet: not retried
    assert broken.runs.get().failures == 1
    monkeypatch.setattr(SimulatedBackend, "start", original)
    assert backend_tick(now=now + timedelta(seconds=6)).started == 1
    run = broken.runs.get()
    assert (run.state, run.failures, run.last_error) == ("running", 0, "")


def test_a_preempted_job_admitted_again_in_the_same_cycle_starts_on_that_tick(world):
    """Its old run is stopped first in the tick (freeing its nodes), then its new run starts: no tick lost."""
    from django.db import transaction

    from scheduler.sync.tick import backend_tick
    from scheduler.cycle.services import scheduler_cycle_run
    from scheduler.preemption.stop import stop_and_requeue
    from tests.jobs import reload, submit

    t0 = timezone.now().replace(microsecond=0)
    job = submit(gpus=8, name="victim", max_runtime_minutes=600)
    scheduler_cycle_run(pool=world.pool, now=t0)
    backend_tick(now=t0)
    assert reload(job).status == "running"
    later = t0 + timedelta(minutes=5)
    with transaction.atomic():
        stop_and_requeue(reload(job), later, cause="preemption")
    assert scheduler_cycle_run(pool=world.pool, now=later).admitted == 1  # the GPUs it held are free again
    assert backend_tick(now=later).started == 1
    first, second = job.runs.order_by("attempt")
    assert (first.state, first.ended_at) == ("stopped", later)
    assert (second.state, second.started_at) == ("running", later)
    assert (reload(job).status, job.started_at) == ("running", later)


def test_retry_backoff_doubles_up_to_five_minutes():
    assert [retry_delay(n).total_seconds() for n in (1, 2, 3, 7, 20)] == [5, 10, 20, 300, 300]


@pytest.mark.parametrize("text, names", [
    ("n-h100-1", ["n-h100-1"]),
    ("n-a100-[1-2],n-h100-1", ["n-a100-1", "n-a100-2", "n-h100-1"]),
    ("gpu[01-03,7]", ["gpu01", "gpu02", "gpu03", "gpu7"]),
    ("", []),
])
def test_host_lists_expand(text, names):
    assert parse.expand_hostlist(text) == names


def test_wait_status_exit_codes_and_gres():
    assert parse.exit_code(3 << 8) == 3
    assert parse.exit_code(9) == 137  # killed by SIGKILL
    assert parse.gres_gpus("gpu:h100:2(S:0)") == ("h100", 2)
    assert parse.gres_gpus("gres:gpu:a100:1") == ("a100", 1)
    assert parse.gres_gpus("") == ("", 0)


@pytest.mark.parametrize("state, outcome", [
    ("RUNNING", "running"), ("COMPLETED", "succeeded"), ("FAILED", "failed"), ("TIMEOUT", "failed"),
    ("CANCELLED", "cancelled"), ("NODE_FAIL", "requeued"), ("PREEMPTED", "requeued"), ("PENDING", "pending"),
])
def test_slurm_states_map_to_run_outcomes(state, outcome):
    report = parse.job_report({"job_id": 7, "job_state": state, "state_reason": "None", "exit_code": 0,
                               "start_time": 1_800_000_000, "end_time": 1_800_000_060, "nodes": "n1"})
    assert report.outcome == outcome
    if state == "TIMEOUT":
        assert report.reason == "TIMEOUT"


def test_the_polls_listing_reads_as_the_json_listing(monkeypatch):
    # Lines as `squeue -h --states=all -O parse.LISTING_FORMAT` printed them on the local Slurm (22.05): Slurm's
    # local times (in the TZ the CLI passes on, here Shanghai's), its wait status, "N/A" for a time it has not,
    # a user's name with the separator in it.
    monkeypatch.setenv("TZ", "Asia/Shanghai")
    time.tzset()
    out = ("12|gpu|FAILED|768|2026-12-07T16:47:43|2026-12-07T16:47:44|2026-12-07T16:47:45|n-a100-1|NonZeroExitCode|"
           "failed\n13|gpu|PENDING|0|2026-12-07T16:47:43|N/A|N/A||JobHeldUser|odd|name \n")
    failed, held = parse.listing_rows(out)
    assert failed == {"job_id": 12, "partition": "gpu", "job_state": "FAILED", "exit_code": 768,
                      "submit_time": 1796633263, "start_time": 1796633264, "end_time": 1796633265,
                      "nodes": "n-a100-1", "state_reason": "NonZeroExitCode", "name": "failed"}
    report = parse.job_report(failed)
    assert (report.outcome, report.exit_code, report.nodes, report.ended_at.timestamp()) == (
        "failed", 3, ("n-a100-1",), 1796633265)
    assert (held["name"], held["nodes"], held["start_time"], parse.job_report(held).reason) == (
        "odd|name ", "", 0, "JobHeldUser")


def test_sacct_tells_a_memory_kill_from_any_other_sigkill():
    # As sacct printed them on the local Slurm (jobacct_gather + OverMemoryKill), plus a cgroup site's row.
    out = "\n".join(["3|FAILED||50M", "3.batch|CANCELLED by 0|102600K|", "4|FAILED||4G",
                     "4.batch|CANCELLED by 0|1200M|", "5|FAILED||", "5.batch|FAILED|9000M|",
                     "6|OUT_OF_MEMORY||8G", "6.batch|OUT_OF_MEMORY|2G|"])
    assert parse.memory_kills(out) == {"3", "6"}  # 4 stayed under its 4 G; 5 asked for nothing
    assert (parse.memory_mb("100284K"), parse.memory_mb("4000Mn"), parse.memory_mb("")) == (97.93359375, 4000, None)
    assert (parse.sacct_exit_code("0:9"), parse.sacct_exit_code("4:0"), parse.sacct_exit_code("")) == (137, 4, None)


def test_drain_down_and_maint_are_maintenance_with_a_reason():
    assert parse.node_maintenance({"state": "idle", "state_flags": ["DRAIN"], "reason": "disk swap"}) == (True, "disk swap")
    assert parse.node_maintenance({"state": "down", "state_flags": [], "reason": ""}) == (True, "DOWN")
    assert parse.node_maintenance({"state": "mixed", "state_flags": [], "reason": ""}) == (False, "")


def test_the_pool_admin_form_checks_the_backend_settings(world):
    from scheduler.backends.admin import PoolForm

    form = PoolForm(data={"name": "slurm-b", "display_name": "", "description": "", "backend": "slurm",
                          "backend_settings": '{"partition": "gpu"}'})
    assert not form.is_valid()
    assert form.errors["backend_settings"] == [
        'gres_models: a map of GRES type to GPU model is required, e.g. {"h100": "H100-80G"}']
