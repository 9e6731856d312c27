"""The device drills of docs/technician-guide.md on the practice table, as a technician
does them (the drills of the table's service, store and witness:
hil/test_practice_service_drills.py).

The practice table is `./run-simulated-table --practice` (hil/run.py): the real daemon
on simulated devices after one shoe, with the page of hands-on controls
(hil/practice.py). Each test is one drill of the guide: the technician's hands act
through the practice page's POST actions (as its buttons do), `tablectl` runs as its
own process, and the test holds the output to what the guide shows. The drills run in
the guide's order on one table, each leaving it as the guide's next step expects.
"""

from __future__ import annotations

import asyncio
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from hil.practice import PracticeControls, PracticePage
from hil.practice_drill import Practice
from hil.table_harness import TableHarness

pytestmark = [pytest.mark.hil, pytest.mark.timeout(300),
              pytest.mark.asyncio(loop_scope="module")]

CONFIG = Path(__file__).parents[1] / "config" / "simulated-table.toml"
SEED = 7
PIN = "2468"  # the simulated table's supervisor "floor" (config/simulated-table.toml)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def practice(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Practice]:
    async with TableHarness(CONFIG, tmp_path_factory.mktemp("practice"), seed=SEED) as table:
        await table.play(shoes=1)  # as ./run-simulated-table --practice does first
        page = PracticePage(PracticeControls(table, seed=SEED))
        await page.start()
        try:
            yield Practice(table, page)
        finally:
            await page.close()


async def test_the_page_lists_every_control_and_refuses_what_cannot_be_done(
        practice: Practice) -> None:
    def get() -> str:
        with urllib.request.urlopen(practice.page.url("/"), timeout=30) as answer:
            return str(answer.read().decode())
    page = await asyncio.to_thread(get)
    for path in ("/draw", "/misread", "/faceup", "/lid/open", "/lid/close", "/cable/pull",
                 "/cable/plug", "/load", "/deal", "/sensor/cover", "/sensor/uncover", "/sensor/chatter",
                 "/button", "/shuffler/jam",
                 "/shuffler/clear", "/shuffler/remove", "/shuffler/restore"):
        assert f'action="{path}"' in page
    ok, message = await practice.page.controls.do("/sensor/cover", {"seat": "11"})
    assert (ok, message) == (False, "seat '11': allowed: one of 1 to 10")
    ok, message = await practice.page.controls.do("/load", {})
    assert not ok and message.startswith("the table is end_of_shoe: a shoe is loaded after "
                                         "the cut")
    ok, message = await practice.page.controls.do("/nudge", {})
    assert not ok and message.startswith("/nudge: no such action; allowed: /draw, ")


async def test_drill_test_sensors(practice: Practice) -> None:
    """Guide, `test sensors`: touch each seat's spot with a chip and lift it again."""
    async def touch_every_seat() -> None:
        for seat in range(1, 11):
            await practice.press("/sensor/cover", seat=str(seat))
            await asyncio.sleep(0.15)
            await practice.press("/sensor/uncover", seat=str(seat))
            await asyncio.sleep(0.15)

    code, out = await practice.tablectl("test", "sensors", "--timeout", "20",
                                        during=touch_every_seat, when="Touch each seat")
    assert code == 0, out
    assert "seats self-test: PASS - 10 seats, LEDs and sensors ok" in out
    assert "sensor  +  +  +  +  +  +  +  +  +  +" in out
    assert out.rstrip().endswith("all seat sensors respond")


async def test_drill_stuck_sensor(practice: Practice) -> None:
    """Guide, common faults, stuck sensor: a chip left on seat 4's spot."""
    await practice.press("/sensor/cover", seat="4")
    code, out = await practice.tablectl("test", "sensors", "--timeout", "3")
    await practice.press("/sensor/uncover", seat="4")
    assert code == 1, out
    assert "seats self-test: FAIL - sensors read a wager while betting is closed at seats " \
        "[4]" in out


async def test_drill_test_lockout(practice: Practice) -> None:
    async def press() -> None:
        await practice.press("/button")

    code, out = await practice.tablectl("test", "lockout", "--timeout", "10", during=press,
                                        when="Press the dealer's lock-out")
    assert code == 0, out
    assert "lock-out button press seen (button presses" in out


async def test_drill_dead_lockout_button(practice: Practice) -> None:
    """Guide, common faults, dead button: nobody presses it (or it is not wired)."""
    code, out = await practice.tablectl("test", "lockout", "--timeout", "2")
    assert code == 1, out
    assert "no lock-out button press seen" in out


async def test_drill_test_lights(practice: Practice) -> None:
    code, out = await practice.tablectl("test", "lights", stdin="y\n")
    assert code == 0, out
    assert "lights self-test: PASS - 10 seat LEDs chased one by one, then all lit" in out
    assert out.rstrip().endswith("lights confirmed")


async def test_drill_shuffler_jam(practice: Practice) -> None:
    """Guide, common faults, shuffler jam: the shuffle stops with the fault and status
    names it; the jam cleared, the shuffler shuffles the batch again (681a.9(c)) and the
    table goes on to the cut."""
    await practice.press("/shuffler/jam")
    held = (await practice.press("/shuffler/restore")).split("the ")[1].split(" batch")[0]
    code, out = await practice.tablectl("test", "shuffler", "--shuffle", held,
                                        "--timeout", "60")
    assert code == 1, out
    assert "SHUFFLER FAULT: jammed at card 20 [shuffler_jam]" in out, out
    code, out = await practice.tablectl("status")
    assert code == 4, out
    assert "FAULT: shuffler:" in out and "[shuffler_jam]" in out
    assert "Clear the jam in the shuffler. 681a.9(c): the batch must be reshuffled." in \
        " ".join(out.split())
    await practice.press("/shuffler/clear")
    await practice.state("cut")


async def test_drill_test_shoe(practice: Practice) -> None:
    """Guide, `test shoe`: load the new shoe and draw two cards; the first exposed card
    says how many to burn (631a.5(f)), the second is burned face down."""
    async def load_and_draw_two() -> None:
        await practice.press("/load")
        await practice.press("/draw")
        await practice.press("/draw")

    code, out = await practice.tablectl("test", "shoe", "--cards", "2", "--timeout", "15",
                                        during=load_and_draw_two, when="Draw cards")
    assert code == 0, out
    assert "shoe self-test: PASS - all checks passed" in out
    assert "exposed first card: burn" in out and "(burned face down)" in out
    assert out.rstrip().endswith("2 card(s) read")


async def test_drill_shoe_lid_open(practice: Practice) -> None:
    """Guide, "Shoe lid open": status names the fault, test shoe fails; the lid closed,
    the table resumes by itself."""
    before = (await practice.table.call("status"))["state"]
    out = await practice.fault("/lid/open")
    assert "FAULT: shoe: lid opened [shoe_lid_open]" in out
    assert "Action: Close the shoe's lid; cards are not read while it is open." in out
    code, out = await practice.tablectl("test", "shoe")
    assert (code, out.strip()) == (1, "shoe self-test: FAIL - active faults: SHOE_LID_OPEN")
    await practice.press("/lid/close")
    await practice.state(before)


async def test_drill_shoe_unplugged(practice: Practice) -> None:
    """Guide, "Shoe unplugged": status and devices show the lost link; the cable back
    in, the table reconnects and resumes by itself; the events show both."""
    before = (await practice.table.call("status"))["state"]
    out = await practice.fault("/cable/pull")
    assert "FAULT: shoe: shoe on" in out and "[link_down]" in out
    code, out = await practice.tablectl("devices")
    assert code == 4, out
    assert out.splitlines()[1].split()[:2] == ["shoe", "retrying"]
    assert "NOT UP: shoe (retrying) - check its cable and power" in out
    await practice.press("/cable/plug")
    await practice.state(before)
    code, out = await practice.tablectl("events", "--device", "shoe", "--limit", "4")
    assert code == 0, out
    assert "device_recovered" in out and "code=link_down" in out


async def test_drill_misread_card(practice: Practice) -> None:
    """Guide, "Misread card": the table stops; a supervisor rules and acknowledges; the
    table resumes."""
    out = await practice.fault("/misread")
    assert "left the shoe unread [shoe_misread]" in out
    assert "Stop: the card that just left the shoe was not read." in out
    code, out = await practice.tablectl("fault", "acknowledge", "--supervisor", "floor",
                                        "--pin-stdin", stdin=PIN + "\n")
    assert code == 0, out
    assert out.startswith("fault acknowledged by floor\n  cleared: shoe shoe_misread\n")


async def test_drill_chattering_sensor(practice: Practice) -> None:
    """Guide, common faults, chattering sensor: while betting is open a loose sensor
    cable flickers; the events name the seat, its progressive is not accepted, and the
    seat is readmitted after quiet. The technician deals through the burn to get there."""
    for _ in range(12):  # 631a.5(f): the first card exposed says how many more to burn
        if (await practice.table.call("status"))["state"] == "betting_open":
            break
        await practice.press("/draw")
    await practice.state("betting_open")
    await practice.press("/sensor/chatter", seat="5")
    code, out = await practice.tablectl("events", "--device", "seats", "--kind",
                                        "device_fault", "--limit", "1")
    for _ in range(25):
        if "seat_sensor_chatter:5" in out:
            break
        await asyncio.sleep(0.2)
        code, out = await practice.tablectl("events", "--device", "seats", "--kind",
                                            "device_fault", "--limit", "1")
    assert code == 0, out
    text = " ".join(out.split())
    assert "code=seat_sensor_chatter:5" in text and "detail=seat 5: 8 sensor edges within " \
        "1.0 s" in text, out


async def test_drill_card_face_up(practice: Practice) -> None:
    """Guide, common faults, card face up in the shoe: the warning in the events
    (631a.15(d)) and the prompt to set it aside. The technician deals as a dealer would
    to get there: the burn, the lock-out button, the round's first card, then the card
    found face up."""
    for _ in range(12):  # 631a.5(f): the first card exposed says how many more to burn
        if (await practice.table.call("status"))["state"] == "betting_open":
            break
        await practice.press("/draw")
    await practice.state("betting_open")
    await practice.press("/button")
    await practice.state("no_more_bets")
    await practice.press("/draw")
    await practice.state("dealing")
    await practice.press("/faceup")
    code, out = await practice.tablectl("events", "--severity", "warning", "--limit", "1")
    for _ in range(25):
        if "card_face_up" in out:
            break
        await asyncio.sleep(0.2)
        code, out = await practice.tablectl("events", "--severity", "warning", "--limit", "1")
    assert code == 0, out
    assert "card_face_up" in out and "631a.15" in out


async def test_drill_shuffler_miscount(practice: Practice) -> None:
    """Guide, "Shuffler miscount", at the end of the next shoe (the simulated dealer
    deals it out): two cards taken out of the batch before the shuffle; counted by hand
    and put back, the batch is shuffled again and verified; the table goes on to the cut."""
    await practice.press("/deal")
    await practice.state("end_of_shoe")
    removed = await practice.press("/shuffler/remove", cards="2")
    held = removed.split(" batch")[0].rsplit(" ", 1)[-1]
    code, out = await practice.tablectl("test", "shuffler", "--shuffle", held, "--timeout", "60")
    assert code == 1, out
    assert f"batch {held}: 414 cards counted, 2 missing, 0 extra, 0 duplicates - NOT VERIFIED" \
        in out
    code, out = await practice.tablectl("status")
    assert code == 4, out
    assert "[shuffler_miscount]" in out and "FAULT: shuffler:" in out
    assert "Do not deal this batch: count it by hand, replace missing or foreign cards, " \
        "reshuffle." in " ".join(out.split())
    await practice.press("/shuffler/restore")
    code, out = await practice.tablectl("test", "shuffler", "--shuffle", held, "--timeout", "60")
    assert code == 0, out
    assert f"batch {held}: 416 cards counted, 0 missing, 0 extra, 0 duplicates - VERIFIED" in out
    await practice.state("cut")
