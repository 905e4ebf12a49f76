"""Which addresses a Client ID Metadata Document may be fetched from: globally routable ones only.

An IPv6 address can carry an IPv4 address inside it, and the network may route it there: IPv4-mapped
(`::ffff:10.0.0.1`), IPv4-compatible (`::10.0.0.1`, deprecated), NAT64 (`64:ff9b::10.0.0.1`,
RFC 6052, and the local-use `64:ff9b:1::/48` of RFC 8215), 6to4 (`2002:0a00:0001::`, RFC 3056) and
Teredo (`2001:0::/32`, both the server and the obfuscated client). Python's `is_global` judges the
IPv6 address alone, so each embedded IPv4 address is judged too (issue 11).
"""

from __future__ import annotations

import ipaddress

NAT64 = ipaddress.IPv6Network("64:ff9b::/96")  # well-known prefix, IPv4 in the last 32 bits
NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")  # local-use: never global (RFC 8215)
IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def embedded_ipv4(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """Every IPv4 address an IPv6 address may lead to."""
    found: list[ipaddress.IPv4Address] = []
    if ip.ipv4_mapped is not None:
        found.append(ip.ipv4_mapped)
    if ip.sixtofour is not None:
        found.append(ip.sixtofour)
    if ip.teredo is not None:
        found.extend(ip.teredo)
    if ip in IPV4_COMPATIBLE or ip in NAT64:
        found.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    return found


def _routable(ip: Address, allow_loopback: bool) -> bool:
    if ip.is_loopback:
        return allow_loopback
    return ip.is_global and not ip.is_multicast


def address_allowed(address: str, allow_loopback: bool = False) -> bool:
    """Whether we may connect to `address` (a resolved IP, possibly with an IPv6 zone)."""
    ip: Address = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if isinstance(ip, ipaddress.IPv4Address) or ip.is_loopback:
        return _routable(ip, allow_loopback)
    if ip in IPV4_COMPATIBLE or ip in NAT64_LOCAL:
        return False  # deprecated (RFC 4291 §2.5.5.1) or local-use; nothing public lives there
    inner = embedded_ipv4(ip)
    if ip in NAT64 or ip.sixtofour is not None:
        return all(_routable(v4, allow_loopback=False) for v4 in inner)  # as good as the IPv4 inside
    return _routable(ip, allow_loopback) and all(_routable(v4, allow_loopback=False) for v4 in inner)
