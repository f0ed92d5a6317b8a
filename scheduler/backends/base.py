"""The interface every backend implements (simulated now; Slurm or Kubernetes adapters later)."""
from abc import ABC, abstractmethod
from collections.abc import Iterable
from datetime import datetime
from typing import Any


class Backend(ABC):
    name = "base"

    @abstractmethod
    def start(self, job, *, now: datetime) -> dict[str, Any]:
        """Launch an admitted job on its placements. Returns the Job fields to store with the start:
        at least `expected_end`, plus any backend-specific ones."""

    @abstractmethod
    def poll(self, running: Iterable, *, now: datetime) -> list[tuple[Any, str, str]]:
        """Running jobs that have ended, as (job, "succeeded" | "failed", error_type)."""

    def stop(self, job, *, now: datetime) -> None:  # pragma: no cover - the preemption issue uses it
        """Stop a running job (preemption or cancel). The simulated backend has nothing to stop."""
