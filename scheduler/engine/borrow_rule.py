"""The borrowing and lending limits: one rule, asked by the cycle (leases.py) and by the grant service.

A limit holds per subject (a tenant, or an organisation unit over its subtree) × pool × GPU model: GPUs of
different models are not interchangeable, so a tenant holding 4 H100 on loan with a limit of 4 may still
borrow A100 (issue 39). `None` means unlimited. The counts are the GPUs on holding leases (active or
reclaiming) in that one lane; the functions take plain numbers so the Django side can ask them with its
own totals without building a snapshot.
"""

from __future__ import annotations

from typing import Iterable

from .types import LEASE_HOLDING_STATES, Lease

UNLIMITED = float("inf")


def lane(subject: str | None, pool: str, gpu_model: str) -> tuple[str | None, str, str]:
    """The key a limit is counted under: (subject, pool, GPU model)."""
    return (subject, pool, gpu_model)


def borrow_allowed(*, limit: int | None, borrowed: int, need: int) -> bool:
    """May a subject that has `borrowed` GPUs on loan in a lane borrow `need` more there?"""
    return limit is None or borrowed + need <= limit


def lending_left(*, limit: int | None, lent: int) -> float:
    """How many more GPUs a subject that has `lent` in a lane may lend there (inf: no limit)."""
    return UNLIMITED if limit is None else limit - lent


def lend_allowed(*, limit: int | None, lent: int, need: int) -> bool:
    return lending_left(limit=limit, lent=lent) >= need


def borrowed_by_lane(leases: Iterable[Lease]) -> dict[tuple[str | None, str, str], int]:
    """GPUs each borrower holds on loan per (borrower, pool, model)."""
    out: dict[tuple[str | None, str, str], int] = {}
    for lease in leases:
        if lease.state in LEASE_HOLDING_STATES:
            key = (lease.borrower, lease.pool, lease.gpu_model)
            out[key] = out.get(key, 0) + lease.gpus
    return out
