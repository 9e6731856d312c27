"""The pit page's command line and its feed's settings: the broker, prefix, site and TLS from
the arguments or from any table's `[mqtt]`; the page's own login from the arguments only
(docs/deployment.md, "The broker")."""

from __future__ import annotations

import argparse
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from controller.display.settings import parse_listen
from controller.errors import shown
from controller.logsetup import add_log_level_argument
from controller.progressive.broker import (
    DEFAULT_MQTT_PORT, DEFAULT_MQTT_PREFIX, DEFAULT_MQTTS_PORT, PASSWORD_FILE_ALLOWED,
    BrokerLogin, read_password_file,
)
from controller.text_files import read_toml

PROG = "python -m controller.display.pit"  # how the page is started, and its messages' prefix
DEFAULT_PREFIX = DEFAULT_MQTT_PREFIX


def _host_port(text: str, what: str) -> tuple[str, int]:
    parsed = parse_listen(text) if text.rpartition(":")[0].strip("[]") else None
    if parsed is None:
        raise argparse.ArgumentTypeError(f"{what} {shown(text)}: allowed: HOST:PORT, e.g. "
                                         "127.0.0.1:1883")
    return parsed


@dataclass(frozen=True)
class FeedSettings:
    host: str
    port: int
    prefix: str
    site: str
    login: BrokerLogin = field(default_factory=BrokerLogin)


def feed_settings(args: argparse.Namespace) -> FeedSettings:
    """Broker, prefix, site and TLS: the arguments, else a table configuration's [mqtt]. The
    login only from the arguments: the page has a user of its own on the broker, one that may
    only read (docs/deployment.md), never a table's."""
    mqtt: dict[str, Any] = {}
    if args.config:
        try:
            data = read_toml(args.config)
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise SystemExit(f"{PROG}: --config {args.config}: cannot be read as TOML: {exc}")
        section = data.get("mqtt")
        mqtt = section if isinstance(section, dict) else {}
        if not mqtt:
            raise SystemExit(f"{PROG}: --config {args.config} has no [mqtt] section; "
                             "allowed: a table configuration with [mqtt], or --broker and --site")
    tls = args.tls or mqtt.get("tls", False)
    if not isinstance(tls, bool):
        raise SystemExit(f"{PROG}: --config {args.config}: [mqtt] tls = {shown(tls)}: "
                         "allowed: true or false")
    host, port = args.broker or (mqtt.get("host"),
                                 mqtt.get("port", DEFAULT_MQTTS_PORT if tls else DEFAULT_MQTT_PORT))
    site = args.site or mqtt.get("site")
    prefix = args.prefix or mqtt.get("prefix", DEFAULT_PREFIX)
    if not host or not site:
        raise SystemExit(f"{PROG}: the broker and the site are needed: --broker HOST:PORT and "
                         "--site NAME, or --config with an [mqtt] section")
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port <= 65535 \
            or parse_listen(f"{host}:{port}") is None:
        raise SystemExit(f"{PROG}: --config {args.config}: [mqtt] host = {shown(host)}, port "
                         f"= {shown(port)}: allowed: a host name or address and a port 1 to "
                         "65535 (tabled's own check: tablectl config validate)")
    login = BrokerLogin(args.username or "", _pit_password(args), tls,
                        _pit_ca_file(args, mqtt, tls))
    return FeedSettings(str(host), port, str(prefix), str(site), login)


def _pit_password(args: argparse.Namespace) -> str:
    if not args.password_file:
        return ""
    if not args.username:
        raise SystemExit(f"{PROG}: --password-file needs --username: allowed: the page's own "
                         "user on the broker, e.g. --username pitpage")
    password, problem = read_password_file(args.password_file)
    if problem:
        raise SystemExit(f"{PROG}: --password-file {problem}; allowed: {PASSWORD_FILE_ALLOWED}")
    return password


def _pit_ca_file(args: argparse.Namespace, mqtt: Mapping[str, Any], tls: bool) -> str:
    ca_file = args.ca_file or mqtt.get("ca_file", "")
    if not isinstance(ca_file, str):
        raise SystemExit(f"{PROG}: --config {args.config}: [mqtt] ca_file = {shown(ca_file)}: "
                         "allowed: the path of a PEM file of CA certificates")
    if ca_file and not tls:
        raise SystemExit(f"{PROG}: a CA file ({ca_file}) without TLS: allowed: --tls (or "
                         "[mqtt] tls = true) beside it, or no CA file")
    try:
        BrokerLogin(tls=tls, ca_file=ca_file).tls_context()
    except OSError as exc:  # ssl.SSLError included
        raise SystemExit(f"{PROG}: CA file {ca_file}: allowed: a readable PEM file of CA "
                         f"certificates (it could not be loaded: {exc})")
    return ca_file


def pit_arguments() -> argparse.ArgumentParser:
    """The page's command line: the broker (or a table's configuration naming it), the
    page's own login, and where it serves."""
    parser = argparse.ArgumentParser(prog=PROG,
                                     description="Serve the pit page from the tables' MQTT feeds.")
    parser.add_argument("--config", help="a table configuration of the pit: its [mqtt] names "
                                          "the broker, prefix and site")
    parser.add_argument("--broker", type=lambda t: _host_port(t, "--broker"),
                        help="the broker's HOST:PORT (default: from --config)")
    parser.add_argument("--site", help="the site's topic level (default: from --config)")
    parser.add_argument("--prefix", help=f"the topic prefix (default: from --config, else "
                                         f"{DEFAULT_PREFIX!r})")
    parser.add_argument("--tls", action="store_true", help="TLS to the broker (default: "
                        "[mqtt] tls of --config; the port then defaults to 8883)")
    parser.add_argument("--ca-file", help="with TLS: the CA certificates that sign the "
                                          "broker's (default: [mqtt] ca_file, else the system's)")
    parser.add_argument("--username", help="the page's own user on the broker, one that may "
                                           "only read the tables' topics (default: anonymous)")
    parser.add_argument("--password-file", help="a file holding that user's password alone, "
                                                "mode 0600 or 0400")
    parser.add_argument("--listen", type=lambda t: _host_port(t, "--listen"),
                        default=("127.0.0.1", 8090), help="HOST:PORT to serve on "
                                                          "(default 127.0.0.1:8090; port 0: a free one)")
    parser.add_argument("--port-file", help="write the bound port here once listening")
    add_log_level_argument(parser)
    return parser
