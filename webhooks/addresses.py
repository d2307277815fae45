"""Where a webhook may go: the URL's shape, and the address it connects to.

A studio's URL must not reach this service's own networks (loopback, private ranges, link-local
with the cloud's metadata service, carrier-grade NAT, multicast, reserved) unless
WEBHOOK_ALLOW_PRIVATE says so (development, tests). Names are resolved once per attempt, every
address they resolve to is checked, and the request connects to the checked address (the URL's
name still goes in ``Host`` and in TLS's SNI and certificate check), so a name that resolves to
a public address at the check and to a private one at the connection (DNS rebinding) cannot
slip past."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

from .models import URL_MAX_CHARS

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# Beyond what ipaddress flags as private: shared address space (carrier-grade NAT), which a
# cloud's internal services use too.
_SHARED = ipaddress.ip_network("100.64.0.0/10")


class AddressRefused(ValueError):
    """The URL, or an address its host resolves to, is not one a webhook may reach."""


@dataclass(frozen=True)
class Target:
    scheme: str
    host: str  # as written (a name, or an address without brackets)
    port: int


def refusal(address: IPAddress) -> str | None:
    """Why a webhook may not connect to ``address``, or None when it may."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    checks = (
        (address.is_loopback, "a loopback address"),
        (address.is_link_local, "a link-local address (where cloud metadata services answer)"),
        (address.is_unspecified, "an unspecified address"),
        (address.is_multicast, "a multicast address"),
        (isinstance(address, ipaddress.IPv4Address) and address in _SHARED, "a shared (carrier-grade NAT) address"),
        (address.is_private, "a private address"),
        (address.is_reserved, "a reserved address"),
    )
    return next((why for refused, why in checks if refused), None)


def url_check(url: str, *, allow_http: bool, allow_private: bool) -> Target:
    """The URL's scheme, host and port, or AddressRefused saying what is wrong with it. A host
    given as an address (or ``localhost``) is checked here; a name is checked at each attempt."""
    if len(url) > URL_MAX_CHARS:
        raise AddressRefused(f"At most {URL_MAX_CHARS} characters.")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as error:
        raise AddressRefused(f"Not a URL: {error}.") from None
    schemes = ("https", "http") if allow_http else ("https",)
    if parts.scheme not in schemes:
        raise AddressRefused("Must be an https:// URL." if not allow_http else "Must be an http(s):// URL.")
    host = parts.hostname or ""
    if not host or any(ch.isspace() for ch in url):
        raise AddressRefused("Must be an absolute URL with a host.")
    if parts.username is not None or parts.password is not None:
        raise AddressRefused("Must not carry a user name or password (the signature authenticates us).")
    target = Target(parts.scheme, host, port or (443 if parts.scheme == "https" else 80))
    if not allow_private:
        if host == "localhost" or host.endswith(".localhost"):
            raise AddressRefused("Must not point at a loopback address.")
        try:
            literal: IPAddress | None = ipaddress.ip_address(host)
        except ValueError:
            literal = None
        why = refusal(literal) if literal is not None else None
        if why is not None:
            raise AddressRefused(f"Must not point at {why}.")
    return target


async def address_resolve(target: Target, *, allow_private: bool) -> str:
    """The address to connect to for ``target``: resolved now, each address checked; refused
    when any of them is not one a webhook may reach (AddressRefused), unresolvable (OSError)."""
    loop = asyncio.get_running_loop()
    found = await loop.getaddrinfo(target.host, target.port, type=socket.SOCK_STREAM)
    addresses = [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in found]
    if not addresses:
        raise OSError(f"{target.host} resolves to no address")
    if not allow_private:
        for address in addresses:
            why = refusal(address)
            if why is not None:
                raise AddressRefused(f"{target.host} resolves to {why} ({address})")
    return str(addresses[0])
