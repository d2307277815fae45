"""The client address every per-address limit counts (log-ins, sign-ups, link codes, sockets)."""

from __future__ import annotations

import ipaddress

# IPv6 clients commonly hold a whole /64, so a limit per single address would be
# trivial to step around: the unit of the per-address limits is the /64.
IPV6_PREFIX_BITS = 64


def client_address(raw: str | None) -> str:
    """The unit the per-address limits count: the IPv4 address, or the IPv6 /64.

    Behind a proxy, uvicorn runs with --proxy-headers and the trusted proxy's
    forwarded address is the client's (docker/entrypoint.sh, docs/deploy.md).
    """
    try:
        address = ipaddress.ip_address((raw or "").strip())
    except ValueError:
        # No usable address (a test client, a misconfigured proxy): all such
        # requests share one bucket rather than escaping the limit.
        return "unknown"
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, IPV6_PREFIX_BITS), strict=False))
    return str(address)
