"""bench_backfill's figures for a mode: a big job not started by the month's end waits until the end in the month's
p95; `drain_days` replays on past the end and also gives its whole wait, leaving the month's figures as they were."""
from scheduler.whatif.management.commands.bench_backfill import mode_figures
from tests.whatif.builders import job, trace

# Two 8-GPU nodes, a one-day month: a 2 x 8 gang runs 36 h from the start; another asks for both nodes an hour in;
# a third is drawn after the month's end, so it is not the month's, drained or not.
TRACE = trace([job(1, "a", 8, 0, 36 * 60, max_runtime=40 * 60, replicas=2),
               job(2, "a", 8, 60, 60, max_runtime=120, replicas=2),
               job(3, "a", 8, 25 * 60, 60, max_runtime=120, replicas=2)], node_count=2, hours=24, quota={"a": 16})


def test_a_big_job_not_started_by_the_months_end_waits_until_then_in_the_months_figures():
    month = mode_figures(TRACE, "backfill", 60.0, 10)
    assert month["big_jobs"] == 2
    assert month["big_wait_p95_s"] == 23 * 3600 and month["big_never_started"] == 1
    assert month["utilisation"] == 1.0 and "big_wait_p95_drained_s" not in month


def test_draining_gives_its_whole_wait_and_leaves_the_months_figures():
    month = mode_figures(TRACE, "backfill", 60.0, 10)
    drained = mode_figures(TRACE, "backfill", 60.0, 10, drain_days=2)
    assert drained["big_wait_p95_drained_s"] == 35 * 3600 and drained["big_never_started_drained"] == 0
    for key in ("big_jobs", "big_wait_p95_s", "small_wait_p95_s", "utilisation", "big_never_started"):
        assert drained[key] == month[key]
