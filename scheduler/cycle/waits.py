"""What a cycle stores of a wait: its code, blockers and next actions as data (kinds and numbers,
no text), and a digest of them, so the next cycle rewrites a job only when that data changed.

The text is rendered on read in the reader's language (scheduler.jobs.wait_text). Volatile
figures (positions, GPUs ahead, ETA) are not part of a wait: they belong to the pool's order of
the cycle (scheduler.cycle.order).
"""
from hashlib import blake2b

from scheduler.engine.types import Blocker, NextAction, Wait


def stored_wait(wait: Wait) -> dict:
    """The JSON a job row keeps of its wait."""
    return {
        "code": wait.code,
        "blockers": [{"code": b.code, "kind": b.kind, "details": dict(b.detail_pairs)} for b in wait.blockers],
        "next_actions": [{"code": a.code, "kind": a.kind, "params": dict(a.param_pairs)} for a in wait.next_actions],
    }


class WaitDigests:
    """Digests of one cycle's waits. The engine shares blocker and action objects between the jobs
    that wait for the same reason, so each one's text key is made once per cycle (keyed on identity;
    the objects live as long as the decisions this digester is used with)."""

    def __init__(self) -> None:
        self._parts: dict[int, str] = {}
        self._digests: dict[tuple, str] = {}
        self._stored: dict[str, dict] = {}

    def stored(self, wait: Wait, digest: str) -> dict:
        """`stored_wait` of a wait with this digest, built once per cycle for all the jobs that share it."""
        data = self._stored.get(digest)
        if data is None:
            data = self._stored[digest] = stored_wait(wait)
        return data

    def _part(self, item: Blocker | NextAction) -> str:
        key = id(item)
        part = self._parts.get(key)
        if part is None:
            pairs = item[2]  # detail pairs of a blocker, param pairs of an action
            part = self._parts[key] = f"{item[0]}:{item[1]}:{sorted(pairs)!r}"
        return part

    def of(self, wait: Wait) -> str:
        # Jobs waiting for the same reason share the very same blocker and action objects, so most
        # waits of a deep queue find their digest under the identities of their parts.
        key = (wait.code, *map(id, wait.blockers), None, *map(id, wait.next_actions))
        digest = self._digests.get(key)
        if digest is None:
            part = self._part
            text = "|".join([wait.code, *map(part, wait.blockers), "/", *map(part, wait.next_actions)])
            digest = self._digests[key] = blake2b(text.encode(), digest_size=12).hexdigest()
        return digest
