"""Bounded calls of the Slurm CLI. Every call has a timeout and a minimal environment (never the
portal's own: no database URL or secret reaches a job), and every failure becomes a BackendError
saying which command failed and why."""
import json
import os
import subprocess
import time
from pathlib import Path

from scheduler.backends.base import BackendError
from scheduler.backends.slurm.config import SlurmConfig

# stderr of a call to a controller that does not answer (slurmctld down, wrong port, munge broken).
UNREACHABLE = ("Unable to contact slurm controller", "Socket timed out", "Connection refused",
               "Zero Bytes were transmitted", "Invalid authentication credential", "Unable to establish")
BASE_ENV = ("PATH", "LANG", "LC_ALL", "TZ")


class SlurmCli:
    def __init__(self, config: SlurmConfig):
        self.config = config

    def binary(self, name: str) -> str:
        return str(Path(self.config.bin_dir) / name) if self.config.bin_dir else name

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        env = {k: os.environ[k] for k in BASE_ENV if k in os.environ}
        env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin")
        if self.config.slurm_conf:
            env["SLURM_CONF"] = self.config.slurm_conf
        return {**env, **(extra or {})}

    def run(self, name: str, *args: str, stdin: str | None = None, env: dict[str, str] | None = None,
            ok_codes: tuple[int, ...] = (0,)) -> str:
        argv = [self.binary(name), *args]
        if self.config.slurm_conf and not Path(self.config.slurm_conf).is_file():
            raise BackendError(f"{name}: no slurm.conf at {self.config.slurm_conf}", unavailable=True)
        try:
            done = subprocess.run(argv, input=stdin, capture_output=True, text=True, env=self.env(env),
                                  timeout=self.config.timeout_seconds, check=False)
        except FileNotFoundError as exc:
            raise BackendError(f"{name}: not found ({exc.filename}); set bin_dir or install slurm-client",
                               unavailable=True) from exc
        except subprocess.TimeoutExpired as exc:
            raise BackendError(f"{name} did not answer within {self.config.timeout_seconds:g}s",
                               unavailable=True) from exc
        if done.returncode not in ok_codes:
            message = (done.stderr or done.stdout).strip().splitlines()
            text = message[-1] if message else f"exit code {done.returncode}"
            raise BackendError(f"{name} failed: {text[:300]}",
                               unavailable=any(marker in done.stderr for marker in UNREACHABLE))
        return done.stdout

    def json(self, name: str, *args: str, attempts: int = 3) -> dict:
        """A --json listing. A listing with errors may be partial, and a partial listing would make runs
        look gone, so it is retried and then refused, never used."""
        problem = ""
        for attempt in range(attempts):
            out = self.run(name, *args, "--json")
            try:
                data = json.loads(out)
            except ValueError as exc:
                problem = f"{name} --json: unreadable output ({exc})"
            else:
                errors = [e for e in data.get("errors", []) if e]
                if not errors:
                    return data
                problem = f"{name}: {errors[0].get('error', errors[0]) if isinstance(errors[0], dict) else errors[0]}"
            time.sleep(0.2 * (attempt + 1))
        raise BackendError(problem)
