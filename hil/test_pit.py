"""Issue 30: a pit of real daemons on one PostgreSQL and one MQTT broker, and its page.

- The campaign in small (what `./run-pit --short` runs): three daemons on a PostgreSQL and a
  broker of the test's own; PostgreSQL restarted as by a crash, the broker killed and
  restarted, one table cut off from PostgreSQL, a pair of tables forced to hit the linked
  meter in the same instant (their claims held at a gate and released together, so they
  race at the server: hil/pit_race.py), a table killed right after a lock-out with its
  contributions unsent (its link sync held until the kill). Then every check of the campaign (hil/pit_checks.py): the linked meter to the
  exact fraction of a cent, each hit paid once, each table's tally, log and witness.
- The pit page in Chromium with real daemons: every table shown, each status change in the
  DOM within 2 s of the daemon publishing it, a daemon killed shown as lost.

The full campaign (20 daemons, 20 shoes) is `./run-pit --campaign` (docs/deployment.md).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from hil.pit_campaign import SHORT, Pit, start_page, start_servers, start_tables
from hil.pit_checks import run_pit
from hil.pit_race import START_BOUND_MS
from hil.pit_servers import require_private_servers
from hil import display_watch
from hil.test_display_browser import browser  # noqa: F401 - the Chromium fixture

pytestmark = [pytest.mark.hil, pytest.mark.timeout(600)]

CONFIG = Path(__file__).parents[1] / "config" / "pit-table.toml"
SEED = 30
PAGE_DEADLINE_MS = 2000  # the issue: every table within 2 s of a change (bench/bench_pit.py
# measures every one; beside the suite, nine in ten and each within a stall: display_watch)
LOST_DEADLINE_S = 5.0  # "within seconds": the broker publishes the will when the TCP session ends
PAGE_WAIT_MS = 30_000
RESEED_CENTS = 1_000_000  # config/pit-table.toml's Heavenly 9: reset at $10,000 (631c.2(i))



async def test_the_short_campaign_survives_every_shared_server_fault_605a_8(tmp_path):
    require_private_servers()
    lines: list[str] = []
    pit = Pit(SHORT.but(seed=SEED), tmp_path, CONFIG, say=lines.append)
    report = await run_pit(pit)
    print(report.render())  # the figures (pytest -rP shows them)
    assert report.ok, report.render() + "\n" + "\n".join(lines)
    faults = pit.faults
    assert (faults.pg_restarts, faults.broker_restarts) == (1, 1)
    assert faults.cut_table == "PIT-03" and faults.cut_link_down_seen_s is not None
    # A table killed after a lock-out with its contributions unsent (its link sync held by
    # the hold seam until the kill), restarted by the harness: those contributions reached the
    # server once after the restart and nothing acknowledged was lost or counted twice (the
    # checks: check_kills, check_meter).
    assert len(faults.kills) == 1 and faults.kills[0][1] >= 1, faults.kills
    assert len(faults.unsent_at_kills) == faults.kills[0][1]
    assert report.counts["contributions unsent at the kills"] == faults.kills[0][1]
    assert [t.harness.result.power_cuts for t in pit.tables] == [0, 0, 1]  # PIT-03, restarted
    assert sum(t.harness.result.crash_kills for t in pit.tables) == 0
    assert [t.forced_hits for t in pit.tables] == [1, 1, 0], "\n".join(lines)  # PIT-01, -02
    # 605a.8: the pair's two claims waited at the gate together and, released by one server
    # event, raced at the server; the row lock ordered them (the replay in the checks: each
    # paid the meter's whole cents at its turn, the second the reseeded meter).
    (pair,) = pit.pairs
    assert pair.waiting_at_release == 2
    race = report.races[0]
    assert sorted(race.tables) == ["PIT-01", "PIT-02"] and race.versions[0] < race.versions[1]
    assert race.held_until_release, race.render()
    assert race.overlapped or race.start_gap_ms <= START_BOUND_MS, race.render()
    assert race.amounts[1] >= RESEED_CENTS
    assert all(len(t.harness.result.rounds) >= SHORT.rounds for t in pit.tables)  # type: ignore[operator]
    counts = report.counts
    assert counts["contributions acknowledged by the tables"] == \
        counts["contributions on the server"] > 0


OBSERVER = """
window.__seen = {};
(() => {
  const now = () => performance.timeOrigin + performance.now();
  const scan = () => {
    for (const n of document.querySelectorAll(".table[data-table]")) {
      const key = n.dataset.table + ":" + n.dataset.sequence + ":" + n.dataset.alive;
      if (!(key in window.__seen)) window.__seen[key] = now();
    }
  };
  new MutationObserver(scan).observe(document, {subtree: true, childList: true,
                                                attributes: true});
})();
"""


class StatusRecorder:
    """A subscriber beside the page: when each table published each status (its `at`)."""

    def __init__(self, host: str, port: int, site: str) -> None:
        import paho.mqtt.client as mqtt

        self.published: dict[tuple[str, int], float] = {}
        self._lock = threading.Lock()
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2)
        self.client.on_connect = lambda c, u, f, r, p=None: c.subscribe(
            f"casino/{site}/tables/+/status", qos=1)
        self.client.on_message = self._on_message
        self.client.connect(host, port)
        self.client.loop_start()

    def _on_message(self, client: Any, userdata: Any, message: Any) -> None:
        if message.payload:
            body = json.loads(message.payload)
            with self._lock:
                self.published[(body["table_id"], body["sequence"])] = body["at"]

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


def delays_ms(seen: dict[str, float], published: dict[tuple[str, int], float],
              since: float) -> dict[str, float]:
    """For every status published after `since` that the page showed (its key): from the
    daemon's publishing to the DOM."""
    delays = {}
    for key, dom_ms in seen.items():
        at = published_at(key, published)
        if at is not None and at >= since:
            delays[key] = dom_ms - at * 1000
    return delays


def published_at(key: str, published: dict[tuple[str, int], float]) -> float | None:
    """When the status the page showed as `key` ("table:sequence:alive") was published, if
    it is an online table's status the recorder saw."""
    table_id, sequence, alive = key.split(":")
    if not sequence or alive != "online":
        return None
    return published.get((table_id, int(sequence)))


async def test_the_pit_page_follows_real_daemons_and_shows_a_killed_one_lost(
        tmp_path, browser):  # noqa: F811 - the fixture
    require_private_servers()
    plan = SHORT.but(seed=SEED, faults=False, rounds=8)
    pit = Pit(plan, tmp_path, CONFIG, say=lambda line: None)
    async with contextlib.AsyncExitStack() as stack:
        await start_servers(pit, stack)
        recorder = StatusRecorder(*pit.broker_at, pit.site)
        stack.callback(recorder.close)
        await start_tables(pit, stack)
        await start_page(pit, stack)
        page = await browser.new_page(viewport={"width": 1920, "height": 1080},
                                     bypass_csp=True)  # string predicates
        await page.add_init_script(OBSERVER)
        await page.goto(pit.page_url)
        await page.wait_for_function(
            "document.querySelectorAll('.table[data-alive=\"online\"]').length === 3",
            timeout=PAGE_WAIT_MS)
        shown = time.time()  # what was published before is shown at the page's load
        await asyncio.gather(*(t.harness.play(shoes=1, until=lambda r: len(r.rounds) >= 8)
                               for t in pit.tables))
        # The last status each table published is on the page (as its sequence).
        await asyncio.sleep(1.0)  # the daemons look for a change every 0.25 s
        last = {}
        for (table_id, sequence), _ in sorted(recorder.published.items()):
            last[table_id] = max(last.get(table_id, 0), sequence)
        for table_id, sequence in last.items():  # (or a later one: the witness moves on)
            await page.wait_for_function(
                f"Number(document.querySelector('.table[data-table=\"{table_id}\"]')"
                f".dataset.sequence) >= {sequence}", timeout=PAGE_WAIT_MS)
        seen = await page.evaluate("window.__seen")
        delays = delays_ms(seen, recorder.published, shown)
        # Statuses a fraction of a second apart are sent to the page together: not every one
        # reaches the DOM, but each table's rounds do. How many reach it depends on how the
        # eight rounds fall against the daemons' 0.25 s look for a change: 12 of them on a
        # quiet machine, 10 on a loaded one. Each table's latency is measured at least
        # twice: its last status (waited for above) and one while it played.
        shown_tables = {key.split(":")[0] for key in seen}
        measured = collections.Counter(
            key.split(":")[0] for key in seen
            if (at := published_at(key, recorder.published)) is not None and at >= shown)
        assert shown_tables == {"PIT-01", "PIT-02", "PIT-03"}
        assert min(measured[table] for table in shown_tables) >= 2, measured
        display_watch.check_keeps_up(delays, PAGE_DEADLINE_MS, "the pit page")
        cards = await page.eval_on_selector_all(
            ".table", "ns => ns.map(n => [n.dataset.table, n.querySelector('.meter')"
                      " .dataset.linked, n.querySelectorAll('.result').length])")
        assert cards == [["PIT-01", "1", 6], ["PIT-02", "1", 6], ["PIT-03", "1", 6]]
        # A daemon killed: the broker publishes its last will and the page shows it lost.
        victim = pit.tables[1].harness
        assert victim.daemon is not None
        victim.daemon.send_signal(signal.SIGKILL)
        killed = time.time()
        await page.wait_for_selector('.table[data-table="PIT-02"][data-alive="lost"]',
                                     timeout=LOST_DEADLINE_S * 1000)
        seen = await page.evaluate("window.__seen")
        (lost_at,) = [ms for key, ms in seen.items()
                      if key.startswith("PIT-02:") and key.endswith(":lost")]
        assert lost_at - killed * 1000 < LOST_DEADLINE_S * 1000
        assert await page.locator('.table[data-alive="online"]').count() == 2


# --- twenty tables on the page: light publishers of the tables' feed -------------------------

TWENTY = 20
KEEPER = """
import sys, time
from controller.progressive.mqtt import MqttMeterPublisher
from controller.progressive.pit_feed import LOST, ONLINE, alive_message
port, site, table_id = int(sys.argv[1]), sys.argv[2], sys.argv[3]
publisher = MqttMeterPublisher("127.0.0.1", port, will=alive_message("casino", site, table_id, LOST))
assert publisher.wait_connected()
publisher.publish(alive_message("casino", site, table_id, ONLINE))
print("up", flush=True)
time.sleep(600)
"""


class LightTable:
    """What the page sees of a daemon (its alive and status topics, from the daemon's own
    `PitFeed`), without the daemon: twenty of these cost the machine nothing."""

    def __init__(self, port: int, site: str, table_id: str) -> None:
        from controller.progressive.mqtt import MqttMeterPublisher
        from controller.progressive.pit_feed import LOST, OFFLINE, PitFeed, alive_message

        self.table_id = table_id
        self.publisher = MqttMeterPublisher(
            "127.0.0.1", port, client_id=f"light-{site}-{table_id}",
            will=alive_message("casino", site, table_id, LOST),
            goodbye=alive_message("casino", site, table_id, OFFLINE))
        self.closed = False
        assert self.publisher.wait_connected()
        self.feed = PitFeed(self.publisher.publish, "casino", site, table_id)
        self.feed.republish()  # "online"
        self.round_no = 0
        self.fault: dict[str, str] | None = None
        self.link: str | None = None

    def status(self) -> dict[str, Any]:
        return {"table_id": self.table_id, "state": "betting_open", "game": "baccarat",
                "shoe": {"shoe_no": 1, "rounds": self.round_no, "cards_left": 400},
                "round": {"round_id": self.round_no, "round_no": self.round_no},
                "fault": self.fault, "faults_holding": [], "out_of_order": None,
                "witness": {"link": "up", "pending_heads": 0}}

    def publish(self) -> float:
        meters = [{"progressive": "heavenly9", "level": "progressive", "linked": True,
                   "amount_cents": 1_000_000 + 50 * self.round_no}]
        assert self.feed.update(self.status(), meters, {"heavenly9": self.link})
        return time.time()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.publisher.close()  # says "offline"


async def test_the_pit_page_shows_twenty_tables_within_2_s_of_each_change(tmp_path, browser):  # noqa: F811
    require_private_servers()
    import subprocess
    import sys

    from hil.pit_servers import PrivateBroker

    pit = Pit(SHORT.but(tables=TWENTY, faults=False), tmp_path, CONFIG, say=lambda line: None)
    async with contextlib.AsyncExitStack() as stack:
        broker = stack.enter_context(PrivateBroker())
        pit.broker_at = ("127.0.0.1", broker.port)
        await start_page(pit, stack)
        tables = [LightTable(broker.port, pit.site, f"PIT-{i:02d}") for i in range(1, TWENTY)]
        for table in tables:
            stack.callback(table.close)
            table.publish()
        keeper = subprocess.Popen([sys.executable, "-c", KEEPER, str(broker.port), pit.site,
                                   f"PIT-{TWENTY:02d}"], stdout=subprocess.PIPE)
        stack.callback(keeper.kill)
        assert keeper.stdout is not None and keeper.stdout.readline() == b"up\n"
        page = await browser.new_page(viewport={"width": 1920, "height": 1080},
                                     bypass_csp=True)  # string predicates
        await page.add_init_script(OBSERVER)
        await page.goto(pit.page_url)
        await page.wait_for_function(
            f"document.querySelectorAll('.table[data-alive=\"online\"]').length === {TWENTY}",
            timeout=PAGE_WAIT_MS)
        delays: dict[str, float] = {}
        for change in range(1, 6):
            published = {}
            for table in tables:
                table.round_no = change
                if change == 3 and table.table_id == "PIT-07":
                    table.fault = {"device": "shoe", "code": "card_misread", "detail": "8♣?",
                                   "action": "show the card to the camera, then acknowledge"}
                if change == 4 and table.table_id == "PIT-09":
                    table.link = "linked ledger unreachable: OperationalError: timeout"
                published[table.table_id] = (table.publish(), table.feed.sequence)
            for table_id, (_, sequence) in published.items():
                await page.wait_for_selector(
                    f'.table[data-table="{table_id}"][data-sequence="{sequence}"]',
                    timeout=PAGE_WAIT_MS)
            seen = await page.evaluate("window.__seen")
            delays.update({f"{t}:{seq}:online": seen[f"{t}:{seq}:online"] - at * 1000
                           for t, (at, seq) in published.items()})
        display_watch.check_keeps_up(delays, PAGE_DEADLINE_MS, "the pit page")
        fault = page.locator('.table[data-table="PIT-07"] .fault')
        assert await fault.get_attribute("data-code") == "card_misread"
        assert "show the card to the camera" in await fault.inner_text()
        assert "linked wager unavailable: linked ledger unreachable" in await page.locator(
            '.table[data-table="PIT-09"] .link').inner_text()
        assert await page.locator('.table[data-table="PIT-05"] .meter').get_attribute(
            "data-amount") == str(1_000_000 + 50 * 5)
        # The twentieth table's process dies: the broker's last will shows it lost.
        keeper.send_signal(signal.SIGKILL)
        killed = time.time()
        await page.wait_for_selector(f'.table[data-table="PIT-{TWENTY:02d}"][data-alive="lost"]',
                                     timeout=LOST_DEADLINE_S * 1000)
        lost = [ms for key, ms in (await page.evaluate("window.__seen")).items()
                if key.startswith(f"PIT-{TWENTY:02d}:") and key.endswith(":lost")]
        assert lost and lost[0] - killed * 1000 < LOST_DEADLINE_S * 1000
        # One closed cleanly says "offline", not lost.
        tables[0].close()
        await page.wait_for_selector('.table[data-table="PIT-01"][data-alive="offline"]',
                                     timeout=PAGE_WAIT_MS)
