"""Resource-vector arithmetic: add, sub, fits, dominant share.

A vector maps a resource key (here a `(pool, gpu_model)` pair, but any hashable works) to a
whole amount. Missing keys are zero. Functions return new dicts and never mutate inputs; keys
whose value becomes zero are dropped so equal vectors compare equal.
"""

from __future__ import annotations

from typing import Hashable, Mapping, TypeVar

K = TypeVar("K", bound=Hashable)
Vector = Mapping[K, int]


def add(a: Mapping[K, int], b: Mapping[K, int]) -> dict[K, int]:
    out = dict(a)
    for key, amount in b.items():
        out[key] = out.get(key, 0) + amount
    return {k: v for k, v in out.items() if v}


def sub(a: Mapping[K, int], b: Mapping[K, int]) -> dict[K, int]:
    """a - b; may go negative (callers use `fits` first when that matters)."""
    out = dict(a)
    for key, amount in b.items():
        out[key] = out.get(key, 0) - amount
    return {k: v for k, v in out.items() if v}


def fits(request: Mapping[K, int], available: Mapping[K, int]) -> bool:
    """True when every component of `request` is covered by `available`."""
    return all(amount <= available.get(key, 0) for key, amount in request.items() if amount > 0)


def shortfall(request: Mapping[K, int], available: Mapping[K, int]) -> dict[K, int]:
    """What is missing from `available` to cover `request`, per key (only positive parts)."""
    out = {}
    for key, amount in request.items():
        missing = amount - max(available.get(key, 0), 0)
        if missing > 0:
            out[key] = missing
    return out


def dominant_share(usage: Mapping[K, float], capacity: Mapping[K, int]) -> float:
    """Largest usage/capacity ratio over the keys of `usage`.

    Usage of a key with no capacity is infinitely dominant (the tenant has no entitlement there);
    an empty usage is 0.
    """
    share = 0.0
    for key, amount in usage.items():
        if amount <= 0:
            continue
        cap = capacity.get(key, 0)
        if cap <= 0:
            return float("inf")
        share = max(share, amount / cap)
    return share


def total(vector: Mapping[K, int]) -> int:
    return sum(vector.values())
