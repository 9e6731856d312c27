"""The table's states and the transitions between them, each with the rule that allows it.

`TRANSITION_TABLE` is data (`controller.diagram` draws docs/state-machine.md from it);
`TableMachine` is the model the `transitions` machine drives: the table's state, its
triggers, and whether a change since the step began is one that saves the state.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from transitions import Machine


class TableState(enum.Enum):
    CLOSED = "closed"  # until the table is first opened: no command closes it again
    OPENING = "opening"  # card inspection, 631a.4 / 681a.4
    SHUFFLING = "shuffling"
    CUT = "cut"  # cut and cover cards placed, waiting for the shoe to be loaded, 631a.5(b)-(d)
    BURN = "burn"  # 631a.5(f)
    BETTING_OPEN = "betting_open"
    NO_MORE_BETS = "no_more_bets"  # lock-out, 631a.8(c)
    DEALING = "dealing"  # the first four cards, 631a.9(c)
    FIRST_FOUR_SETTLED = "first_four_settled"  # settlement point after four cards, 631a.9(e)
    THIRD_CARDS = "third_cards"  # 631a.10-631a.11
    RESULT = "result"  # 631a.12(a)
    SETTLEMENT = "settlement"  # 631a.12(b)
    END_OF_SHOE = "end_of_shoe"  # 631a.3(b), 631a.10(d): new decks / batch swap
    DEVICE_FAULT = "device_fault"
    OUT_OF_ORDER = "out_of_order"  # 681a.9(d); integrity failures


# The states a card's or a device event's step compares with, as module names: in Python
# 3.11 an attribute of an Enum class is looked up through its metaclass's __getattr__ hook
# (0.12 us here, fifteen times a module name's read), and a card's step compared a dozen.
(STATE_BURN, STATE_BETTING_OPEN, STATE_NO_MORE_BETS, STATE_DEALING, STATE_THIRD_CARDS,
 STATE_RESULT, STATE_DEVICE_FAULT, STATE_OUT_OF_ORDER) = (
    TableState.BURN, TableState.BETTING_OPEN, TableState.NO_MORE_BETS, TableState.DEALING,
    TableState.THIRD_CARDS, TableState.RESULT, TableState.DEVICE_FAULT, TableState.OUT_OF_ORDER)


# States in which a device fault interrupts play and from which play resumes.
OPERATING = (TableState.OPENING, TableState.SHUFFLING, TableState.CUT, TableState.BURN,
             TableState.BETTING_OPEN, TableState.NO_MORE_BETS, TableState.DEALING,
             TableState.FIRST_FOUR_SETTLED, TableState.THIRD_CARDS, TableState.RESULT,
             TableState.SETTLEMENT, TableState.END_OF_SHOE)

# The states of a round in play: cards belong to it, and a void returns its wagers.
ROUND_IN_PLAY = (TableState.NO_MORE_BETS, TableState.DEALING, TableState.FIRST_FOUR_SETTLED,
                 TableState.THIRD_CARDS)


@dataclass(frozen=True)
class Transition:
    """One trigger: from which states, to which, and the rule (or reason) behind it."""

    trigger: str
    sources: tuple[TableState, ...] | str  # "*" = every state
    dest: TableState
    section: str
    condition: str | None = None  # a method of the model that must return True
    # A change the open round's cards make on their own (the first card starts the deal,
    # the fourth ends the first four). It does not save the table's state: the card's log
    # entry, in the same commit, implies it, and a restart makes it again from the round's
    # cards (`RoundPlay.redo_changes_implied_by_cards`). Every other change saves the state.
    implied_by_cards: bool = False

    def as_machine_spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = {"trigger": self.trigger, "dest": self.dest,
                                "source": self.sources if isinstance(self.sources, str)
                                else list(self.sources)}
        if self.condition is not None:
            spec["conditions"] = self.condition
        if not self.implied_by_cards:
            spec["after"] = "_changed_saved_state"
        return spec


S = TableState
TRANSITION_TABLE: tuple[Transition, ...] = (
    Transition("open_table", (S.CLOSED,), S.OPENING, "631a.4: inspect the cards"),
    Transition("start_shuffle", (S.OPENING, S.END_OF_SHOE), S.SHUFFLING, "631a.5(a)"),
    Transition("shuffle_verified", (S.SHUFFLING,), S.CUT, "631a.5(b), 681a.3(b)(3)"),
    Transition("shoe_loaded", (S.CUT,), S.BURN, "631a.5(c)-(e)"),
    Transition("burn_done", (S.BURN,), S.BETTING_OPEN, "631a.5(f), 681a.7(c)"),
    Transition("lock_out", (S.BETTING_OPEN,), S.NO_MORE_BETS, "631a.8(c)"),
    Transition("first_card", (S.NO_MORE_BETS,), S.DEALING, "631a.9(c)", implied_by_cards=True),
    Transition("four_cards", (S.DEALING,), S.FIRST_FOUR_SETTLED, "631a.9(e)",
               implied_by_cards=True),
    Transition("third_card_due", (S.FIRST_FOUR_SETTLED,), S.THIRD_CARDS, "631a.10-631a.11",
               implied_by_cards=True),
    Transition("hands_complete", (S.FIRST_FOUR_SETTLED, S.THIRD_CARDS), S.RESULT, "631a.12(a)"),
    Transition("announce_result", (S.RESULT,), S.SETTLEMENT, "631a.12(b)"),
    Transition("next_round", (S.SETTLEMENT,), S.BETTING_OPEN, "631a.10(d)"),
    Transition("shoe_finished", (S.SETTLEMENT,), S.END_OF_SHOE, "631a.10(d), 681a.7(d)"),
    Transition("void_round", ROUND_IN_PLAY, S.END_OF_SHOE, "631a.15(e)"),
    Transition("first_card_unknown", (S.BURN,), S.END_OF_SHOE, "631a.5(f): the burn cannot "
               "be checked (docs/rulings.md C27)"),
    Transition("card_withdrawn", (S.DEALING,), S.BETTING_OPEN, "631a.15(c)(1): the round's "
               "only card was a disclosed Player third card"),
    Transition("device_failed", OPERATING, S.DEVICE_FAULT, "nothing is dealt from a device "
               "in doubt"),
    Transition("integrity_failed", "*", S.OUT_OF_ORDER, "681a.9(d); the store's integrity"),
) + tuple(
    # Recovery returns to the state the fault interrupted, never further.
    Transition("device_recovered", (S.DEVICE_FAULT,), state, "resume where the fault stopped",
               condition=f"_resumes_{state.name.lower()}")
    for state in OPERATING
)

TRANSITIONS: list[dict[str, Any]] = [t.as_machine_spec() for t in TRANSITION_TABLE]

# A plain trigger's step from one state: (the state it goes to, whether it marks the state
# saved, the names of the destination's enter callbacks on the model).
PlainStep = tuple[TableState, bool, tuple[str, ...]]


class TableMachine:
    """The model the `transitions` machine drives: `state` and one method per trigger.

    A fault's recovery returns to the state `resume_state()` names, the one the fault
    interrupted (the guards `_resumes_<state>`).
    Every transition not implied by the round's cards marks the step as one that saves
    the table's state (`take_change`, read by `Table`'s step).
    """

    state: TableState  # set by transitions

    def __init__(self, resume_state: Callable[[], TableState | None],
                 on_betting_open: Callable[[], None]) -> None:
        self._on_betting_open = on_betting_open
        self._changed = False
        self._entering = False  # a plain trigger's enter callbacks are running
        self._machine_changes = 0  # the machine's own transitions under way (callbacks running)
        self.machine = Machine(
            model=self, states=TableState, transitions=TRANSITIONS, initial=TableState.CLOSED,
            auto_transitions=False, queued=True,
            before_state_change=self._machine_change_starts,
            after_state_change=self._machine_change_ends,
        )
        for state in OPERATING:
            setattr(self, f"_resumes_{state.name.lower()}",
                    lambda s=state: resume_state() is s)
        for trigger, steps in _plain_steps(self.machine).items():
            setattr(self, trigger, self._plain_trigger(steps, getattr(self, trigger)))

    def _plain_trigger(self, steps: dict[TableState, PlainStep],
                       machine_trigger: Callable[[], bool]) -> Callable[[], bool]:
        """A trigger whose transitions have no condition and no callback but the save mark
        and the destination's enter callbacks: from a state it leaves, the state is set
        here, and the callbacks run, as the machine would do it (a `transitions` trigger
        costs about a hundred thousand instructions; a round's cards make one or two a
        card, and its settlement one into betting). Anything else goes to the machine's
        own trigger: a state it does not leave (MachineError), a transition already
        running (the machine queues one that a callback starts), or one started by a plain
        trigger's enter callback (none is: arming the seats starts no transition)."""
        def trigger() -> bool:
            step = steps.get(self.state)
            if step is None or self._machine_changes or self._entering:
                return machine_trigger()
            dest, marks, entered = step
            self.state = dest
            if marks:  # the machine marks it after the enter callbacks: one step either way
                self._changed = True
            if entered:
                self._entering = True
                try:
                    for name in entered:
                        getattr(self, name)()
                finally:
                    self._entering = False
            return True

        return trigger

    def _machine_change_starts(self) -> None:
        """`transitions`' before_state_change: one of the machine's own transitions has
        passed its conditions; its exit, enter and after callbacks run until the matching
        after_state_change. A trigger a callback calls meanwhile is the machine's to queue.
        A callback that raises skips the end: the count stays up and every trigger then
        goes through the machine, slower but the same (set_state, a restart, resets it)."""
        self._machine_changes += 1

    def _machine_change_ends(self) -> None:
        self._machine_changes -= 1

    def set_state(self, state: TableState) -> None:
        """Put the machine in `state` without a transition (a restart's saved state)."""
        self.machine.set_state(state)
        self._machine_changes = 0

    def on_enter_BETTING_OPEN(self) -> None:  # noqa: N802 - transitions' naming convention
        self._on_betting_open()

    def _changed_saved_state(self) -> None:
        self._changed = True

    def take_change(self) -> bool:
        """Whether a transition that saves the state ran since the last call."""
        changed, self._changed = self._changed, False
        return changed

    if TYPE_CHECKING:  # the triggers transitions adds to the model (TRANSITION_TABLE)
        def open_table(self) -> bool: ...
        def start_shuffle(self) -> bool: ...
        def shuffle_verified(self) -> bool: ...
        def shoe_loaded(self) -> bool: ...
        def burn_done(self) -> bool: ...
        def lock_out(self) -> bool: ...
        def first_card(self) -> bool: ...
        def four_cards(self) -> bool: ...
        def third_card_due(self) -> bool: ...
        def hands_complete(self) -> bool: ...
        def announce_result(self) -> bool: ...
        def next_round(self) -> bool: ...
        def shoe_finished(self) -> bool: ...
        def void_round(self) -> bool: ...
        def first_card_unknown(self) -> bool: ...
        def card_withdrawn(self) -> bool: ...
        def device_failed(self) -> bool: ...
        def integrity_failed(self) -> bool: ...
        def device_recovered(self) -> bool: ...


def _plain_steps(machine: Machine) -> dict[str, dict[TableState, PlainStep]]:
    """For each trigger whose every transition has no condition, no callback but the save
    mark (`Transition.as_machine_spec`), sources with no exit callback and a destination
    whose enter callbacks are the model's own methods (`on_enter_BETTING_OPEN`): from each
    state it leaves, (the state it goes to, whether it marks the state saved, the names of
    its enter callbacks)."""
    plain: dict[str, dict[TableState, PlainStep]] = {}
    for spec in TRANSITION_TABLE:
        plain.setdefault(spec.trigger, {})
    for spec in TRANSITION_TABLE:
        steps = plain.get(spec.trigger)
        if steps is None:
            continue
        sources: list[TableState] = (list(TableState) if isinstance(spec.sources, str)
                                     else list(spec.sources))
        dest = machine.get_state(spec.dest)
        entered = tuple(name for name in dest.on_enter if isinstance(name, str))
        if spec.condition is not None or len(entered) != len(dest.on_enter) or any(
                machine.get_state(source).on_exit for source in sources):
            del plain[spec.trigger]
            continue
        for source in sources:  # the first transition from a state is the one taken
            steps.setdefault(source, (spec.dest, not spec.implied_by_cards, entered))
    return plain
