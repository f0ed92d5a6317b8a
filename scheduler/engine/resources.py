"""Resource vectors: GPUs, GPU memory, CPU cores and memory, and the arithmetic over them (add,
subtract, fits, how many copies fit, the dimension that binds), as yunikorn's `resources.go`.

A *need* or an *amount* is a `Resources` of plain non-negative ints. A *limit* (a quota's, or a
node's capacity) may leave a dimension as None: unlimited, never binding. Node fit, quota cover,
leases and wait reasons ask this module, so the rule of "does it fit, and if not, why" lives here.
"""

from __future__ import annotations

from typing import NamedTuple

# In the order a wait names them: GPUs first, since a GPU shortfall is what a person acts on first.
GPUS = "gpus"
GPU_MEMORY = "gpu_memory_gb"
CPUS = "cpus"
MEMORY = "memory_gb"
DIMENSIONS = (GPUS, GPU_MEMORY, CPUS, MEMORY)


class Resources(NamedTuple):
    """An amount in every dimension (a need, what is free, what is held). A named tuple: one is made
    per job and node per cycle, and it compares and hashes by value."""

    gpus: int = 0
    gpu_memory_gb: int = 0
    cpus: int = 0
    memory_gb: int = 0


class Limits(NamedTuple):
    """A ceiling per dimension; None: unlimited (a quota dimension left empty)."""

    gpus: int | None = None
    gpu_memory_gb: int | None = None
    cpus: int | None = None
    memory_gb: int | None = None


ZERO = Resources()
UNLIMITED = Limits()


def add(a: Resources, b: Resources) -> Resources:
    return Resources(a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3])


def sub(a: Resources, b: Resources) -> Resources:
    """a - b, never below zero in any dimension (what is free cannot go negative)."""
    return Resources(max(a[0] - b[0], 0), max(a[1] - b[1], 0), max(a[2] - b[2], 0), max(a[3] - b[3], 0))


def scale(a: Resources, k: int) -> Resources:
    return Resources(a[0] * k, a[1] * k, a[2] * k, a[3] * k)


def fits(need: Resources, free: Resources | Limits) -> bool:
    """Every dimension of `need` within `free` (a None dimension of a limit never binds)."""
    return binding(need, free) is None


def binding(need: Resources, free: Resources | Limits) -> str | None:
    """The first dimension (in `DIMENSIONS` order) where `need` exceeds `free`, or None if it fits."""
    for name, n, f in zip(DIMENSIONS, need, free):
        if f is not None and n > f:
            return name
    return None


def copies(need: Resources, free: Resources | Limits) -> int | None:
    """How many copies of `need` fit in `free` (the replicas a node holds); None when nothing in
    `need` is bounded (every asked dimension unlimited, or `need` is zero)."""
    best = None
    for n, f in zip(need, free):
        if n > 0 and f is not None:
            k = f // n
            if best is None or k < best:
                best = k
    return best


def limits_over(used: Resources, need: Resources, limit: Limits) -> tuple[str, int, int, int] | None:
    """The first set dimension of `limit` that `used + need` would exceed, as (dimension, limit, used,
    need); None when within every set dimension."""
    for name, u, n, cap in zip(DIMENSIONS, used, need, limit):
        if cap is not None and n > 0 and u + n > cap:
            return name, cap, u, n
    return None
