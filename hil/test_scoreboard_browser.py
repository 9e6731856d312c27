"""The scoreboard a pit boss puts on the floor, in Chromium, landscape and portrait.

A scripted daemon (hil/scripted_daemon.py) logs whole shoes dealt by the rules'
simulator (controller/rules/simulate.py) in a second: a Baccarat shoe of 81 hands,
the end of the shoe and the cut, a void round, a 21 Baccarat shoe. Both orientations
are open at once, in one browser for the module. Each check reads the page's DOM and
compares it with figures worked out here from the round records, not from the page's
own model: the newest road columns in view, the banners the state calls for, the hand
and round numbers, the table number and dealer, every limit, percentages and streaks,
the labels in the configured languages, and every glyph's size against the rule for
5 m (docs/display.md, "Read from across the pit").

`DISPLAY_SCREENSHOTS_DIR=docs/images ./run-tests hil/test_scoreboard_browser.py` writes
the scoreboard's screenshots in docs/display.md.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from controller.commands.args import MAX_DEALER_CHARS
from controller.display.service import table_info
from controller.faults import CATALOGUE
from controller.rules.game import load_game
from controller.rules.simulate import SimulationOptions, simulate
from hil.scripted_daemon import ScriptedDisplay, Served, play_round, result_of, settled_wager
from hil import display_watch
from hil.display_watch import LANDSCAPE, MEASURE, PORTRAIT, settled_measure
from hil.test_display_browser import check_pay_list, launched_chromium
# What the pages' own scripts threw: every test here ends with none (an autouse fixture).
from hil.test_display_browser import PAGE_ERRORS, no_page_errors  # noqa: F401

pytestmark = [pytest.mark.hil, pytest.mark.timeout(300),
              pytest.mark.asyncio(loop_scope="module")]

ROOT = Path(__file__).parents[1]
SIDE_WAGERS = ROOT / "config" / "baccarat-side-wagers.toml"
ROYAL_9 = ROOT / "config" / "progressive-royal9.toml"
TWENTY_ONE = ROOT / "config" / "21-baccarat-8deck.toml"
SEED = 3  # 81 hands: the Big Road needs more columns than fit in either orientation
WAIT_MS = 15_000
PAGE_MS = 6000  # scoreboard.js: each page of limits or meters is shown this long
# The size rule (docs/display.md): a capital letter or digit at least 20 px high at
# 1080 lines, a road's mark at least 20 px across.
MIN_GLYPH_PX = 20.0
ROADS = ("big-road", "bead-plate", "big-eye-boy", "small-road", "cockroach-pig")


# Where each road's cells are against the road's own box: the newest column (the road's
# highest `col`) must be wholly inside it; a column left of the scroll offset is outside.
ROAD_VIEW = """(id) => {
  const road = document.getElementById(id), box = road.getBoundingClientRect();
  const cells = [...road.querySelectorAll(".strip > div")].map((n) => {
    const r = n.getBoundingClientRect();
    return {col: Number(n.dataset.col), left: r.left - box.left, right: r.right - box.left};
  });
  const panel = road.closest(".panel").getBoundingClientRect();
  return {width: box.width, cells, offset: Number(road.dataset.offset),
          visible: Number(road.dataset.visibleColumns),
          inside: box.left >= panel.left && box.right <= panel.right && box.bottom <= panel.bottom
                  && box.right <= innerWidth && box.bottom <= innerHeight};
}"""


def shoe(config: Path, seed: int = SEED) -> list[dict[str, Any]]:
    return [r for r in simulate(load_game(config), SimulationOptions(shoes=1, seed=seed))
            if not r["simulated"] and not r["void"]]


def percent(part: int, whole: int) -> int:
    """Whole percent, halves up: 1/8 is 13%."""
    return int(part * 100 / whole + 0.5) if whole else 0


def streaks(winners: list[str]) -> tuple[tuple[str | None, int], int, int]:
    """(current winner and length, longest Banker, longest Player); ties skipped."""
    runs: list[tuple[str, int]] = []
    for w in winners:
        if w == "tie":
            continue
        if runs and runs[-1][0] == w:
            runs[-1] = (w, runs[-1][1] + 1)
        else:
            runs.append((w, 1))
    longest = {k: max((n for w, n in runs if w == k), default=0) for k in ("banker", "player")}
    return (runs[-1] if runs else (None, 0)), longest["banker"], longest["player"]


def big_road_columns(winners: list[str]) -> int:
    """How many columns the Big Road draws, counted here without the roads module: a new
    column per streak, a streak longer than six turns right along the bottom row (a
    simple shoe's dragon tail; SEED's shoe has no tail meeting another)."""
    from controller.display.roads import RoadRound, Winner, big_road

    road = big_road([RoadRound(Winner(w)) for w in winners])
    return max(c.col for c in road.cells) + 1


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def browser() -> AsyncIterator[Any]:
    async with launched_chromium() as launched:  # one browser for the module
        yield launched


async def open_pages(browser: Any, served: Served, path: str) -> dict[str, Any]:
    """`path` in both orientations, each page's clock installed (the limits' and the
    meters' pages are turned by the test) and its scripts' errors kept."""
    pages = {}
    for name, viewport in (("landscape", LANDSCAPE), ("portrait", PORTRAIT)):
        page = await display_watch.open_page(browser, served.url(path), viewport, PAGE_ERRORS,
                                             clock=True)
        await page.wait_for_function(
            "document.getElementById('connection').dataset.ok === '1'", timeout=WAIT_MS)
        pages[name] = page
    return pages


async def each_page(page: Any, box: str, read: str,
                    check: Callable[[str, Any], Awaitable[None]] | None = None
                    ) -> dict[str, Any]:
    """What `read` (a function in the page returning [the page shown, what it shows]) finds
    on every page of the paged box `box` ("limits", "meters"), read at once, each checked
    by `check`; the page's clock moved on to turn them. Each page is found once."""
    pages = int(await page.get_attribute(f"#{box}", "data-pages") or 0)
    assert pages >= 1
    by_page: dict[str, Any] = {}
    for _ in range(2 * pages):  # the page's clock also runs by itself: a page may be skipped
        number, shown = await page.evaluate(read)
        if check is not None:
            await check(number, shown)
        by_page[number] = shown
        if len(by_page) == pages:
            break
        await page.clock.run_for(PAGE_MS)  # the page's clock: no real wait
    assert sorted(by_page, key=int) == [str(n) for n in range(1, pages + 1)], by_page
    return by_page


async def until(page: Any, predicate: str) -> None:
    await page.wait_for_function(predicate, timeout=WAIT_MS)


async def header(page: Any) -> dict[str, Any]:
    return dict(await page.evaluate("""() => ({
      banner: document.getElementById('announce').dataset.kind,
      banner_text: document.getElementById('announce').textContent,
      last_hand: !document.getElementById('last-hand').hidden,
      hand: document.getElementById('hand-no').textContent,
      round: document.getElementById('round-no').textContent,
      hands_counted: document.getElementById('count-rounds').textContent})"""))


async def header_once(page: Any, expected: dict[str, Any]) -> dict[str, Any]:
    """The page's header once it is `expected`, else as it is after WAIT_MS (the assertion
    then shows what differs). A wait for one part of the page is no wait for the rest:
    the page draws the newest views at its next frame (common.js `follow`), and a
    condition the page met before the last emit holds before that emit is drawn."""
    deadline = asyncio.get_running_loop().time() + WAIT_MS / 1000
    while (shown := await header(page)) != expected:
        if asyncio.get_running_loop().time() > deadline:
            break
        await asyncio.sleep(0.02)
    return shown


async def screenshot(page: Any, name: str, tmp_path: Path) -> None:
    target = Path(os.environ.get("DISPLAY_SCREENSHOTS_DIR") or tmp_path / "screenshots")
    target.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=str(target / f"{name}.png"))


def check_sizes(measured: list[dict[str, Any]], where: str, *, marks: int = 60) -> None:
    """Every glyph and mark measured at or above the rule; `marks`: at least this many
    road marks were measured (the roads were there to measure)."""
    small = [m for m in measured if m["px"] < MIN_GLYPH_PX]
    assert not small, f"{where}: smaller than {MIN_GLYPH_PX} px: " + "; ".join(
        f"{m['what']} {m['id']!r} {m['text']!r} {m['px']:.1f} px" for m in small[:12])
    cut = [m for m in measured if not m["whole"]]
    assert not cut, f"{where}: not whole: " + "; ".join(
        f"{m['id']!r} {m['text']!r} {m['why']}" for m in cut[:12])
    assert sum(m["what"] == "text" for m in measured) > 40, measured
    assert sum(m["what"] == "mark" for m in measured) > marks, measured


def check_road_in_view(view: dict[str, Any], road: str, where: str) -> None:
    """The newest column wholly in view; when the road has more columns than fit, the
    oldest (left of the offset) are out of view and every column shown is whole."""
    assert view["inside"], f"{where}: {road} runs out of its panel or the screen: {view}"
    newest = max(c["col"] for c in view["cells"])
    columns = newest + 1
    for c in view["cells"]:
        if c["col"] == newest:
            assert 0 <= c["left"] and c["right"] <= view["width"] + 0.5, (where, road, c, view)
        if c["col"] < view["offset"]:
            assert c["right"] <= 0.5, (where, road, c)
    assert view["offset"] == max(0, columns + 1 - view["visible"]), (where, road, view)


# A page of known faults for MEASURE itself: each text's id says what is wrong with it.
FAULTS_PAGE = """<!doctype html><html><body style="margin:0">
<header class="bar" style="display:flex;width:600px;height:80px">
  <div id="whole" style="width:200px;font-size:40px">Banker</div>
  <div id="runs-over" style="width:60px;font-size:40px;white-space:nowrap">$9,999,999.99</div>
  <div id="neighbour" style="width:200px;font-size:40px">Player</div>
</header>
<main>
  <section class="panel" style="position:relative;width:600px;height:300px">
    <p id="clipped" style="width:80px;overflow:hidden;white-space:nowrap;font-size:40px">
      Tie pays 8 to 1</p>
    <div style="width:80px;overflow:hidden"><span id="cut-around"
      style="white-space:nowrap;font-size:40px">Player pair</span></div>
    <div style="display:flex;width:400px">
      <div style="width:150px"><span id="over-next" style="font-size:40px;white-space:nowrap"
        >$9,999,999.99</span></div>
      <div style="width:150px"><span id="next" style="font-size:40px">Major</span></div>
    </div>
    <div id="off-panel" style="position:absolute;top:360px;font-size:40px">Hand 12</div>
    <div id="tiny" style="font-size:8px">small print</div>
    <div id="hidden-one" hidden style="font-size:40px">not shown</div>
  </section>
  <section class="panel" style="position:relative;width:4000px;height:80px">
    <div id="off-screen" style="position:absolute;left:3000px;font-size:40px">Shoe 3</div>
  </section>
</main></body></html>"""


async def test_the_measure_finds_each_kind_of_text_that_is_not_whole(browser: Any) -> None:
    """MEASURE (hil/display_watch.py) is what every screen test trusts: a text running out
    of its own box or a box around it into the next one (boxes that clip nothing), one cut
    by a box around it, one out of its panel, one pushed wholly off the screen and one too
    small are each found and named; a whole text and a hidden one are not."""
    page = await browser.new_page(viewport=LANDSCAPE)
    try:
        await page.set_content(FAULTS_PAGE)
        measured = {m["id"]: m for m in await page.evaluate(MEASURE)}
    finally:
        await page.close()
    assert {name: m["why"] for name, m in measured.items()} == {
        "whole": "", "runs-over": "out of its own box", "neighbour": 'over "$9,999,999.99"',
        "clipped": "out of its own box", "cut-around": "cut by a box around it",
        "over-next": 'over "Major"', "next": 'over "$9,999,999.99"',
        "off-panel": "out of its panel", "off-screen": "off the screen", "tiny": ""}
    assert [name for name, m in measured.items() if m["px"] < MIN_GLYPH_PX] == ["tiny"]


async def test_a_whole_shoe_then_the_cut_and_a_void_on_the_scoreboard(
        browser: Any, tmp_path: Path) -> None:
    records = shoe(SIDE_WAGERS)
    assert len(records) >= 70, f"seed {SEED}: {len(records)} hands"
    table, _ = table_info(str(SIDE_WAGERS))
    table = {**table, "number": "12", "languages": ["en", "zh-hans"]}
    status = {"state": "closed", "shoe": {"cards_left": 416}, "round": {}, "fault": None}
    async with ScriptedDisplay(tmp_path, table, status) as (daemon, served):
        daemon.emit("new_dealer", {"dealer": "Mei Lin", "burn": False})
        daemon.status = {**daemon.status, "state": "burn"}
        daemon.emit("shoe_loaded", {"shoe_no": 1, "back": "red"})
        board = await open_pages(browser, served, "/scoreboard")
        base_round = 400  # the daemon numbers rounds across shoes
        # The first hand, open for bets: the hand in play is hand 1, round 401.
        daemon.status = {**daemon.status, "state": "betting_open"}
        daemon.emit("prompt", {"action": "place_bets", "round_no": base_round + 1})
        for page in board.values():
            await until(page, "document.getElementById('announce').dataset.kind === 'open'")
            expected = {
                "banner": "open", "banner_text": "PLACE YOUR BETS请下注", "last_hand": False,
                "hand": "1", "round": "401", "hands_counted": "0"}
            assert await header_once(page, expected) == expected
            assert await page.inner_text("#table-number") == "12"
            assert await page.inner_text("#dealer-name") == "Mei Lin"
            assert await page.evaluate("""() => [...document.querySelectorAll(
                '.count.main [data-label] .lang')].map((n) => [n.lang, n.textContent])""") == [
                ["en", "Banker"], ["zh-Hans", "庄"], ["en", "Player"], ["zh-Hans", "闲"],
                ["en", "Tie"], ["zh-Hans", "和"]]

        # 70 hands and more, up to the last: after the lock-out of the 70th, NO MORE BETS.
        for n, record in enumerate(records[:69], start=1):
            play_round(daemon, record, base_round + n)
        play_round(daemon, records[69], base_round + 70, settle=False)
        for page in board.values():
            # The whole header at once (header_once): the hand's number and the count are
            # drawn from the prompt before the lock-out, and a page under load can show
            # them a frame before the lock-out's banner.
            expected = {"banner": "closed", "banner_text": "NO MORE BETS停止下注",
                        "last_hand": False, "hand": "70", "round": str(base_round + 70),
                        "hands_counted": "69"}
            assert await header_once(page, expected) == expected
        daemon.emit("round_settled", {"round_no": base_round + 70, "simulated": False,
                                      "settlements": [], "table_net_cents": 0,
                                      "result": result_of(records[69])})
        for n, record in enumerate(records[70:], start=71):
            play_round(daemon, record, base_round + n)
        last = len(records)
        daemon.status = {**daemon.status, "state": "settlement",
                         "shoe": {"cards_left": 14, "last_hand": True}}
        daemon.emit("prompt", {"action": "collect_vigorish", "seats": []})
        winners = [r["outcome"] for r in records]
        for where, page in board.items():
            await until(page, f"document.getElementById('count-rounds').textContent === '{last}'")
            expected = {
                "banner": "closed", "banner_text": "NO MORE BETS停止下注", "last_hand": True,
                "hand": str(last), "round": str(base_round + last), "hands_counted": str(last)}
            assert await header_once(page, expected) == expected
            await check_counts(page, records, winners)
            for road in ROADS:
                check_road_in_view(await page.evaluate(ROAD_VIEW, road), road, where)
            big = await page.evaluate(ROAD_VIEW, "big-road")
            assert big["offset"] > 0, f"{where}: {big_road_columns(winners)} Big Road columns, " \
                                      f"{big['visible']} fit: the test needs them to scroll"
            await screenshot(page, f"scoreboard-{where}", tmp_path)
            check_sizes(await settled_measure(page), where)
            await check_limits(page, table["limits"])

        # The end of the shoe, then the cut: no announcement of a round that is not there,
        # the hand number the count of hands.
        for state, banner, text in (("end_of_shoe", "shuffle", "SHUFFLE洗牌"),
                                    ("shuffling", "shuffle", "SHUFFLE洗牌"),
                                    ("cut", "shuffle", "SHUFFLE洗牌")):
            daemon.status = {**daemon.status, "state": state}
            daemon.emit("prompt", {"action": "shoe_complete" if state == "end_of_shoe"
                                   else "cut"})
            for where, page in board.items():
                await until(page, f"document.getElementById('announce').dataset.kind === "
                                  f"'{banner}' && document.getElementById('last-hand').hidden")
                expected = {
                    "banner": banner, "banner_text": text, "last_hand": False,
                    "hand": str(last), "round": str(base_round + last),
                    "hands_counted": str(last)}
                assert await header_once(page, expected) == expected, (where, state)
        await screenshot(board["landscape"], "scoreboard-cut-landscape", tmp_path)

        # A new shoe; its third hand is void (631a.15(e)): not a result, no hand counted,
        # no NO MORE BETS left up at the end of the shoe it causes.
        daemon.status = {**daemon.status, "state": "burn", "shoe": {"last_hand": False}}
        daemon.emit("shoe_loaded", {"shoe_no": 2, "back": "blue"})
        second = shoe(SIDE_WAGERS, seed=SEED + 1)
        for n, record in enumerate(second[:2], start=1):
            play_round(daemon, record, base_round + last + n)
        play_round(daemon, second[2], base_round + last + 3, settle=False)
        daemon.status = {**daemon.status, "state": "end_of_shoe"}
        daemon.emit("round_void", {"reason": "the shoe cannot complete the round",
                                   "settlements": []})
        for where, page in board.items():
            await until(page, "document.getElementById('announce').dataset.kind === 'shuffle'")
            expected = {
                "banner": "shuffle", "banner_text": "SHUFFLE洗牌", "last_hand": False,
                "hand": "2", "round": str(base_round + last + 3), "hands_counted": "2"}
            assert await header_once(page, expected) == expected, where
            assert await page.evaluate(
                "document.querySelectorAll('#bead-plate [data-round]').length") == 2


async def check_counts(page: Any, records: list[dict[str, Any]], winners: list[str]) -> None:
    """Counts and percentages of the shoe, pairs and streaks, worked out from the records."""
    n = len(records)
    pairs = {hand: sum(1 for r in records if (lambda cs: len(cs) >= 2 and cs[0][:-1] == cs[1][:-1])(
        result_of(r)[hand])) for hand in ("banker", "player")}
    expected = {"count-banker": str(winners.count("banker")),
                "count-player": str(winners.count("player")),
                "count-tie": str(winners.count("tie")),
                "percent-banker": f"{percent(winners.count('banker'), n)}%",
                "percent-player": f"{percent(winners.count('player'), n)}%",
                "percent-tie": f"{percent(winners.count('tie'), n)}%",
                "count-banker_pairs": str(pairs["banker"]),
                "count-player_pairs": str(pairs["player"]),
                "percent-banker_pair": f"{percent(pairs['banker'], n)}%",
                "percent-player_pair": f"{percent(pairs['player'], n)}%"}
    shown = {key: await page.inner_text(f"#{key}") for key in expected}
    assert shown == expected
    (now, length), longest_banker, longest_player = streaks(winners)
    short = {"banker": "B", "player": "P"}
    assert await page.inner_text("#streak-now") == f"{short[now]} {length}" if now else "\u2013"
    assert (await page.inner_text("#longest-banker"), await page.inner_text("#longest-player")) \
        == (f"B {longest_banker}", f"P {longest_player}")


async def check_limits(page: Any, limits: list[dict[str, Any]]) -> None:
    """Every limit of the Rules Submission, side wagers and pairs included, each on a page
    of the limits panel that the panel shows in turn."""
    def dollars(cents: int) -> str:
        d = cents / 100
        return f"${d / 1000:g}K" if d >= 1000 and d % 1000 == 0 else f"${d:,.0f}" \
            if d == int(d) else f"${d:,}"

    def shown_range(low: int | None, high: int | None) -> str:
        return f"{dollars(low or 0)}+" if high is None else f"{dollars(low or 0)}\u2013{dollars(high)}"

    async def whole(number: str, shown: list[list[Any]]) -> None:
        assert shown and all(inside for *_, inside in shown), (number, shown)
    # The page shown and its rows, read at once: each row wholly inside the panel and the
    # screen, and its name and range whole, not cut off (a long name wraps).
    rows_by_page = await each_page(page, "limits", """() => {
        const panel = document.querySelector('.limits-panel').getBoundingClientRect();
        const whole = (n) => n.scrollWidth <= n.clientWidth + 1
          && n.getBoundingClientRect().right <= n.parentNode.getBoundingClientRect().right + 1;
        return [document.getElementById('limits').dataset.page,
          [...document.querySelectorAll('#limits .limit')].filter((n) => !n.hidden)
          .map((n) => { const r = n.getBoundingClientRect();
            return [n.dataset.wager, n.querySelector('.limit-range').textContent,
                    r.top >= panel.top && r.bottom <= panel.bottom && r.left >= panel.left
                    && r.right <= panel.right && r.bottom <= innerHeight
                    && whole(n.querySelector('.limit-name'))
                    && whole(n.querySelector('.limit-range'))]; })]; }""", whole)
    by_page = {number: [(wager, text) for wager, text, _ in rows]
               for number, rows in rows_by_page.items()}
    assert [wager for wager, _ in by_page["1"][:3]] == ["banker", "player", "tie"]
    rows = [row for number in sorted(by_page, key=int) for row in by_page[number]]
    assert len(rows) == len(limits), f"a limit on two pages: {by_page}"
    seen = dict(rows)
    assert seen == {lim["wager"]: shown_range(lim["min_cents"], lim["max_cents"])
                    for lim in limits}


async def test_the_dealer_sees_running_totals_then_what_to_pay_in_both_orientations(
        browser: Any, tmp_path: Path) -> None:
    """The dealer's screen while a Banker win is dealt: where each card goes, each hand's
    total after each card (631a.6), then at the settlement each seat's result, payout and
    commission (631a.13(c)), highest seat first (631a.12(b))."""
    config = ROOT / "config" / "simulated-table.toml"
    records = shoe(config)
    record = next(r for r in records if r["outcome"] == "banker" and len(
        [c for c in r["cards"] if c["hand"] in ("player", "banker")]) >= 5)
    seat_of = {"banker": 7, "player": 3, "tie": 3}
    settlements = [settled_wager({**s, "seat": seat_of[s["wager"]], "vig_marked_cents": 0})
                   for s in record["settlements"]]
    assert any(s["vigorish_cents"] > 0 for s in settlements), "a Banker win owes commission"
    table, _ = table_info(str(config))
    status = {"state": "betting_open", "shoe": {"cards_left": 300}, "round": {}, "fault": None}
    async with ScriptedDisplay(tmp_path, table, status) as (daemon, served):
        daemon.emit("shoe_loaded", {"shoe_no": 1, "back": "red"})
        dealer = await open_pages(browser, served, "/dealer")
        daemon.emit("prompt", {"action": "place_bets", "round_no": 9})
        for s in settlements:
            daemon.emit("wager_accepted", {"seat": s["seat"], "wager": s["wager"],
                                           "amount_cents": s["amount_cents"]})
        daemon.status = {**daemon.status, "state": "dealing"}
        daemon.emit("no_more_bets", {"cause": "dealer", "round_no": 9, "wagers": [],
                                     "progressive_seats": []})
        dealt: dict[str, list[int]] = {"player": [], "banker": []}
        value = {"A": 1, "J": 0, "Q": 0, "K": 0, "10": 0}
        for i, card in enumerate(c for c in record["cards"] if c["hand"] in dealt):
            slot = f"{card['hand']}_{('first', 'second', 'third')[len(dealt[card['hand']])]}"
            daemon.emit("prompt", {"action": "deal", "next": slot})
            for where, page in dealer.items():
                await until(page, f"document.getElementById('next-card').dataset.next === "
                                  f"'{slot}'")
                assert await page.inner_text("#next-card") == card["hand"].upper(), where
            daemon.emit("card", {"index": i, "card": card["card"], "hand": card["hand"],
                                 "slot": slot, "back": "red"}, device="shoe")
            rank = card["rank"]
            dealt[card["hand"]].append(value[rank] if rank in value else int(rank))
            expected = {h: str(sum(v) % 10) if v else "" for h, v in dealt.items()}
            for where, page in dealer.items():
                await until(page, f"document.querySelectorAll('#player-cards .card, "
                                  f"#banker-cards .card').length === {i + 1}")
                shown = {h: await page.inner_text(f"#{h}-total") for h in dealt}
                assert shown == expected, (where, card)
        assert (expected["player"], expected["banker"]) == (
            str(record["player_total"]), str(record["banker_total"]))
        at = daemon.emit("round_settled", {
            "round_no": 9, "simulated": False, "settlements": settlements,
            "table_net_cents": -sum(s["net_cents"] for s in settlements),
            "result": result_of(record)})
        for where, page in dealer.items():
            await check_pay_list(page, 9, settlements, at)
            assert await page.inner_text("#round-result") == (
                f"BANKER WINS {record['banker_total']} to {record['player_total']}")
            await screenshot(page, f"dealer-totals-{where}", tmp_path)


def meter(level: str, cents: int, progressive: str = "royal9", game: str = "royal_9"
          ) -> dict[str, Any]:
    """One meter as the daemon's `meters` answers it (the fields the board reads)."""
    return {"progressive": progressive, "game": game, "level": level, "amount_cents": cents,
            "sequence": 1, "stale": False}


# A $5 Royal 9's Mega, Major and Minor meters, each a little above its reset amount.
ROYAL_9_METERS = [meter("mega", 5_000_020), meter("major", 45_015), meter("minor", 45_015)]
# More than either orientation holds on one page: a table with 631c's Heavenly 9 and its
# Must-Hit-By Mystery beside them.
FIVE_METERS = ROYAL_9_METERS + [
    meter("progressive", 1_234_567_89, "heavenly9", "heavenly_9"),
    meter("mystery", 10_010, "heavenly9", "heavenly_9")]
METERS_SHOWN = """() => [...document.querySelectorAll('#meters .meter')].filter((n) => !n.hidden)
  .map((n) => [n.querySelector('.meter-name').textContent,
               n.querySelector('.meter-amount').textContent])"""


async def meter_pages(page: Any) -> dict[str, list[list[str]]]:
    """Each page of the meters' panel, its sizes checked, the page's clock moved on."""
    async def sizes(number: str, _: Any) -> None:
        check_sizes(await settled_measure(page), f"meters page {number}", marks=0)
    return await each_page(page, "meters", f"() => [document.getElementById('meters')"
                                           f".dataset.page, ({METERS_SHOWN})()]", sizes)


async def test_a_progressive_table_shows_every_meter_and_every_panel(browser: Any,
                                                                     tmp_path: Path) -> None:
    """A Royal 9 progressive table: its three meters, the Next-hand predictions and the limits
    whole in both orientations, and a long table name whole (down to 28 px, then two
    lines). In landscape the side column held two of the three meters, and in portrait
    the meters' row left the predictions and the limits no room. More meters than fit are
    shown a page at a time, every one on some page."""
    records = shoe(ROYAL_9, seed=5)[:20]
    table, _ = table_info(str(ROYAL_9))
    table = {**table, "number": "7", "languages": ["en", "zh-hans"],
             "name": "Heavenly 9 with Must-Hit-By Mystery and Royal 9"}
    status = {"state": "closed", "shoe": {"cards_left": 416}, "round": {}, "fault": None}
    async with ScriptedDisplay(tmp_path, table, status) as (daemon, served):
        daemon.meters = [dict(m) for m in ROYAL_9_METERS]
        daemon.emit("shoe_loaded", {"shoe_no": 1, "back": "red"})
        board = await open_pages(browser, served, "/scoreboard")
        for n, record in enumerate(records, start=1):
            play_round(daemon, record, n)
        for where, page in board.items():
            await until(page, f"document.getElementById('count-rounds').textContent === "
                              f"'{len(records)}'")
            await until(page, "document.querySelectorAll('#meters .meter').length === 3")
            assert await page.evaluate(METERS_SHOWN) == [
                ["Royal 9 \u00b7 Mega", "$50,000.20"], ["Royal 9 \u00b7 Major", "$450.15"],
                ["Royal 9 \u00b7 Minor", "$450.15"]], where
            assert await page.get_attribute("#meters", "data-pages") == "1", where
            assert await page.inner_text("#table-name") == table["name"]
            await screenshot(page, f"scoreboard-royal9-{where}", tmp_path)
            check_sizes(await settled_measure(page), where, marks=30)
            for road in ROADS:
                check_road_in_view(await page.evaluate(ROAD_VIEW, road), road, where)
            await check_limits(page, table["limits"])

        # Five meters: a page at a time, each meter on one page, whole.
        daemon.meters = [dict(m) for m in FIVE_METERS]
        daemon.emit("prompt", {"action": "place_bets", "round_no": len(records) + 1})
        for where, page in board.items():
            await until(page, "document.querySelectorAll('#meters .meter').length === 5")
            pages = await meter_pages(page)
            assert len(pages) == 2, (where, pages)
            assert [m for number in sorted(pages, key=int) for m in pages[number]] == [
                ["Royal 9 \u00b7 Mega", "$50,000.20"], ["Royal 9 \u00b7 Major", "$450.15"],
                ["Royal 9 \u00b7 Minor", "$450.15"], ["Heavenly 9", "$1,234,567.89"],
                ["Must-Hit-By Mystery", "$100.10"]], where
            assert await page.inner_text("#meters-page") in ("1/2", "2/2")

        # The screen turned: the landscape page laid out again as portrait pages it.
        turned = board["landscape"]
        await turned.set_viewport_size(PORTRAIT)
        await until(turned, "document.getElementById('meters').dataset.pages === '2'"
                            " && getComputedStyle(document.querySelector('.meter'))"
                            ".flexDirection === 'column'")
        assert await meter_pages(turned) == await meter_pages(board["portrait"])
        await check_limits(turned, table["limits"])


# The table name's room and the width its text needs at the largest size (34 px), in the
# name's own font, measured by the browser's text engine.
NAME_ROOM = "() => document.getElementById('table-name').clientWidth"
NAME_AT_34_PX = """(text) => {
  const cs = getComputedStyle(document.getElementById('table-name'));
  const ctx = document.createElement('canvas').getContext('2d');
  ctx.font = `${cs.fontStyle} ${cs.fontWeight} 34px ${cs.fontFamily}`;
  return ctx.measureText(text).width;
}"""
NAME_SHOWN = """() => { const n = document.getElementById('table-name');
  return [n.style.fontSize, n.classList.contains('wraps')]; }"""


async def landscape_board(browser: Any, served: Served) -> Any:
    page = await display_watch.open_page(browser, served.url("/scoreboard"), LANDSCAPE,
                                         PAGE_ERRORS, clock=True)
    await until(page, "document.getElementById('connection').dataset.ok === '1'")
    return page


def name_entry(measured: list[dict[str, Any]]) -> dict[str, Any]:
    return next(m for m in measured if m["id"] == "table-name")


async def test_a_long_name_is_fitted_again_when_the_header_leaves_it_less_room(
        browser: Any, tmp_path: Path) -> None:
    """The table's name is fitted to the room the header's other columns leave it, not to
    the screen: a name whole at 34 px when the table opens (no round yet) takes a smaller
    size once the round's number has four digits and needs more of the width. It was fitted
    once per screen size, so such a name stayed at 34 px and was cut off; the same fault cut
    the name off, now and then, on a screen turned to portrait."""
    table, _ = table_info(str(ROYAL_9))
    status = {"state": "closed", "shoe": {"cards_left": 416}, "round": {}, "fault": None}
    record = shoe(ROYAL_9, seed=5)[0]

    async def header_rounds(daemon: Any, page: Any) -> None:
        daemon.emit("shoe_loaded", {"shoe_no": 1, "back": "red"})
        play_round(daemon, record, 1000)
        await until(page, "document.getElementById('round-no').textContent === '1000'")

    # The room with no round and with round 1000, found with a short name (the name's
    # column is minmax(0, 1fr): its room does not depend on the name).
    short = {**table, "number": "7", "name": "T"}
    for where in ("short", "long"):
        (tmp_path / where).mkdir()
    async with ScriptedDisplay(tmp_path / "short", short, status) as (daemon, served):
        page = await landscape_board(browser, served)
        opened = await page.evaluate(NAME_ROOM)
        await header_rounds(daemon, page)
        later = await page.evaluate(NAME_ROOM)
        words = "Heavenly 9 with Must-Hit-By Mystery and Royal 9 at the Grand Salon of the " \
                "Riverside Casino".split()
        names = [" ".join(words[:n]) for n in range(1, len(words) + 1)]
        widths = {name: await page.evaluate(NAME_AT_34_PX, name) for name in names}
    assert later + 30 < opened, (opened, later)  # four digits take the room of a word or so
    name = next(n for n in names if later + 4 < widths[n] < opened - 4)

    async with ScriptedDisplay(tmp_path / "long", {**short, "name": name}, status) as (
            daemon, served):
        page = await landscape_board(browser, served)
        assert await page.evaluate(NAME_SHOWN) == ["34px", False]
        assert name_entry(await settled_measure(page))["whole"], name
        await header_rounds(daemon, page)
        size, wraps = await page.evaluate(NAME_SHOWN)
        entry = name_entry(await settled_measure(page))
        assert entry["whole"], (name, size, wraps, later)
        assert entry["text"] == name and not wraps
        assert 28 <= int(size.removesuffix("px")) < 34, size


# The longest table name a configuration may give (controller/rules/submission.py,
# MAX_TABLE_NAME_CHARS) and the longest dealer's name (MAX_DEALER_CHARS), in the widest
# letters: Latin capitals in words, as names are written; one word of them (a name with no
# space, with no dealer's name); CJK ideographs, which have no spaces.
WIDE_WORDS = " ".join(["W" * 11] * 4) + "W"
LONGEST_NAMES = ((WIDE_WORDS, " ".join(["W" * 13] * 3)[:MAX_DEALER_CHARS]),
                 ("W" * 48, None), ("\u9f8d" * 48, "\u9f8d" * MAX_DEALER_CHARS))
DEALER_BAR = ("table-name", "lockout", "shoe-no", "round-no", "cards-left")
ON_THE_SCREEN = """(ids) => ids.filter((id) => {
  const r = document.getElementById(id).getBoundingClientRect();
  return r.width > 0 && r.left >= 0 && r.top >= 0 && r.right <= innerWidth && r.bottom <= innerHeight;
})"""
NAME_LINES = """() => { const n = document.getElementById('table-name'), cs = getComputedStyle(n);
  const line = cs.lineHeight === 'normal' ? 1.2 * parseFloat(cs.fontSize) : parseFloat(cs.lineHeight);
  return Math.round(n.getBoundingClientRect().height / line); }"""


async def test_a_meter_of_millions_stays_inside_its_box(browser: Any, tmp_path: Path) -> None:
    """A progressive's meter has no ceiling: in portrait three meters share the screen's
    width, and $9,999,999.99 at 40 px ran into the next meter. An amount is drawn as large
    as its meter holds it, down to the floor's 28 px, in both orientations."""
    table, _ = table_info(str(ROYAL_9))
    table = {**table, "number": "7", "languages": ["en", "zh-hans"]}
    status = {"state": "betting_open", "shoe": {"cards_left": 416}, "round": {},
              "fault": None}
    async with ScriptedDisplay(tmp_path, table, status) as (daemon, served):
        daemon.meters = [meter("mega", 9_999_999_999_99), meter("major", 9_999_999_99),
                         meter("minor", 45_015)]
        daemon.emit("shoe_loaded", {"shoe_no": 1, "back": "red"})
        for where, page in (await open_pages(browser, served, "/scoreboard")).items():
            await until(page, "document.querySelectorAll('#meters .meter').length === 3")
            await screenshot(page, f"scoreboard-meters-millions-{where}", tmp_path)

            async def inside(number: str, _: Any) -> None:
                check_sizes(await settled_measure(page), f"{where} page {number}", marks=0)
            pages = await each_page(page, "meters", f"() => [document.getElementById('meters')"
                                                    f".dataset.page, ({METERS_SHOWN})()]", inside)
            assert [m for number in sorted(pages, key=int) for m in pages[number]] == [
                ["Royal 9 \u00b7 Mega", "$9,999,999,999.99"],
                ["Royal 9 \u00b7 Major", "$9,999,999.99"],
                ["Royal 9 \u00b7 Minor", "$450.15"]], where
            sizes = await page.evaluate("() => [...document.querySelectorAll('.meter-amount')]"
                                        ".map((n) => parseFloat(getComputedStyle(n).fontSize))")
            assert all(28 <= px <= 40 for px in sizes) and sizes[2] == 40, (where, sizes)


# Each pay line on the dealer's screen: its seat, wager and text (MEASURE says whether
# each of its texts is whole and on the screen).
PAY_LINES = """() => [...document.querySelectorAll('#seats .pay-line')].map((n) => (
  {seat: Number(n.closest('.seat').dataset.seat), wager: n.dataset.wager, text: n.textContent}))"""


async def test_a_full_tables_pay_list_is_whole_on_the_dealers_screen(browser: Any,
                                                                    tmp_path: Path) -> None:
    """631a.12(b): the dealer pays from this list. Fourteen seats of three wagers each, a
    Banker win with its commission and a Perfect Pairs win among them at the table's
    largest amounts: in landscape a seventh of the width cut the amounts off, and in
    portrait seats 11 to 14 were pushed off the bottom of the screen. They are drawn
    smaller until every line is whole (dealer.js, fitSeats), in both orientations."""
    from hil.test_display_browser import pay_text

    table, _ = table_info(str(SIDE_WAGERS))
    record = next(r for r in simulate(load_game(SIDE_WAGERS), SimulationOptions(
        shoes=1, seed=5, unit_cents=15_000_000)) if r["round"] == 12)
    chosen = {s["wager"]: s for s in record["settlements"]}
    assert (chosen["banker"]["win_cents"], chosen["banker"]["vigorish_cents"],
            chosen["perfect_pairs_player"]["win_cents"]) == (1_000_000, 50_000, 1_250_000)
    settlements = [{**chosen[wager], "seat": seat, "vig_marked_cents": 0}
                   for seat in range(14, 0, -1)
                   for wager in ("banker", "perfect_pairs_player", "player")]
    status = {"state": "betting_open", "shoe": {"cards_left": 416}, "round": {},
              "fault": None}
    async with ScriptedDisplay(tmp_path, table, status) as (daemon, served):
        daemon.emit("shoe_loaded", {"shoe_no": 1, "back": "red"})
        play_round(daemon, {**record, "settlements_json": settlements}, 12)
        for where, page in (await open_pages(browser, served, "/dealer")).items():
            await until(page, "document.querySelectorAll('#seats .pay-line').length === 42")
            await screenshot(page, f"dealer-full-pay-list-{where}", tmp_path)
            lines = await page.evaluate(PAY_LINES)
            assert [(line["seat"], line["wager"], line["text"]) for line in lines] == [
                (s["seat"], s["wager"], "".join(pay_text(s)))
                for s in sorted(settlements, key=lambda s: s["seat"])], where
            measured = await settled_measure(page)
            cut = [(m["id"], m["text"], m["why"]) for m in measured if not m["whole"]]
            assert cut == [], (where, cut)
            assert sum(m["id"] == "pay-amount" for m in measured) == 42, where


# The catalogue's longest ways out of a fault (controller/faults.py), with a device's
# detail as long as its link's frame carries (240 bytes, firmware_bridge/frame.py).
LONGEST_FAULTS = sorted(CATALOGUE, key=lambda row: len(row.clears), reverse=True)[:3]
DEVICE_DETAIL = ("the device reports: " + "motor current over limit at the feed roller, "
                 "retry 3 of 3 failed; sensor B reads 0x3F, expected 0x00; " * 3)[:240]


@pytest.mark.parametrize("row", LONGEST_FAULTS, ids=[r.code for r in LONGEST_FAULTS])
async def test_the_longest_fault_is_whole_on_the_dealers_screen(browser: Any, tmp_path: Path,
                                                                row: Any) -> None:
    """A fault stops the game until what clears it is done, and the dealer's screen is where
    the dealer reads it: the device, the code, the device's own detail at its longest and
    the catalogue's longest words for what to do are each whole, in both orientations, once
    (the stop prompt above the fault panel does not repeat them), with every seat's box in
    its panel; the scoreboard shows the table paused with every text of its board whole."""
    table, _ = table_info(str(SIDE_WAGERS))
    table = {**table, "number": "12", "languages": ["en", "zh-hans"]}
    device = "shuffler" if row.device == "any" else row.device
    fault = {"device": device, "code": row.code, "detail": DEVICE_DETAIL, "action": row.clears}
    status = {"state": "device_fault", "shoe": {"cards_left": 300}, "round": {},
              "fault": fault}
    async with ScriptedDisplay(tmp_path, table, status) as (daemon, served):
        daemon.emit("shoe_loaded", {"shoe_no": 1, "back": "red"})
        daemon.emit("device_fault", {"code": row.code, "detail": DEVICE_DETAIL,
                                     "action": row.clears}, device=device)
        # And what the table tells the dealer to do now (controller/table/faults.py).
        stop = f"{device}: {DEVICE_DETAIL}. {row.clears}"
        daemon.emit("prompt", {"action": "stop", "detail": stop})
        for where, page in (await open_pages(browser, served, "/dealer")).items():
            await page.locator("#fault").wait_for(state="visible", timeout=WAIT_MS)
            assert (await page.inner_text("#fault-code"), await page.inner_text("#fault-detail"),
                    await page.inner_text("#fault-action"), await page.inner_text("#prompt"),
                    await page.inner_text("#prompt-detail")) == (
                row.code, DEVICE_DETAIL, row.clears, "STOP: do not deal",
                "until the fault below is cleared"), where
            await screenshot(page, f"dealer-fault-{row.code}-{where}", tmp_path)
            cut = [(m["id"], m["text"], m["why"]) for m in await settled_measure(page)
                   if not m["whole"]]
            assert cut == [], (where, cut)
        for where, page in (await open_pages(browser, served, "/scoreboard")).items():
            await until(page, "document.getElementById('announce').dataset.kind === 'paused'")
            check_sizes(await settled_measure(page), where, marks=0)


def dollars_and_cents(cents: int) -> str:
    return f"${cents // 100:,}.{cents % 100:02d}"


async def test_marked_commission_at_every_seat_is_whole_on_the_dealers_screen(
        browser: Any, tmp_path: Path) -> None:
    """631a.13(d)(2)(i): marked commission is collected at the shuffle; the daemon's prompt
    names each seat and its amount (controller/table/table.py). Fourteen seats owing
    four-figure amounts: the prompt says how many seats and how much in all, each seat's
    box its own amount, and every text and seat is whole on the screen in both
    orientations (the amounts listed in the prompt pushed seats 8-14 off a landscape
    screen)."""
    table, _ = table_info(str(SIDE_WAGERS))
    owed = [{"seat": seat, "cents": 123_450 + seat} for seat in range(1, 15)]
    status = {"state": "shuffling", "shoe": {"cards_left": 0}, "round": {}, "fault": None}
    async with ScriptedDisplay(tmp_path, table, status) as (daemon, served):
        daemon.emit("shoe_loaded", {"shoe_no": 1, "back": "red"})
        daemon.emit("prompt", {"action": "collect_vigorish", "reason": "shuffle",
                               "seats": owed})
        for where, page in (await open_pages(browser, served, "/dealer")).items():
            await until(page, "document.getElementById('prompt').dataset.action === "
                              "'collect_vigorish'")
            total = sum(o["cents"] for o in owed)
            assert (await page.inner_text("#prompt"), await page.inner_text("#prompt-detail")) \
                == (f"Collect the marked vigorish: 14 seats, {dollars_and_cents(total)}",
                    "each seat's amount is in its box below"), where
            assert await page.eval_on_selector_all(
                ".seat .seat-vig", "ns => ns.map((n) => [Number(n.closest('.seat').dataset.seat),"
                                   " n.querySelector('b').textContent])") == [
                [o["seat"], dollars_and_cents(o["cents"])] for o in owed], where
            await screenshot(page, f"dealer-collect-vigorish-{where}", tmp_path)
            cut = [(m["id"], m["text"], m["why"]) for m in await settled_measure(page)
                   if not m["whole"]]
            assert cut == [], (where, cut)


async def test_a_full_table_stopped_by_a_fault_is_whole_on_the_dealers_screen(
        browser: Any, tmp_path: Path) -> None:
    """The dealer's screen at its fullest before a settlement: fourteen seats of three
    wagers at the table's largest amounts, each with a progressive wager, locked out, and a
    fault stopping the deal with the catalogue's longest action for a device. Every wager,
    every progressive wager and the fault are whole, in both orientations."""
    table, _ = table_info(str(ROYAL_9))
    table = {**table, "seats": 14}  # 631a.2(a): the most a table may have
    row = max((r for r in CATALOGUE if r.device != "table"), key=lambda r: len(r.clears))
    wagers = [(seat, wager, cents) for seat in range(1, 15)
              for wager, cents in (("banker", 500_000), ("player", 499_999), ("tie", 100_000))]
    fault = {"device": row.device, "code": row.code, "detail": DEVICE_DETAIL,
             "action": row.clears}
    status = {"state": "device_fault", "shoe": {"cards_left": 300}, "round": {},
              "fault": fault}
    async with ScriptedDisplay(tmp_path, table, status) as (daemon, served):
        daemon.emit("shoe_loaded", {"shoe_no": 1, "back": "red"})
        for seat, wager, cents in wagers:
            daemon.emit("wager_accepted", {"seat": seat, "wager": wager, "amount_cents": cents})
        daemon.emit("no_more_bets", {
            "cause": "lockout_button", "round_no": 12, "progressive_seats": list(range(1, 15)),
            "wagers": [{"seat": seat, "wager": wager, "amount_cents": cents}
                       for seat, wager, cents in wagers]})
        daemon.emit("progressive_accepted", {
            "progressive": "royal9", "accepted": [{"seat": seat, "amount_cents": 500}
                                                  for seat in range(1, 15)],
            "refused": [], "leds": {}, "awards": []})
        daemon.emit("device_fault", {"code": row.code, "detail": DEVICE_DETAIL,
                                     "action": row.clears}, device=row.device)
        daemon.emit("prompt", {"action": "stop",
                               "detail": f"{row.device}: {DEVICE_DETAIL}. {row.clears}"})
        for where, page in (await open_pages(browser, served, "/dealer")).items():
            await page.locator("#fault").wait_for(state="visible", timeout=WAIT_MS)
            await until(page, "document.querySelectorAll('.seat-progressive').length === 14")
            shown = await page.eval_on_selector_all(
                ".seat .seat-wager", "ns => ns.map((n) => [Number(n.closest('.seat')"
                                     ".dataset.seat), n.dataset.wager, n.querySelector('b')"
                                     ".textContent])")
            assert shown == [[seat, wager, dollars_and_cents(cents)]
                             for seat, wager, cents in wagers], where
            await screenshot(page, f"dealer-full-table-fault-{where}", tmp_path)
            cut = [(m["id"], m["text"], m["why"]) for m in await settled_measure(page)
                   if not m["whole"]]
            assert cut == [], (where, cut)


async def test_a_table_id_too_long_for_the_corner_leaves_no_corner(browser: Any,
                                                                  tmp_path: Path) -> None:
    """A table id may be 64 characters and is the corner's number unless one is configured
    (settings.DisplayServiceConfig.corner_number): one longer than the corner holds is not
    shown there, and every text of the header stays whole; a short one is."""
    table, _ = table_info(str(ROYAL_9))
    status = {"state": "betting_open", "shoe": {"cards_left": 416}, "round": {},
              "fault": None}
    for number, table_id, shown in ((None, "B" * 64, None), ("12", "B" * 64, "12")):
        (tmp_path / table_id[:1] / (number or "none")).mkdir(parents=True)
        async with ScriptedDisplay(tmp_path / table_id[:1] / (number or "none"),
                                   {**table, "table_id": table_id, "number": number},
                                   status) as (daemon, served):
            for where, page in (await open_pages(browser, served, "/scoreboard")).items():
                await until(page, "document.getElementById('connection').dataset.ok === '1'")
                corner = await page.evaluate(
                    "() => document.querySelector('.table-number').hidden ? null : "
                    "document.getElementById('table-number').textContent")
                assert corner == shown, where
                check_sizes(await settled_measure(page), where, marks=0)


@pytest.mark.parametrize(("name", "dealer"), LONGEST_NAMES, ids=("latin", "one-word", "cjk"))
async def test_the_longest_name_a_table_may_have_is_whole_on_every_screen(
        browser: Any, tmp_path: Path, name: str, dealer: str | None) -> None:
    """48 characters, the most a configuration may give (a longer name, or one with a line
    break, is refused: tests/controller/test_hostile_configs.py): whole on the scoreboard in
    at most two lines in both orientations, with every other text of the board still whole;
    and whole on the dealer's screen with the shoe's figures beside it still on the screen.
    The dealer's name at its longest (40 characters, controller/commands/args.py) in the
    same letters, whole beside the game on the scoreboard; the roads give the header the
    room (scoreboard.css, tall-header)."""
    table, _ = table_info(str(ROYAL_9))
    table = {**table, "number": "7", "languages": ["en", "zh-hans"], "name": name}
    status = {"state": "betting_open", "shoe": {"cards_left": 416}, "round": {},
              "fault": None}
    async with ScriptedDisplay(tmp_path, table, status) as (daemon, served):
        daemon.meters = [dict(m) for m in ROYAL_9_METERS]
        daemon.emit("shoe_loaded", {"shoe_no": 1, "back": "red"})
        if dealer is not None:
            daemon.emit("new_dealer", {"dealer": dealer, "burn": False})
        play_round(daemon, shoe(ROYAL_9, seed=5)[0], 1000)
        for path in ("/scoreboard", "/dealer"):
            for where, page in (await open_pages(browser, served, path)).items():
                await until(page, "document.getElementById('round-no').textContent === '1000'")
                assert await page.inner_text("#table-name") == name
                if path == "/scoreboard" and dealer is not None:
                    assert await page.inner_text("#dealer-name") == dealer
                await screenshot(page, f"longest-name{path.replace('/', '-')}-{where}", tmp_path)
                measured = await settled_measure(page)
                if path == "/scoreboard":  # the size rule is the floor's screen's
                    check_sizes(measured, where, marks=0)
                    assert await page.evaluate(NAME_LINES) <= 2, (where, name)
                else:
                    cut = [(m["id"], m["text"], m["why"]) for m in measured if not m["whole"]]
                    assert not cut, (f"dealer {where}: cut off or out of its panel", cut)
                    # MEASURE skips what is not shown at all: these must be shown, on it.
                    assert await page.evaluate(ON_THE_SCREEN, DEALER_BAR) == list(DEALER_BAR)


async def test_a_21_baccarat_shoe_on_the_scoreboard(browser: Any, tmp_path: Path) -> None:
    """681a: the results view lists the latest hands with their 21-point totals and the
    winner; the counts, percentages and sizes hold as in Baccarat."""
    records = shoe(TWENTY_ONE)
    table, _ = table_info(str(TWENTY_ONE))
    table = {**table, "number": "7", "languages": ["en", "zh-hant"]}
    status = {"state": "burn", "shoe": {"cards_left": 400}, "round": {}, "fault": None}
    async with ScriptedDisplay(tmp_path, table, status) as (daemon, served):
        daemon.emit("shoe_loaded", {"shoe_no": 1, "back": "red"})
        board = await open_pages(browser, served, "/scoreboard")
        for n, record in enumerate(records, start=1):
            play_round(daemon, record, n, twenty_one=True)
        daemon.status = {**daemon.status, "state": "betting_open"}
        daemon.emit("prompt", {"action": "place_bets", "round_no": len(records) + 1})
        winners = [r["outcome"] for r in records]
        latest = records[-12:][::-1]  # board.py RECENT_HANDS, newest first
        for where, page in board.items():
            await until(page, "document.body.classList.contains('game-21') && "
                              f"document.getElementById('count-rounds').textContent === "
                              f"'{len(records)}'")
            rows = await page.evaluate("""() => [...document.querySelectorAll(
                '#hands21 tr[data-round-no]:not([hidden])')].map((r) => [Number(r.dataset.roundNo),
                [...r.querySelectorAll('td.total')].map((t) => t.textContent),
                r.querySelector('td.result').textContent])""")
            assert rows == [[r["round"], [str(r["player_total"]), str(r["banker_total"])],
                             r["outcome"].upper()] for r in latest[:len(rows)]], where
            assert len(rows) >= 6, f"{where}: only {len(rows)} hands fit"
            expected = {
                "banner": "open", "banner_text": "PLACE YOUR BETS請下注", "last_hand": False,
                "hand": str(len(records) + 1), "round": str(len(records) + 1),
                "hands_counted": str(len(records))}
            assert await header_once(page, expected) == expected
            await check_counts(page, records, winners)
            assert not await page.locator("#bead-plate").is_visible()
            check_road_in_view(await page.evaluate(ROAD_VIEW, "big-road"), "big-road", where)
            await screenshot(page, f"scoreboard-21-{where}", tmp_path)
            check_sizes(await settled_measure(page), where, marks=30)
