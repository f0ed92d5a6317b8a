"""The demo's mail viewer: a local SMTP receiver (aiosmtpd, from the test extra `make demo` installs) on
127.0.0.1:<DEMO_SMTP_PORT> that keeps each mail the notice worker sends as a .eml file in var/demo-mail/,
and a page of the latest mails decoded (sender, recipients, subject, text, attachments), served at /mail/ by
the demo's local receiver beside the IM notices (portal/demo_im.py). `rundemo` starts both."""
import html
import itertools
import threading
from datetime import datetime
from email import message_from_bytes, policy
from pathlib import Path

from django.conf import settings

SHOWN = 50
TITLE = "Demo mail"
NO_MAIL = "No mail yet."
INTRO = "Mail the portal sent, newest first, decoded (the files are in {folder})."
ATTACHMENT = "Attachment: {name} ({kind}, {size} bytes)"
_sequence = itertools.count()


def demo_mail_folder() -> Path:
    return Path(settings.VAR_DIR) / "demo-mail"


class MailFolderHandler:
    """aiosmtpd's handler: every accepted mail becomes one file, named so the newest sorts last."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.lock = threading.Lock()

    async def handle_DATA(self, server, session, envelope):
        name = f"{datetime.now():%Y%m%d-%H%M%S-%f}-{next(_sequence):06d}.eml"
        with self.lock:
            self.folder.mkdir(parents=True, exist_ok=True)
            (self.folder / name).write_bytes(envelope.original_content or envelope.content)
        return "250 Message accepted for delivery"


def start_demo_smtp_receiver(*, port: int | None = None, folder: Path | None = None):
    """Start the SMTP receiver in its own thread; returns its controller (`.stop()` ends it)."""
    from aiosmtpd.controller import Controller

    folder = folder or demo_mail_folder()
    folder.mkdir(parents=True, exist_ok=True)
    controller = Controller(MailFolderHandler(folder), hostname="127.0.0.1",
                            port=settings.DEMO_SMTP_PORT if port is None else port)
    controller.start()
    return controller


def decoded(raw: bytes) -> dict:
    message = message_from_bytes(raw, policy=policy.default)
    body = message.get_body(("plain", "html"))
    return {"from": str(message["from"] or ""), "to": str(message["to"] or ""), "date": str(message["date"] or ""),
            "subject": str(message["subject"] or "").strip(), "text": body.get_content() if body else "",
            "attachments": [(part.get_filename() or "", part.get_content_type(), len(part.get_payload(decode=True) or b""))
                            for part in message.iter_attachments()]}


def latest_mails(folder: Path | None = None) -> list[dict]:
    folder = folder or demo_mail_folder()
    if not folder.exists():
        return []
    return [decoded(path.read_bytes()) for path in sorted(folder.glob("*.eml"))[-SHOWN:][::-1]]


def mail_page(folder: Path | None = None) -> bytes:
    folder = folder or demo_mail_folder()
    items = "".join(
        f"<li><p><strong>{html.escape(m['subject'])}</strong><br><small>{html.escape(m['date'])} · "
        f"{html.escape(m['from'])} → {html.escape(m['to'])}</small></p><pre>{html.escape(m['text'])}</pre>"
        + "".join(f"<p><small>{html.escape(ATTACHMENT.format(name=n, kind=k, size=s))}</small></p>"
                  for n, k, s in m["attachments"]) + "</li>"
        for m in latest_mails(folder)) or f"<li>{NO_MAIL}</li>"
    return (f"<!doctype html><html lang='en'><meta charset='utf-8'><meta name='viewport' "
            f"content='width=device-width, initial-scale=1'><title>{TITLE}</title>"
            f"<style>body{{font-family:system-ui,sans-serif;margin:1rem;max-width:60rem}}"
            f"pre{{white-space:pre-wrap;background:#f6f6f6;padding:.5rem}}</style>"
            f"<p><a href='/'>IM notices</a> · <a href='/mail/'>Mail</a></p><h1>{TITLE}</h1>"
            f"<p>{html.escape(INTRO.format(folder=folder))}</p><ol>{items}</ol></html>").encode()
