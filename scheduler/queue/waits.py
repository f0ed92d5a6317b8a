"""What a cycle stores of a wait: its code, blockers and next actions as data (kinds and numbers,
no text), and a digest of them, so the next cycle rewrites a job only when that data changed.

The text is rendered on read in the reader's language (scheduler.jobs.wait_text). Volatile
figures (positions, GPUs ahead, ETA) are not part of a wait: they belong to the pool's order of
the cycle (scheduler.queue.order).
"""
from hashlib import blake2b

from scheduler.engine.types import Blocker, NextAction, Wait


def _stored_blocker(blocker: Blocker) -> dict:
    return {"code": blocker.code, "kind": blocker.kind, "details": dict(blocker.detail_pairs)}


def _stored_action(action: NextAction) -> dict:
    return {"code": action.code, "kind": action.kind, "params": dict(action.param_pairs)}


class WaitDigests:
    """Digests and stored data of one cycle's waits. The engine shares blocker and action objects, and
    the tuples that hold them, between the jobs that wait for the same reason, so each digest, each
    part's text and each stored part is made once per cycle (keyed on identity; the objects live as
    long as the decisions this digester is used with)."""

    def __init__(self) -> None:
        self._parts: dict[int, str] = {}
        self._digests: dict[tuple[int, int], str] = {}
        self._stored_parts: dict[int, dict] = {}
        self._stored: dict[str, dict] = {}

    def stored(self, wait: Wait, digest: str) -> dict:
        """The JSON a job row keeps of a wait with this digest (code, blockers, next actions), built once
        per cycle for all the jobs that share it, from parts shared too (the data is written, never changed)."""
        data = self._stored.get(digest)
        if data is None:
            part = self._stored_part
            data = self._stored[digest] = {
                "code": wait.code, "blockers": [part(b, _stored_blocker) for b in wait.blockers],
                "next_actions": [part(a, _stored_action) for a in wait.next_actions]}
        return data

    def _stored_part(self, item: Blocker | NextAction, make) -> dict:
        data = self._stored_parts.get(id(item))
        if data is None:
            data = self._stored_parts[id(item)] = make(item)
        return data

    def _part(self, item: Blocker | NextAction) -> str:
        key = id(item)
        part = self._parts.get(key)
        if part is None:
            pairs = item[2]  # detail pairs of a blocker, param pairs of an action
            part = self._parts[key] = f"{item[0]}:{item[1]}:{sorted(pairs)!r}"
        return part

    def of(self, wait: Wait) -> str:
        # The code is the first blocker's, so the two tuples say it all; waits whose equal parts sit
        # in distinct tuples only make the same digest again.
        key = (id(wait.blockers), id(wait.next_actions))
        digest = self._digests.get(key)
        if digest is None:
            part = self._part
            text = "|".join([wait.code, *map(part, wait.blockers), "/", *map(part, wait.next_actions)])
            digest = self._digests[key] = blake2b(text.encode(), digest_size=12).hexdigest()
        return digest
