"""The pool's queue order as of the last cycle, stored once per cycle in one compact row.

Positions, GPUs ahead and ETAs drift with every submit and finish; writing them on every waiting
job would rewrite the whole queue each cycle. The cycle stores them here instead, as parallel
lists in pool order, and writes them only when they differ from what is stored. Readers turn
them back into per-job figures (`PoolOrder`).
"""
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from hashlib import blake2b
from operator import attrgetter

from scheduler.engine.types import Wait


_POSITION_IN_POOL = attrgetter("position_in_pool")
_JOB_ID, _IN_TENANT, _AHEAD, _ETA = (attrgetter(name) for name in ("job_id", "position_in_tenant", "gpus_ahead", "eta"))


def _epoch(moment: datetime | None) -> int | None:
    return None if moment is None else int(moment.timestamp())


def _eta_pair(value) -> list:
    pair = [_epoch(value.earliest), _epoch(value.latest)]
    if value.dimension:  # set by CPU cores or memory coming back (GPUs alone: the pair as before)
        pair.append(value.dimension)
    return pair


def order_text(waits: tuple[Wait, ...]) -> tuple[dict, str, str]:
    """The compact order of one pool's waits, its JSON text and its digest (the digest of that text).
    Each column is taken in one C-level pass (map over an attrgetter): a 10k queue's Python loop with
    four appends a wait cost as much again as the text's encoding."""
    ordered = sorted(waits, key=_POSITION_IN_POOL)
    values = list(map(_ETA, ordered))  # kept: the ids below are those of live objects
    keys = list(map(id, values))
    # the ETA desk hands the same Eta object to jobs covered by one release: one pair for each object
    pairs = {key: _eta_pair(value) for key, value in dict(zip(keys, values)).items()}
    payload = {"ids": list(map(_JOB_ID, ordered)), "tenant": list(map(_IN_TENANT, ordered)),
               "ahead": list(map(_AHEAD, ordered)), "eta": list(map(pairs.__getitem__, keys))}
    text = json.dumps(payload, separators=(",", ":"))
    return payload, text, blake2b(text.encode(), digest_size=12).hexdigest()


@dataclass(frozen=True, slots=True)
class Position:
    tenant: int
    pool: int
    gpus_ahead: int
    eta_earliest: datetime | None
    eta_latest: datetime | None
    eta_dimension: str | None = None  # CPU cores or memory, when their release sets the earliest

    def eta_dict(self) -> dict:
        out = {"earliest": self.eta_earliest.isoformat() if self.eta_earliest else None,
               "latest": self.eta_latest.isoformat() if self.eta_latest else None}
        if self.eta_dimension:
            out["dimension"] = self.eta_dimension
        return out


def _moment(epoch: int | None) -> datetime | None:
    return None if epoch is None else datetime.fromtimestamp(epoch, UTC)


class PoolOrder:
    """Per-job figures of a stored order; built lazily, a lookup per job after that."""

    def __init__(self, payload: dict | None) -> None:
        payload = payload or {}
        self._ids = payload.get("ids", [])
        self._payload = payload
        self._index: dict[int, int] | None = None

    def _rank(self) -> dict[int, int]:
        if self._index is None:
            self._index = {job_id: i for i, job_id in enumerate(self._ids)}
        return self._index

    def __len__(self) -> int:
        return len(self._ids)

    def rank(self, job_id: int) -> int | None:
        """0-based place in the pool's order, None when the last cycle did not order the job."""
        return self._rank().get(job_id)

    def get(self, job_id: int) -> Position | None:
        i = self.rank(job_id)
        if i is None:
            return None
        earliest, latest, *dimension = self._payload["eta"][i]
        return Position(self._payload["tenant"][i], i + 1, self._payload["ahead"][i],
                        _moment(earliest), _moment(latest), dimension[0] if dimension else None)
