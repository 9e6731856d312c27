"""The metrics of the display service and of the daemon itself, read with Prometheus' own
parser and held to promtool's naming rules and to bounded cardinality, written as a test:

- every family has HELP and TYPE; counters end in `_total`, nothing else does;
- a unit is the last word of the name, in base units (`_seconds`, not `_milliseconds`),
  or `_cents` for money (integer cents everywhere, docs/architecture.md);
- no word said twice in a row (`link_link_failures`), in a name or a counter's label;
- no label whose values grow without bound (a shoe's or round's number, a caller), no
  empty label value (a placeholder for something that is not there), no series twice;
- the same series from one shoe to the next: a new shoe starts no new series.
"""

from __future__ import annotations

from collections import Counter

import asyncio
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from controller.display.board import Board
from controller.display.metrics import render_metrics
from drivers.link_device import _link_counters
from firmware_bridge.link import LinkCounters
from tests.controller.test_daemon import running

UNBOUNDED_LABELS = {"shoe", "shoe_no", "round", "round_id", "round_no", "seq", "id",
                    "supervisor", "caller", "uid", "pid", "dealer", "card", "at"}
NON_BASE_UNITS = ("_milliseconds", "_ms", "_minutes", "_hours", "_days", "_kilobytes",
                  "_megabytes", "_percent", "_dollars")
UNITS = {"seconds": "_seconds", "cents": "_cents", "bytes": "_bytes"}
NAME = re.compile(r"^(tabled|tabledisplay)_[a-z][a-z0-9_]*$")


def lint(text: str) -> list[str]:
    """promtool check metrics' rules and the cardinality rules above; the problems found."""
    problems: list[str] = []
    helps = {line.split()[2]: line for line in text.splitlines() if line.startswith("# HELP ")}
    types = {line.split()[2]: line.split()[3] for line in text.splitlines()
             if line.startswith("# TYPE ")}
    families = list(text_string_to_metric_families(text))  # raises on anything malformed
    for name, kind in types.items():
        help_text = helps.get(name, "")
        if not help_text:
            problems.append(f"{name}: no HELP")
        if not NAME.match(name):
            problems.append(f"{name}: not a tabled_/tabledisplay_ snake_case name")
        if (kind == "counter") != name.endswith("_total"):
            problems.append(f"{name}: a {kind}; only counters end in _total, and all do")
        if name.endswith(NON_BASE_UNITS):
            problems.append(f"{name}: not a base unit")
        for word, suffix in UNITS.items():
            stem = name.removesuffix("_total")
            if (f" {word}" in help_text.lower() or word in stem) and not stem.endswith(suffix):
                problems.append(f"{name}: measures {word}, so its name ends in {suffix}")
        problems += [f"{name}: says {word!r} twice" for word in _stutters(name)]
    seen = set()
    for family in families:
        declared = family.name + "_total" if family.type == "counter" else family.name
        if declared not in types:
            problems.append(f"{family.name}: samples without TYPE")
        for sample in family.samples:
            key = (sample.name, tuple(sorted(sample.labels.items())))
            if key in seen:
                problems.append(f"{sample.name}{sample.labels}: twice")
            seen.add(key)
            for label, value in sample.labels.items():
                if label in UNBOUNDED_LABELS:
                    problems.append(f"{sample.name}: label {label!r} has unbounded values")
                if value == "":
                    problems.append(f"{sample.name}: label {label!r} empty (a placeholder)")
                if label == "counter":
                    problems += [f"{sample.name}: {value!r} says {word!r} twice"
                                 for word in _stutters(value)]
    return problems


def _stutters(name: str) -> list[str]:
    words = name.split("_")
    return [a for a, b in zip(words, words[1:]) if a == b]


def series(text: str) -> set[tuple[str, tuple[tuple[str, str], ...]]]:
    return {(s.name, tuple(sorted(s.labels.items())))
            for f in text_string_to_metric_families(text) for s in f.samples}


def shoe_link_counters() -> dict[str, int]:
    """The shoe's link counters as its driver reports them (a link failure among them)."""
    counters = LinkCounters()
    counters.link_failures, counters.crc_errors = 1, 2
    return _link_counters(SimpleNamespace(counters=counters))


class Web:
    streams: set[int] = {1, 2}
    dropped_streams = 3
    refused: Counter[str] = Counter({"per_address": 5})


def board_in_shoe(shoe_no: int, fault: bool) -> Board:
    board = Board(table={"table_id": "T1", "seats": 2})
    board.daemon_connected = True
    board.apply_status({"state": "device_fault" if fault else "betting_open",
                        "shoe": {"shoe_no": shoe_no}, "round": {}})
    board.apply_devices([{"device": "shoe", "link": "up", "counters": shoe_link_counters()}])
    board.apply({"seq": 1, "at": 5.0, "kind": "shoe_loaded", "device": "shoe",
                 "payload": {"shoe_no": shoe_no}}, now=5.01)
    if fault:
        board.apply({"seq": 2, "at": 6.0, "kind": "device_fault", "device": "shoe",
                     "payload": {"code": "lid_open", "detail": "", "action": "close it"}},
                    now=6.01)
    return board


def test_the_link_counters_name_the_link_once():
    assert sorted(k for k in shoe_link_counters() if "fail" in k) == ["link_failures"]


def test_the_display_metrics_pass_the_naming_and_cardinality_lint():
    texts = [render_metrics(board_in_shoe(shoe, fault), Web(), uptime_s=12.5)  # type: ignore[arg-type]
             for shoe, fault in ((1, False), (2, False), (2, True))]
    for text in texts:
        assert lint(text) == []
    assert series(texts[0]) == series(texts[1])  # shoe 2 starts no new series
    # A fault adds its description and its counts (catalogued codes and kinds, a bounded
    # set); without one there is no placeholder for it.
    assert series(texts[2]) - series(texts[1]) == {
        ("tabled_fault_info", (("code", "lid_open"), ("device", "shoe"), ("table", "T1"))),
        ("tabled_faults_total", (("code", "lid_open"), ("device", "shoe"), ("table", "T1"))),
        ("tabled_events_total", (("kind", "device_fault"), ("table", "T1")))}
    lines = texts[2].splitlines()
    assert 'tabled_fault_active{table="T1"} 1' in lines
    assert 'tabled_fault_active{table="T1"} 0' in texts[1].splitlines()
    assert 'tabled_shoe_rounds{table="T1"} 0' in lines
    assert ('tabled_device_counter_total{table="T1",device="shoe",counter="link_failures"} 1'
            in lines)


def test_the_lint_finds_what_issue_33_found():
    """The checks fail on the series the display exported before: they are not vacuous."""
    before = "\n".join([
        "# HELP tabled_fault_active 1 while stopped", "# TYPE tabled_fault_active gauge",
        'tabled_fault_active{table="T1",device="",code=""} 0',
        "# HELP tabled_shoe_rounds rounds in the shoe", "# TYPE tabled_shoe_rounds gauge",
        'tabled_shoe_rounds{table="T1",shoe="7"} 3',
        "# HELP tabled_device_counter_total counters", "# TYPE tabled_device_counter_total counter",
        'tabled_device_counter_total{table="T1",device="shoe",counter="link_link_failures"} 1',
        "# HELP tabled_delay_ms the delay in seconds", "# TYPE tabled_delay_ms gauge",
        'tabled_delay_ms{table="T1"} 3',
        "# HELP tabled_awards awards", "# TYPE tabled_awards counter", 'tabled_awards{table="T1"} 1',
    ]) + "\n"
    assert lint(before) == [
        "tabled_delay_ms: not a base unit",
        "tabled_delay_ms: measures seconds, so its name ends in _seconds",
        "tabled_awards: a counter; only counters end in _total, and all do",
        "tabled_fault_active: label 'device' empty (a placeholder)",
        "tabled_fault_active: label 'code' empty (a placeholder)",
        "tabled_shoe_rounds: label 'shoe' has unbounded values",
        "tabled_device_counter_total: 'link_link_failures' says 'link' twice",
        "tabled_awards: samples without TYPE",  # the parser reads a counter's family as
    ]                                           # tabled_awards_total: nothing declares it


async def _get(port: int, path: str) -> tuple[str, str]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    data = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    head, _, body = data.decode().partition("\r\n\r\n")
    return head.split("\r\n")[0], body


async def test_the_daemon_serves_its_own_metrics_on_localhost(tmp_path: Path):
    from controller.config import load_config
    from tests.controller.test_daemon import CONFIG

    config = load_config(CONFIG, [f"store.path={tmp_path / 'table.sqlite'}",
                                  f"control.socket={tmp_path / 'control.sock'}",
                                  "metrics.listen=127.0.0.1:0"])
    holder: list[Any] = []
    async with running(config, prepare=holder.append) as client:
        daemon = holder[0]
        for guess in ("1111", "2222"):
            try:
                await client.call("acknowledge_fault", auth={"supervisor": "floor", "pin": guess})
            except Exception:  # noqa: BLE001 - the refusals are what is counted
                pass
        status, text = await _get(daemon.metrics_port, "/metrics")
        missing, _ = await _get(daemon.metrics_port, "/nothing")
    assert (status, missing) == ("HTTP/1.1 200 OK", "HTTP/1.1 404 Not Found")
    assert lint(text) == []
    lines = text.splitlines()
    assert 'tabled_table_state{table="SIM-BAC-01",state="closed"} 1' in lines
    assert 'tabled_fault_active{table="SIM-BAC-01"} 0' in lines
    assert 'tabled_control_refusals_total{table="SIM-BAC-01",kind="pin_failed"} 2' in lines
    assert 'tabled_control_connections{table="SIM-BAC-01"} 1' in lines


def test_a_metrics_address_off_this_machine_is_refused(tmp_path: Path):
    from controller.config import ConfigError, load_config
    from tests.controller.test_daemon import CONFIG

    try:
        load_config(CONFIG, [f"store.path={tmp_path / 'table.sqlite'}",
                             f"control.socket={tmp_path / 'control.sock'}",
                             "metrics.listen=0.0.0.0:9464"])
    except ConfigError as exc:
        problems = exc.problems
    assert problems == [
        "metrics.listen = '0.0.0.0:9464': not allowed; allowed: HOST:PORT on this machine "
        "(127.0.0.1, [::1] or localhost; PORT 1 to 65535, 0 for any free one), e.g. "
        "127.0.0.1:9464; leave it out for no metrics endpoint"]
