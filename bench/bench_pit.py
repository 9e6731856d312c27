"""A pit's shared servers under N tables: the linked ledger's contributions a second, and the
meter's delay from a lock-out at one table to the pit page, for N = 5, 10, 20.

    python bench/bench_pit.py [seconds per N]

Runs on a PostgreSQL and a Mosquitto of its own (hil/pit_servers.py). Each table is a
`ProgressiveSystem` (the daemon's own, with its SQLite store) on a thread of its own.

- Contributions: every table locks rounds as fast as it can, each lock booking its
  contribution in the store and sending it to the shared ledger (`on_lock` → `sync()`:
  one PostgreSQL transaction that inserts the row, locks the level and updates it, then a
  read of the levels). Reference in the same run: the same N threads doing bare
  transactions (`SELECT 1`) on their own connections, the server's floor for one round
  trip each.
- Delay: each lock-out's new shared amount, published by the table (retained, QoS 1),
  through the broker and the pit page's service (`python -m controller.display.pit`, its
  own process) to a browser's event stream (read here as a browser would). Reference: a
  bare publish → subscribe round trip on the same broker. A daemon adds its linked sync's
  period (controller/daemon.py LINKED_SYNC_S, 2 s) before the send: the figure here is the
  path after it.
"""

from __future__ import annotations

import argparse
import json
import math
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.machine import header  # noqa: E402
from controller.progressive.config import parse_progressive_config  # noqa: E402
from controller.progressive.system import ProgressiveSystem  # noqa: E402
from controller.memory.store import Store  # noqa: E402
from drivers.protocols import LockedOut  # noqa: E402
from hil.pit_servers import PrivateBroker, PrivatePostgres, private_servers_missing  # noqa: E402

SIZES = (5, 10, 20)
DEFAULT_SECONDS = 4.0
SEATS = (1, 2, 3, 4)
SITE = "bench"


def system(folder: Path, pg: PrivatePostgres, broker: PrivateBroker, table_id: str,
           schema: str) -> ProgressiveSystem:
    config = parse_progressive_config({
        "table": {"id": table_id, "seats": 10},
        "progressive": {"h9": {"game": "heavenly_9", "linked": True}},
        "linked": {"dsn": pg.dsn, "schema": schema, "group": "bench"},
        "mqtt": {"host": "127.0.0.1", "port": broker.port, "site": SITE}}, "bench")
    return ProgressiveSystem.from_config(config, Store(folder / f"{table_id}.sqlite"))


def locks(table: ProgressiveSystem, until: float, on_lock: Any = None) -> int:
    wagers = [{"seat": s, "wager": "banker", "amount_cents": 1000} for s in SEATS]
    round_id = 0
    while time.perf_counter() < until:
        round_id += 1
        started = time.time()
        table.on_lock(LockedOut("button", 0.0, frozenset(SEATS)), wagers, round_id)
        if on_lock is not None:
            on_lock(table, started)
    return round_id


def in_threads(count: int, work: Any) -> list[Any]:
    results: list[Any] = [None] * count

    def run(index: int) -> None:
        results[index] = work(index)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def bare_transactions(pg: PrivatePostgres, count: int, seconds: float) -> float:
    import psycopg

    def work(index: int) -> int:
        done = 0
        with psycopg.connect(pg.dsn) as conn:
            until = time.perf_counter() + seconds
            while time.perf_counter() < until:
                with conn.transaction():
                    conn.execute("SELECT 1").fetchone()
                done += 1
        return done

    return sum(in_threads(count, work)) / seconds


class PageStream:
    """The pit page's event stream, read as a browser reads it: when each table's linked
    meter first showed each amount."""

    def __init__(self, port: int) -> None:
        self.first_seen: dict[tuple[str, int], float] = {}
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.sendall(b"GET /events?topics=pit HTTP/1.1\r\nHost: bench\r\n\r\n")
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        buffer = b""
        while data := self.sock.recv(65536):
            now = time.time()
            buffer += data
            while b"\n\n" in buffer:
                message, buffer = buffer.split(b"\n\n", 1)
                for line in message.split(b"\n"):
                    if line.startswith(b"data: "):
                        for table in json.loads(line[6:])["tables"]:
                            for meter in table["meters"]:
                                key = (table["table_id"], meter["amount_cents"])
                                self.first_seen.setdefault(key, now)


def start_page(broker: PrivateBroker, folder: Path) -> tuple[subprocess.Popen[bytes], int]:
    port_file = folder / "page.port"
    page = subprocess.Popen([sys.executable, "-m", "controller.display.pit", "--broker",
                             f"127.0.0.1:{broker.port}", "--site", SITE, "--listen",
                             "127.0.0.1:0", "--port-file", str(port_file)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while not port_file.exists():
        time.sleep(0.05)
    return page, int(port_file.read_text())


def broker_round_trip_ms(broker: PrivateBroker, samples: int = 50) -> float:
    import paho.mqtt.client as mqtt

    got = threading.Event()
    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2)
    client.on_message = lambda c, u, m: got.set()
    client.connect("127.0.0.1", broker.port)
    client.loop_start()
    client.subscribe("bench/probe", qos=1)
    time.sleep(0.3)
    times = []
    for _ in range(samples):
        got.clear()
        started = time.perf_counter()
        client.publish("bench/probe", b"x", qos=1)
        got.wait(5)
        times.append((time.perf_counter() - started) * 1000)
    client.loop_stop()
    client.disconnect()
    return statistics.median(times)


def run_size(count: int, seconds: float, pg: PrivatePostgres, broker: PrivateBroker,
             folder: Path, port: int) -> tuple[float, list[float]]:
    schema = f"bench_{count}"
    tables = [system(folder, pg, broker, f"B{count}-{i:02d}", schema) for i in range(count)]
    for table in tables:
        table.feed_pit({"table_id": table.config.table_id, "state": "betting_open"})
    stream = PageStream(port)
    time.sleep(1.0)  # the page has every table
    sent: list[tuple[str, int, float]] = []
    lock = threading.Lock()

    def noted(table: ProgressiveSystem, started: float) -> None:
        assert table.linked is not None
        amount = table.linked.levels_cache[("h9", "progressive")].amount_cents
        with lock:
            sent.append((table.config.table_id, amount, started))

    until = time.perf_counter() + seconds
    rounds = sum(in_threads(count, lambda i: locks(tables[i], until, noted)))
    time.sleep(2.0)  # the last ones reach the page
    delays = [(stream.first_seen[(t, a)] - at) * 1000 for t, a, at in sent
              if (t, a) in stream.first_seen]
    problems = tables[0].verify()
    for table in tables:
        table.close()
        table.store.close()
    if problems:
        raise SystemExit(f"the linked meter did not verify: {problems}")
    return rounds / seconds, delays


def main(seconds: float) -> None:
    why = private_servers_missing()
    if why:
        raise SystemExit(f"bench_pit: {why}")
    header("bench_pit: the linked ledger and the pit page under N tables (busy machine?)")
    with PrivatePostgres() as pg, PrivateBroker() as broker, \
            tempfile.TemporaryDirectory() as tmp:
        page, port = start_page(broker, Path(tmp))
        try:
            floor_ms = broker_round_trip_ms(broker)
            print(f"broker publish -> subscribe round trip (floor): {floor_ms:.2f} ms")
            for count in SIZES:
                rate, delays = run_size(count, seconds, pg, broker, Path(tmp), port)
                bare = bare_transactions(pg, count, seconds)
                delays.sort()
                p95 = delays[int(0.95 * (len(delays) - 1))] if delays else float("nan")
                median = statistics.median(delays) if delays else float("nan")
                print(f"N={count:2d}: {rate:7.0f} contributions/s ({rate / bare:.2f} of the "
                      f"{bare:.0f} bare transactions/s of N connections); lock-out -> pit "
                      f"page median {median:.0f} ms, p95 {p95:.0f} ms ({median / floor_ms:.0f}x "
                      f"the broker's round trip; {len(delays)} locks seen on the page)")
        finally:
            page.terminate()
            page.wait()


def arguments(argv: list[str] | None = None) -> float:
    """The seconds each N runs for, from the command line: more than 0, finite."""
    parser = argparse.ArgumentParser(description="A pit's shared servers under N tables: the "
                                     "linked ledger's contributions a second, the meter's delay "
                                     "to the pit page.")
    parser.add_argument("seconds", nargs="?", type=float, default=DEFAULT_SECONDS,
                        help=f"seconds each N runs for (default {DEFAULT_SECONDS:g}; more than 0)")
    seconds: float = parser.parse_args(argv).seconds
    if not (math.isfinite(seconds) and seconds > 0):
        parser.error(f"seconds {seconds:g}: allowed: a number of seconds more than 0")
    return seconds


if __name__ == "__main__":
    main(arguments())
