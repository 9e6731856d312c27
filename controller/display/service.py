"""The display service: follows tabled's event stream, serves the scoreboard and dealer pages.

    tabledisplay --config /etc/tabled/table.toml [--listen 10.20.30.41:8080]

It serves where `[display_service] listen` says (controller/display/settings.py;
127.0.0.1:8080 when left out), `--listen` overriding it, with the per-address limits
and the dealer page's allowed addresses of that section.

Its own process (and systemd unit, systemd/tabledisplay.service): it only *reads* the
daemon, over the control socket's `subscribe` stream and the read commands `events`,
`status`, `meters` and `devices`, so nothing it does (a crash, a stalled browser) can
touch the table. When the daemon goes away it keeps serving the last view marked
"daemon offline" and reconnects with capped backoff, resuming after the last event it
saw; the pages reconnect to it by themselves when it restarts.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
import time
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import structlog

from controller.config import ConfigError
from controller.control import ControlClient, ControlError
from controller.display.board import LIVE, ROADS, TOPICS, Board
from controller.display.metrics import render_metrics
from controller.display.settings import (
    SECTION, ClientLimits, DisplayServiceConfig, parse_display_service, parse_listen,
)
from controller.display.web import Response, WebServer, sse_message, static_file
from controller.errors import shown_setting
from controller.logsetup import add_log_level_argument, configure_logging
from controller.sdnotify import SdNotifier
from controller.text_files import read_toml

log = structlog.get_logger("display")

RECONNECT_MIN_S = 0.2  # the daemon restarts in ~1 s; the first retry comes soon after
RECONNECT_MAX_S = 5.0  # cap: a daemon that is down for good is retried every few seconds
DEVICES_REFRESH_S = 10.0  # device health changes rarely; faults arrive as events anyway
REFRESH_KINDS_DEVICES = frozenset({"device_fault", "device_recovered", "device_fault_cleared",
                                   "daemon_started", "restored"})
PAGES = {"/scoreboard": "scoreboard.html", "/dealer": "dealer.html"}


DEFAULT_SOCKET = "/run/tabled/control.sock"
SUBMISSION_SECTIONS = ("table", "game", "wagers")


def _read_config(config_path: str) -> dict[str, Any]:
    try:
        return read_toml(config_path)
    except OSError as exc:
        raise ConfigError(config_path, [f"cannot be read: {exc.strerror}"]) from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(config_path, [f"not valid TOML: {exc}"]) from exc


def service_config(config_path: str) -> DisplayServiceConfig:
    """The table configuration's `[display_service]`: where to listen, the client limits."""
    section = _read_config(config_path).get(SECTION, {})
    if not isinstance(section, dict):
        raise ConfigError(config_path, [f"{SECTION} = {shown_setting(section)}: not allowed; allowed: a "
                                        f"table [{SECTION}]"])
    config, problems = parse_display_service(section)
    if problems:
        raise ConfigError(config_path, problems)
    return config


def table_info(config_path: str) -> tuple[dict[str, Any], str]:
    """What the pages show from the table's configuration: its Rules Submission (name,
    game, limits) and the control socket's path.

    Only those sections are read, never the device sections or the secrets file the
    daemon's configuration may name (the display's user cannot and need not read it).
    """
    from controller.rules.submission import SubmissionError, parse_submission

    data = _read_config(config_path)
    try:
        # The Rules Submission's own sections; the daemon checks the rest of the file.
        submission = parse_submission({k: data[k] for k in SUBMISSION_SECTIONS if k in data},
                                      config_path)
    except SubmissionError as exc:
        raise ConfigError(config_path, [e.removeprefix(f"{config_path}: ")
                                        for e in exc.errors]) from exc
    control: dict[str, Any] = data["control"] if isinstance(data.get("control"), dict) else {}
    socket_path = control.get("socket", DEFAULT_SOCKET)
    if not isinstance(socket_path, str) or not socket_path:
        raise ConfigError(config_path, [f"control.socket = {shown_setting(socket_path)}: allowed: the "
                                        "path of tabled's control socket"])
    limits = [{"wager": w.key, "min_cents": w.min_cents, "max_cents": w.max_cents}
              for w in submission.wagers if w.min_cents is not None or w.max_cents is not None]
    info = {"table_id": submission.table.id, "name": submission.table.name,
            "game": submission.game.family, "variant": submission.game.variant,
            "decks": submission.game.decks, "seats": submission.table.seats,
            "limits": limits}
    return info, socket_path


class DisplayService:
    def __init__(self, socket_path: str, table: Mapping[str, Any],
                 limits: ClientLimits | None = None) -> None:
        self.socket_path = socket_path
        self.board = Board(table=dict(table))
        self.web = WebServer(self._route, self._snapshot, frozenset(TOPICS), limits)
        self._pending: set[str] = set()
        self._dirty = asyncio.Event()
        self._refresh_due = asyncio.Event()
        self._devices_due = True
        self.started_at = time.time()

    # --- the daemon side ----------------------------------------------------------

    async def follow_daemon(self) -> None:
        """Forever: connect, catch up, stream; on any loss, mark offline and retry."""
        delay = RECONNECT_MIN_S
        while True:
            try:
                await self._session()
                delay = RECONNECT_MIN_S  # it ran; the daemon stopped: retry soon
            except (OSError, ConnectionError, ControlError, ValueError, KeyError) as exc:
                log.info("display_daemon_unavailable", error=f"{type(exc).__name__}: {exc}",
                         retry_s=delay)
            if self.board.daemon_connected:
                self.board.daemon_connected = False
                self._changed({LIVE})
            await asyncio.sleep(delay)
            delay = min(delay * 2, RECONNECT_MAX_S)

    async def _session(self) -> None:
        commands = await ControlClient(self.socket_path).connect()
        stream: ControlClient | None = None
        refresher: asyncio.Task[None] | None = None
        try:
            head = await commands.call("events", limit=1)
            head_seq = head[-1]["seq"] if head else 0
            if self.board.last_seq and not await self._still_logged(commands):
                # The store replaced, or a daemon killed while entries waited in memory
                # (docs/rulings.md C31): the log no longer holds the last entry shown, and
                # its numbers after the entry before it are another history's.
                log.warning("display_log_changed", head_seq=head_seq,
                            last_seen=self.board.last_seq)
                self.board.reset()
                self._changed(set(TOPICS))
            if self.board.last_seq == 0:
                # Start from the current shoe: the roads begin at its shoe_loaded.
                loaded = await commands.call("events", kind="shoe_loaded", limit=1)
                after = loaded[-1]["seq"] - 1 if loaded else 0
                # The dealer at the table may have been named before this shoe.
                dealer = await commands.call("events", kind="new_dealer", limit=1)
                if dealer and dealer[-1]["seq"] <= after:
                    self.board.name_dealer(dealer[-1]["payload"])
            else:
                after = self.board.last_seq
            await self._refresh(commands, devices=True)
            stream = await ControlClient(self.socket_path).connect()
            events = stream.subscribe(after)
            self.board.daemon_connected = True
            self.board.metrics.daemon_connects += 1
            log.info("display_following", socket=self.socket_path, after_seq=after)
            self._changed({LIVE})
            refresher = asyncio.create_task(self._refresher(commands))
            async for event in events:
                live = event["seq"] > head_seq  # history replayed at connect is not "delay"
                changed = self.board.apply(event, now=time.time() if live else None)
                if changed:
                    self._changed(changed)
                    self._refresh_due.set()
                    if event.get("kind") in REFRESH_KINDS_DEVICES:
                        self._devices_due = True
                if refresher.done():
                    refresher.result()  # a lost command connection ends the session
        finally:
            if refresher is not None:
                refresher.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await refresher
            for client in (stream, commands):
                if client is not None:
                    await client.close()

    async def _still_logged(self, commands: ControlClient) -> bool:
        """The log still holds the last entry this board applied, the same entry (its MAC)."""
        seq = self.board.last_seq
        entry = await commands.call("events", after_seq=seq - 1, limit=1, oldest_first=True)
        return bool(entry) and entry[0]["seq"] == seq and (
            self.board.last_mac is None or entry[0]["hash"] == self.board.last_mac)

    async def _refresher(self, commands: ControlClient) -> None:
        """Status and meters after events (coalesced: one call pair however many arrived)."""
        last_devices = time.monotonic()
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._refresh_due.wait(), DEVICES_REFRESH_S)
            self._refresh_due.clear()
            if time.monotonic() - last_devices >= DEVICES_REFRESH_S:
                self._devices_due = True
            if self._devices_due:
                last_devices = time.monotonic()
            await self._refresh(commands, devices=self._devices_due)

    async def _refresh(self, commands: ControlClient, *, devices: bool) -> None:
        changed = self.board.apply_status(await commands.call("status"))
        try:
            changed |= self.board.apply_meters(await commands.call("meters"))
        except ControlError as exc:
            if exc.code != "bad_request":
                raise  # an older daemon without progressives answers bad_request: no meters
        if devices:
            self._devices_due = False
            changed |= self.board.apply_devices(await commands.call("devices"))
        self._changed(changed)

    # --- the browser side ---------------------------------------------------------

    def _changed(self, topics: set[str]) -> None:
        self._pending |= topics
        self._dirty.set()

    async def publish_changes(self) -> None:
        """Push each changed view once, however many events changed it meanwhile."""
        while True:
            await self._dirty.wait()
            self._dirty.clear()
            topics, self._pending = self._pending, set()
            for topic in sorted(topics):
                self.web.publish(topic, sse_message(topic, self.board.view(topic)))

    def _snapshot(self, topics: frozenset[str]) -> list[bytes]:
        return [sse_message(topic, self.board.view(topic)) for topic in sorted(topics)]

    def _route(self, path: str, query: Mapping[str, list[str]]) -> Response | None:
        if path == "/":
            return Response(302, b"", headers={"Location": "/scoreboard"})
        if path in PAGES:
            return static_file(PAGES[path])
        if path.startswith("/static/"):
            return static_file(path[len("/static/"):])
        if path == "/state.json":
            body = json.dumps({ROADS: self.board.view(ROADS), LIVE: self.board.view(LIVE)})
            return Response(200, body.encode(), "application/json")
        if path == "/metrics":
            text = render_metrics(self.board, self.web, uptime_s=time.time() - self.started_at)
            return Response(200, text.encode(), "text/plain; version=0.0.4; charset=utf-8")
        if path == "/healthz":
            ok = self.board.daemon_connected
            return Response(200 if ok else 503,
                            b"ok\n" if ok else b"daemon not connected\n")
        return None


def _listen_address(text: str) -> tuple[str, int]:
    parsed = parse_listen(text)
    if parsed is None:
        raise argparse.ArgumentTypeError(
            f"--listen {text!r}: allowed: HOST:PORT with PORT 0 to 65535 (0 picks a free "
            "port), e.g. 10.20.30.41:8080 or 127.0.0.1:0")
    return parsed


async def serve(args: argparse.Namespace) -> int:
    table, socket_path = table_info(args.config)
    config = service_config(args.config)
    table = {**table, "languages": list(config.languages),
             "number": config.corner_number(table["table_id"])}
    service = DisplayService(args.socket or socket_path, table, config.limits)
    host, port = args.listen = args.listen or config.listen
    bound = await service.web.start(host, port)
    shown = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    log.info("display_listening", scoreboard=f"http://{shown}:{bound}/scoreboard",
             dealer=f"http://{shown}:{bound}/dealer", socket=service.socket_path)
    if args.port_file:
        tmp = Path(args.port_file + ".tmp")
        tmp.write_text(f"{bound}\n")
        os.replace(tmp, args.port_file)  # readers never see a half-written file
    notifier = SdNotifier()
    notifier.ready(f"serving on port {bound}")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    tasks = [asyncio.create_task(service.follow_daemon()),
             asyncio.create_task(service.publish_changes())]
    await stop.wait()
    notifier.stopping()
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await service.web.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="tabledisplay", description="Serve the table's scoreboard and dealer pages.")
    parser.add_argument("--config", required=True,
                        help="the table's configuration (tabled's), for its name, game, "
                             "limits and control socket")
    parser.add_argument("--socket", help="tabled's control socket (default: from --config)")
    parser.add_argument("--listen", type=_listen_address,
                        help="HOST:PORT to serve on (default: [display_service] listen, "
                             "else 127.0.0.1:8080)")
    parser.add_argument("--port-file", help="write the bound port here once listening")
    add_log_level_argument(parser)
    args = parser.parse_args(argv)
    configure_logging(level=args.log_level)
    try:
        return asyncio.run(serve(args))
    except ConfigError as exc:
        print(f"tabledisplay: {exc}", file=sys.stderr)
        return 6
    except OSError as exc:
        host, port = args.listen or ("?", "?")
        print(f"tabledisplay: cannot serve on {host}:{port}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
