"""The demo's stand-in for a team's IM bot: a small HTTP server on 127.0.0.1 that takes the notice worker's
JSON webhook posts (the demo's `llm` channel is json://127.0.0.1:<DEMO_IM_PORT>/llm), appends each to
var/demo-im.log as one JSON line and lists the latest at GET /; GET /mail/ is the demo's mail viewer
(portal/demo_mail.py). `rundemo` starts it; nothing else uses it."""
import html
import json
import threading
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from django.conf import settings

from portal.demo_mail import mail_page

DEMO_IM_TENANT = "llm"
DEMO_IM_CHANNEL_NAME = "Demo IM bot (local receiver)"
SHOWN = 50


def demo_im_url() -> str:
    return f"json://127.0.0.1:{settings.DEMO_IM_PORT}/{DEMO_IM_TENANT}"


def demo_im_log() -> Path:
    return Path(settings.VAR_DIR) / "demo-im.log"


def demo_notice_channel(*, actor):
    """The `llm` team's one IM channel, pointing at the local receiver (idempotent)."""
    from quotas.models import Tenant
    from scheduler.notices.models import NoticeChannel
    from scheduler.notices.services import notice_channel_create, notice_channel_delete

    tenant = Tenant.objects.get(slug=DEMO_IM_TENANT)
    existing = NoticeChannel.objects.filter(tenant=tenant, name=DEMO_IM_CHANNEL_NAME).first()
    if existing is not None and existing.target == demo_im_url():
        return existing
    if existing is not None:  # DEMO_IM_PORT changed since the demo data was loaded
        notice_channel_delete(actor=actor, channel=existing)
    return notice_channel_create(actor=actor, tenant=tenant, kind=NoticeChannel.Kind.WEBHOOK,
                                 name=DEMO_IM_CHANNEL_NAME, target=demo_im_url())


def _read(log: Path) -> list[dict]:
    if not log.exists():
        return []
    lines = log.read_text(encoding="utf-8").splitlines()[-SHOWN:]
    return [json.loads(line) for line in reversed(lines) if line.strip()]


def _page(entries: list[dict]) -> bytes:
    items = "".join(
        f"<li><p><strong>{html.escape(str(e.get('title', '')))}</strong> <small>{html.escape(e['received_at'])} "
        f"{html.escape(e['path'])}</small></p><pre>{html.escape(str(e.get('message', '')))}</pre></li>"
        for e in entries) or "<li>No notice yet.</li>"
    return (f"<!doctype html><html lang='en'><meta charset='utf-8'><meta name='viewport' "
            f"content='width=device-width, initial-scale=1'><title>Demo IM receiver</title>"
            f"<p><a href='/'>IM notices</a> · <a href='/mail/'>Mail</a></p><h1>Demo IM receiver</h1><p>Notices posted to the demo channel, newest first (also in "
            f"{html.escape(str(demo_im_log()))}).</p><ol>{items}</ol></html>").encode()


def start_demo_im_receiver(*, port: int | None = None, log: Path | None = None,
                           mail_folder: Path | None = None) -> ThreadingHTTPServer:
    """Serve in a daemon thread; the caller shuts it down (or the process ends)."""
    log = log or demo_im_log()
    log.parent.mkdir(parents=True, exist_ok=True)
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                posted = json.loads(raw or b"{}")
            except ValueError:
                posted = {"message": raw.decode("utf-8", "replace")}
            entry = {"received_at": datetime.now().astimezone().isoformat(timespec="seconds"), "path": self.path,
                     "title": posted.get("title", ""), "message": posted.get("message", "")}
            with lock, log.open("a", encoding="utf-8") as out:
                out.write(json.dumps(entry, ensure_ascii=False) + "\n")
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_GET(self):
            body = mail_page(mail_folder) if self.path.startswith("/mail") else _page(_read(log))
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", settings.DEMO_IM_PORT if port is None else port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True, name="demo-im-receiver").start()
    return server
