"""One what-if run: the baseline and the proposal replayed with the same code, summarised side by side,
with the baseline's fidelity to what really happened."""
from __future__ import annotations

from collections.abc import Callable

from .metrics import compare, fidelity, summarize
from .replay import replay
from .scenario import apply_changes
from .trace import Trace
from .warnings import quota_warnings, window_warnings


def run_whatif(trace: Trace, changes: list[dict], *, progress: Callable[[float], None] | None = None) -> dict:
    """Replays twice (baseline, then proposal); `progress` gets 0..1 over both."""
    def part(offset: float):
        return None if progress is None else (lambda share: progress(offset + share / 2))

    baseline_outcome = replay(trace, progress=part(0.0))
    baseline = summarize(baseline_outcome)
    proposed = apply_changes(trace, changes)
    # No change (a site's own history under the portal's rules): the proposal is the baseline, replayed once.
    proposal = summarize(replay(proposed, progress=part(0.5))) if changes else baseline
    if progress is not None:
        progress(1.0)
    return {"baseline": baseline, "proposal": proposal, "comparison": compare(baseline, proposal),
            "fidelity": fidelity(baseline_outcome), "changes": changes,
            "warnings": {"window": window_warnings(trace), "baseline": quota_warnings(trace),
                         "proposal": quota_warnings(proposed)}}
