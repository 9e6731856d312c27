"""Who may do what on the control socket: roles, and the caller behind each connection.

Each command declares the one role it needs where it is registered
(`controller.commands.Commands.register`); this module maps the process on the other end
of the socket to the roles it holds, from the kernel's peer credentials
(SO_PEERCRED: uid, gid, pid; SO_PEERGROUPS: its supplementary groups), never
from anything the client says. The groups are named in the configuration's
`[access]` table and created by systemd/tabled.sysusers (docs/deployment.md).

Roles are capabilities, not a ladder: a technician may run diagnostics but
not place wagers, a dealer may run the table but not the diagnostics.

| role | who holds it | what it allows |
| --- | --- | --- |
| read | every recognised caller | look: status, events, meters, subscribe (monitoring, scoreboards) |
| dealer | members of `dealer_group` | the table's own operations |
| technician | members of `technician_group` | device diagnostics that drive outputs (self-test, light test) |
| supervisor | a dealer-role caller plus a floor supervisor's name and PIN, per request | rulings and corrections |

Device facts (cards drawn, a shuffle's count, the batch the shuffler or the
shoe holds) have no command at all: they reach the table only from the
devices' drivers, and a dealer's declaration (`shoe_loaded`) goes through the
same checks as the device's own report.
"""

from __future__ import annotations

import enum
import grp
import os
import pwd
import socket
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from controller.errors import shown_setting

# Linux's SO_PEERGROUPS (since 4.13; absent from Python's socket module): the peer's
# supplementary groups as they were when it connected.
SO_PEERGROUPS = getattr(socket, "SO_PEERGROUPS", 59)
MAX_PEER_GROUPS = 256  # Python's getsockopt reads at most 1024 bytes


class Role(enum.Enum):
    READ = "read"
    DEALER = "dealer"
    TECHNICIAN = "technician"
    SUPERVISOR = "supervisor"  # a dealer's request carrying a supervisor's name and PIN


ROLE_MEANING: Mapping[Role, str] = {
    Role.READ: "every recognised caller (group `tabled`, or a dealer or technician)",
    Role.DEALER: "members of the dealer group (`tabled-dealer`)",
    Role.TECHNICIAN: "members of the technician group (`tabled-tech`)",
    Role.SUPERVISOR: "a dealer-group caller plus a floor supervisor's name and PIN",
}


@dataclass(frozen=True)
class AccessConfig:
    """The configuration's `[access]` table (defaults are what systemd/tabled.sysusers ships)."""

    read_group: str = "tabled"
    dealer_group: str = "tabled-dealer"
    technician_group: str = "tabled-tech"
    # root and the daemon's own user hold every role: both can read the store and the
    # secrets anyway, and a technician with sudo must never be locked out of the table.
    trusted_uids: tuple[int, ...] = ()  # in addition to 0 and the daemon's own uid
    secrets: str = ""  # the secrets file (PIN hashes), mode 0600/0400; "" = none
    inline_pin_hashes: bool = False  # a demo config may keep [supervisors] in the table file
    pin_lockout_after: int = 5  # wrong PINs for one supervisor before the lockout
    pin_lockout_s: float = 900.0  # 15 min: a supervisor is reached by phone well within it
    pin_delay_s: float = 1.0  # first delay after a wrong PIN from a caller; doubles each time
    pin_max_delay_s: float = 30.0
    max_connections: int = 4096  # well under LimitNOFILE=16384 in tabled.service
    max_connections_per_user: int = 256  # one account cannot take every slot
    # A request connection silent this long is closed: an hour outlasts any guided test
    # or a technician's pause (ControlClient reconnects by itself anyway); floods are
    # bounded by the connection caps, not by this.
    idle_timeout_s: float = 3600.0
    subscriber_stall_s: float = 30.0  # a subscriber that reads nothing this long is dropped


ACCESS_KEYS: Mapping[str, tuple[type | tuple[type, ...], str]] = {
    "read_group": (str, "a group name, e.g. 'tabled'"),
    "dealer_group": (str, "a group name, e.g. 'tabled-dealer'"),
    "technician_group": (str, "a group name, e.g. 'tabled-tech'"),
    "trusted_uids": (list, "a list of user ids (whole numbers >= 0)"),
    "secrets": (str, "the secrets file's path, e.g. /etc/tabled/secrets.toml"),
    "inline_pin_hashes": (bool, "true or false"),
    "pin_lockout_after": (int, "a whole number 1 to 1000"),
    "pin_lockout_s": ((int, float), "seconds, 1 to 86400"),
    "pin_delay_s": ((int, float), "seconds, 0 to 60"),
    "pin_max_delay_s": ((int, float), "seconds, 0 to 600"),
    "max_connections": (int, "a whole number 1 to 60000"),
    "max_connections_per_user": (int, "a whole number 1 to 60000"),
    "idle_timeout_s": ((int, float), "seconds, 1 to 86400"),
    "subscriber_stall_s": ((int, float), "seconds, 1 to 3600"),
}
_RANGES: Mapping[str, tuple[float, float]] = {
    "pin_lockout_after": (1, 1000), "pin_lockout_s": (1, 86400), "pin_delay_s": (0, 60),
    "pin_max_delay_s": (0, 600), "max_connections": (1, 60000),
    "max_connections_per_user": (1, 60000), "idle_timeout_s": (1, 86400),
    "subscriber_stall_s": (1, 3600),
}


def parse_access(section: Mapping[str, Any], problems: list[str]) -> AccessConfig:
    """`[access]` into an AccessConfig; every bad key is appended to `problems`."""
    values: dict[str, Any] = {}
    for key, value in section.items():
        if key not in ACCESS_KEYS:
            problems.append(f"access.{key}: unknown key; allowed keys: "
                            f"{', '.join(sorted(ACCESS_KEYS))}")
            continue
        kind, allowed = ACCESS_KEYS[key]
        ok = isinstance(value, kind) and not (isinstance(value, bool) and kind is not bool)
        if ok and key in _RANGES:
            low, high = _RANGES[key]
            ok = low <= value <= high
        if ok and key == "trusted_uids":
            ok = all(isinstance(u, int) and not isinstance(u, bool) and u >= 0 for u in value)
        if ok and key.endswith("_group"):
            ok = bool(value.strip())
        if not ok:
            problems.append(f"access.{key} = {shown_setting(value)}: not allowed; allowed: {allowed}")
            continue
        values[key] = float(value) if key.endswith("_s") else \
            tuple(value) if key == "trusted_uids" else value
    return AccessConfig(**values)


@dataclass(frozen=True)
class Caller:
    """The process on the other end of one connection, as the kernel reports it."""

    uid: int
    gid: int
    pid: int
    roles: frozenset[Role] = field(default_factory=frozenset)

    @property
    def key(self) -> str:
        """Who is counted for PIN failures: the user, not the process (a new tablectl
        process per try must not start from zero)."""
        return f"uid {self.uid}"

    def describe(self) -> dict[str, Any]:
        return {"uid": self.uid, "gid": self.gid, "pid": self.pid,
                "roles": sorted(r.value for r in self.roles)}


class AccessPolicy:
    """Maps peer credentials to roles. Group names are resolved once, at start-up (an NSS
    lookup may block; it must not run on the event loop per connection)."""

    def __init__(self, config: AccessConfig, *, own_uid: int | None = None,
                 gid_of: Any = None) -> None:
        self.config = config
        self.own_uid = os.geteuid() if own_uid is None else own_uid
        lookup = gid_of or _gid_of
        self.group_ids: dict[Role, int | None] = {
            Role.READ: lookup(config.read_group),
            Role.DEALER: lookup(config.dealer_group),
            Role.TECHNICIAN: lookup(config.technician_group),
        }
        self.trusted = frozenset({0, self.own_uid, *config.trusted_uids})

    @property
    def missing_groups(self) -> list[str]:
        names = {Role.READ: self.config.read_group, Role.DEALER: self.config.dealer_group,
                 Role.TECHNICIAN: self.config.technician_group}
        return [names[role] for role, gid in self.group_ids.items() if gid is None]

    def roles_for(self, uid: int, gids: Iterable[int]) -> frozenset[Role]:
        if uid in self.trusted:
            return frozenset(Role)
        member = set(gids)
        roles = {role for role, gid in self.group_ids.items()
                 if gid is not None and gid in member}
        if roles & {Role.DEALER, Role.TECHNICIAN}:
            roles.add(Role.READ)  # whoever may act may also look
        if Role.DEALER in roles:
            roles.add(Role.SUPERVISOR)  # still needs a supervisor's PIN per request
        return frozenset(roles)

    def caller(self, sock: socket.socket) -> Caller:
        """The connection's caller from SO_PEERCRED / SO_PEERGROUPS."""
        pid, uid, gid = peer_credentials(sock)
        return Caller(uid, gid, pid,
                      self.roles_for(uid, {gid, *peer_groups(sock, uid, gid)}))


def peer_credentials(sock: socket.socket) -> tuple[int, int, int]:
    """(pid, uid, gid) of the process that connected (struct ucred)."""
    raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, gid = struct.unpack("3i", raw)
    return pid, uid, gid


def peer_groups(sock: socket.socket, uid: int | None = None, gid: int | None = None,
                ) -> tuple[int, ...]:
    """The peer's supplementary groups, as the kernel recorded them at connect(). Python
    reads at most 1024 option bytes (256 groups); for a peer with more, the account's
    groups from the user database stand in. () where neither can say (then only the
    primary gid counts, which errs on the side of fewer roles)."""
    try:
        raw = sock.getsockopt(socket.SOL_SOCKET, SO_PEERGROUPS, 4 * MAX_PEER_GROUPS)
    except OSError:
        return _account_groups(uid, gid)
    return struct.unpack(f"{len(raw) // 4}I", raw[: len(raw) // 4 * 4])


def _account_groups(uid: int | None, gid: int | None) -> tuple[int, ...]:
    if uid is None or gid is None:
        return ()
    try:
        return tuple(os.getgrouplist(pwd.getpwuid(uid).pw_name, gid))
    except (KeyError, OSError):
        return ()


def _gid_of(name: str) -> int | None:
    try:
        return grp.getgrnam(name).gr_gid
    except KeyError:
        return None
