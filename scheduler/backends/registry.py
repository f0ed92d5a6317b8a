"""Which backend governs a pool: its name on the pool, its connection settings beside it."""
from django.conf import settings
from django.utils.module_loading import import_string

from scheduler.backends.base import Backend, BackendError

BACKENDS = {
    "simulated": "scheduler.backends.simulated.SimulatedBackend",
    "slurm": "scheduler.backends.slurm.backend.SlurmBackend",
}
# Operator texts, stored on runs and pool status as they are raised: kept in English (as Slurm's own are),
# never in whichever language the raising request happened to speak.
UNKNOWN_BACKEND = "Unknown backend {name!r}: use one of {names}."
SIMULATED_REFUSED = ("Pool {pool} uses the simulated backend, which production refuses: set its backend to "
                     "a real cluster, or set SCHEDULER_ALLOW_SIMULATED=1 for a sandbox pool.")
SETTINGS_NOT_OBJECT = "Backend settings are a JSON object."


def simulated_allowed() -> bool:
    return bool(getattr(settings, "SCHEDULER_ALLOW_SIMULATED", False))


def backend_class(name: str) -> type[Backend]:
    if name not in BACKENDS:
        raise BackendError(str(UNKNOWN_BACKEND).format(name=name, names=", ".join(sorted(BACKENDS))))
    return import_string(BACKENDS[name])


def needs_something_to_run(name: str) -> bool:
    """Whether a pool of this backend refuses a job with neither command nor script (submit says so)."""
    return name in BACKENDS and backend_class(name).needs_something_to_run


def backend_settings_validate(name: str, values) -> dict[str, list[str]]:
    """Field errors of a pool's backend choice and settings (for the admin form and the API)."""
    if name not in BACKENDS:
        return {"backend": [str(UNKNOWN_BACKEND).format(name=name, names=", ".join(sorted(BACKENDS)))]}
    if not isinstance(values, dict):
        return {"backend_settings": [str(SETTINGS_NOT_OBJECT)]}
    problems = backend_class(name).validate_settings(values)
    return {"backend_settings": [f"{k}: {v}" for k, v in sorted(problems.items())]} if problems else {}


def backend_for_pool(pool) -> Backend:
    """The pool's backend, built from its settings. Raises BackendError when it may not or cannot run."""
    if pool.backend == "simulated" and not simulated_allowed():
        raise BackendError(str(SIMULATED_REFUSED).format(pool=pool.name))
    cls = backend_class(pool.backend)
    problems = cls.validate_settings(pool.backend_settings or {})
    if problems:
        raise BackendError(f"Pool {pool.name}: invalid backend settings: "
                           + "; ".join(f"{k}: {v}" for k, v in sorted(problems.items())))
    return cls(pool=pool, settings=pool.backend_settings or {})
