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
    long as the decisions this digester is used with).

    A digest is blake2b of the text `code|part|part|/|part|part` (blockers, then next actions), each part
    `code:kind:sorted pairs`. The hash is fed part by part (each part encoded once, with the `|` before
    it) rather than from one joined text: the same digest, without building and encoding the text of
    every wait (a deep queue's waits repeat long parts, megabytes of text a cycle)."""

    def __init__(self) -> None:
        self._parts: dict[int, bytes] = {}
        self._pair_texts: dict[tuple, str] = {}
        self._digests: dict[tuple[int, int], str] = {}
        self._stored_blockers: dict[int, dict] = {}
        self._stored_actions: dict[int, dict] = {}
        self._stored: dict[str, dict] = {}

    def stored(self, wait: Wait, digest: str) -> dict:
        """The JSON a job row keeps of a wait with this digest (code, blockers, next actions), built once
        per cycle for all the jobs that share it, from parts shared too (the data is written, never changed)."""
        data = self._stored.get(digest)
        if data is None:
            data = self._stored[digest] = {
                "code": wait.code,
                "blockers": _shared_parts(wait.blockers, self._stored_blockers, _stored_blocker),
                "next_actions": _shared_parts(wait.next_actions, self._stored_actions, _stored_action)}
        return data

    def of(self, wait: Wait) -> str:
        # The code is the first blocker's, so the two tuples say it all; waits whose equal parts sit
        # in distinct tuples only make the same digest again.
        blockers, actions = wait.blockers, wait.next_actions
        key = (id(blockers), id(actions))
        digest = self._digests.get(key)
        if digest is None:
            parts, part = self._parts, self._part
            hashed = blake2b(wait.code.encode(), digest_size=12)
            update = hashed.update
            for item in blockers:
                update(parts.get(id(item)) or part(item))
            update(b"|/")
            for item in actions:
                update(parts.get(id(item)) or part(item))
            digest = self._digests[key] = hashed.hexdigest()
        return digest

    def _part(self, item: Blocker | NextAction) -> bytes:
        """A blocker's or an action's part of a digest's text, with the `|` before it: `|code:kind:` and
        the repr of its sorted pairs (item[2]: detail pairs, or param pairs). A cycle's parts repeat a few
        hundred pairs (a pool, a model, a tenant, a figure), so each pair's repr is made once: their values
        are plain ints and strings (types.Blocker), whose equal values have equal reprs."""
        texts = self._pair_texts
        pairs = []
        for pair in sorted(item[2]):
            text = texts.get(pair)
            if text is None:
                text = texts[pair] = repr(pair)
            pairs.append(text)
        part = self._parts[id(item)] = f"|{item[0]}:{item[1]}:[{', '.join(pairs)}]".encode()
        return part


def _shared_parts(items, made: dict, make) -> list:
    """`make(item)` for each item, made once per item object and shared by every wait that holds it."""
    parts = []
    for item in items:
        part = made.get(id(item))
        if part is None:
            part = made[id(item)] = make(item)
        parts.append(part)
    return parts
