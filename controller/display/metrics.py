"""The fleet's view of one table: Prometheus text exposition (format 0.0.4) at /metrics.

Every metric is documented in docs/display.md. Names start `tabled_` for what the
display service learned from the daemon and `tabledisplay_` for the service itself.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from controller.display.board import DELAY_BUCKETS_S

if TYPE_CHECKING:
    from controller.display.board import Board
    from controller.display.web import WebServer

# The table states of docs/control-api.md; one gauge per state, 1 for the current one.
TABLE_STATES = ("closed", "opening", "shuffling", "cut", "burn", "betting_open", "no_more_bets",
                "dealing", "first_four_settled", "third_cards", "result", "settlement",
                "end_of_shoe", "device_fault", "out_of_order")
LINK_STATES = ("connecting", "handshaking", "up", "retrying", "refused", "stopped")


def _label(value: object) -> str:
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(value: float) -> str:
    """Whole numbers in full (a meter of 1000150 cents, not 1.00015e+06), else repr."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _labels(**labels: object) -> str:
    return "{" + ",".join(f'{k}="{_label(v)}"' for k, v in labels.items()) + "}"


class _Writer:
    def __init__(self, table_id: str) -> None:
        self.lines: list[str] = []
        self.table_id = table_id

    def family(self, name: str, kind: str, help_text: str,
               samples: Iterable[tuple[dict[str, object], float]]) -> None:
        self.lines.append(f"# HELP {name} {help_text}")
        self.lines.append(f"# TYPE {name} {kind}")
        for labels, value in samples:
            self.lines.append(f"{name}{_labels(table=self.table_id, **labels)} {_number(value)}")


def render_metrics(board: Board, web: WebServer, *, uptime_s: float) -> str:
    w = _Writer(str(board.table.get("table_id", "")))
    m = board.metrics
    w.family("tabled_up", "gauge", "1 while the display service follows the daemon's events",
             [({}, 1 if board.daemon_connected else 0)])
    w.family("tabled_table_state", "gauge", "1 for the table's current state, else 0",
             [({"state": s}, 1 if board.state == s else 0) for s in TABLE_STATES])
    w.family("tabled_software_verified", "gauge",
             "1 if the daemon's files matched the release's signed manifest at start, else 0",
             [({"release": board.software.get("release") or "",
                "mode": board.software.get("mode", "")},
               1 if board.software.get("verified") else 0)])
    w.family("tabled_device_link", "gauge", "1 for each device's current link state, else 0",
             [({"device": d.get("device"), "state": s}, 1 if d.get("link") == s else 0)
              for d in board.devices for s in LINK_STATES])
    w.family("tabled_device_counter_total", "counter",
             "each device's cumulative link and panel counters (crc_errors, retransmits, ...)",
             [({"device": d.get("device"), "counter": k}, float(v))
              for d in board.devices for k, v in sorted((d.get("counters") or {}).items())
              if isinstance(v, (int, float))])
    w.family("tabled_fault_active", "gauge", "1 while the table is stopped by a device fault",
             [({"device": (board.fault or {}).get("device", ""),
                "code": (board.fault or {}).get("code", "")}, 1 if board.fault else 0)])
    w.family("tabled_faults_total", "counter", "device faults seen since the service started",
             [({"device": d, "code": c}, n) for (d, c), n in sorted(m.faults.items())])
    w.family("tabled_rounds_total", "counter", "rounds seen since the service started",
             [({"outcome": "settled"}, m.rounds_settled), ({"outcome": "void"}, m.rounds_void)])
    w.family("tabled_shoe_rounds", "gauge", "rounds settled in the shoe in play",
             [({"shoe": board.shoe_no}, len(board.rounds))])
    w.family("tabled_events_total", "counter", "events seen since the service started, by kind",
             [({"kind": k}, n) for k, n in sorted(m.events.items())])
    w.family("tabled_awards_total", "counter", "progressive awards announced (win lights)",
             [({}, m.awards)])
    w.family("tabled_progressive_meter_cents", "gauge",
             "each progressive meter's amount in cents",
             [({"progressive": x.get("progressive"), "level": x.get("level")},
               float(x.get("amount_cents", 0))) for x in board.meters])
    buckets = [({"le": f"{b:g}"}, float(n)) for b, n in zip(DELAY_BUCKETS_S, m.delay_buckets,
                                                            strict=True)]
    w.lines.append("# HELP tabledisplay_event_delay_seconds time from an event's commit in the "
                   "daemon to the display service (live events)")
    w.lines.append("# TYPE tabledisplay_event_delay_seconds histogram")
    for labels, value in [*buckets, ({"le": "+Inf"}, float(m.delay_count))]:
        w.lines.append(f"tabledisplay_event_delay_seconds_bucket"
                       f"{_labels(table=w.table_id, **labels)} {_number(value)}")
    w.lines.append(f"tabledisplay_event_delay_seconds_sum{_labels(table=w.table_id)} "
                   f"{_number(m.delay_sum_s)}")
    w.lines.append(f"tabledisplay_event_delay_seconds_count{_labels(table=w.table_id)} "
                   f"{m.delay_count}")
    w.family("tabledisplay_browsers", "gauge", "browsers following the live pages",
             [({}, len(web.streams))])
    w.family("tabledisplay_browsers_dropped_total", "counter",
             "browsers disconnected because they fell behind", [({}, web.dropped_streams)])
    w.family("tabledisplay_daemon_connects_total", "counter",
             "times the service (re)connected to the daemon", [({}, m.daemon_connects)])
    w.family("tabledisplay_uptime_seconds", "gauge", "seconds since the service started",
             [({}, round(uptime_s, 3))])
    return "\n".join(w.lines) + "\n"
