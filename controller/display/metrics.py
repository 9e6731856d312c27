"""The fleet's view of one table: Prometheus text exposition (format 0.0.4) at /metrics.

Every metric is documented in docs/display.md. Names start `tabled_` for what the
display service learned from the daemon and `tabledisplay_` for the service itself; the
families the daemon exports too are controller/metrics_text.py's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from controller.display.board import DELAY_BUCKETS_S
from controller.display.web import REFUSAL_REASONS
from controller.metrics_text import MetricsWriter, labels, number, table_families

if TYPE_CHECKING:
    from controller.display.board import Board
    from controller.display.web import WebServer


def render_metrics(board: Board, web: WebServer, *, uptime_s: float) -> str:
    w = MetricsWriter(str(board.table.get("table_id", "")))
    m = board.metrics
    w.family("tabled_up", "gauge", "1 while the display service follows the daemon's events",
             [({}, 1 if board.daemon_connected else 0)])
    table_families(w, state=board.state, devices=board.devices, fault=board.fault,
                   shoe_rounds=len(board.rounds), software=board.software)
    w.family("tabled_witness_up", "gauge", "1 while the table's witness takes its heads, 0 "
             "while it is down (absent: the table has no witness or has not said yet)",
             [({}, 1 if board.witness_up else 0)] if board.witness_up is not None else [])
    w.family("tabled_faults_total", "counter", "device faults seen since the service started",
             [({"device": d, "code": c}, n) for (d, c), n in sorted(m.faults.items())])
    w.family("tabled_rounds_total", "counter", "rounds seen since the service started",
             [({"outcome": "settled"}, m.rounds_settled), ({"outcome": "void"}, m.rounds_void)])
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
    for bucket, value in [*buckets, ({"le": "+Inf"}, float(m.delay_count))]:
        w.lines.append(f"tabledisplay_event_delay_seconds_bucket"
                       f"{labels(table=w.table_id, **bucket)} {number(value)}")
    w.lines.append(f"tabledisplay_event_delay_seconds_sum{labels(table=w.table_id)} "
                   f"{number(m.delay_sum_s)}")
    w.lines.append(f"tabledisplay_event_delay_seconds_count{labels(table=w.table_id)} "
                   f"{m.delay_count}")
    w.family("tabledisplay_browsers", "gauge", "browsers following the live pages",
             [({}, len(web.streams))])
    w.family("tabledisplay_browsers_dropped_total", "counter",
             "browsers disconnected because they fell behind", [({}, web.dropped_streams)])
    w.family("tabledisplay_connections_refused_total", "counter",
             "connections refused or dropped by the client limits, by reason",
             [({"reason": reason}, web.refused[reason]) for reason in REFUSAL_REASONS])
    w.family("tabledisplay_daemon_connects_total", "counter",
             "times the service (re)connected to the daemon", [({}, m.daemon_connects)])
    w.family("tabledisplay_uptime_seconds", "gauge", "seconds since the service started",
             [({}, round(uptime_s, 3))])
    return w.text()
