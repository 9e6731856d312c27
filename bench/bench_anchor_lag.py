"""How far the critical-memory anchor lags the store while callers read, seen from outside.

    .venv/bin/python bench/bench_anchor_lag.py [--shoes 1] [--read-interval 0.05]

The daemon runs on simulated hardware exactly as `./run-simulated-table` starts it and
deals whole shoes, while this process (an observer of its own, at normal priority) makes
read-only calls the way `tablectl` and `tabledisplay` do: `events`, `rounds`, `verify_chain`
and a subscriber that connects and takes one line. The observer also polls the store's seal
(its own read-only connection) and the anchor file beside the key: each durable commit's
lag is the time from when the observer first saw it in the store until the anchor named it
or a later one. The reference is the anchor writer's interval, the most a table's anchor is
designed to lag: the daemon runs with the shortest a table may set (`[store]
anchor_interval_s = 1`; the default is a minute, docs/rulings.md C24), so a writer stopped
by a reader shows within the shoe; the limit is 2 s.
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.machine import header  # noqa: E402
from controller.memory.anchor import ANCHOR_INTERVAL_RANGE_S  # noqa: E402
from controller.control import ControlClient  # noqa: E402
from controller.memory.critical import CriticalPaths, read_anchor  # noqa: E402
from controller.memory.lifecycle import load_key_for  # noqa: E402
from hil.table_harness import TableHarness  # noqa: E402

CONFIG = ROOT / "config" / "simulated-table.toml"
LIMIT_S = 2.0
ANCHOR_INTERVAL_S = ANCHOR_INTERVAL_RANGE_S[0]


async def measure(shoes: int, read_interval_s: float) -> tuple[list[float], int, int]:
    with tempfile.TemporaryDirectory() as tmp:
        async with TableHarness(CONFIG, Path(tmp) / "anchor", seed=11, extra_overrides=[
                f"store.anchor_interval_s={ANCHOR_INTERVAL_S:g}"]) as table:
            paths = CriticalPaths.for_store(table.store_path)
            key = load_key_for(table.store_path)
            seal = sqlite3.connect(f"file:{table.store_path}?mode=ro", uri=True)
            seen: dict[int, float] = {}  # commit number -> when the observer first saw it
            lags: list[float] = []
            reads = 0

            def poll() -> None:
                now = time.monotonic()
                commit_no = seal.execute("SELECT commit_no FROM critical_seal").fetchone()[0]
                seen.setdefault(int(commit_no), now)
                anchor = read_anchor(paths.anchor, key)
                anchored = anchor.commit_no if anchor is not None else -1
                for done in [c for c in seen if c <= anchored]:
                    lags.append(now - seen.pop(done))

            async def observe() -> None:
                while True:
                    poll()
                    await asyncio.sleep(0.01)

            async def read() -> None:
                nonlocal reads
                client = await ControlClient(table.socket).connect()
                try:
                    while True:
                        for cmd, args in (("events", {"limit": 1}), ("rounds", {"limit": 5}),
                                          ("verify_chain", {})):
                            await client.call(cmd, **args)
                            reads += 1
                        subscriber = await ControlClient(table.socket).connect()
                        async for _ in subscriber.subscribe(after_seq=0):
                            break
                        await subscriber.close()
                        reads += 1
                        await asyncio.sleep(read_interval_s)
                finally:
                    await client.close()

            tasks = [asyncio.create_task(observe()), asyncio.create_task(read())]
            await table.play(shoes=shoes)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            deadline = time.monotonic() + 10
            while seen and time.monotonic() < deadline:
                poll()
                await asyncio.sleep(0.01)
            never = len(seen)
            seal.close()
    return lags, reads, never


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shoes", type=int, default=1)
    parser.add_argument("--read-interval", type=float, default=0.05,
                        help="seconds between one round of reads and the next")
    args = parser.parse_args()
    header("Anchor lag behind the store during read-only calls (daemon process, outside observer)")
    lags, reads, never = asyncio.run(measure(args.shoes, args.read_interval))
    lags.sort()
    p50, p99 = lags[len(lags) // 2], lags[min(len(lags) - 1, int(len(lags) * 0.99))]
    print(f"read-only calls during play: {reads}; durable commits observed: {len(lags)}; "
          f"never anchored: {never}")
    print(f"anchor lag behind the store: p50 {p50:.3f} s, p99 {p99:.3f} s, max {lags[-1]:.3f} s"
          f" ({lags[-1] / ANCHOR_INTERVAL_S:.2f}x the writer's {ANCHOR_INTERVAL_S:g} s interval;"
          f" limit {LIMIT_S:g} s: {'met' if lags[-1] <= LIMIT_S and not never else 'MISSED'})")


if __name__ == "__main__":
    main()
