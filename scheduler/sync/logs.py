"""Retention of portal jobs' output files (`--output`/`--error` in each Slurm pool's log directory):
files untouched for longer than the pool's `log_retention_days` are removed; a stopped job's logs and
intermediate products stay as long as any other's."""
import os
from datetime import datetime
from pathlib import Path

from django.utils import timezone

from quotas.models import Pool
from scheduler.backends.slurm import config as cfg

SUFFIXES = (".out", ".err")


def slurm_logs_expire(*, now: datetime | None = None) -> dict[str, int]:
    """Per Slurm pool, how many expired log files were removed (-1: its settings are unusable)."""
    now_ts = (now or timezone.now()).timestamp()
    removed = {}
    for pool in Pool.objects.filter(backend="slurm").order_by("name"):
        values = pool.backend_settings or {}
        if cfg.validate(values):
            removed[pool.name] = -1
            continue
        config = cfg.load(values)
        removed[pool.name] = _expire(Path(config.logs), f"{config.job_prefix}-",
                                     now_ts - config.log_retention_days * 86400)
    return removed


def _expire(folder: Path, prefix: str, before: float) -> int:
    count = 0
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return 0  # not made yet, or only the compute nodes see it
    for entry in entries:
        # Only the portal's own files: the folder may be shared with other things.
        if not entry.is_file() or not entry.name.startswith(prefix) or not entry.name.endswith(SUFFIXES):
            continue
        try:
            if entry.stat().st_mtime < before:
                os.unlink(entry.path)
                count += 1
        except OSError:
            continue
    return count
