"""GPUs that admitted and running jobs hold, as the quota pages show them.

Jobs belong to the scheduler, which builds on quotas; so quotas asks through this small interface
and the scheduler answers it: its app registers a provider when Django is ready. quotas never
imports the scheduler."""
from typing import Protocol

NO_PROVIDER = "No holdings provider is registered: the app that runs jobs registers one when it is ready."


class HoldingsProvider(Protocol):
    def quota_usage_gpus(self, *, quotas: list) -> dict[int, int]:
        """GPUs in use charged to each quota (by quota id), base quota only, not leases."""

    def pool_model_usage(self) -> dict[tuple[str, str], int]:
        """GPUs held (base quota and leases alike) per (pool name, GPU model name)."""


_provider: HoldingsProvider | None = None


def register(provider: HoldingsProvider) -> None:
    global _provider
    _provider = provider


def _current() -> HoldingsProvider:
    if _provider is None:
        raise RuntimeError(NO_PROVIDER)
    return _provider


def quota_usage_gpus(*, quotas: list) -> dict[int, int]:
    return _current().quota_usage_gpus(quotas=quotas)


def pool_model_usage() -> dict[tuple[str, str], int]:
    return _current().pool_model_usage()
