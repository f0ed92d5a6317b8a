"""A stop under way is offered first to the waiting jobs in queue order, so a job ahead of the one it was
planned for may take it. The cycle then says so (`Decisions.reassignments`): the stop is that job's now,
and its first job starting without it, or being cancelled, no longer withdraws what the other counts on."""

from scheduler.engine import decide
from scheduler.engine import reasons as R
from tests.engine.builders import nodes, pending, quota, running, snapshot, wait_of


def _llm_full(stopping_for=2):
    """llm's 16 GPUs: a training job, and an experiment stopping (5 more minutes) for job 2, an evaluation.
    Job 1, a production job, arrived since: it comes first in the queue."""
    return snapshot(
        nodes=nodes(8, 8), quotas=[quota("llm", 16)],
        running=[running("llm", [1], 8, id=60, priority="training"),
                 running("llm", [2], 8, id=61, priority="experiment", stopping_in=5, stopping_for=stopping_for)],
        pending=[pending(1, "llm", 8, workload="online_inference", submitted_ago=1),
                 pending(2, "llm", 8, workload="evaluation", submitted_ago=10)],
    )


def test_a_stop_a_job_ahead_counts_on_is_reassigned_to_it():
    d = decide(_llm_full())
    assert d.reassignments == ((61, 1),)
    assert wait_of(d, 1).code == R.PREEMPTING  # on the experiment's stop, already under way
    # The evaluation, which the stop was planned for, now stops the training job for itself.
    assert [(p.preemptor_job_id, p.victim_job_ids) for p in d.preemptions] == [(2, (60,))]
    assert d.withdrawals == ()


def test_a_stop_its_own_job_counts_on_is_not_reassigned():
    d = decide(_llm_full(stopping_for=1))
    assert d.reassignments == ()
    assert wait_of(d, 1).code == R.PREEMPTING


def test_a_stop_for_no_job_runs_for_whoever_counts_on_it():
    """A lease's expiry stops its job whatever happens: there is nothing to reassign."""
    d = decide(_llm_full(stopping_for=None))
    assert d.reassignments == ()
    assert wait_of(d, 1).code == R.PREEMPTING
