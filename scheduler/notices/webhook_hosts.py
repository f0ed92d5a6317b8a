"""Where a generic JSON webhook may point: not into the platform's own network, unless an operator allows it.

Tenant admins choose json:// and jsons:// targets, and the notice worker POSTs to them from inside the
platform. A target on a loopback, private, link-local or otherwise non-global address would let a tenant
reach internal services (cloud metadata, Redis, the database) through the worker, so such hosts are refused
unless listed in ``NOTICE_WEBHOOK_ALLOWED_HOSTS`` (host names, addresses or networks). The vendor IM
schemes (feishu://, dingtalk://, …) always go to their vendor's public endpoint and are not checked here.

The check runs when a channel is saved and again before each send, since a name may resolve differently
later. A name that does not resolve when the channel is saved is accepted: the send-time check decides.
"""
import ipaddress
import socket
from urllib.parse import urlsplit

from django.conf import settings
from django.utils.translation import gettext_lazy as _

CHECKED_SCHEMES = ("json", "jsons")

HOST_MISSING = _("This webhook URL names no host.")
HOST_NOT_PUBLIC = _(
    "Webhook targets on loopback, private or link-local addresses are refused ({host} is {address}): "
    "ask a platform admin to allow this host."
)

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def _addresses(host: str) -> list[Address]:
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError):
        return []
    # An IPv6 answer may carry a zone (fe80::1%eth0); the address is what is checked.
    return [ipaddress.ip_address(info[4][0].split("%", 1)[0]) for info in infos]


def _public(address: Address) -> bool:
    mapped = getattr(address, "ipv4_mapped", None)
    return (mapped or address).is_global


def _allowed_entries() -> tuple[set[str], list]:
    """The operator's allow list, split into host names and networks (an address is a /32 or /128)."""
    names, networks = set(), []
    for entry in getattr(settings, "NOTICE_WEBHOOK_ALLOWED_HOSTS", ()):
        entry = entry.strip().lower()
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            names.add(entry)
    return names, networks


def refusal(url: str) -> str | None:
    """Why ``url`` must not be posted to, or None. Only json:// and jsons:// URLs are checked."""
    scheme, sep, _rest = url.strip().partition("://")
    if not sep or scheme.lower() not in CHECKED_SCHEMES:
        return None
    try:
        host = (urlsplit(url.strip()).hostname or "").lower()
    except ValueError:  # e.g. an unbalanced [ in an IPv6 literal
        host = ""
    if not host:
        return str(HOST_MISSING)
    names, networks = _allowed_entries()
    if host in names:
        return None
    for address in _addresses(host):
        if not _public(address) and not any(address in network for network in networks):
            return str(HOST_NOT_PUBLIC.format(host=host, address=address))
    return None
