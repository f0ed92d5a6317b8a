"""Every cycle of a replay with its shortcuts against a full decide of the same moment: before the cycle
runs, `decide` of the whole pool (every waiting job, no kept state, no waits) is taken as the oracle; the
cycle's shortcut (no decide where engine/quiet.py shows nothing would be decided, the lone-job admission,
or a decide of the jobs it must see over the kept `Standing`) must give the same admissions, lease plans,
stops, withdrawals and reassignments. Slow (a full decide per cycle): `manage.py bench_whatif --check`."""
from __future__ import annotations

from collections import Counter

from scheduler.engine import decide
from scheduler.engine.types import Admission

from .replay import _Sim

_NOTHING = ((), (), (), (), (), ())


def _decided(decisions) -> tuple:
    return (decisions.admissions, decisions.lease_plans, decisions.reclaims, decisions.preemptions,
            decisions.withdrawals, decisions.reassignments)


class CheckedSim(_Sim):
    """A replay that checks each cycle's shortcut against the full decide; `checked` counts agreeing
    cycles per path (quiet, lone, decide), `let_pass` the wakes let pass without a cycle whose full
    decide decides nothing, `disagreed` lists (moment, path) of the others."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.checked: Counter = Counter()
        self.let_pass = 0
        self.disagreed: list[tuple] = []
        self._last = None
        decider_decide = self.decider.decide

        def decide_and_keep(*args, **kwargs):
            self._last = decider_decide(*args, **kwargs)
            return self._last

        self.decider.decide = decide_and_keep

    def _count_passed(self) -> bool:
        """A wake let pass without a cycle (replay.py) must be one whose full decide decides nothing."""
        if not super()._count_passed():
            return False
        if not self.pending:  # no cycle would run: nothing waits
            return True
        if _decided(decide(self.snapshot(), describe=False)) == _NOTHING:
            self.let_pass += 1
        else:
            self.disagreed.append((self.now.isoformat(), "let pass"))
        return True

    def cycle(self) -> None:
        oracle = _decided(decide(self.snapshot(), describe=False))  # before the cycle changes anything
        quiet, lone, self._last = self.quiet_cycles, self.fast_admissions, None
        super().cycle()
        if self.quiet_cycles > quiet:
            path, got = "quiet", _NOTHING
        elif self.fast_admissions > lone:
            run = self.runs[-1]
            path, got = "lone", ((Admission(run.job_id, run.placements),), (), (), (), (), ())
        elif self._last is not None:
            path, got = "decide", _decided(self._last)
        else:  # a plain replay decides with `decide` itself
            return
        if got == oracle:
            self.checked[path] += 1
        else:
            self.disagreed.append((self.now.isoformat(), path))
