"""The broker the MQTT feeds use (`[mqtt]`): where it is, how a client logs in and checks
that it is the broker (TLS), and what the journal says when the broker will not have it.

A casino's broker asks each client to log in and speaks TLS (docs/deployment.md, "The
broker"); the tables (controller/progressive/mqtt.py) and the pit page
(controller/display/pit.py) reach it through `broker_client`, each with its own login.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from controller.errors import ConfigProblems

if TYPE_CHECKING:
    import ssl

DEFAULT_MQTT_PORT = 1883  # IANA port for MQTT without TLS
DEFAULT_MQTTS_PORT = 8883  # IANA port for MQTT over TLS
DEFAULT_MQTT_PREFIX = "casino"
MQTT_KEYS = ("ca_file", "client_id", "host", "password_file", "port", "prefix", "site", "tls",
             "username")
TOPIC_WORD = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")  # one topic level: no '/', '+' or '#'
CONNECT_TIMEOUT_S = 5.0  # bounded wait for the broker's CONNACK at start-up


@dataclass(frozen=True, slots=True)
class BrokerLogin:
    """`[mqtt]`'s login: how a client logs in to the broker and checks that it is the broker."""

    username: str = ""  # "" logs in anonymously
    password: str = field(default="", repr=False)  # from a password file; never in a repr
    tls: bool = False
    ca_file: str = ""  # with tls: the CA certificates that sign the broker's; "" = the system's

    def tls_context(self) -> ssl.SSLContext | None:
        """The context every TLS connection uses: the broker's certificate must chain to a
        trusted CA and name the host connected to (`ssl.create_default_context`)."""
        import ssl  # here: a configuration without TLS never loads it

        return ssl.create_default_context(cafile=self.ca_file or None) if self.tls else None


@dataclass(frozen=True, slots=True)
class MqttConfig:
    """`[mqtt]`: the meter display feed (the display is not the ledger)."""

    host: str
    port: int
    site: str
    prefix: str = DEFAULT_MQTT_PREFIX
    client_id: str = ""
    login: BrokerLogin = field(default_factory=BrokerLogin)  # the password read at start


def is_int(value: object) -> bool:
    """An integer that is not a bool (TOML's true is not the number 1)."""
    return isinstance(value, int) and not isinstance(value, bool)


def parse_mqtt(raw: object, problems: ConfigProblems) -> MqttConfig | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        problems.add("mqtt", raw, "a table [mqtt]")
        return None
    before = len(problems.items)
    for key in raw:
        if key not in MQTT_KEYS:
            problems.unknown(f"mqtt.{key}", MQTT_KEYS)
    tls = raw.get("tls", False)
    if not isinstance(tls, bool):
        problems.add("mqtt.tls", tls, "true (TLS to the broker; port 8883 unless given) or false")
    host = raw.get("host")
    port = raw.get("port", DEFAULT_MQTTS_PORT if tls is True else DEFAULT_MQTT_PORT)
    site, prefix = raw.get("site"), raw.get("prefix", DEFAULT_MQTT_PREFIX)
    client_id = raw.get("client_id", "")
    if not isinstance(host, str) or not host:
        problems.add("mqtt.host", host, "the broker's host name or address, e.g. '127.0.0.1'")
    if not is_int(port) or not 1 <= port <= 65535:
        problems.add("mqtt.port", port, "a TCP port 1-65535 (1883 is MQTT's, 8883 MQTT over TLS)")
    for key, value in (("site", site), ("prefix", prefix)):
        if not isinstance(value, str) or not TOPIC_WORD.match(value):
            problems.add(f"mqtt.{key}", value, "one topic level: letters, digits, _ . - "
                         "(no '/', '+' or '#')")
    if not isinstance(client_id, str):
        problems.add("mqtt.client_id", client_id, "a string")
    login = _parse_login(raw, tls is True, problems)
    if len(problems.items) > before or login is None:
        return None
    return MqttConfig(str(host), int(port), str(site), str(prefix), str(client_id), login)


def _parse_login(raw: Mapping[str, Any], tls: bool,
                 problems: ConfigProblems) -> BrokerLogin | None:
    """`username`, `password_file` (read now: a table that cannot log in says so before it
    starts, as a missing secrets file does) and `ca_file`."""
    before = len(problems.items)
    username, password_file = raw.get("username", ""), raw.get("password_file")
    ca_file = raw.get("ca_file", "")
    if not isinstance(username, str) or len(username.encode()) > 65535 \
            or any(not ch.isprintable() for ch in username):
        problems.add("mqtt.username", username, "the table's user on the broker, printable, "
                     "e.g. 'table-BAC-01'")
    password = ""
    if password_file is not None:
        if not isinstance(password_file, str) or not password_file:
            problems.add("mqtt.password_file", password_file, "the path of a file holding the "
                         "password alone, mode 0600 or 0400, e.g. /etc/tabled/mqtt-password")
        elif not username:
            problems.clash("mqtt.password_file", "a password without a username",
                           "username = the table's user on the broker, beside it")
        else:
            password, problem = read_password_file(password_file)
            if problem:
                problems.clash("mqtt.password_file", problem, PASSWORD_FILE_ALLOWED)
    if not isinstance(ca_file, str):
        problems.add("mqtt.ca_file", ca_file, "the path of a PEM file of CA certificates")
    elif ca_file and not tls:
        problems.clash("mqtt.ca_file", "a CA file without TLS", "tls = true beside it, or no "
                       "ca_file")
    elif ca_file:
        try:
            BrokerLogin(tls=True, ca_file=ca_file).tls_context()  # the context a connect uses
        except OSError as exc:  # ssl.SSLError included
            problems.add("mqtt.ca_file", ca_file, f"a readable PEM file of CA certificates "
                         f"(it could not be loaded: {exc})")
    if len(problems.items) > before:
        return None
    return BrokerLogin(str(username), password, tls, str(ca_file))


PASSWORD_FILE_ALLOWED = ("a file holding the password alone on one line, mode 0600 or 0400, "
                         "owned by the daemon's user")


def read_password_file(path: str) -> tuple[str, str | None]:
    """The password a file holds alone on its first line, or what is wrong with the file
    (`PASSWORD_FILE_ALLOWED` says what is allowed): readable only by its owner, as the
    supervisors' secrets file (controller/auth.py)."""
    from controller.auth import mode_open_to_others

    try:
        mode = mode_open_to_others(path)
        if mode is not None:
            return "", f"{path} has mode {mode:04o}: group or others can read it (chmod 0600 {path})"
        with open(path, encoding="utf-8") as file:
            text = file.read()
    except OSError as exc:
        return "", f"{path} cannot be read: {exc.strerror or exc}"
    except UnicodeDecodeError:
        return "", f"{path} is not UTF-8 text"
    password = text.removesuffix("\n").removesuffix("\r")
    if not password or "\n" in password:
        return "", f"{path} holds {'nothing' if not password else 'more than one line'}"
    return password, None


def broker_client(client_id: str, login: BrokerLogin) -> tuple[Any, ssl.SSLContext | None]:
    """A paho client (MQTT 3.1.1) that logs in as `login` says, and its TLS context."""
    import paho.mqtt.client as mqtt

    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id)
    if login.username:
        client.username_pw_set(login.username, login.password or None)
    context = login.tls_context()
    if context is not None:
        client.tls_set_context(context)
    return client, context


class BrokerTrouble:
    """Says in the journal why the broker cannot be used, once for each new reason, and when
    it can be again: paho retries every 1-30 s, and a wrong password or an untrusted
    certificate would otherwise write a line at every try, forever."""

    def __init__(self, logger: Any, host: str, port: int, login: BrokerLogin,
                 context: ssl.SSLContext | None) -> None:
        self._log = logger
        self._host, self._port = host, port
        self._context = context
        self.who = {"broker": f"{host}:{port}", "tls": login.tls,
                    "username": login.username or None}
        self.reason: str | None = None  # the last reason written; None while connected

    def _say(self, event: str, reason: str, allowed: str) -> None:
        if reason != self.reason:
            self.reason = reason
            self._log.error(event, reason=reason, allowed=allowed, **self.who)

    def refused(self, reason: object) -> None:
        """The broker answered the CONNECT with a refusal (MQTT 3.1.1 section 3.2.2.3)."""
        self._say("mqtt_connect_refused", str(reason),
                  "[mqtt] username and password_file as the broker's password_file has them, "
                  "and the broker's ACL letting that user in")

    def failed(self) -> None:
        """paho could not connect (it keeps no reason): try once more, by hand, to say why."""
        self._say("mqtt_connect_failed", self._why_not(),
                  "a broker listening there; with tls, a certificate for that host name "
                  "signed by a CA in [mqtt] ca_file (or the system's)")

    def connected(self) -> None:
        if self.reason is not None:
            self.reason = None
            self._log.info("mqtt_connected", **self.who)

    def _why_not(self) -> str:
        try:
            with socket.create_connection((self._host, self._port),
                                          timeout=CONNECT_TIMEOUT_S) as sock:
                if self._context is not None:
                    with self._context.wrap_socket(sock, server_hostname=self._host):
                        pass
        except OSError as exc:  # ssl.SSLError included
            return str(exc) or type(exc).__name__
        return "the connection failed, and a second try at once succeeded"
