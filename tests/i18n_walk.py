"""The zh-Hans walk's instruments: what a page looked up in the catalogue and what it shows.

Four findings, each a reason a Chinese reader meets English or an identifier:
- ``missing``: a message id the request looked up (``{% translate %}``, ``gettext``, lazy labels, plurals)
  that the zh-Hans catalogue does not hold. Collected by wrapping ``DjangoTranslation.gettext``/``ngettext``
  for the walk only, so it sees every lookup, whatever its path.
- ``english``: a text on the page equal to an English message id whose Chinese differs: the English was
  rendered (a string never marked, a lazy text forced while English was active).
- ``raw``: a stored choice value (``awaiting_approval``, ``tenant_admin``) shown as text instead of its label.
- ``prose``: English words that are neither data of the walked world nor a technical name: a plain string
  that never reached the catalogue.
Texts inside ``code``, ``pre``, ``script``, ``style``, ``textarea`` and elements marked ``translate="no"``
are data and are not read.
"""
import re
from collections import defaultdict
from contextlib import contextmanager
from html.parser import HTMLParser
from pathlib import Path

from django.apps import apps
from django.utils import translation
from django.utils.translation import trans_real

PO = Path(__file__).resolve().parent.parent / "portal" / "locale" / "zh_Hans" / "LC_MESSAGES" / "django.po"
LANGUAGE = "zh-hans"
SKIPPED_ELEMENTS = {"code", "pre", "script", "style", "textarea", "kbd", "samp"}
READ_ATTRIBUTES = {"title", "placeholder", "aria-label", "alt"}
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
# Names that stay as they are in Chinese text: units, formats, protocols and products.
TECHNICAL = {
    "gpu", "gpus", "cpu", "cpus", "api", "csv", "xlsx", "json", "pdf", "eta", "http", "https", "post", "get",
    "url", "id", "ids", "im", "slurm", "sbatch", "squeue", "sacct", "kubernetes", "htmx", "openapi", "webhook", "slack",
    "lark", "feishu", "dingtalk", "wecom", "email", "smtp", "gib", "gb", "tb", "min", "utc", "iso", "ok",
    "english", "django", "usr1", "sigterm", "token", "what", "if",
}
WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*[A-Za-z]|[A-Za-z]{2,}")


# --- the catalogue ----------------------------------------------------------------------------------------

def po_entries(path: Path = PO):
    """(msgid, msgstr) of each singular entry of a .po file, continuation lines joined, escapes kept."""
    for block in path.read_text(encoding="utf-8").split("\n\n")[1:]:
        parts, current = {}, None
        for line in block.splitlines():
            keyword = re.match(r'^(msgid|msgstr|msgid_plural|msgctxt)\s+"(.*)"$', line)
            if keyword:
                current = keyword.group(1)
                parts[current] = keyword.group(2)
            elif line.startswith('"') and current:
                parts[current] += line[1:-1]
        if parts.get("msgid") and "msgstr" in parts and "msgctxt" not in parts:
            yield _unescape(parts["msgid"]), _unescape(parts["msgstr"])


def _unescape(text: str) -> str:
    return text.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")


def english_texts() -> set[str]:
    """English message ids a page could show verbatim (no placeholders) whose Chinese differs."""
    return {_squash(msgid) for msgid, msgstr in po_entries()
            if msgstr and msgstr != msgid and re.search("[A-Za-z]{2}", msgid)
            and "%(" not in msgid and "{" not in msgid}


def raw_choice_values() -> dict[str, str]:
    """Stored values of every choice field of the portal whose label is words, value → model.field."""
    from quotas.models import Membership
    from scheduler.engine.types import DEFAULT_PRIORITY_CLASSES

    raw = {}
    for model in apps.get_models():
        if model._meta.app_label not in {"quotas", "scheduler", "audit", "notices", "portal", "whatif", "accounts"}:
            continue
        for field in model._meta.concrete_fields:
            for value, label in field.flatchoices:
                with translation.override("en"):
                    english = str(label)
                if isinstance(value, str) and english != value and re.search("[a-z]", value):
                    raw.setdefault(value, f"{model.__name__}.{field.name}")
    for value in Membership.Role.values:
        raw.setdefault(value, "Membership.role")
    for value in DEFAULT_PRIORITY_CLASSES:
        raw.setdefault(value, "priority class")
    return raw


# --- what the request looked up -------------------------------------------------------------------------

class Lookups:
    """Message ids looked up in zh-Hans that its catalogue lacks, gathered while ``recording()``."""

    def __init__(self):
        self.missing: list[str] = []

    @contextmanager
    def recording(self):
        original_gettext, original_ngettext = trans_real.DjangoTranslation.gettext, trans_real.DjangoTranslation.ngettext
        lookups = self

        def gettext(translation_object, message):
            if translation_object.language() == LANGUAGE and _english(message) and message not in translation_object._catalog \
                    and (message, 0) not in translation_object._catalog:
                lookups.missing.append(str(message))
            return original_gettext(translation_object, message)

        def ngettext(translation_object, msgid1, msgid2, n):
            if translation_object.language() == LANGUAGE and (msgid1, 0) not in translation_object._catalog:
                lookups.missing.append(str(msgid1))
            return original_ngettext(translation_object, msgid1, msgid2, n)

        trans_real.DjangoTranslation.gettext, trans_real.DjangoTranslation.ngettext = gettext, ngettext
        try:
            yield self
        finally:
            trans_real.DjangoTranslation.gettext, trans_real.DjangoTranslation.ngettext = (
                original_gettext, original_ngettext)

    def take(self) -> list[str]:
        taken, self.missing = self.missing, []
        return taken


def _english(message) -> bool:
    """A message id in the source language. Code that passes an already translated text through gettext
    again (a lazy constant inside ``_()``) looks up Chinese, which no catalogue holds and no reader misses."""
    return bool(message) and not re.search("[\u3000-\u9fff\uff00-\uffef]", str(message))


# --- what the page shows --------------------------------------------------------------------------------

class _Texts(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, bool]] = []
        self.texts: list[str] = []

    def _skipping(self) -> bool:
        return any(skip for _tag, skip in self.stack)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        skip = tag in SKIPPED_ELEMENTS or attrs.get("translate") == "no"
        if not skip and not self._skipping():
            self.texts += [v for k, v in attrs.items() if k in READ_ATTRIBUTES and v]
            if tag == "input" and attrs.get("type") in ("submit", "button") and attrs.get("value"):
                self.texts.append(attrs["value"])
        if tag not in VOID:
            self.stack.append((tag, skip))

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in VOID and self.stack:
            self.stack.pop()

    def handle_endtag(self, tag):
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i][0] == tag:
                del self.stack[i:]
                break

    def handle_data(self, data):
        if not self._skipping() and data.strip():
            self.texts.append(data)


def _squash(text: str) -> str:
    return " ".join(text.split())


def visible_texts(html: str) -> list[str]:
    parser = _Texts()
    parser.feed(html)
    return [_squash(t) for t in parser.texts]


class Reader:
    """Reads one rendered page the way a Chinese reader would and lists what is not Chinese."""

    def __init__(self, *, data: set[str]):
        self.english = english_texts()
        self.raw = raw_choice_values()
        # Longest first, so "Alpha team" goes before "Alpha".
        self.data = sorted({_squash(d) for d in data if d and _squash(d)}, key=len, reverse=True)
        self.data_texts = set(self.data)
        self.data_words = {w.lower() for d in self.data for w in WORD.findall(d)}

    def findings(self, html: str) -> list[str]:
        found = []
        for text in visible_texts(html):
            bare = text.rstrip(":：").strip()
            if bare in self.data_texts:
                continue
            if bare in self.english:
                found.append(f"english: {bare!r}")
                continue
            for token in re.split(r"[\s,;()/·→|]+", bare):
                # A user named like a stored value ("auditor", a platform role) is data, not a raw value.
                if token in self.raw and token not in self.data_texts:
                    found.append(f"raw: {token!r} ({self.raw[token]}) in {_clip(text)!r}")
            # Paths, file and command names (/api/v1/jobs/7/, manage.py, audit_verify) are names, not prose.
            stripped = re.sub(r"\S*[/._]\S*", " ", text)
            for d in self.data:
                stripped = stripped.replace(d, " ")
            words = [w for w in WORD.findall(stripped) if w.lower() not in TECHNICAL
                     and w.lower() not in self.data_words and w not in self.raw and not _is_identifier(w)]
            if words:
                found.append(f"prose: {text!r}")
        return found


def _clip(text: str, width: int = 70) -> str:
    return text if len(text) <= width else text[:width - 1] + "…"


def _is_identifier(word: str) -> bool:
    """GPU model names, wait codes and the like: capitals with digits or underscores (H100, ENV_NOT_READY)."""
    return bool(re.fullmatch(r"[A-Z0-9_-]+", word)) and (len(word) <= 2 or any(c.isdigit() or c == "_" for c in word)
                                                          or word.isupper())


def report(problems: dict[tuple[str, str], list[str]]) -> str:
    """The failure message: per role and page, the untranslated texts, so whoever owns the page fixes it."""
    by_page = defaultdict(list)
    for (role, page), items in sorted(problems.items()):
        by_page[page].append((role, items))
    lines = [f"{sum(len(v) for v in problems.values())} untranslated texts on {len(by_page)} pages in zh-Hans:"]
    for page, roles in sorted(by_page.items()):
        lines.append(f"  {page}")
        for role, items in roles:
            lines.append(f"    as {role}:")
            lines += [f"      - {item}" for item in dict.fromkeys(items)]
    return "\n".join(lines)
