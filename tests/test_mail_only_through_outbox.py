"""All mail goes through the one notice outbox: only its channel module may touch Django's mail API, so
every message has a notice row, the outbox's retries and backoff, and an audit event per attempt."""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APPS = ("audit", "portal", "quotas", "scheduler")
THE_SENDER = Path("scheduler/notices/channels.py")
MAIL_MODULE = "django.core.mail"
SENDING_NAMES = {"EmailMessage", "EmailMultiAlternatives", "send_mail", "send_mass_mail", "mail_admins",
                 "mail_managers", "get_connection", "email_user"}  # User.email_user calls send_mail


def mail_uses(source: str) -> list[str]:
    """Each import of Django's mail API and each call of a sending name, as 'line: what'."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [f"{node.lineno}: import {a.name}" for a in node.names if a.name.startswith(MAIL_MODULE)]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(MAIL_MODULE):
            found.append(f"{node.lineno}: from {node.module} import …")
        elif isinstance(node, ast.ImportFrom) and node.module == "django.core" and any(
                a.name == "mail" for a in node.names):
            found.append(f"{node.lineno}: from django.core import mail")
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if name in SENDING_NAMES:
                found.append(f"{node.lineno}: {name}(…)")
    return found


def _sources():
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            relative = path.relative_to(ROOT)
            if "migrations" not in relative.parts:
                yield relative, path.read_text()


def test_only_the_notice_channels_send_mail():
    offenders = {str(path): uses for path, source in _sources() if path != THE_SENDER and (uses := mail_uses(source))}
    assert offenders == {}


def test_the_channel_module_is_where_mail_is_sent():
    assert mail_uses((ROOT / THE_SENDER).read_text())  # the check looks at the right thing


def test_it_catches_each_way_around_the_outbox():
    planted = {
        "from django.core.mail import EmailMessage\nEmailMessage('s', 'b', to=['a@x']).send()\n": 2,
        "import django.core.mail\ndjango.core.mail.send_mail('s', 'b', None, ['a@x'])\n": 2,
        "from django.core import mail\nmail.mail_admins('s', 'b')\n": 2,
        "def f(user):\n    user.email_user('s', 'b')\n": 1,
        "outbox.enqueue(kind='quota_change', tenant=t, recipients=['a@x'], subject='s', body='b', facts={})\n": 0,
    }
    assert {source: len(mail_uses(source)) for source in planted} == planted


def test_the_mail_kinds_of_quotas_are_notice_kinds_and_the_outbox_answers_quotas():
    from quotas import outbox
    from scheduler.notices import outbox as notice_outbox
    from scheduler.notices.models import Notice

    assert set(outbox.KINDS) <= set(Notice.Kind.values)
    assert outbox._outbox is notice_outbox
