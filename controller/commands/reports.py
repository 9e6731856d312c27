"""What the daemon reports: the table's status, each device's health, game recall, the
event log and the Prometheus text (read-only commands; the log is read in a worker)."""

from __future__ import annotations

import difflib
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from controller import __version__
from controller.commands.host import CommandHost
from controller.control import ControlError, event_json
from controller.errors import shown
from controller.events import KINDS
from controller.table.state import colour_name, wager_json


class Reports:
    def __init__(self, daemon: CommandHost) -> None:
        self._daemon = daemon
        self._config_shown: tuple[str, str, str] | None = None  # (source, cwd, absolute)

    def status(self) -> dict[str, Any]:
        """What `tablectl status` shows, and the answer to every command that changes the
        table (a wager's among them). Read from the table's saved state directly (each
        `Table` field is a descriptor over it)."""
        daemon = self._daemon
        t, config = daemon.table, daemon.config
        saved, game = t.saved, config.submission.game
        shoe = saved.shoe
        coup = t.coup
        return {
            "table_id": t.table_id, "state": t.state.value, "seats": t.seats,
            "version": __version__,
            "batches": {"in_play": colour_name(shoe.back),
                        "shuffled": colour_name(saved.batch_shuffled),
                        "in_shuffler": colour_name(saved.batch_in_shuffler)},
            "game": game.family,
            "variant": game.variant,
            # Absolute: a technician's tablectl runs from another directory than the daemon.
            "config": self._config_path(str(config.source)),
            "shoe": {"shoe_no": shoe.shoe_no, "cards_drawn": shoe.cards_drawn,
                     "cards_left": max(0, game.decks * 52 - shoe.cards_drawn)
                     if shoe.shoe_no else None,
                     "cover_card_seen": shoe.cover_card_seen,
                     "cover_card_misplaced": shoe.cover_card_misplaced or None,
                     "last_hand": shoe.last_hand_announced,
                     "rounds": shoe.rounds_in_shoe},
            "round": {"round_id": saved.round_id, "round_no": saved.round_no,
                      "wagers": [wager_json(w) for w in saved.wagers],
                      "next": coup.next_card().name.lower() if coup is not None else None},
            "fault": saved.fault, "faults_holding": [f.holding() for f in saved.faults.held],
            "out_of_order": saved.out_of_order_reason or None,
            "history_check": daemon.history_check,
            "software": daemon.software,
            "witness": daemon.witness.status() if daemon.witness is not None else
            {"link": "unwitnessed", "detail": "no [witness] in the configuration"
             if config.witness is None else "the store failed its check"},
            "display_feed": daemon.progressive.feed_state()
            if daemon.progressive is not None else None,
            "uptime_s": round(time.monotonic() - daemon.started_monotonic, 1),
        }

    def _config_path(self, source: str) -> str:
        """`Path(source).absolute()` as text, made again only when the source or the working
        directory changed (pathlib's parsing was a fifth of the status)."""
        cwd = os.getcwd()
        shown = self._config_shown
        if shown is None or shown[0] != source or shown[1] != cwd:
            shown = self._config_shown = (source, cwd, str(Path(source).absolute()))
        return shown[2]

    def device_report(self) -> list[dict[str, Any]]:
        report = []
        for device in self._daemon.devices.values():
            h = device.health()
            report.append({
                "device": h.device, "kind": h.kind, "link": h.link.value, "port": h.port,
                "serial_number": h.serial_number, "firmware_version": h.firmware_version,
                "protocol_version": h.protocol_version,
                "uptime_s": round(time.monotonic() - h.connected_since_monotonic, 1)
                if h.connected_since_monotonic else None,
                "counters": dict(h.counters), "last_error": h.last_error,
            })
        return report

    async def rounds(self, args: Mapping[str, Any]) -> Any:
        return await self._daemon.store_work.read(lambda store: store.rounds(
            limit=args["limit"], after_round_id=args["after_round_id"]))

    async def events(self, args: Mapping[str, Any]) -> Any:
        """Up to 100,000 entries: read and made JSON-ready in a worker thread. A kind or a
        device that no entry can have is refused, naming the ones there are: a typo must
        not read as "nothing happened"."""
        for key, known in (("kind", sorted(KINDS)), ("device", sorted(self._daemon.devices))):
            value = args[key]
            if value is not None and value not in known:
                near = difflib.get_close_matches(value, known, n=1)
                raise ControlError(f"no event {key} {shown(value)}"
                                   + (f" (did you mean {near[0]}?)" if near else "")
                                   + f"; allowed: {', '.join(known)}", "bad_request")
        query = dict(args)
        query["since"] = float(args["since"]) if args["since"] is not None else None
        return await self._daemon.store_work.read(
            lambda store: [event_json(e) for e in store.events(**query)])

    def metrics_text(self) -> str:
        """The daemon's Prometheus text: the table's families (controller/metrics_text.py)
        and the control socket's, every counter since the daemon started."""
        from controller.memory.flush_times import BUCKETS_S
        from controller.metrics_text import MetricsWriter, table_families

        daemon = self._daemon
        t, control = daemon.table, daemon.control
        w = MetricsWriter(t.table_id)
        table_families(w, state=t.state.value, devices=self.device_report(), fault=t.fault,
                       shoe_rounds=t.shoe.rounds_in_shoe,
                       software=daemon.software)
        w.family("tabled_control_connections", "gauge", "connections open on the control socket",
                 [({}, control.connections)])
        w.family("tabled_control_connections_max", "gauge", "the control socket's connection "
                 "cap in force ([access] max_connections, or lower to fit the open-files limit)",
                 [({}, control.max_connections)])
        w.family("tabled_control_refusals_total", "counter", "refusals on the control socket "
                 "by kind (command_refused, pin_failed, pin_lockout, pin_refused, pin_delay, "
                 "subscriber_dropped), "
                 "each counted whether or not it was written to the log one by one",
                 [({"kind": k}, n) for k, n in sorted(control.refusals.totals.items())])
        w.family("tabled_daemon_uptime_seconds", "gauge", "seconds since the daemon started",
                 [({}, round(time.monotonic() - daemon.started_monotonic, 3))])
        flushes = daemon.store.durability.flush_times
        w.histogram("tabled_store_flush_seconds", "how long the store's flushes took, each "
                    "money step's report waits for one (the SD card's flush on a Pi)",
                    BUCKETS_S, flushes.counts, flushes.total_s)
        return w.text()
