"""`[display_service]`: where the display service listens and what one client may hold.

    [display_service]
    listen = "10.20.30.41:8080"           # the pit's address; default 127.0.0.1:8080
    dealer_allowed = ["10.20.30.42"]      # addresses or networks that may load /dealer
    max_clients = 64                      # connections at once, from everyone
    max_per_address = 16                  # connections at once from one address
    max_streams_per_address = 4           # event streams at once from one address
    header_timeout_s = 10                 # a request's line and headers must arrive in this
    languages = ["en", "zh-hans"]         # the scoreboard's labels, one or two languages
    table_number = "12"                   # shown large on the scoreboard; default [table] id
                                          # (when it is at most 12 characters)

The daemon checks this section with the rest of the file (controller/config.py) and
the display service reads it (controller/display/service.py); both call
`parse_display_service`, so the two can never disagree about what is allowed.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from controller.config_checks import ConfigProblems

SECTION = "display_service"
DEFAULT_LISTEN = ("127.0.0.1", 8080)  # nothing off the Pi sees the pages until configured

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True)
class ClientLimits:
    """What the web server allows each client and all of them (controller/display/web.py)."""

    max_clients: int = 64  # a pit has a handful of screens; this caps a runaway poller
    max_per_address: int = 16  # a kiosk browser opens ~6 at once; one host never fills the cap
    max_streams_per_address: int = 4  # a screen holds one stream per page it shows
    header_timeout_s: float = 10.0  # an idle or slow client is dropped after this
    # None: /dealer for everyone who may connect; else only for these networks.
    dealer_allowed: tuple[IPNetwork, ...] | None = None


# The scoreboard's label languages (controller/display/static/scoreboard.js LABELS):
# English, and Chinese in simplified (庄 闲 和) or traditional (莊 閒 和) characters.
LANGUAGES = ("en", "zh-hans", "zh-hant")
DEFAULT_LANGUAGES = ("en", "zh-hans")  # the pit's boards are bilingual unless told not to
TABLE_NUMBER_MAX = 12  # characters: it is shown large in the scoreboard's corner


@dataclass(frozen=True)
class DisplayServiceConfig:
    listen: tuple[str, int] = DEFAULT_LISTEN
    limits: ClientLimits = ClientLimits()
    languages: tuple[str, ...] = DEFAULT_LANGUAGES
    table_number: str | None = None  # None: the table's id (`corner_number`)

    def corner_number(self, table_id: str) -> str | None:
        """What the scoreboard's corner shows: the configured number, else the table's id
        when it fits there (a table id may be 64 characters); None: no corner, the id is in
        the footer."""
        if self.table_number is not None:
            return self.table_number
        return table_id if len(table_id) <= TABLE_NUMBER_MAX else None


_COUNTS = {  # key -> (lowest, highest) allowed
    "max_clients": (1, 4096),
    "max_per_address": (1, 4096),
    "max_streams_per_address": (1, 4096),
}
_TIMEOUT_RANGE = (0.5, 300.0)
KEYS = ("listen", "dealer_allowed", *_COUNTS, "header_timeout_s", "languages",
        "table_number")


def parse_listen(text: str) -> tuple[str, int] | None:
    """'10.20.30.41:8080' -> ('10.20.30.41', 8080), '[::1]:0' -> ('::1', 0); None if not
    HOST:PORT with PORT 0 to 65535 (0 picks a free port)."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdecimal() or not 0 <= int(port) <= 65535:
        return None
    host = host.strip("[]")
    try:  # what the socket layer does with a name: a label over 63 characters raised there
        host.encode("idna")
    except UnicodeError:
        return None
    return host or "0.0.0.0", int(port)


def client_address(host: str) -> str:
    """The address a client is counted under: an IPv4 client of a dual-stack socket
    ('::ffff:10.0.0.5') is the same host as over IPv4 ('10.0.0.5')."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return str(address.ipv4_mapped)
    return str(address)


def address_allowed(host: str, networks: tuple[IPNetwork, ...]) -> bool:
    try:
        address = ipaddress.ip_address(client_address(host))
    except ValueError:
        return False
    return any(address in network for network in networks)


def parse_display_service(section: Mapping[str, Any]) -> tuple[DisplayServiceConfig, list[str]]:
    """`[display_service]` and every problem found in it, each naming the key, the value
    and what is allowed."""
    problems = ConfigProblems()
    for key in section:
        if key not in KEYS:
            problems.unknown(f"{SECTION}.{key}", KEYS)
    listen = DEFAULT_LISTEN
    if "listen" in section:
        value = section["listen"]
        parsed = parse_listen(value) if isinstance(value, str) else None
        if parsed is None:
            problems.add(f"{SECTION}.listen", value, "HOST:PORT with PORT 0 to 65535, e.g. "
                         "127.0.0.1:8080 (this machine only) or the pit's address, "
                         "10.20.30.41:8080")
        else:
            listen = parsed
    defaults = ClientLimits()
    counts: dict[str, int] = {}
    for key, (low, high) in _COUNTS.items():
        value = section.get(key, getattr(defaults, key))
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            problems.add(f"{SECTION}.{key}", value, f"a whole number {low} to {high}")
        else:
            counts[key] = value
    if counts.get("max_per_address", 0) > counts.get("max_clients", 4096):
        problems.clash(f"{SECTION}.max_per_address",
                       f"{counts['max_per_address']} is more than max_clients "
                       f"({counts['max_clients']})", "at most max_clients")
    if counts.get("max_streams_per_address", 0) > counts.get("max_per_address", 4096):
        problems.clash(f"{SECTION}.max_streams_per_address",
                       f"{counts['max_streams_per_address']} is more than max_per_address "
                       f"({counts['max_per_address']})", "at most max_per_address")
    timeout: Any = section.get("header_timeout_s", defaults.header_timeout_s)
    shortest, longest = _TIMEOUT_RANGE
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) \
            or not shortest <= timeout <= longest:
        problems.add(f"{SECTION}.header_timeout_s", timeout,
                     f"seconds, {shortest:g} to {longest:g}")
        timeout = defaults.header_timeout_s
    dealer_allowed = _networks(section.get("dealer_allowed"), problems)
    limits = ClientLimits(
        **{k: counts.get(k, getattr(defaults, k)) for k in _COUNTS},
        header_timeout_s=float(timeout), dealer_allowed=dealer_allowed)
    return DisplayServiceConfig(listen=listen, limits=limits,
                                languages=_languages(section.get("languages"), problems),
                                table_number=_table_number(section.get("table_number"),
                                                           problems)), problems.items


def _languages(value: Any, problems: ConfigProblems) -> tuple[str, ...]:
    if value is None:
        return DEFAULT_LANGUAGES
    allowed = (f"a list of one or two of {', '.join(LANGUAGES)}, the first the main "
               "language, e.g. [\"en\", \"zh-hans\"]")
    if not isinstance(value, list) or not 1 <= len(value) <= 2 \
            or any(v not in LANGUAGES for v in value) or len(set(value)) != len(value):
        problems.add(f"{SECTION}.languages", value, allowed)
        return DEFAULT_LANGUAGES
    return tuple(value)


def _table_number(value: Any, problems: ConfigProblems) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip() or len(value) > TABLE_NUMBER_MAX:
        problems.add(f"{SECTION}.table_number", value,
                     f"the table's number as the pit knows it, 1 to {TABLE_NUMBER_MAX} "
                     "characters, e.g. \"12\" or \"BA-3\"")
        return None
    return value.strip()


def _networks(value: Any, problems: ConfigProblems) -> tuple[IPNetwork, ...] | None:
    if value is None:
        return None
    allowed = ("a list of IP addresses or networks, e.g. [\"10.20.30.42\", \"127.0.0.1\"] "
               "or [\"10.20.30.0/28\"]; leave it out to serve /dealer to every client")
    if not isinstance(value, list) or not value:
        problems.add(f"{SECTION}.dealer_allowed", value, allowed)
        return None
    networks: list[IPNetwork] = []
    for item in value:
        try:
            if not isinstance(item, str):
                raise TypeError(item)  # ip_network would take 5 as 0.0.0.5
            networks.append(ipaddress.ip_network(item, strict=False))
        except (TypeError, ValueError):
            problems.add(f"{SECTION}.dealer_allowed", item, allowed)
    return tuple(networks)
