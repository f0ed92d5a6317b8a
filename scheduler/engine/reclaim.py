"""Reclaim (DESIGN section 4): a lender takes back the base quota it lent out.

A waiting job that fits its tenant's base quota but not the nodes may stop the jobs running
on leases its tenant lent (and, when the unassigned pool has lent more than it has, because
capacity shrank or quotas grew, jobs on unassigned-pool leases too: that excess sits on the
tenants' base quota). The borrowers chosen are the smallest sufficient set in victim order
(preemption.py); a lease inside its protected window is left alone unless the lender's job is
`production`. Borrowers are reclaimable whatever their class's `preemptible` flag and
preemption count: a lease is revocable by definition, and the lender's floor is guaranteed. Only
an approver's explicit refusal (manual mode, `stop_refused`) keeps a borrower running.

A borrower whose runtime limit ends by the time a stop's grace would run out is never stopped (issue 40): it
gives its GPUs back by itself no later than a stop would, and a stop would only throw its work away. It is
counted on like a stop under way, at its limit.
"""

from __future__ import annotations

from . import reasons as R
from .fit import ModelIndex
from .leases import UNASSIGNED, LeaseDesk
from .preemption import Victims, room_for, smallest_sufficient
from .types import Blocker, PendingJob, Reclaim, RunningJob


def reclaim(
    victims: Victims, desk: LeaseDesk, job: PendingJob, index: ModelIndex,
    reclaims: list[Reclaim],
) -> tuple[str, Blocker] | None:
    """Plan (or wait on) a reclaim for `job`; ("replace" | "add", blocker) or None.

    The outcome depends on the job's tenant, lane and shape and on what is claimed so far alone,
    so a question that found no plan is not asked again until the next claim (most jobs of a
    deep queue that may reclaim find nothing to reclaim)."""
    question = ("reclaim", job.tenant, job.pool, job.gpu_model, job.gpus, job.replicas, job.cpus, job.memory_gb,
                job.priority_class in victims.protected)
    if victims.known_no_plan(question):
        return None
    outcome = _reclaim(victims, desk, job, index, reclaims)
    if outcome is None:
        victims.found_no_plan(question)
    return outcome


def _reclaim(
    victims: Victims, desk: LeaseDesk, job: PendingJob, index: ModelIndex,
    reclaims: list[Reclaim],
) -> tuple[str, Blocker] | None:
    """The reclaim order, the same with or without an organisation tree (docs/design.md section 6):

    1. Scope: only jobs on leases the waiting job's tenant lent, and on unassigned-pool leases when that
       pool has lent more than it has (`in_scope`). Nobody else's loan is touched.
    2. Eligible: not already stopping or claimed, not refused by an approver, not of a protected class,
       past the lease's protected window unless the waiting job is protected, and not ending by its own
       runtime limit within the grace (`may_reclaim`): such a borrower is waited for, never stopped, and
       counts beside the stops under way (`ends_in_grace`), soonest end first.
    3. Furthest in the tree first: a borrower under fewer of the lender's units goes before one nearer to
       it — another business line's, then another department's, then a sibling team's — counted as the
       lender's units that do not also hold the borrower (`TreeDesk.rank`). The loans inside the nearest
       common ancestor were granted first (tree.py) and stay on the subtree's own guarantee; the ones that
       crossed more borders go back first. Without a tree (or a tree of one unit) every rank is equal.
    4. Within a rank, victim order (preemption.py): on-loan first, lowest priority, least work lost since
       the last checkpoint, most recently started, id.
    5. The smallest sufficient set in that order (`smallest_sufficient`), counting jobs already stopping
       and those ending within the grace first.
    """
    borrowed = victims.on_lease.get((job.pool, job.gpu_model))
    if not borrowed:
        return None
    lent = desk.lent_by(job.tenant, job.pool, job.gpu_model)
    overdrawn = desk.unassigned_overdrawn(job.pool, job.gpu_model, index.capacity)
    if not lent and not overdrawn:
        return None
    production = job.priority_class in victims.protected  # a protected class, production by default
    now = victims.now
    leases = victims.leases

    def in_scope(run: RunningJob) -> bool:
        lease = leases.get(run.lease_id)
        if lease is None:
            return False
        return lease.lender == job.tenant or (lease.lender is UNASSIGNED and overdrawn > 0)

    grace_until = victims.grace_until

    def ends_in_grace(run: RunningJob) -> bool:
        return run.stopping_until is None and run.id not in victims.claimed and run.expected_end <= grace_until

    def may_reclaim(run: RunningJob) -> bool:
        return (run.stopping_until is None and run.expected_end > grace_until and run.id not in victims.claimed
                and not run.stop_refused and run.priority_class not in victims.protected
                and (production or leases[run.lease_id].protected_until <= now))

    scope = [run for run in borrowed if in_scope(run)]
    if not scope:
        return None
    # Stops under way first, then the borrowers that end by themselves within a grace, soonest first.
    stopping = [*victims.stopping(scope),
                *sorted((run for run in scope if ends_in_grace(run)), key=lambda r: (r.expected_end, r.id))]
    tree = desk.tree
    if tree is None:
        key = victims.key
    else:
        def key(run: RunningJob, lender=job.tenant, rank=tree.rank, victim_key=victims.key) -> tuple:
            return (-rank(lender, run.tenant), victim_key(run))
    candidates = sorted((run for run in scope if may_reclaim(run)), key=key)
    chosen = smallest_sufficient(stopping, candidates, room_for(index, job))
    if chosen is None:
        return None
    used, chosen_victims = chosen
    gpus = sum(r.total_gpus for r in used) + sum(r.total_gpus for r in chosen_victims)
    if chosen_victims and victims.paused:
        return "add", R.reclaim_paused(job.tenant, job.pool, job.gpu_model, gpus)
    victims.claim(job, used, chosen_victims)
    until = victims.until(used, chosen_victims)
    if chosen_victims:
        reclaims.append(Reclaim(
            job.id, tuple(r.id for r in chosen_victims),
            tuple(sorted({r.lease_id for r in chosen_victims})), victims.grace_until,
            needs_approval=victims.reclaim_manual,
        ))
    return "replace", R.reclaiming(
        job.tenant, job.pool, job.gpu_model, gpus, until,
        needs_approval=bool(chosen_victims) and victims.reclaim_manual,
    )
