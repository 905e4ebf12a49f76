"""A per-source-address token bucket, in memory, for endpoints anyone may call (POST /register).

Each address may make `per_hour` calls in a burst and then one every `3600 / per_hour` seconds.
IPv6 addresses are grouped by /64, the block one subscriber usually holds. The table keeps at most
`max_tracked` addresses (least recently seen dropped first), so the limiter's own memory is bounded.
Limits are per instance: several instances each allow `per_hour`. Behind a proxy, the source
address is the proxy's unless uvicorn trusts it (`FORWARDED_ALLOW_IPS`, see docs/security.md).
"""

from __future__ import annotations

import ipaddress
from collections import OrderedDict

from thoughtline.clock import Clock

MAX_TRACKED = 10_000


def address_key(address: str) -> str:
    """The bucket an address belongs to: itself for IPv4, its /64 for IPv6."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is None:
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip.ipv4_mapped if isinstance(ip, ipaddress.IPv6Address) else ip)


class RateLimiter:
    """Token buckets keyed by source address, refilled continuously from an injected clock."""

    def __init__(self, clock: Clock, per_hour: int, max_tracked: int = MAX_TRACKED) -> None:
        self._clock = clock
        self._capacity = float(per_hour)
        self._rate = per_hour / 3600.0
        self._max_tracked = max_tracked
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def take(self, address: str) -> float | None:
        """Spend one call for `address`: None when allowed, else the seconds until one is free."""
        key, now = address_key(address), self._clock.now()
        tokens, updated = self._buckets.pop(key, (self._capacity, now))
        tokens = min(self._capacity, tokens + (now - updated) * self._rate)
        allowed = tokens >= 1.0
        self._buckets[key] = (tokens - 1.0 if allowed else tokens, now)
        while len(self._buckets) > self._max_tracked:
            self._buckets.popitem(last=False)
        return None if allowed else (1.0 - tokens) / self._rate
