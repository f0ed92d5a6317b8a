"""`{% livepiece "list-id" %}<tr id="...">...</tr>{% endlivepiece %}`: one piece of a live region, a row of a
list (the tbody it sits in) or, without an argument, a fixed part of the frame (a count, a pager).

The piece is stamped with `data-v`, a short hash of its HTML, and recorded in the render's `live_pieces` list
when the view gave one, so a poll can answer with only the pieces whose hash the browser does not have
(`scheduler/jobs/live_rows.py`). Rendering the region once and hashing what it rendered keeps one template
the truth for the full page, the full region and the delta alike."""
import re
from dataclasses import dataclass
from hashlib import blake2b

from django import template
from django.utils.html import strip_spaces_between_tags

register = template.Library()

_OPENING_TAG_END = re.compile(r"^(\s*<[a-zA-Z][^>]*?)(/?>)")
_ID = re.compile(r'\bid="([^"]+)"')


@dataclass(frozen=True)
class Piece:
    id: str
    list: str  # the id of the tbody the row sits in; "" for a part of the frame
    version: str
    html: str


class LivePieceNode(template.Node):
    def __init__(self, nodelist, list_id):
        self.nodelist = nodelist
        self.list_id = list_id

    def render(self, context):
        # Spaces between tags collapsed here, so a {% spaceless %} around the list leaves the piece as hashed.
        html = strip_spaces_between_tags(self.nodelist.render(context).strip())
        version = blake2b(html.encode(), digest_size=4).hexdigest()
        stamped = _OPENING_TAG_END.sub(lambda m: f'{m.group(1)} data-v="{version}"{m.group(2)}', html, count=1)
        pieces = context.get("live_pieces")
        if pieces is not None:
            found = _ID.search(html)
            if found is None:
                raise template.TemplateSyntaxError("a live piece needs an id on its first element")
            pieces.append(Piece(id=found.group(1), list=self.list_id.resolve(context) if self.list_id else "",
                                version=version, html=stamped))
        return stamped


@register.tag("livepiece")
def livepiece(parser, token):
    bits = token.split_contents()
    if len(bits) > 2:
        raise template.TemplateSyntaxError("livepiece takes at most one argument: the id of its list")
    nodelist = parser.parse(("endlivepiece",))
    parser.delete_first_token()
    return LivePieceNode(nodelist, parser.compile_filter(bits[1]) if len(bits) == 2 else None)
