"""The team queue's live refresh, answered with only what changed.

The browser sends what it shows in `X-Live-Have`: the region's frame hash and version, then per list (a tbody)
its rows in order as `id.hash`, and the frame's pieces under the empty list name:
`frame;version;waiting-rows:job-1.ab12cd34,job-2.9f00aa11;:waiting-count.1234abcd`.
An unchanged version is answered 204 (no body). Otherwise the region is rendered once and compared piece by
piece: a changed row is swapped in place (HTMX out of band), a row that left is deleted, one that arrived is
inserted after its neighbour. What a delta cannot say (the frame around the pieces changed, or rows that
stayed swapped places) is answered with the whole region instead, so the page is never wrong, only larger.
Rows the delta leaves alone keep what the reader opened in them, and the scroll position stays.

A region with a version (scheduler/jobs/page_version.py) is rendered once per version and kept in the Django
cache (Redis when CACHE_URL is set), so the readers of one team share one render until a cycle or a write
changes what it shows: 20 readers must not each build a page from the team's rows."""
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from hashlib import blake2b

from django.http import HttpResponse
from django.template.loader import render_to_string

from scheduler.jobs import shared_renders

HAVE_HEADER = "X-Live-Have"
VERSION_HEADER = "X-Live-Version"
END_MARKER = "<!--/live-->"
_SPACES = re.compile(r"\s+")
_FRAME = "__live_frame__"
_VERSION = "__live_version__"
# A version holds the minute (lease countdowns), so a stored region is dead after it; the rest is room.
REGION_SECONDS = 150


@dataclass
class Have:
    frame: str = ""
    version: str = ""
    lists: dict[str, list[tuple[str, str]]] = field(default_factory=dict)

    @classmethod
    def parse(cls, header: str) -> "Have":
        frame, _, rest = header.partition(";")
        version, _, rest = rest.partition(";")
        lists: dict[str, list[tuple[str, str]]] = {}
        for part in filter(None, rest.split(";")):
            name, _, items = part.partition(":")
            lists[name] = [tuple(item.rsplit(".", 1)) for item in items.split(",") if "." in item]
        return cls(frame=frame, version=version, lists=lists)


def render_region(request, template: str, context: dict, *, version: str) -> tuple[str, list, str]:
    """The region's HTML with its frame hash and version filled in, its pieces, and the frame hash."""
    pieces: list = []
    html = render_to_string(template, {**context, "live_pieces": pieces, "live_frame": _FRAME,
                                       "live_version": _VERSION}, request)
    # The frame is the region alone (from its opening tag to the end marker), the same in a page and a poll.
    start = html.rfind("<", 0, html.find(_FRAME))
    skeleton = html[start:html.find(END_MARKER, start)]
    for piece in pieces:  # which rows a list holds is the pieces' business, not the frame's
        skeleton = skeleton.replace(piece.html, "", 1)
    frame = blake2b(_SPACES.sub(" ", skeleton).encode(), digest_size=6).hexdigest()
    return html.replace(_FRAME, frame, 1).replace(_VERSION, version, 1), pieces, frame


def region(request, template: str, context: Callable[[], dict], *, version: str | None) -> tuple[str, list, str]:
    """`render_region`'s answer for this version, rendered by the first reader who asks and kept for the
    others; without a version (a flash message to show, a POST, not PostgreSQL) rendered for this request
    alone. `context` is called only to render."""
    if not version:
        return render_region(request, template, context(), version="")
    key = f"live-region:{template}:{version}"
    found = shared_renders.fetch_or_claim(key)
    if found is None:
        found = render_region(request, template, context(), version=version)
        shared_renders.keep(key, found, REGION_SECONDS)
    return found


def shows(request, version: str | None) -> bool:
    """The poll says it shows this version already (what `respond` answers with 204)."""
    return bool(version) and Have.parse(request.headers.get(HAVE_HEADER, "")).version == version


def respond(request, template: str, context: Callable[[], dict], *, version: str | None) -> HttpResponse:
    have = Have.parse(request.headers.get(HAVE_HEADER, ""))
    version = version or ""
    if version and have.version == version:
        return _answer(HttpResponse(status=204), version)
    html, pieces, frame = region(request, template, context, version=version)
    swaps = _swaps(have, pieces) if have.frame == frame else None
    if swaps is None:
        response = HttpResponse(html)
        response["HX-Reswap"] = "outerHTML"
    elif not swaps:
        response = HttpResponse(status=204)
    else:
        response = HttpResponse("".join(swaps))
        response["HX-Reswap"] = "none"
    return _answer(response, version)


def _answer(response: HttpResponse, version: str) -> HttpResponse:
    response[VERSION_HEADER] = version
    response["Cache-Control"] = "no-store"  # a delta fits only the page that asked for it
    response["Vary"] = HAVE_HEADER
    return response


def _swaps(have: Have, pieces: list) -> list[str] | None:
    """The out-of-band swaps that turn what the browser has into `pieces`, or None when only the whole region
    can (a frame piece is new, or rows that stayed swapped places)."""
    had = {pid: (name, version) for name, rows in have.lists.items() for pid, version in rows}
    now = {p.id for p in pieces}
    swaps = [_delete(pid) for pid in had if pid not in now]
    lists: dict[str, list] = {}
    for piece in pieces:
        lists.setdefault(piece.list, []).append(piece)
    for name, rows in lists.items():
        shown = dict(have.lists.get(name, []))
        if not name:  # the frame: counts, pagers, banners; always there, changed in place
            if any(p.id not in shown for p in rows):
                return None
            swaps += [_replace(p) for p in rows if shown[p.id] != p.version]
            continue
        kept = [p.id for p in rows if p.id in shown]
        if kept != [pid for pid, _ in have.lists.get(name, []) if pid in set(kept)]:
            return None
        before = None
        for piece in rows:
            if piece.id in shown:
                if shown[piece.id] != piece.version:
                    swaps.append(_replace(piece))
            else:
                if piece.id in had:  # it moved here from another list: take it out there first
                    swaps.append(_delete(piece.id))
                where = f"afterend:#{before}" if before else f"afterbegin:#{name}"
                swaps.append(f'<template><tbody hx-swap-oob="{where}">{piece.html}</tbody></template>')
            before = piece.id
    return swaps


def _replace(piece) -> str:
    stamped = piece.html.replace(" data-v=", ' hx-swap-oob="true" data-v=', 1)
    return f"<template>{stamped}</template>"


def _delete(pid: str) -> str:
    return f'<template><div id="{pid}" hx-swap-oob="delete"></div></template>'
