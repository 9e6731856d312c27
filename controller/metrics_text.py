"""Prometheus text exposition (format 0.0.4), and the families the daemon and the display
service both export about a table.

Naming and cardinality follow Prometheus practice (checked by tests/display/test_metrics_lint.py):
counters end in `_total`, a unit is the name's last word (`_seconds`, `_cents`), every family
has HELP and TYPE, and every label takes a fixed set of values (states, device names,
catalogued codes and kinds, configured meters): nothing per shoe, round or caller, and no
placeholder sample for something that is not there.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

# The table states of docs/control-api.md; one gauge per state, 1 for the current one.
TABLE_STATES = ("closed", "opening", "shuffling", "cut", "burn", "betting_open", "no_more_bets",
                "dealing", "first_four_settled", "third_cards", "result", "settlement",
                "end_of_shoe", "device_fault", "out_of_order")
LINK_STATES = ("connecting", "handshaking", "up", "retrying", "refused", "stopped")

Sample = tuple[Mapping[str, object], float]


def _label(value: object) -> str:
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def number(value: float) -> str:
    """Whole numbers in full (a meter of 1000150 cents, not 1.00015e+06), else repr."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def labels(**values: object) -> str:
    return "{" + ",".join(f'{k}="{_label(v)}"' for k, v in values.items()) + "}"


class MetricsWriter:
    """Families of one exposition, every sample labelled with the table's id."""

    def __init__(self, table_id: str) -> None:
        self.lines: list[str] = []
        self.table_id = table_id

    def family(self, name: str, kind: str, help_text: str, samples: Iterable[Sample]) -> None:
        self.lines.append(f"# HELP {name} {help_text}")
        self.lines.append(f"# TYPE {name} {kind}")
        for sample_labels, value in samples:
            self.lines.append(f"{name}{labels(table=self.table_id, **sample_labels)} "
                              f"{number(value)}")

    def histogram(self, name: str, help_text: str, bounds: Sequence[float],
                  counts: Sequence[int], total: float) -> None:
        """A histogram family: `counts` per bucket (one more than `bounds`: the last is past
        every bound), written as Prometheus' cumulative `_bucket{le=...}`, `_sum`, `_count`."""
        self.lines.append(f"# HELP {name} {help_text}")
        self.lines.append(f"# TYPE {name} histogram")
        seen = 0
        for bound, count in zip([*map(number, bounds), "+Inf"], counts):
            seen += count
            self.lines.append(f"{name}_bucket{labels(table=self.table_id, le=bound)} {seen}")
        self.lines.append(f"{name}_sum{labels(table=self.table_id)} {number(total)}")
        self.lines.append(f"{name}_count{labels(table=self.table_id)} {seen}")

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def table_families(w: MetricsWriter, *, state: str | None,
                   devices: Sequence[Mapping[str, Any]], fault: Mapping[str, Any] | None,
                   shoe_rounds: int, software: Mapping[str, Any]) -> None:
    """What both the daemon and the display service know about the table."""
    w.family("tabled_table_state", "gauge", "1 for the table's current state, else 0",
             [({"state": s}, 1 if state == s else 0) for s in TABLE_STATES])
    w.family("tabled_device_link", "gauge", "1 for each device's current link state, else 0",
             [({"device": d.get("device"), "state": s}, 1 if d.get("link") == s else 0)
              for d in devices for s in LINK_STATES])
    w.family("tabled_device_counter_total", "counter",
             "each device's cumulative link and panel counters (link_crc_errors, "
             "link_retransmits, ...)",
             [({"device": d.get("device"), "counter": k}, float(v))
              for d in devices for k, v in sorted((d.get("counters") or {}).items())
              if isinstance(v, (int, float))])
    w.family("tabled_fault_active", "gauge", "1 while a device fault stops the table, else 0",
             [({}, 1 if fault else 0)])
    w.family("tabled_fault_info", "gauge",
             "the device and code of the fault stopping the table (only while there is one)",
             [({"device": fault.get("device") or "table", "code": fault.get("code") or "unknown"},
               1)] if fault else [])
    w.family("tabled_shoe_rounds", "gauge", "rounds settled in the shoe in play",
             [({}, shoe_rounds)])
    # The start's check of the program against its release's signed manifest (status'
    # `software`); nothing until the daemon has said.
    w.family("tabled_software_verified", "gauge", "1 if the daemon's program files matched "
             "its release's signed manifest at start, else 0",
             [({}, 1 if software.get("verified") else 0)] if software else [])
    w.family("tabled_software_info", "gauge", "the release the daemon runs and [software] "
             "verify's mode", [({"release": software.get("release") or "none",
                                 "mode": software.get("mode") or "unknown"}, 1)]
             if software else [])
