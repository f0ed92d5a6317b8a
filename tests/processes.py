"""Real processes for fault tests: a private redis-server on a free port (so restarting it touches
no one else's broker), Celery workers and beat against it and the test database."""
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from django.db import connection

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def database_url() -> str:
    s = connection.settings_dict
    auth = s["USER"] + (f":{s['PASSWORD']}" if s.get("PASSWORD") else "")
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


def wait_until(predicate, timeout: float, step: float = 0.3):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := predicate():
            return value
        time.sleep(step)
    return predicate()


class PrivateRedis:
    def __init__(self):
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="redis-")
        self.process = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "yes",
             "--dir", self.dir], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        assert wait_until(self._answers, 10), "private redis-server did not start"

    def _answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as s:
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)  # appendonly: queued messages survive the restart
            self.process.wait(timeout=10)


def celery(kind: str, broker: str, name: str, log: Path, extra_env: dict | None = None) -> subprocess.Popen:
    env = {**os.environ, "DATABASE_URL": database_url(), "PORTAL_ENV": "test", "CELERY_BROKER_URL": broker,
           "PYTHONUNBUFFERED": "1", **(extra_env or {})}
    if kind == "worker":
        args = ["worker", "--pool=solo", "--without-gossip", "--without-mingle", "--loglevel=INFO", "-n", name]
    else:
        args = ["beat", "--loglevel=INFO", f"--schedule={log.parent / (name + '-schedule')}"]
    out = open(log, "a")
    return subprocess.Popen([sys.executable, "-m", "celery", "-A", "portal", *args], cwd=ROOT, env=env,
                            stdout=out, stderr=subprocess.STDOUT)


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
