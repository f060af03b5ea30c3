"""The webhook egress policy: where a delivery may connect (pure: no sockets, no DNS).

A subscription URL names a host; a delivery connects to an address. In team mode (or with any
`--egress-allow` / `--egress-deny` rule) each address a delivery would connect to is judged by
the rules here, and so is the URL's host before anything is resolved, so that a refused
delivery is recorded with its reason and never sent (simulator/events/egress.py applies the
policy at the resolver and at the socket, the edge).

The rules, and which one decides:
- Built-in denials, each an address range with a name: loopback, link-local (the cloud
  metadata address 169.254.169.254 among them), private, shared (carrier-grade NAT), reserved
  and documentation ranges, multicast, unspecified, and the IPv6 forms that carry an IPv4
  address inside them (IPv4-compatible, NAT64, 6to4, Teredo). An IPv4-mapped IPv6 address
  (`::ffff:127.0.0.1`) is judged as the IPv4 address it maps.
- `allow` and `deny` rules: a CIDR (`10.1.0.0/16`), an address (`10.1.2.3`, `::1`), or a host
  name (`hooks.internal`, or `*.internal` for every name under it).
- The most specific rule decides: a host-name rule before any address rule (an allowed name
  may resolve to a private address; a denied name is refused whatever it resolves to), then
  the longest prefix; on a tie, deny. An address no rule covers is allowed.

Host names are judged as written in the URL, lower-cased, without a trailing dot. Numeric
hosts are judged by the address they mean, in every form a resolver accepts (`2130706433`,
`0177.0.0.1`, `0x7f.1`, `[::ffff:127.0.0.1]`).
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

# (range, what it is): the denials every policy starts from.
BUILT_IN_DENIALS: tuple[tuple[str, str], ...] = (
    ("0.0.0.0/8", "unspecified ('this network')"),
    ("10.0.0.0/8", "private"),
    ("100.64.0.0/10", "shared address space (carrier-grade NAT)"),
    ("127.0.0.0/8", "loopback"),
    ("169.254.0.0/16", "link-local (cloud metadata)"),
    ("172.16.0.0/12", "private"),
    ("192.0.0.0/24", "reserved (IETF protocol assignments)"),
    ("192.0.2.0/24", "reserved (documentation)"),
    ("192.88.99.0/24", "reserved (6to4 relay anycast)"),
    ("192.168.0.0/16", "private"),
    ("198.18.0.0/15", "reserved (benchmarking)"),
    ("198.51.100.0/24", "reserved (documentation)"),
    ("203.0.113.0/24", "reserved (documentation)"),
    ("224.0.0.0/4", "multicast"),
    ("240.0.0.0/4", "reserved (future use, broadcast)"),
    ("::/128", "unspecified"),
    ("::1/128", "loopback"),
    ("::/96", "IPv4-compatible IPv6 (embeds an IPv4 address)"),
    ("64:ff9b::/96", "NAT64 (embeds an IPv4 address)"),
    ("64:ff9b:1::/48", "local NAT64 (embeds an IPv4 address)"),
    ("100::/64", "reserved (discard)"),
    ("2001::/23", "reserved (IETF protocol assignments)"),
    ("2001::/32", "Teredo (embeds an IPv4 address)"),
    ("2001:db8::/32", "reserved (documentation)"),
    ("2002::/16", "6to4 (embeds an IPv4 address)"),
    ("fc00::/7", "private (unique local)"),
    ("fe80::/10", "link-local"),
    ("fec0::/10", "site-local (deprecated)"),
    ("ff00::/8", "multicast"),
)

_NAME = re.compile(
    r"(\*\.)?([a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*"
)
# One part of a numeric IPv4 host in the forms inet_aton accepts: decimal, octal (0...), hex.
_PART = re.compile(r"0[xX][0-9a-fA-F]*|0[0-7]*|[1-9][0-9]*")


class EgressRuleError(ValueError):
    """A rule that does not parse (its message is one line, for the command line)."""


@dataclass(frozen=True, slots=True)
class _Range:
    network: Network
    allow: bool
    why: str  # what the range is (a built-in denial) or which option made the rule


@dataclass(frozen=True, slots=True)
class _Name:
    name: str  # exact, or a suffix `.internal` for `*.internal`
    wildcard: bool
    allow: bool
    why: str

    def matches(self, host: str) -> bool:
        return host.endswith(self.name) if self.wildcard else host == self.name


@dataclass(frozen=True, slots=True)
class HostVerdict:
    """What the URL's host alone decides: refused (with why), trusted by a name rule (its
    addresses are not judged), or neither (every address it resolves to is judged)."""

    refusal: str | None = None
    trusted: bool = False


@dataclass(frozen=True, slots=True)
class EgressPolicy:
    """The built-in denials adjusted by `allow` and `deny` rules (see the module's doc)."""

    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    _ranges: tuple[_Range, ...] = ()
    _names: tuple[_Name, ...] = ()

    @classmethod
    def parse(cls, allow: tuple[str, ...] = (), deny: tuple[str, ...] = ()) -> EgressPolicy:
        """The policy of these rules, or EgressRuleError for the first one that does not parse
        (nothing is applied then)."""
        ranges = [_Range(ipaddress.ip_network(cidr), False, why) for cidr, why in BUILT_IN_DENIALS]
        names: list[_Name] = []
        for rules, allowed in ((deny, False), (allow, True)):
            option = "--egress-allow" if allowed else "--egress-deny"
            for rule in rules:
                parsed = _parse_rule(rule, allowed, f"{option} {rule}")
                if isinstance(parsed, _Name):
                    names.append(parsed)
                else:
                    ranges.append(parsed)
        # Most specific first; on a tie deny first (False sorts before True).
        ranges.sort(key=lambda r: (-r.network.prefixlen, r.allow))
        names.sort(key=lambda n: (n.wildcard, -len(n.name), n.allow))
        return cls(tuple(allow), tuple(deny), tuple(ranges), tuple(names))

    @property
    def rules(self) -> tuple[str, ...]:
        return tuple(f"allow {r}" for r in self.allow) + tuple(f"deny {r}" for r in self.deny)

    def judge_host(self, host: str) -> HostVerdict:
        """The URL's host, before anything is resolved: a numeric one by its address, a name
        by the name rules."""
        host = host.strip().lower().rstrip(".")
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        if not host:
            return HostVerdict(refusal="the URL has no host")
        address = numeric_address(host)
        if address is not None:
            refusal = self.judge_address(address)
            if refusal is not None and address.version == 4 and str(address) != host:
                refusal = f"{host} is {refusal}"
            return HostVerdict(refusal=refusal)
        for rule in self._names:
            if rule.matches(host):
                if rule.allow:
                    return HostVerdict(trusted=True)
                return HostVerdict(refusal=f"{host} is denied ({rule.why})")
        return HostVerdict()

    def judge_address(self, address: Address | str) -> str | None:
        """Why a connection to this address is refused, or None when it is allowed."""
        if isinstance(address, str):
            try:
                address = ipaddress.ip_address(address.split("%", 1)[0])
            except ValueError:
                return f"{address} is not an IP address"
        shown = str(address)
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
            shown = f"{shown} (IPv4-mapped {address})"
        for rule in self._ranges:
            if address.version == rule.network.version and address in rule.network:
                return None if rule.allow else f"{shown} ({rule.why})"
        return None


def _parse_rule(rule: str, allow: bool, why: str) -> _Range | _Name:
    text = rule.strip().lower().rstrip(".")
    if not text:
        raise EgressRuleError(
            f"{why.split()[0]}: an empty rule (give a CIDR, an address or a host)"
        )
    if "/" in text or ":" in text or (text.replace(".", "").isdigit() and text.count(".") == 3):
        try:
            return _Range(ipaddress.ip_network(text.strip("[]"), strict=True), allow, why)
        except ValueError as exc:
            raise EgressRuleError(f"{why}: not a CIDR or an address ({exc})") from None
    if _NAME.fullmatch(text) is None or numeric_address(text) is not None:
        raise EgressRuleError(
            f"{why}: not a CIDR (10.0.0.0/8), an address (10.1.2.3, ::1) or a host name "
            "(hooks.example.com, *.example.com)"
        )
    if text.startswith("*."):
        return _Name(text[1:], True, allow, why)
    return _Name(text, False, allow, why)


def numeric_address(host: str) -> Address | None:
    """The address a numeric host means, in any form a resolver takes it (IPv6, the dotted
    quad, and inet_aton's legacy forms: `2130706433`, `0177.0.0.1`, `0x7f.1`); None for a
    name."""
    if ":" in host:
        try:
            return ipaddress.IPv6Address(host.split("%", 1)[0])
        except ValueError:
            return None
    parts = host.split(".")
    if not 1 <= len(parts) <= 4 or not all(_PART.fullmatch(p) for p in parts):
        return None
    values = [int(p, 16) if p[:2] in ("0x", "0X") and len(p) > 2 else _int(p) for p in parts]
    *head, last = values
    if any(v > 255 for v in head) or last >= 256 ** (5 - len(values)):
        return None
    number = last
    for i, value in enumerate(head):
        number += value << (8 * (3 - i))
    return ipaddress.IPv4Address(number)


def _int(part: str) -> int:
    if part in ("0x", "0X"):
        return 0
    return int(part, 8) if len(part) > 1 and part[0] == "0" else int(part)
