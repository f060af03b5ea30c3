"""Which worker owns a namespace: the one rule the proxy and the servers share.

nginx's `hash $key` (without `consistent`) picks, among peers of equal weight, peer
`((crc32(key) >> 16) & 0x7fff) % count` (ngx_http_upstream_hash_module.c, compatible with
Cache::Memcached). It is not `crc32(key) % count`: only 15 bits of the checksum take part.
A peer is never skipped as failed, because the generated configuration gives every one
`max_fails=0`, so this is the whole rule. tests/cluster/test_nginx_routing.py holds nginx to it.
"""

from __future__ import annotations

import zlib


def owner(namespace: str, count: int) -> int:
    """The index (0-based, in the configuration's order) of the worker serving `namespace`."""
    if count < 1:
        raise ValueError("a server has at least one worker")
    return ((zlib.crc32(namespace.encode()) >> 16) & 0x7FFF) % count
