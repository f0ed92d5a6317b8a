"""The team queue page's frame: everything around its shared content (the head, the reader's navigation, the
language form, who is signed in), rendered once per reader and what it shows, and kept in the Django cache
beside the content (scheduler/jobs/shared_renders.py), so a read of an unchanged page renders no template.

Rendering it was a third of a warm read's CPU (the base template's links, translations and static paths),
for a result that changes only when the reader's rights, name, language or address change. Its key holds all
of what it shows: the user (a frame is never served to anyone else), their name and staff flag, their rights
as the request's reader read them this request (quotas/reader.py: memberships, platform roles, administered
units, the approvals badge's count), the language, the tenant's name, whether the submit form is on the page,
and the address. The content, the CSRF token and the CSP nonce (the htmx script's: the response's policy
names it) are placeholders every response fills in."""
from hashlib import blake2b

from django.db import connection
from django.middleware.csp import get_nonce
from django.template.loader import render_to_string
from django.utils.safestring import mark_safe
from django.utils.translation import get_language

from quotas.reader import reader
from scheduler.jobs import shared_renders

TEMPLATE = "scheduler/queue.html"
# Escaped wherever a name could put it (a tenant named so shows as &lt;!--…), so only the template has it raw.
CONTENT_MARK = "<!--queue-content-->"
NONCE_PLACEHOLDER = "csp-nonce-of-this-request"
SECONDS = 300


def key(request, access, *, form: bool) -> str:
    """The frame's cache key: a digest of everything the frame shows for this reader."""
    user, rights = request.user, reader(request)
    parts = (connection.settings_dict["NAME"], user.pk, user.get_username(), user.is_staff, sorted(rights.roles),
             rights.tenants, sorted(rights.units), rights.awaiting, get_language(), access.tenant.pk,
             access.tenant.name, form, request.get_full_path())
    return "queue-frame:" + blake2b(repr(parts).encode(), digest_size=16).hexdigest()


def render(request, access, *, form: bool, csrf_placeholder: str) -> str:
    """The frame with the content mark where the content goes and the CSRF placeholder for the token."""
    return render_to_string(TEMPLATE, {"tenant": access.tenant, "form": form, "queue_content": mark_safe(CONTENT_MARK),  # noqa: S308
                                       "csrf_token": csrf_placeholder, "csp_nonce": NONCE_PLACEHOLDER}, request)


def fetched(frame_key: str, content_key: str) -> tuple[str | None, str | None]:
    """The kept frame and content, in one round trip to the store (either None when not kept)."""
    found = shared_renders.fetch_many([frame_key, content_key])
    return found.get(frame_key), found.get(content_key)


def keep(frame_key: str, frame: str) -> None:
    shared_renders.put(frame_key, frame, SECONDS)  # a frame is one reader's: nobody waits on a claim for it


def assembled(request, frame: str, content: str) -> str:
    """The page: the frame around the content, with this response's CSP nonce (generated here, so the
    policy header names it: django.middleware.csp)."""
    before, mark, after = frame.partition(CONTENT_MARK)
    if not mark:
        raise RuntimeError("the queue page's frame has no place for its content")
    nonce = get_nonce(request)
    if nonce is None:  # no CSP middleware: no nonce attribute either
        return before.replace(f' nonce="{NONCE_PLACEHOLDER}"', "") + content + after
    return before.replace(NONCE_PLACEHOLDER, str(nonce)) + content + after
