"""The table's machine: the triggers it takes itself (`TableMachine._plain_trigger`) end
exactly where the `transitions` machine's own triggers end, from every state."""

from __future__ import annotations

import pytest
from transitions import MachineError

from controller.table.machine import TRANSITION_TABLE, TableMachine, TableState

TRIGGERS = sorted({t.trigger for t in TRANSITION_TABLE})


class _Outcome:
    """What one trigger did to a fresh machine: state, save mark, callbacks, or the error."""

    def __init__(self, machine: TableMachine, fire: object, opened: list[int]) -> None:
        try:
            fire()  # type: ignore[operator]
            self.result: tuple[object, ...] = (machine.state, machine.take_change(), len(opened))
        except MachineError as exc:
            self.result = ("MachineError", str(exc), machine.state)


def _outcome(state: TableState, trigger: str, *, own: bool,
             resume: TableState | None = None) -> tuple[object, ...]:
    opened: list[int] = []
    machine = TableMachine(lambda: resume, lambda: opened.append(1))
    machine.set_state(state)
    machine.take_change()
    # The machine's own trigger, as `transitions` installs it on its model.
    fire = (lambda: machine.machine.events[trigger].trigger(machine)) if own \
        else getattr(machine, trigger)
    return _Outcome(machine, fire, opened).result


@pytest.mark.parametrize("trigger", TRIGGERS)
def test_every_trigger_from_every_state_ends_as_the_transitions_machine_does(trigger: str
                                                                             ) -> None:
    for state in TableState:
        for resume in (None, TableState.SHUFFLING, TableState.BETTING_OPEN):
            assert _outcome(state, trigger, own=False, resume=resume) == \
                _outcome(state, trigger, own=True, resume=resume), (state, resume)


def test_the_round_s_implied_steps_are_taken_without_the_transitions_machine() -> None:
    """first_card, four_cards and third_card_due: the hot path of every card; the machine's
    own event is not called (it would cost ~100,000 instructions a trigger)."""
    machine = TableMachine(lambda: None, lambda: None)
    for name in ("first_card", "four_cards", "third_card_due", "hands_complete"):
        def refuse(*_: object) -> bool:
            raise AssertionError(f"{name} went through transitions")
        machine.machine.events[name].trigger = refuse  # type: ignore[method-assign]
    machine.set_state(TableState.NO_MORE_BETS)
    machine.first_card()
    assert (machine.state, machine.take_change()) == (TableState.DEALING, False)
    machine.four_cards()
    assert (machine.state, machine.take_change()) == (TableState.FIRST_FOUR_SETTLED, False)
    machine.third_card_due()
    assert (machine.state, machine.take_change()) == (TableState.THIRD_CARDS, False)
    machine.hands_complete()
    assert (machine.state, machine.take_change()) == (TableState.RESULT, True)


def test_a_trigger_that_enters_betting_open_runs_its_callback_without_the_machine() -> None:
    """next_round, every settled round's: the seats armed (on_enter_BETTING_OPEN) and the
    state saved, as the machine does it, without its ~100,000 instructions."""
    opened: list[int] = []
    machine = TableMachine(lambda: None, lambda: opened.append(1))

    def refuse(*_: object) -> bool:
        raise AssertionError("next_round went through transitions")
    machine.machine.events["next_round"].trigger = refuse  # type: ignore[method-assign]
    machine.set_state(TableState.SETTLEMENT)
    machine.next_round()
    assert (machine.state, machine.take_change(), opened) == (TableState.BETTING_OPEN, True, [1])


def test_a_trigger_made_by_an_enter_callback_ends_where_the_machine_ends_it() -> None:
    """A transition started inside on_enter_BETTING_OPEN (none is today) goes to the
    machine's own trigger, and the table ends in the state the machine alone gives."""
    ends = []
    for own in (False, True):
        holder: list[TableMachine] = []
        machine = TableMachine(lambda: None, lambda: holder[0].lock_out())
        holder.append(machine)
        machine.set_state(TableState.SETTLEMENT)
        if own:
            machine.machine.events["next_round"].trigger(machine)
        else:
            machine.next_round()
        ends.append((machine.state, machine.take_change()))
    assert ends == [(TableState.NO_MORE_BETS, True)] * 2


def test_a_trigger_from_a_state_it_does_not_leave_is_refused_by_the_machine() -> None:
    machine = TableMachine(lambda: None, lambda: None)
    machine.set_state(TableState.BETTING_OPEN)
    with pytest.raises(MachineError, match="first_card"):
        machine.first_card()
    assert machine.state is TableState.BETTING_OPEN


def test_a_trigger_called_inside_a_machine_transition_waits_for_it_to_end() -> None:
    """device_recovered (a conditional transition, the machine's own) into betting: a
    trigger its enter callback calls is the machine's to queue, as `transitions` does with
    `queued=True`; it runs once the recovery has ended, not in the middle of it."""
    seen: list[TableState] = []
    holder: list[TableMachine] = []

    def lock_out_at_once() -> None:
        holder[0].lock_out()
        seen.append(holder[0].state)  # still betting: the lock-out waits in the queue

    machine = TableMachine(lambda: TableState.BETTING_OPEN, lock_out_at_once)
    holder.append(machine)
    machine.set_state(TableState.DEVICE_FAULT)
    machine.device_recovered()
    assert seen == [TableState.BETTING_OPEN]
    assert (machine.state, machine.take_change()) == (TableState.NO_MORE_BETS, True)
    # The count of transitions under way is back to none: the round's first card is
    # taken without the machine (its own trigger would fail here).
    machine.machine.events["first_card"].trigger = None  # type: ignore[assignment]
    machine.first_card()
    assert machine.state is TableState.DEALING
