"""Files a notice's email carries, rebuilt at delivery from the notice's facts: the outbox keeps what
identifies the file (a tenant and a month), not the file. The app that owns a kind's files registers
its builder when Django is ready (the monthly report's come from audit, which builds on this app)."""
from collections.abc import Callable
from dataclasses import dataclass

from scheduler.notices.models import Notice


@dataclass(frozen=True)
class Attachment:
    filename: str
    content: bytes | str
    mimetype: str


Builder = Callable[..., list[Attachment]]

NO_BUILDER = "No attachment builder is registered for {kind!r} notices."

# Kinds whose email is incomplete without its files: without a builder the send fails and is retried.
NEEDS_ATTACHMENTS = frozenset({Notice.Kind.MONTHLY_REPORT})

_builders: dict[str, Builder] = {}


def register(kind: str, builder: Builder) -> None:
    _builders[kind] = builder


def for_notice(notice) -> list[Attachment]:
    """The files of one notice; raises LookupError for a kind that needs files but has no builder."""
    builder = _builders.get(notice.kind)
    if builder is None:
        if notice.kind in NEEDS_ATTACHMENTS:
            raise LookupError(NO_BUILDER.format(kind=notice.kind))
        return []
    return builder(notice=notice)
