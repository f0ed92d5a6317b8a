"""Real local receivers for notice tests: an SMTP server (aiosmtpd) and an HTTP webhook server, each
on a free 127.0.0.1 port, plus a way to point the Celery app at a broker that is down."""
import json
import socket
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from email import message_from_bytes, policy
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from aiosmtpd.controller import Controller

from portal.celery import app as celery_app


def free_port() -> int:
    """A port nothing listens on right now (bound, read, released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class SmtpReceiver:
    port: int
    messages: list = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    async def handle_DATA(self, server, session, envelope):
        parsed = message_from_bytes(envelope.original_content, policy=policy.default)
        with self.lock:
            self.messages.append({"to": list(envelope.rcpt_tos), "header_to": str(parsed["to"] or ""),
                                  "cc": str(parsed["cc"] or ""), "subject": str(parsed["subject"]).strip(),
                                  "body": parsed.get_body(("plain",)).get_content(),
                                  "attachments": [(part.get_filename(), part.get_content_type(), part.get_content())
                                                  for part in parsed.iter_attachments()]})
        return "250 Message accepted for delivery"

    def take(self) -> list[dict]:
        """The messages received so far, sorted by recipient and subject, and forget them."""
        with self.lock:
            taken, self.messages = self.messages, []
        return sorted(taken, key=lambda m: (m["to"], m["subject"]))


@pytest.fixture
def smtp_server(settings):
    receiver = SmtpReceiver(port=free_port())
    controller = Controller(receiver, hostname="127.0.0.1", port=receiver.port)
    controller.start()
    settings.MAILERS = {"default": {"BACKEND": "django.core.mail.backends.smtp.EmailBackend",
                                    "OPTIONS": {"host": "127.0.0.1", "port": receiver.port, "timeout": 5}}}
    try:
        yield receiver
    finally:
        controller.stop()


@contextmanager
def eager_tasks():
    """Run Celery tasks in this process when they are enqueued: the real task, without a worker."""
    celery_app.conf.task_always_eager = True
    try:
        yield
    finally:
        celery_app.conf.task_always_eager = False


class WebhookReceiver:
    def __init__(self, port: int | None = None, status: int = 200):
        self.requests: list[dict] = []
        self.status = status
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                with receiver.lock:
                    receiver.requests.append({"path": self.path, "json": json.loads(raw or b"{}")})
                self.send_response(receiver.status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port or 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def url(self, path: str = "/hook") -> str:
        return f"json://127.0.0.1:{self.port}{path}"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def webhook_server():
    with WebhookReceiver() as receiver:
        yield receiver


def _reset_broker_connections() -> None:
    # Celery caches its pools (kombu keeps them in a global registry keyed by broker URL); forget the
    # cached references, without closing them, so the next publish looks up the pool of the new URL.
    celery_app._pool = None
    celery_app.amqp._producer_pool = None


@contextmanager
def broker_down():
    """Point the Celery app at a port nothing listens on, as when the broker restarts."""
    # Publishing uses broker_write_url (which defaults to the broker URL); with the CELERY_ settings
    # namespace, assigning broker_url afterwards would not take effect.
    saved = celery_app.conf.broker_write_url
    _reset_broker_connections()
    celery_app.conf.broker_write_url = f"redis://127.0.0.1:{free_port()}/0"
    try:
        yield
    finally:
        _reset_broker_connections()
        celery_app.conf.broker_write_url = saved
