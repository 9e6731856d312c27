"""The pit page a pit boss watches, in Chromium: every table of a pit on one screen.

Twenty tables' statuses are made by the daemon's own side of the feed
(controller/progressive/pit_feed.py `PitFeed`, from status objects shaped as the daemon's
`status` command answers) and published, retained, on the MQTT broker at 127.0.0.1:1883,
under a site of this test's own; the pit service (controller/display/pit.py) subscribes
as it does on the floor and serves `/pit`. Each table's card is compared with what was
published, worked out here: its id and liveness, its state, shoe, hand and cards left,
each fault holding it with its age, detail and what clears it (the fault catalogue's
words), the linked wager's availability (605a.8), its meters, its last results and its
witness; then the page's summary, a fault's age as the page's clock moves on, a table
lost, and a whole pit lost on a phone (the summary names five, the bar leaves the cards
the screen). Every text of every card is whole and clear of every other (the screens'
measure, hil/display_watch.py), at a desk monitor's size, a tablet's and a phone's.
hil/test_pit.py times the same page against real daemons (each change within 2 s, a
killed daemon lost).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from controller.display.pit import PitService
from controller.faults import how_it_clears
from controller.progressive.mqtt import MeterMessage
from controller.progressive.pit_feed import LOST, OFFLINE, ONLINE, PitFeed, alive_message
from controller.rules.submission import MAX_TABLE_ID_CHARS
from hil import display_watch
from hil.mqtt_cleanup import clear_retained
from hil.test_display_browser import launched_chromium
from hil.display_watch import settled_measure
from hil.test_scoreboard_browser import screenshot
# What the page's own scripts threw: every test here ends with none (an autouse fixture).
from hil.test_display_browser import PAGE_ERRORS, no_page_errors  # noqa: F401
from tests.progressive.conftest import MQTT_HOST, MQTT_PORT, service_required

pytestmark = [pytest.mark.hil, pytest.mark.timeout(300),
              pytest.mark.asyncio(loop_scope="module")]

PREFIX = "casino"
SITE = f"pit-page-{uuid.uuid4().hex[:8]}"  # this run's own: no other pit's tables on the page
# A bound on waits for a condition, not a pause: the page shows the pit in a second on a quiet
# machine. (Its failures in stop 61's clean-clone runs were not slowness: an earlier test in
# the same worker had left 2,000 sockets open, and paho's select() refused the broker
# connections numbered past 1023; conftest.py now fails a test that leaves descriptors.)
WAIT_MS = 15_000
DESK = {"width": 1920, "height": 1080}
TABLET = {"width": 800, "height": 1280}
PHONE = {"width": 390, "height": 844}  # a pit boss's phone on the floor
LONGEST_ID = "PIT-" + "9" * (MAX_TABLE_ID_CHARS - 4)  # a table id at its longest
LINK_DOWN = "the shared meter could not be read (PostgreSQL at 10.20.30.5:5432 unreachable)"
WINNER_LETTER = {"banker": "B", "player": "P", "tie": "T"}


def daemon_status(table_id: str, number: int) -> dict[str, Any]:
    """A table's `status` as the daemon answers it, the fields the pit feed reads."""
    return {"table_id": table_id, "state": "betting_open", "game": "baccarat",
            "variant": "standard",
            "shoe": {"shoe_no": 2 + number % 3, "rounds": 10 + number, "cards_left": 300 - number},
            "round": {"round_id": 1000 + number, "round_no": 11 + number},
            "fault": None, "faults_holding": [], "out_of_order": None,
            "witness": {"link": "up", "pending_heads": 0}}


def meters(number: int) -> list[dict[str, Any]]:
    return [{"progressive": "h9", "level": "progressive", "linked": True,
             "amount_cents": 1_234_567 + number, "stale": False},
            {"progressive": "royal9", "level": "minor", "linked": False,
             "amount_cents": 45_015, "stale": False}]


def results(number: int) -> list[dict[str, Any]]:
    winners = ("banker", "player", "banker", "tie", "player", "banker")
    return [{"round_id": 1000 + number - k, "winner": winners[(number + k) % 6],
             "player_total": 3, "banker_total": 7} for k in range(6)]


def pit_tables() -> dict[str, dict[str, Any]]:
    """Twenty tables, each what its daemon would report, with the ones a shift must see."""
    tables: dict[str, dict[str, Any]] = {}
    for number in range(1, 21):
        table_id = LONGEST_ID if number == 7 else f"PIT-{number:02d}"
        tables[table_id] = {"status": daemon_status(table_id, number), "meters": meters(number),
                            "link": {"h9": None}, "alive": ONLINE, "results": results(number)}
    shoe_down = tables["PIT-02"]["status"]
    shoe_down["state"] = "dealing"
    shoe_down["fault"] = {"device": "shoe", "code": "link_down",
                         "detail": "no answer from /dev/baccarat-shoe for 2.0 s",
                         "action": how_it_clears("shoe", "link_down")}
    shoe_down["faults_holding"] = [
        {"device": "shoe", "code": "link_down", "clears": how_it_clears("shoe", "link_down")},
        {"device": "shuffler", "code": "shuffler_jam",
         "clears": how_it_clears("shuffler", "shuffler_jam")}]
    tables["PIT-03"]["status"]["out_of_order"] = (
        "critical memory: event chain: entry 41,207 was altered")
    tables["PIT-04"]["alive"] = LOST
    tables["PIT-05"]["alive"] = OFFLINE
    tables["PIT-06"]["link"] = {"h9": LINK_DOWN}
    tables["PIT-08"]["meters"][0].update(amount_cents=999_999_999_999, stale=True)
    tables["PIT-09"]["status"]["witness"] = {
        "link": "down", "pending_heads": 12,
        "last_error": "connection refused by the witness at 10.20.30.6:5432"}
    tables["PIT-10"]["status"]["state"] = "end_of_shoe"
    return tables


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def browser() -> AsyncIterator[Any]:
    async with launched_chromium() as launched:
        yield launched


@pytest.fixture
def broker() -> Iterator[Any]:
    """A client of the broker for the tables' side; their retained messages cleared after."""
    service_required("Mosquitto", MQTT_HOST, MQTT_PORT)
    import paho.mqtt.client as mqtt

    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"pit-page-{SITE}")
    client.connect(MQTT_HOST, MQTT_PORT)
    client.loop_start()
    try:
        yield client
    finally:
        client.disconnect()
        client.loop_stop()
        for table_id in pit_tables():
            clear_retained(MQTT_HOST, MQTT_PORT, PREFIX, SITE, table_id)


def publisher(client: Any) -> Any:
    def publish(message: MeterMessage) -> None:
        client.publish(message.topic, message.payload, qos=1, retain=True).wait_for_publish(10)
    return publish


def expected_card(table_id: str, table: dict[str, Any], since: float) -> dict[str, Any]:
    """The card the page must show for what the table published, worked out here."""
    status, alive = table["status"], table["alive"]
    shoe = status["shoe"]
    faults = []
    if status["faults_holding"]:
        first = status["fault"]
        for held in status["faults_holding"]:
            is_first = (held["device"], held["code"]) == (first["device"], first["code"])
            faults.append({"what": f"{held['device']}: {held['code']}", "since": since,
                           "detail": first["detail"] if is_first else "",
                           "action": first["action"] if is_first else held["clears"]})
    if status["out_of_order"]:
        faults.append({"what": "table: out_of_order", "since": since,
                       "detail": status["out_of_order"],
                       "action": "a technician reads tablectl status and the fault guide "
                                 "(docs/faults.md) before the table reopens"})
    down = [why for why in table["link"].values() if why]
    witness = status["witness"]
    return {
        "id": table_id, "alive": "live" if alive == ONLINE else alive.upper(),
        "state": status["state"].replace("_", " "),
        "shoe": f"shoe {shoe['shoe_no']} · hand {shoe['rounds']} · {shoe['cards_left']} cards left",
        "faults": faults,
        "link": "linked wager unavailable: " + "; ".join(down) if down else "link up",
        "meters": [("linked " if m["linked"] else "") + f"{m['level']} " +
                   f"${m['amount_cents'] // 100:,}.{m['amount_cents'] % 100:02d}" +
                   (" (stale)" if m["stale"] else "") for m in table["meters"]],
        "results": [WINNER_LETTER[r["winner"]] for r in table["results"]],
        "witness": f"witness: {witness['link']}" + (
            f" ({witness['pending_heads']} pending)" if witness["pending_heads"] else "") + (
            f" · {witness['last_error']}" if witness["link"] != "up" else ""),
    }


CARDS = """() => [...document.querySelectorAll('#tables .table')].map((t) => ({
  id: t.querySelector('h2 span').textContent,
  alive: t.querySelector('h2 .alive').textContent,
  state: t.querySelector('.state').textContent,
  shoe: t.querySelector('.state + .muted').textContent.trim(),
  faults: [...t.querySelectorAll('.fault')].map((f) => ({
    what: f.querySelector('b').textContent, since: Number(f.dataset.since),
    detail: (f.querySelector(':scope > .muted') || {textContent: ''}).textContent.trim(),
    action: f.querySelector('.action').textContent})),
  link: (t.querySelector('.link') || {textContent: null}).textContent,
  meters: [...t.querySelectorAll('.meter')].map((m) => m.textContent),
  results: [...t.querySelectorAll('.result')].map((r) => r.textContent),
  witness: t.querySelector('.witness').textContent}))"""
# The pit page for MEASURE: its bar and each table's card are its panels; it scrolls down.
PIT_PAGE = {"panels": ".pit-bar, .table", "scrolls": True}
IN_VIEW = """(selectors) => selectors.map((q) => {
  const r = document.querySelector(q).getBoundingClientRect();
  return r.top >= 0 && r.bottom <= innerHeight && r.left >= 0 && r.right <= innerWidth; })"""
AGES = """() => [...document.querySelectorAll('#tables .fault .age')].map((a) => a.textContent)"""


async def test_a_pit_of_twenty_tables_on_the_pit_bosss_screen(browser: Any, broker: Any,
                                                             tmp_path: Path) -> None:
    tables = pit_tables()
    since = float(int(time.time()))  # the faults' first sight, on the tables' clocks
    service = PitService(MQTT_HOST, MQTT_PORT, PREFIX, SITE)
    port = await service.web.start("127.0.0.1", 0)
    service.start_feed()
    pusher = asyncio.create_task(service.push_changes())
    publish = publisher(broker)
    feeds = {}
    try:
        for table_id, table in tables.items():
            feed = feeds[table_id] = PitFeed(publish, PREFIX, SITE, table_id, clock=lambda: since)
            publish(alive_message(PREFIX, SITE, table_id, table["alive"]))
            for result in reversed(table["results"]):  # the newest first, as the feed keeps them
                feed.results.appendleft(result)
            assert feed.update(table["status"], table["meters"], table["link"])
        expected = [expected_card(t, tables[t], since) for t in sorted(tables)]
        summary = "20 tables · not live: PIT-04, PIT-05 · faults: PIT-02, PIT-03"
        for name, viewport in (("desk", DESK), ("tablet", TABLET), ("phone", PHONE)):
            page = await display_watch.open_page(browser, f"http://127.0.0.1:{port}/pit",
                                                 viewport, PAGE_ERRORS, clock=True,
                                                 clock_from=since)
            await page.wait_for_function(
                "document.querySelectorAll('#tables .table').length === 20 && "
                "document.getElementById('feed').dataset.connected === '1'", timeout=WAIT_MS)
            assert await page.evaluate(CARDS) == expected, name
            assert await page.inner_text("#summary") == summary
            assert await page.inner_text("#feed") == "broker: connected"
            await screenshot(page, f"pit-{name}", tmp_path)
            cut = [(m["id"], m["text"], m["why"]) for m in await settled_measure(page, PIT_PAGE)
                   if not m["whole"]]
            assert cut == [], (name, cut)
            # The faults' ages from the tables' own first sight, on a page whose clock
            # started then, moved on.
            await page.clock.run_for(125_000)
            await page.wait_for_function(f"({AGES})().every((a) => a === '2 min')",
                                         timeout=WAIT_MS)
            assert await page.evaluate(AGES) == ["2 min"] * 3, name
            await page.clock.run_for(3_600_000)
            await page.wait_for_function(f"({AGES})().every((a) => a === '1 h')",
                                         timeout=WAIT_MS)
            # Scrolled to the last card, the summary naming the tables to look at is still
            # on the screen, and so is that card.
            await page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")
            assert await page.evaluate(IN_VIEW, ["#summary", f".table[data-table='{LONGEST_ID}']"]
                                       ) == [True, True], name
            await page.close()

        # The broker's last will for a table whose daemon died: the card says so at once.
        page = await display_watch.open_page(browser, f"http://127.0.0.1:{port}/pit", DESK,
                                             PAGE_ERRORS)
        await page.wait_for_function("document.querySelectorAll('#tables .table').length === 20",
                                     timeout=WAIT_MS)
        publish(alive_message(PREFIX, SITE, "PIT-01", LOST))
        await page.wait_for_function(
            "document.querySelector('.table[data-table=\"PIT-01\"]').dataset.alive === 'lost'",
            timeout=WAIT_MS)
        assert await page.inner_text(".table[data-table='PIT-01'] .alive") == "LOST"
        assert await page.inner_text("#summary") == (
            "20 tables · not live: PIT-01, PIT-04, PIT-05 · faults: PIT-02, PIT-03")
        await page.close()

        # The whole pit lost at once (its switch, the broker's host): on a phone the bar that
        # stays in view names five and counts the rest, and leaves the cards the screen.
        page = await display_watch.open_page(browser, f"http://127.0.0.1:{port}/pit", PHONE,
                                             PAGE_ERRORS)
        await page.wait_for_function("document.querySelectorAll('#tables .table').length === 20",
                                     timeout=WAIT_MS)
        for table_id in tables:
            publish(alive_message(PREFIX, SITE, table_id, LOST))
        await page.wait_for_function(
            "document.querySelectorAll('#tables .table[data-alive=\"lost\"]').length === 20",
            timeout=WAIT_MS)
        await page.wait_for_function(
            "document.getElementById('summary').textContent.includes('15 more')", timeout=WAIT_MS)
        assert await page.inner_text("#summary") == (
            "20 tables · not live: PIT-01, PIT-02, PIT-03, PIT-04, PIT-05 and 15 more · "
            "faults: PIT-02, PIT-03")
        bar = await page.evaluate("document.querySelector('.pit-bar').getBoundingClientRect()"
                                  ".height")
        assert bar <= PHONE["height"] / 6, bar  # 101 px here; 844 / 6 is 140
        cut = [(m["id"], m["text"], m["why"]) for m in await settled_measure(page, PIT_PAGE)
               if not m["whole"]]
        assert cut == [], cut
        await page.close()
    finally:
        pusher.cancel()
        await asyncio.gather(pusher, return_exceptions=True)
        service.stop_feed()
        await service.web.close()
