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


def _epoch(moment: datetime | None) -> int | None:
    return None if moment is None else int(moment.timestamp())


def order_payload(waits: tuple[Wait, ...]) -> tuple[dict, str]:
    """The compact order of one pool's waits and its digest."""
    ids, tenant, ahead, eta = [], [], [], []
    etas: dict[int, list] = {}  # the ETA desk hands the same Eta object to jobs covered by one release
    for wait in sorted(waits, key=_POSITION_IN_POOL):  # one pass, four columns
        ids.append(wait.job_id)
        tenant.append(wait.position_in_tenant)
        ahead.append(wait.gpus_ahead)
        value = wait.eta
        pair = etas.get(id(value))
        if pair is None:
            pair = etas[id(value)] = [_epoch(value.earliest), _epoch(value.latest)]
            if value.dimension:  # set by CPU cores or memory coming back (GPUs alone: the pair as before)
                pair.append(value.dimension)
        eta.append(pair)
    payload = {"ids": ids, "tenant": tenant, "ahead": ahead, "eta": eta}
    digest = blake2b(json.dumps(payload, separators=(",", ":")).encode(), digest_size=12).hexdigest()
    return payload, digest


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
