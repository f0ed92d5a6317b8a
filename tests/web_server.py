"""A real web server for tests that talk HTTP to the portal the way a program outside it does: gunicorn on a
free port against the test database (rows the test commits are what it serves)."""
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

from tests.processes import ROOT, database_url, free_port, stop, wait_until


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/healthz", timeout=1) as response:
            return response.status == 200
    except OSError:
        return False


class Gunicorn:
    def __init__(self, log: Path, extra_env: dict | None = None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        self.extra_env = extra_env or {}
        self.process = None

    def start(self) -> "Gunicorn":
        # Submits publish an evaluation request; the tests run the cycle themselves, so no broker is needed.
        env = {**os.environ, "DATABASE_URL": database_url(), "PORTAL_ENV": "test", "CELERY_BROKER_URL": "memory://",
               "API_THROTTLE_USER": "100000/min", "API_THROTTLE_ANON": "100000/min", "PYTHONUNBUFFERED": "1",
               **self.extra_env}
        out = open(self.log, "a")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "portal.wsgi", "--bind", f"127.0.0.1:{self.port}", "--workers", "1",
             "--timeout", "60"], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        if not wait_until(lambda: _answers(self.url) or self.process.poll() is not None, 60) \
                or self.process.poll() is not None:
            raise AssertionError(f"gunicorn did not start: {self.log.read_text()[-2000:]}")
        return self

    def stop(self) -> None:
        if self.process is not None:
            stop(self.process)
