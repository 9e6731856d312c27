"""Every fault has a way out (issue 13): each exit of controller/faults.py's catalogue, taken.

The table is driven as in test_table.py (real rules engine and store, the events a
device would send). Faults that stop play are raised in the step they interrupt
(any step for the shoe, SHUFFLING for the shuffler) and must end by the exits the
catalogue gives them, and by no other; docs/faults.md must be the catalogue's
rendering.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cards import BackColour
from controller import faults
from controller.faults import CATALOGUE, Exit, FaultBook, HeldFault
from controller.memory.store import Store
from controller.table.errors import CommandRefused
from controller.table.machine import TableState
from controller.table.table import Table
from drivers.protocols import DeviceFault, DeviceFaultCleared, LinkChanged, LinkState, ShuffleComplete

from .test_table import betting, make_table, prompts

ROOT = Path(__file__).parents[2]
STOPPING = [row for row in CATALOGUE if row.stops_play != "no" and row.device != "table"]


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "table.sqlite")
    yield s
    s.close()


def shuffling(store: Store) -> Table:
    table = make_table(store)
    table.cmd_open()
    table.cmd_shuffle(8)
    assert table.state is TableState.SHUFFLING
    return table


def interrupted(store: Store, device: str) -> tuple[Table, TableState]:
    """A table in the step a fault of this device interrupts."""
    if device == "shuffler":
        return shuffling(store), TableState.SHUFFLING
    table, _ = betting(store)
    return table, TableState.BETTING_OPEN


def devices_of(row: faults.FaultExits) -> list[str]:
    return ["shoe", "shuffler"] if row.device == faults.ANY_DEVICE else [row.device]


def cases(exit_: Exit) -> list[tuple[str, str]]:
    return [(device, row.code) for row in STOPPING if exit_ in row.exits
            for device in devices_of(row)]


def raise_fault(table: Table, device: str, code: str) -> None:
    table.handle(DeviceFault(device, code, f"{code} detail", f"{code} action"))
    assert table.state is TableState.DEVICE_FAULT
    assert table.fault == {"device": device, "code": code, "detail": f"{code} detail",
                           "action": f"{code} action"}


def resumed(table: Table, store: Store, step: TableState) -> None:
    assert table.state is step and table.fault is None and not table.faults
    if step is TableState.SHUFFLING:
        # 681a.9(c): the shuffle is redone; the daemon asks the shuffler on this prompt.
        assert prompts(store)[-1] == "reshuffle"


@pytest.mark.parametrize("device, code", cases(Exit.DEVICE))
def test_every_fault_a_device_clears_ends_when_it_clears(store, device, code):
    table, step = interrupted(store, device)
    raise_fault(table, device, code)
    table.handle(DeviceFaultCleared("other-device", code))  # not this device's fault
    assert table.state is TableState.DEVICE_FAULT
    if code in faults.LINK_FAULTS:
        table.handle(LinkChanged(device, LinkState.UP, "serial 1 firmware 1.0"))
    else:
        table.handle(DeviceFaultCleared(device, code))
    resumed(table, store, step)


@pytest.mark.parametrize("device, code", cases(Exit.SUPERVISOR))
def test_every_acknowledgeable_fault_ends_with_the_supervisors_acknowledgement(store, device,
                                                                                code):
    table, step = interrupted(store, device)
    raise_fault(table, device, code)
    answer = table.cmd_acknowledge_fault("floor")
    assert answer == {"cleared": [{"device": device, "code": code, "detail": f"{code} detail",
                                   "action": f"{code} action"}], "still_held": []}
    resumed(table, store, step)
    recorded = store.events(kind="fault_acknowledged")[-1].payload
    assert (recorded["supervisor"], recorded["still_held"]) == ("floor", [])


@pytest.mark.parametrize("device, code", [
    (device, row.code) for row in STOPPING if not row.acknowledged for device in devices_of(row)])
def test_a_fault_only_the_device_can_end_is_not_ended_by_an_acknowledgement(store, device, code):
    table, _ = interrupted(store, device)
    raise_fault(table, device, code)
    answer = table.cmd_acknowledge_fault("floor")
    assert answer == {"cleared": [], "still_held": [
        {"device": device, "code": code, "clears": faults.how_it_clears(device, code)}]}
    assert table.state is TableState.DEVICE_FAULT


def test_an_acknowledgement_names_every_fault_that_still_holds(store):
    table, dealer = betting(store)
    table.cmd_place_wager(3, "banker", 2000)
    table.cmd_no_more_bets()
    dealer.draw("2♣")
    table.handle(DeviceFault("shoe", "shoe_lid_open", "lid open", "close the lid"))
    # A second fault while the first holds is held too, not forgotten.
    table.handle(DeviceFault("shoe", "shoe_misread", "card 17 unread", "supervisor"))
    answer = table.cmd_acknowledge_fault("floor")
    assert [f["code"] for f in answer["cleared"]] == ["shoe_misread"]
    assert answer["still_held"] == [{"device": "shoe", "code": "shoe_lid_open",
                                     "clears": "close the lid"}]
    assert table.state is TableState.DEVICE_FAULT
    assert table.fault is not None and table.fault["code"] == "shoe_lid_open"
    table.handle(DeviceFaultCleared("shoe", "shoe_lid_open"))
    # The misread card was in the round: void, every wager returned (631a.15(e)).
    assert table.state is TableState.END_OF_SHOE
    record = store.rounds()[-1]
    assert (record["state"], record["settlements"][0]["net_cents"]) == ("void", 0)


def test_the_first_fault_clearing_does_not_resume_while_a_second_holds(store):
    table, _ = betting(store)
    table.handle(DeviceFault("shoe", "link_down", "cable", "reseat"))
    table.handle(DeviceFault("shoe", "shoe_card_jam", "stuck", "free it"))
    table.handle(LinkChanged("shoe", LinkState.UP))
    assert table.state is TableState.DEVICE_FAULT
    still = store.events(kind="fault_still_held")[-1].payload
    assert still == {"cleared": ["link_down"], "still_held": [
        {"device": "shoe", "code": "shoe_card_jam", "clears": "free the card"}]}
    table.handle(DeviceFaultCleared("shoe", "shoe_card_jam"))
    assert table.state is TableState.BETTING_OPEN


@pytest.mark.parametrize("code", [code for device, code in cases(Exit.TECHNICIAN)
                                  if device == "shuffler"])
def test_a_technicians_shuffle_ends_every_shuffle_fault(store, code):
    """tablectl test shuffler --shuffle BACK while a shuffle fault holds the table: the
    verified count ends the fault and the table goes on to the cut (681a.9(c))."""
    table = shuffling(store)
    raise_fault(table, "shuffler", code)
    table.cmd_shuffle(8)  # accepted in the fault: the daemon sends the request
    assert table.shuffle_wanted and table.state is TableState.DEVICE_FAULT
    table.handle(ShuffleComplete("shuffler", BackColour.BLUE, 416, 0, 0, 0))
    assert table.state is TableState.CUT and table.fault is None
    assert table.batch_shuffled is BackColour.BLUE
    assert prompts(store)[-1] == "cut"
    # The driver's own clearing events that follow change nothing.
    table.handle(DeviceFaultCleared("shuffler", code))
    assert table.state is TableState.CUT


def test_a_technicians_shuffle_is_refused_while_a_fault_it_cannot_end_holds(store):
    table = shuffling(store)
    raise_fault(table, "shuffler", "shuffler_door_open")
    with pytest.raises(CommandRefused, match=r"a shuffle cannot end this fault \(shuffler "
                                             r"shuffler_door_open\)"):
        table.cmd_shuffle(8)


def test_an_unverified_count_does_not_end_a_shuffle_fault(store):
    table = shuffling(store)
    raise_fault(table, "shuffler", "shuffler_miscount")
    table.cmd_shuffle(8)
    table.handle(ShuffleComplete("shuffler", BackColour.RED, 415, 1, 0, 0))
    assert table.state is TableState.DEVICE_FAULT


@pytest.mark.parametrize("code, exit_", [
    (row.code, exit_) for row in STOPPING if row.code in faults.REDONE_BY_A_VERIFIED_SHUFFLE
    for exit_ in row.exits if exit_ in (Exit.DEVICE, Exit.SUPERVISOR)])
def test_a_table_back_in_shuffling_asks_for_the_reshuffle_681a_9_c(store, code, exit_):
    """The issue-13 wedge: a cleared fault left SHUFFLING with no shuffle running, and the
    shuffler's late result, read during the fault, was dropped. Taken for every shuffle
    fault by each exit that puts the table back in SHUFFLING (a technician's verified
    shuffle goes straight to the cut instead)."""
    table = shuffling(store)
    raise_fault(table, "shuffler", code)
    if exit_ is Exit.SUPERVISOR:
        assert table.cmd_acknowledge_fault("floor")["still_held"] == []
    else:
        table.handle(DeviceFaultCleared("shuffler", code))
    assert table.state is TableState.SHUFFLING and prompts(store)[-1] == "reshuffle"
    assert table.shuffle_wanted
    table.handle(ShuffleComplete("shuffler", BackColour.RED, 416, 0, 0, 0))
    assert table.state is TableState.CUT and prompts(store)[-1] == "cut"
    assert table.batch_shuffled is BackColour.RED


def test_a_batch_verified_while_the_shoe_held_the_table_goes_on_to_the_cut(store):
    table = shuffling(store)
    raise_fault(table, "shoe", "link_down")
    table.handle(ShuffleComplete("shuffler", BackColour.RED, 416, 0, 0, 0))
    assert table.state is TableState.DEVICE_FAULT
    table.handle(LinkChanged("shoe", LinkState.UP))
    assert table.state is TableState.CUT and prompts(store)[-1] == "cut"


def test_the_faults_holding_the_table_survive_a_restart(store):
    table, _ = betting(store)
    table.handle(DeviceFault("shoe", "link_down", "cable", "reseat"))
    table.handle(DeviceFault("shoe", "shoe_card_jam", "stuck", "free it"))
    again = make_table(store)
    again.restore()
    assert [f.code for f in again.faults.held] == ["link_down", "shoe_card_jam"]
    again.handle(LinkChanged("shoe", LinkState.UP))
    assert again.state is TableState.DEVICE_FAULT
    again.handle(DeviceFaultCleared("shoe", "shoe_card_jam"))
    assert again.state is TableState.BETTING_OPEN


def test_a_snapshot_from_before_the_fault_book_keeps_its_one_fault() -> None:
    first = {"device": "shoe", "code": "shoe_lid_open", "detail": "d", "action": "a"}
    assert FaultBook.from_saved(None, first).held == (HeldFault("shoe", "shoe_lid_open", "d", "a"),)


def test_an_unlisted_fault_code_can_always_be_acknowledged(store):
    table, _ = betting(store)
    raise_fault(table, "shoe", "shoe_firmware_invented_this")
    assert table.cmd_acknowledge_fault("floor")["still_held"] == []
    assert table.state is TableState.BETTING_OPEN


def test_every_fault_code_a_driver_or_the_table_raises_is_in_the_catalogue():
    raised: set[str] = set()
    for path in [*ROOT.glob("drivers/*.py"), *ROOT.glob("controller/table/*.py"),
                 ROOT / "controller" / "daemon.py",
                 *ROOT.glob("controller/commands/*.py")]:
        text = path.read_text(encoding="utf-8")
        raised |= set(re.findall(r'(?:_fault\((?:\s*\w+,)?|DeviceFault\(\s*[\w."]+,)\s*"([a-z_]+)"', text))
    from firmware_bridge.messages import FaultCode
    raised |= {code.name.lower() for code in FaultCode}
    listed = {row.code for row in CATALOGUE}
    assert raised - listed == set()
    assert {"shuffler_cycle_incomplete", "batch_mismatch", "shoe_index_gap",
            "shuffle_request_failed", "gpio_unavailable", "seat_sensor_chatter"} <= raised


def test_every_exit_names_tests_that_exist():
    for row in CATALOGUE:
        assert row.exits and row.tests, row.code
        for test in row.tests:
            path, _, name = test.partition("::")
            text = (ROOT / path).read_text(encoding="utf-8")
            assert not name or re.search(rf"def {name}\(", text), (row.code, test)


def test_docs_faults_md_is_generated_from_the_catalogue():
    assert faults.DOC.read_text(encoding="utf-8") == faults.render_markdown(), (
        "docs/faults.md is stale: run python -m controller.faults --write")


def test_no_fault_leaves_only_by_a_restart_except_the_listed_ones():
    only_restart = {row.code for row in CATALOGUE if row.exits == (Exit.RESTART,)}
    # Pins claimed at start, and a store that failed its integrity check: both need a
    # technician's repair first; the restart is then the check that it worked.
    assert only_restart == {"gpio_unavailable", "out_of_order"}


def test_every_restart_exit_is_taken_through_the_daemon_process():
    """A restart cannot be taken by the in-process table these tests drive: each fault it
    ends names a test that stops and starts the daemon process after the repair."""
    for row in CATALOGUE:
        if Exit.RESTART in row.exits:
            assert [t for t in row.tests if t.startswith("hil/test_fault_exits.py::")], row.code


def test_the_dealer_is_told_to_stop_once_per_fault_episode(store):
    table, _ = betting(store)
    before = prompts(store).count("stop")
    table.handle(DeviceFault("shoe", "link_down", "cable", "reseat"))
    table.handle(DeviceFault("shoe", "shoe_card_jam", "stuck", "free it"))
    assert prompts(store).count("stop") == before + 1
