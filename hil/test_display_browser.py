"""The scoreboard and the dealer's screen in a real browser, while the simulated table plays.

Headless Chromium (Debian's package, driven by Playwright with no browser download)
loads both pages from the display service, which follows the daemon as its own
process. A MutationObserver installed before the page's own scripts records the
browser's clock when each Bead Plate cell, Big Road cell, result and meter value
appears in the DOM; the test compares that with the commit time (`at`) of the event
that caused it, on the same machine's clock. Then the display service is killed and
restarted, and the daemon is killed and restarted: the pages must come back and show
the rounds dealt afterwards.

The dealer's pay list is checked the same way: every settlement of a round, seats
highest first, with the settlement's exact amounts (the live table; a 21 Baccarat round
and a void round on the scripted daemon).

The requirement is 500 ms from the event to the DOM. Beside the rest of the suite on two
cores, a test holds nine in ten of what the pages showed to it and each to 5 s (a stall of
the shared machine is not the page's); bench/bench_display.py measures every delay against
500 ms on a quiet machine.

`DISPLAY_SCREENSHOTS_DIR=docs/images ./run-tests hil/test_display_browser.py` also
writes the dealer's screenshots shown in docs/display.md (landscape and portrait, also
after a settlement and after a void round); hil/test_scoreboard_browser.py writes the
scoreboard's.
"""

from __future__ import annotations

import contextlib
import os
import statistics
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from controller.display.roads import Winner, big_road
from hil import display_watch
from hil.display_process import DisplayProcess
from hil.display_watch import LANDSCAPE, PORTRAIT, open_page, road_rounds, settled
from hil.scripted_daemon import ScriptedDaemon, Served
from hil.table_harness import HarnessResult, PlayerPlan, TableHarness

pytestmark = [pytest.mark.hil, pytest.mark.timeout(300)]

CONFIG = Path(__file__).parents[1] / "config" / "progressive-heavenly9-mystery.toml"
PLAYERS = PlayerPlan(seats=(1, 2, 4, 6, 8, 10), progressive=0.5)
SEED = 15
ROUNDS = 24  # enough for all three derived roads to start; ~10 s of simulated play
DOM_DEADLINE_MS = 500  # the requirement: in the page's DOM within 500 ms of the event
PAGE_WAIT_MS = 15_000  # the longest the test waits for a page to catch up (restarts included)
def chromium_or_skip() -> str:
    """Debian's Chromium and Playwright, else skip with the reason (fail under CI=true)."""
    reason = None
    try:
        import playwright.async_api  # noqa: F401
    except ImportError:
        import platform

        reason = ("playwright is not installed (./run-tests installs the [test] extra)"
                  if platform.machine() in ("x86_64", "aarch64") else
                  f"playwright has no wheel for {platform.machine()} (32-bit Raspberry Pi OS): "
                  "the test extra leaves it out there (pyproject.toml)")
    executable = display_watch.chromium_path()
    if executable is None:
        reason = ("Debian's chromium is not installed; ./run-tests installs it when run as "
                  "root with apt-get, else: sudo apt-get install chromium")
    if reason is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"browser tests cannot run under CI: {reason}")
        pytest.skip(reason)
    assert executable is not None
    return executable


@contextlib.asynccontextmanager
async def launched_chromium() -> AsyncIterator[Any]:
    """Debian's headless Chromium under Playwright (skips, or fails under CI, without it)."""
    async with display_watch.launched_chromium(chromium_or_skip()) as browser:
        yield browser


# What the pages' own scripts threw (a script that stops half-way leaves a stale page and
# says nothing on the screen): every test here, and in the modules that import this
# fixture, ends with none.
PAGE_ERRORS: list[str] = []


@pytest.fixture(autouse=True)
def no_page_errors() -> Iterator[None]:
    PAGE_ERRORS.clear()
    yield
    assert not PAGE_ERRORS, f"the page's scripts threw: {PAGE_ERRORS}"


@pytest.fixture
async def browser() -> AsyncIterator[Any]:
    async with launched_chromium() as launched:
        yield launched


async def assert_whole(page: Any, where: str) -> None:
    """Every text on `page` whole and clear of the others, every seat in its panel
    (display_watch.MEASURE, once the page has settled)."""
    cut = [(m["id"], m["text"], m["why"])
           for m in await display_watch.settled_measure(page) if not m["whole"]]
    assert cut == [], (where, cut)


async def wait_for_rounds(page: Any, rounds: int) -> None:
    await page.wait_for_function(
        f"document.querySelectorAll('#bead-plate [data-round]').length === {rounds}",
        timeout=PAGE_WAIT_MS)


def until_third_card_prompt_after(rounds: int):  # type: ignore[no-untyped-def]
    """Stop the dealer with a third card called for and not yet dealt, once `rounds`
    rounds are settled (the dealer's page then shows four cards and where the fifth goes)."""
    def stop(result: HarnessResult) -> bool:
        last = result.events[-1]
        return (len(result.rounds) >= rounds and last["kind"] == "prompt"
                and last["payload"]["action"] == "deal"
                and last["payload"]["next"] in ("player_third", "banker_third"))
    return stop


async def test_pages_follow_the_shoe_in_time_and_recover_from_restarts(
        browser: Any, tmp_path: Path) -> None:
    async with (TableHarness(CONFIG, tmp_path, seed=SEED, players=PLAYERS) as table,
                DisplayProcess(CONFIG, table.socket, tmp_path) as display):
        board = await open_page(browser, display.url("/scoreboard"), LANDSCAPE, PAGE_ERRORS)
        dealer = await open_page(browser, display.url("/dealer"), LANDSCAPE, PAGE_ERRORS)
        for page in (board, dealer):  # following the stream before the first card: a page
            await page.wait_for_function(  # that connects late shows only the latest result
                "document.getElementById('connection').dataset.ok === '1'", timeout=PAGE_WAIT_MS)
        result = await table.play(shoes=1, until=until_third_card_prompt_after(ROUNDS))
        rounds = settled(result.events)
        played = len(rounds)
        assert played >= ROUNDS
        await wait_for_rounds(board, played)
        seen = await board.evaluate("window.__seen")

        # Each result, Bead Plate cell and Big Road cell, each in the DOM (display_watch).
        shown = display_watch.rounds_shown(result.events, seen)
        assert len([s for s in shown if s.key.startswith("big:")]) == \
            len(big_road(road_rounds(result.events)).cells)
        delays_ms = {s.key: s.delay_ms for s in shown}

        # Every meter value the daemon reached after a progressive wager was accepted.
        meters_now = {(m["progressive"], m["level"]): m["amount_cents"]
                      for m in await table.call("meters")}
        assert meters_now, "the Heavenly 9 table has meters"
        accepted = [e for e in result.events
                    if e["kind"] == "progressive_accepted" and e["payload"]["accepted"]]
        assert accepted, f"seed {SEED}: no progressive wager was accepted in {ROUNDS} rounds"
        for (progressive, level), cents in meters_now.items():
            key = f"meter:{progressive}:{level}:{cents}"
            await board.wait_for_function(f"'{key}' in window.__seen", timeout=PAGE_WAIT_MS)
        seen = await board.evaluate("window.__seen")
        for (progressive, level), cents in meters_now.items():
            # The last accepted wager before the pause moved each meter to its value now.
            at_ms = accepted[-1]["at"] * 1000
            key = f"meter:{progressive}:{level}:{cents}"
            delays_ms[key] = seen[key] - at_ms
        counts = {key: await board.inner_text(f"#count-{key}")
                  for key in ("banker", "player", "tie", "rounds")}
        assert counts == {
            "banker": str(sum(r.winner is Winner.BANKER for r in road_rounds(result.events))),
            "player": str(sum(r.winner is Winner.PLAYER for r in road_rounds(result.events))),
            "tie": str(sum(r.winner is Winner.TIE for r in road_rounds(result.events))),
            "rounds": str(played)}

        # The dealer's page: where the outstanding card goes, before it is dealt.
        prompt = result.events[-1]
        destination = prompt["payload"]["next"]
        await dealer.wait_for_function(
            f"document.getElementById('next-card').dataset.next === '{destination}'",
            timeout=PAGE_WAIT_MS)
        delay = (await dealer.evaluate("window.__seen"))[f"next:{destination}"] - \
            prompt["at"] * 1000
        delays_ms[f"next:{destination}"] = delay
        # The 500 ms as a test beside the rest of the suite holds it (display_watch).
        display_watch.check_keeps_up(delays_ms, DOM_DEADLINE_MS, "the pages")
        assert await dealer.get_attribute("#prompt", "data-action") == "deal"
        assert len(await dealer.locator("#player-cards .card, #banker-cards .card").all()) == 4
        status = await table.call("status")
        for wager in status["round"]["wagers"]:
            seat = dealer.locator(f".seat[data-seat='{wager['seat']}'] "
                                  f".seat-wager[data-wager='{wager['wager']}'] b")
            assert await seat.inner_text() == f"${wager['amount_cents'] // 100:,}." \
                f"{wager['amount_cents'] % 100:02d}"
        print(f"\nDOM delays after the event, ms (n={len(delays_ms)}, machine shared): "
              f"max {max(delays_ms.values()):.0f}, "
              f"9 in 10 within {display_watch.nine_in_ten(delays_ms.values()):.0f}, "
              f"median {statistics.median(delays_ms.values()):.0f}")

        # The scoreboard's screenshots come from hil/test_scoreboard_browser.py (a whole shoe).
        await take_screenshots(browser, display, tmp_path, pages=("dealer",))

        # The round after: the moment it settles, the dealer's page shows what to pay.
        await table.resync()
        result = await table.play(shoes=1, until=until_settled_with_commission_after(played))
        event = result.events[-1]
        await check_pay_list(dealer, event["payload"]["round_no"], event["payload"]["settlements"],
                             event["at"])
        await assert_whole(dealer, "dealer, a real settlement")
        await assert_whole(board, "scoreboard, a real shoe")
        await take_screenshots(browser, display, tmp_path, pages=("dealer",), name="dealer-pay")
        played = len(settled(result.events))

        # The display service crashes and comes back: the pages reconnect by themselves.
        await display.restart()
        await table.resync()
        result = await table.play(shoes=1, until=lambda r: len(settled(r.events)) >= played + 2)
        for page in (board, dealer):
            await page.wait_for_function(
                "document.getElementById('connection').dataset.ok === '1'",
                timeout=PAGE_WAIT_MS)
        await wait_for_rounds(board, len(settled(result.events)))

        # The daemon is killed and restarted on its store: the service reconnects after
        # the last event it saw, the pages show the rounds dealt afterwards.
        await table.power_cut()
        await table.resync()
        result = await table.play(shoes=1, until=lambda r: len(settled(r.events)) >= played + 4)
        await wait_for_rounds(board, len(settled(result.events)))
        assert await board.inner_text("#count-rounds") == str(len(settled(result.events)))
        metrics = (await (await board.context.request.get(display.url("/metrics"))).text())
        assert 'tabled_up{table="SIM-H9-01"} 1' in metrics
        assert f'tabled_shoe_rounds{{table="SIM-H9-01"}} {played + 4}' in metrics
        assert 'tabledisplay_daemon_connects_total{table="SIM-H9-01"} 2' in metrics


def until_settled_with_commission_after(rounds: int):  # type: ignore[no-untyped-def]
    """Stop the dealer as soon as a round after the first `rounds` settles with a Banker
    win that owes commission (631a.13(c)) and a losing wager: a pay list with all of it."""
    def stop(result: HarnessResult) -> bool:
        last = result.events[-1]
        if last["kind"] != "round_settled" or last["payload"]["simulated"] or \
                len(settled(result.events)) <= rounds:
            return False
        outcomes = {(s["outcome"], s["vigorish_cents"] > 0)
                    for s in last["payload"]["settlements"]}
        return ("win", True) in outcomes and ("lose", False) in outcomes
    return stop


def pay_text(s: dict[str, Any], *, void: bool = False) -> tuple[str, ...]:
    """A settlement's line on the dealer's page, from the settlement's own figures: result,
    wager, what to pay, take or return, the commission if any."""
    def money(cents: int) -> str:
        return f"${cents // 100:,}.{cents % 100:02d}"
    result = "VOID" if void and s["outcome"] == "push" else s["outcome"].upper()
    wager = " ".join(word[:1].upper() + word[1:] for word in s["wager"].split("_"))
    what = {"win": f"pay {money(s['win_cents'])}", "lose": f"take {money(s['amount_cents'])}",
            "push": f"return {money(s['amount_cents'])}"}[s["outcome"]]
    vig = (f"{'mark' if s['vig_marked_cents'] else 'collect'} "
           f"{money(s['vigorish_cents'])} commission") if s["vigorish_cents"] else ""
    return tuple(part for part in (result, wager, what, vig) if part)


async def check_pay_list(dealer: Any, round_no: int, settlements: list[dict[str, Any]],
                         at: float, *, void: bool = False) -> None:
    """631a.12(b): every settlement on the dealer's page soon after the event (within the
    stall bound here; bench/bench_display.py measures it against 500 ms), seats highest
    first, each with the settlement's exact amounts."""
    await dealer.wait_for_function(f"'pay:{round_no}' in window.__seen", timeout=PAGE_WAIT_MS)
    delay = (await dealer.evaluate("window.__seen"))[f"pay:{round_no}"] - at * 1000
    assert delay <= display_watch.STALL_BOUND_MS, \
        f"pay list shown {delay:.0f} ms after the settlement"
    lines = await dealer.evaluate("""() => [...document.querySelectorAll('#seats .pay-line')]
        .map((n) => ({seat: Number(n.closest('.seat').dataset.seat), wager: n.dataset.wager,
                      outcome: n.dataset.outcome, win: Number(n.dataset.winCents),
                      vig: Number(n.dataset.vigorishCents), net: Number(n.dataset.netCents),
                      order: Number(n.closest('.seat-pay').dataset.order),
                      text: n.textContent}))""")
    by_seat = sorted({s["seat"] for s in settlements}, reverse=True)
    expected = [{"seat": s["seat"], "wager": s["wager"], "outcome": s["outcome"],
                 "win": s["win_cents"], "vig": s["vigorish_cents"], "net": s["net_cents"],
                 "order": by_seat.index(s["seat"]) + 1, "text": "".join(pay_text(s, void=void))}
                for seat in by_seat for s in settlements if s["seat"] == seat]
    assert sorted(lines, key=lambda line: line["order"]) == expected
    print(f"pay list of hand {round_no}: {len(lines)} lines, {delay:.0f} ms after the "
          f"settlement: " + "; ".join(f"seat {s['seat']} " + " ".join(pay_text(s, void=void))
                            for seat in by_seat for s in settlements if s["seat"] == seat))


async def take_screenshots(browser: Any, display: DisplayProcess | Served, tmp_path: Path, *,
                           pages: tuple[str, ...] = ("scoreboard", "dealer"),
                           name: str | None = None) -> None:
    """The pages at both sizes; into DISPLAY_SCREENSHOTS_DIR when set (docs/images)."""
    target = Path(os.environ.get("DISPLAY_SCREENSHOTS_DIR") or tmp_path / "screenshots")
    target.mkdir(parents=True, exist_ok=True)
    for page_name in pages:
        for layout, viewport in (("landscape", LANDSCAPE), ("portrait", PORTRAIT)):
            page = await browser.new_page(viewport=viewport, bypass_csp=True)  # string predicates
            await page.goto(display.url(f"/{page_name}"))
            await page.wait_for_function(
                "document.getElementById('connection').dataset.ok === '1'",
                timeout=PAGE_WAIT_MS)
            await page.wait_for_timeout(300)  # the roads' slide-in transition (0.2 s)
            path = target / f"{name or page_name}-{layout}.png"
            await page.screenshot(path=str(path))
            await page.close()
            header = path.read_bytes()[16:24]  # PNG IHDR: width, height
            assert (int.from_bytes(header[:4], "big"), int.from_bytes(header[4:], "big")) == (
                viewport["width"], viewport["height"])


def twenty_one_settlements() -> list[dict[str, Any]]:
    """Settled by the 21 Baccarat table's rules (config/21-baccarat-8deck.toml) as the
    daemon records them: Player 19 (K♠ 9♥) beats Banker 18 (K♦ 8♣)."""
    from cards import Card
    from controller.rules.game import load_game
    from controller.rules.hand21 import hand_total
    from controller.rules.settlement import PlacedWager, settle_round
    from controller.rules.wager import RoundView, SettlementPoint
    from controller.events.records import SettledWager

    game = load_game(Path(__file__).parents[1] / "config" / "21-baccarat-8deck.toml")
    player, banker = (tuple(Card.parse(c) for c in hand.split()) for hand in ("KS 9H", "KD 8C"))
    view = RoundView(player, banker, hand_total(c.rank for c in player)[0],
                     hand_total(c.rank for c in banker)[0])
    wagers = [PlacedWager(2, "player", 2500), PlacedWager(5, "banker", 1000),
              PlacedWager(5, "tie", 500)]
    return [SettledWager.of(s, vigorish_marked=False).payload() for point in SettlementPoint
            for s in settle_round(game, wagers, view, point)]


def void_settlements() -> list[dict[str, Any]]:
    """631a.15(e): a void round returns every wager the round had not settled."""
    from controller.rules.settlement import PlacedWager, void_round
    from controller.events.records import SettledWager

    return [SettledWager.of(s, vigorish_marked=False).payload() for s in void_round(
        [PlacedWager(1, "player", 1000), PlacedWager(6, "banker", 5000)])]


async def test_21_baccarat_results_fault_and_win_light_in_the_pages(browser: Any,
                                                                     tmp_path: Path) -> None:
    import asyncio

    from controller.display.service import DisplayService

    socket_path = str(tmp_path / "control.sock")
    daemon = ScriptedDaemon(socket_path, {"state": "betting_open", "shoe": {"cards_left": 200},
                                          "round": {}, "fault": None})
    daemon.emit("shoe_loaded", {"shoe_no": 1, "back": "red"})
    # 681a: 21-point hands; the Player's 7♠ 9♦ K♣ busts at 26, the Banker stands on 19.
    daemon.emit("round_settled", {"round_no": 1, "simulated": False, "settlements": [],
                                  "table_net_cents": 0, "result": {
                                      "player": ["7♠", "9♦", "K♣"], "banker": ["9♥", "K♦"],
                                      "player_total": 26, "banker_total": 19,
                                      "winner": "banker", "player_natural": False,
                                      "banker_natural": False}})
    await daemon.server.start()
    table = {"table_id": "SIM-21-01", "name": "21 Baccarat", "game": "21-baccarat",
             "decks": 8, "seats": 6, "limits": [{"wager": "player", "min_cents": 1000,
                                                 "max_cents": 200000}]}
    service = DisplayService(socket_path, table)
    port = await service.web.start("127.0.0.1", 0)
    tasks = [asyncio.create_task(service.follow_daemon()),
             asyncio.create_task(service.publish_changes())]
    try:
        board = await open_page(browser, f"http://127.0.0.1:{port}/scoreboard", LANDSCAPE,
                                PAGE_ERRORS)
        dealer = await open_page(browser, f"http://127.0.0.1:{port}/dealer", PORTRAIT,
                                 PAGE_ERRORS)
        await board.wait_for_function("document.body.classList.contains('game-21')",
                                      timeout=PAGE_WAIT_MS)
        row = board.locator("#hands21 tr[data-round-no='1']")
        await row.wait_for(timeout=PAGE_WAIT_MS)
        assert await row.locator("td.total").all_inner_texts() == ["26", "19"]
        assert await row.locator("td.total.bust").inner_text() == "26"
        assert await row.locator("td.result").inner_text() == "BANKER"
        assert not await board.locator("#bead-plate").is_visible()  # not a 21 Baccarat view
        assert await board.inner_text("#limits .limit[data-wager='player'] .limit-range") == \
            "$10\u2013$2K"

        # The next card's destination before it is dealt: a burn card.
        at = daemon.emit("prompt", {"action": "burn", "remaining": 3})
        await dealer.wait_for_function("'next:burn' in window.__seen", timeout=PAGE_WAIT_MS)
        shown_at = await dealer.evaluate("window.__seen['next:burn']")
        assert shown_at - at * 1000 <= display_watch.STALL_BOUND_MS
        assert await dealer.inner_text("#prompt") == "Burn cards: 3 more"

        # A fault, with what to do, on the dealer's page.
        daemon.status = {**daemon.status, "state": "device_fault", "fault": {
            "device": "shoe", "code": "lid_open", "detail": "the shoe's lid is open",
            "action": "close the lid; the game resumes by itself"}}
        daemon.emit("device_fault", {"code": "lid_open", "detail": "the shoe's lid is open",
                                     "action": "close the lid; the game resumes by itself"},
                    device="shoe")
        await dealer.locator("#fault").wait_for(state="visible", timeout=PAGE_WAIT_MS)
        assert await dealer.inner_text("#fault-action") == \
            "close the lid; the game resumes by itself"
        await assert_whole(dealer, "dealer, a fault")
        await board.wait_for_function(
            "document.getElementById('announce').dataset.kind === 'paused'", timeout=PAGE_WAIT_MS)
        daemon.status = {**daemon.status, "state": "betting_open", "fault": None}
        daemon.emit("device_recovered", {"code": "lid_open"}, device="shoe")
        await dealer.locator("#fault").wait_for(state="hidden", timeout=PAGE_WAIT_MS)

        # A progressive award: the win light on both pages until a supervisor validates it.
        daemon.emit("prompt", {"action": "jackpot", "award_id": 3, "seat": 4,
                               "progressive": "heavenly9", "level": "progressive",
                               "amount_cents": 1_002_550, "detail": "verify the win light"})
        await board.locator("#win-light").wait_for(state="visible", timeout=PAGE_WAIT_MS)
        assert await board.inner_text("#win-light .amount") == "$10,025.50"
        await dealer.locator(".seat.won[data-seat='4']").wait_for(timeout=PAGE_WAIT_MS)
        daemon.emit("jackpot_validated", {"award_id": 3, "supervisor": "floor",
                                          "amount_cents": 1_002_550, "seat": 4})
        await board.locator("#win-light").wait_for(state="hidden", timeout=PAGE_WAIT_MS)

        # 681a.7(h): a 21 Baccarat round settles; the dealer's page shows what to pay, seats
        # highest first, and the hands' totals, until the next round's first card.
        settlements = twenty_one_settlements()
        at = daemon.emit("round_settled", {
            "round_no": 2, "simulated": False, "settlements": settlements,
            "table_net_cents": -sum(s["net_cents"] for s in settlements), "result": {
                "player": ["K♠", "9♥"], "banker": ["K♦", "8♣"], "player_total": 19,
                "banker_total": 18, "winner": "player", "player_natural": False,
                "banker_natural": False}})
        await check_pay_list(dealer, 2, settlements, at)
        assert await dealer.inner_text("#round-result") == "PLAYER WINS 19 to 18"
        await assert_whole(dealer, "dealer, a 21 Baccarat pay list")
        assert (await dealer.inner_text("#player-total"),
                await dealer.inner_text("#banker-total")) == ("19", "18")
        daemon.emit("prompt", {"action": "place_bets", "round_no": 3})
        daemon.emit("prompt", {"action": "deal", "next": "player_first"})
        await dealer.wait_for_function("'next:player_first' in window.__seen",
                                       timeout=PAGE_WAIT_MS)
        assert await dealer.locator("#seats .pay-line").count() == len(settlements)
        daemon.emit("card", {"index": 9, "card": "4♣", "hand": "player", "slot": "player_first",
                             "back": "red"}, device="shoe")
        await dealer.locator("#round-result").wait_for(state="hidden", timeout=PAGE_WAIT_MS)
        assert await dealer.locator("#seats .pay-line").count() == 0

        # 631a.15(e): a void round shows its returns (and what the first four cards settled).
        returned = void_settlements()
        at = daemon.emit("round_void", {"reason": "the shoe cannot complete the round",
                                        "settlements": returned})
        daemon.emit("prompt", {"action": "shoe_complete",
                               "detail": "round void (the shoe cannot complete the round); "
                                         "replace the decks"})
        await check_pay_list(dealer, 3, returned, at, void=True)
        assert await dealer.inner_text("#round-result") == \
            "VOID \u2013 the shoe cannot complete the round: return the wagers"
        await assert_whole(dealer, "dealer, a void round's returns")
        await assert_whole(board, "scoreboard, 21 Baccarat")
        await take_screenshots(browser, Served(port), tmp_path, pages=("dealer",),
                               name="dealer-void")
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await service.web.close()
        await daemon.server.close()
