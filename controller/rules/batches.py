"""Two-batch alternation tracker for a table with a batch shuffler (681a.3(b)).

A sans-I/O decider of the rules engine (it used to live in drivers/, which know no
game): it is told what the shoe and the shuffler report and what the dealer did,
and answers with a ``BatchFault`` (what was seen, what was expected, what to do)
or ``None``. It never raises for something a device or dealer did; it raises
``BatchError`` only for a programming error (an unknown back colour).

The cycle it enforces, for batches X and Y of different back colours
(681a.3(b)(2)):

1. X is in play: in the dealing shoe, its dealt cards in the discard rack.
2. Y is shuffled and stored in the shuffler meanwhile (681a.3(b)(3)).
3. At the end of X's shoe the dealer collects X (shoe + rack): ``shoe_collected()``.
4. Y comes out of the shuffler into the shoe: ``shoe_loaded(Y)``; X goes into the
   shuffler: ``shuffler_loaded(X)`` and is shuffled (681a.3(b)(4): every other shoe).

Only one batch is ever in the discard rack (681a.3(b)(5)): a card whose back
is not the batch in play is a fault, and a new batch cannot be loaded into the
shoe until the rack was emptied.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from cards import BackColour

from controller.errors import RulesError


class BatchError(RulesError):
    """A programming error: a back colour that is not one of the table's two batches (681a.3(b))."""


class BatchPlace(enum.Enum):
    """Where a batch is."""

    OUT = "out"  # in the dealer's hands / on the table, neither in shoe nor shuffler
    SHUFFLER = "shuffler"  # in the shuffler, not yet verified as shuffled
    SHUFFLED = "shuffled"  # in the shuffler, shuffled and counted (681a.3(b)(3))
    IN_PLAY = "in-play"  # in the shoe; its dealt cards in the discard rack


@dataclass(frozen=True, slots=True)
class BatchFault:
    """A breach of the two-batch alternation; ``code`` is stable, the rest is for people."""

    code: str
    seen: str
    expected: str
    action: str

    @property
    def detail(self) -> str:
        return f"saw {self.seen}; expected {self.expected}"


class BatchTracker:
    """Which batch is in the shoe, which in the shuffler, which in the discard rack."""

    def __init__(self, first: BackColour, second: BackColour) -> None:
        if first == second:
            # 681a.3(b)(2): the two batches must have different back colours.
            raise BatchError(
                f"batches: both back colours are {first.name}; 681a.3(b)(2) needs two different colours")
        self._batches = (BackColour(first), BackColour(second))
        self._place: dict[BackColour, BatchPlace] = {b: BatchPlace.OUT for b in self._batches}
        self._discard_rack: BackColour | None = None
        self._last_in_play: BackColour | None = None

    # --- queries --------------------------------------------------------------

    @property
    def batches(self) -> tuple[BackColour, BackColour]:
        return self._batches

    def place(self, back: BackColour) -> BatchPlace:
        return self._place[self._known(back)]

    @property
    def in_play(self) -> BackColour | None:
        """The batch in the dealing shoe, if any."""
        return self._find(BatchPlace.IN_PLAY)

    @property
    def in_shuffler(self) -> BackColour | None:
        """The batch in the shuffler (shuffled or not), if any."""
        shuffled = self._find(BatchPlace.SHUFFLED)  # RED is 0: test for None, not truth
        return shuffled if shuffled is not None else self._find(BatchPlace.SHUFFLER)

    @property
    def discard_rack(self) -> BackColour | None:
        """The batch whose cards are in the discard rack (at most one, 681a.3(b)(5))."""
        return self._discard_rack

    @property
    def next_to_play(self) -> BackColour | None:
        """The batch 681a.3(b)(4) requires in the next shoe: the one not played last."""
        if self._last_in_play is None:
            return None
        return self._other(self._last_in_play)

    # --- what happened --------------------------------------------------------

    def shuffler_loaded(self, back: BackColour) -> BatchFault | None:
        """The dealer put this batch into the shuffler."""
        back = self._known(back)
        other = self._other(back)
        if self._place[other] in (BatchPlace.SHUFFLER, BatchPlace.SHUFFLED):
            return BatchFault(
                "batch-shuffler-occupied", f"{back.name} batch put into the shuffler",
                f"the shuffler to be empty, but it holds the {other.name} batch",
                "Take the shuffled batch out of the shuffler into the shoe first (681a.3(b)(3)).")
        if self._place[back] is BatchPlace.IN_PLAY:
            return BatchFault(
                "batch-still-in-play", f"{back.name} batch put into the shuffler",
                f"the {back.name} batch to be collected from shoe and discard rack first",
                "Collect the whole batch (shoe and discard rack) before shuffling it.")
        self._place[back] = BatchPlace.SHUFFLER
        return None

    def shuffle_complete(self, back: BackColour, verified: bool) -> BatchFault | None:
        """The shuffler reported a finished shuffle; ``verified`` = counted with nothing missing/extra."""
        back = self._known(back)
        if self._place[back] not in (BatchPlace.SHUFFLER, BatchPlace.SHUFFLED):
            return BatchFault(
                "batch-not-in-shuffler", f"shuffler finished a {back.name} batch",
                f"a {back.name} batch to be in the shuffler; it is {self._place[back].value}",
                "Check which batch is in the shuffler; reshuffle before dealing it.")
        if not verified:
            self._place[back] = BatchPlace.SHUFFLER
            return BatchFault(
                "batch-count-failed", f"{back.name} batch shuffled with a miscount",
                "every card counted once",
                "Do not deal this batch: count it by hand and replace missing cards, then reshuffle.")
        self._place[back] = BatchPlace.SHUFFLED
        return None

    def shoe_loaded(self, back: BackColour) -> BatchFault | None:
        """This batch was moved from the shuffler into the dealing shoe."""
        back = self._known(back)
        if self.in_play is not None and self.in_play != back:
            return BatchFault(
                "batch-previous-in-play", f"{back.name} batch loaded into the shoe",
                f"the {self.in_play.name} batch to be collected from the shoe first",
                "Collect the batch in play (shoe and discard rack) before loading the other one.")
        if self._discard_rack is not None and self._discard_rack != back:
            # 681a.3(b)(5): only one batch may be in the discard rack at a time.
            return BatchFault(
                "batch-discard-rack-occupied", f"{back.name} batch loaded into the shoe",
                f"an empty discard rack, but it holds {self._discard_rack.name} cards",
                "Empty the discard rack (681a.3(b)(5)) before dealing the other batch.")
        expected = self.next_to_play
        if expected is not None and back != expected:
            # 681a.3(b)(4): each batch is used for every other shoe.
            return BatchFault(
                "batch-not-alternated", f"{back.name} batch loaded into the shoe",
                f"the {expected.name} batch (681a.3(b)(4): batches alternate every shoe)",
                f"Load the {expected.name} batch from the shuffler.")
        if self._place[back] is not BatchPlace.SHUFFLED:
            return BatchFault(
                "batch-not-shuffled", f"{back.name} batch loaded into the shoe",
                f"a shuffled and counted {back.name} batch from the shuffler; it is "
                f"{self._place[back].value}",
                "Take the batch out and shuffle it in the shuffler first.")
        self._place[back] = BatchPlace.IN_PLAY
        self._last_in_play = back
        return None

    def card_drawn(self, back: BackColour) -> BatchFault | None:
        """The shoe reported a card with this back colour; it goes to the discard rack after the round."""
        back = self._known(back) if back in self._batches else BackColour(back)
        in_play = self.in_play
        if in_play is None:
            return BatchFault(
                "batch-none-in-play", f"a {back.name}-backed card left the shoe",
                "no card: no batch was loaded into the shoe",
                "Stop dealing; the floorperson checks the shoe.")
        if back != in_play:
            return BatchFault(
                "batch-back-mismatch", f"a {back.name}-backed card left the shoe",
                f"a {in_play.name}-backed card (the batch in play)",
                "Stop dealing: a card of the wrong batch is in the shoe; call a floorperson.")
        self._discard_rack = in_play
        return None

    def shoe_collected(self) -> None:
        """The batch in play was collected from the shoe and the discard rack (end of the shoe)."""
        in_play = self.in_play
        if in_play is not None:
            self._place[in_play] = BatchPlace.OUT
        self._discard_rack = None

    def shuffler_reports(self, held: BackColour | None) -> BatchFault | None:
        """The shuffler said which batch it holds; it must be the one the tracker expects there."""
        expected = self.in_shuffler
        if held == expected:
            return None
        seen = "an empty shuffler" if held is None else f"the shuffler holding the {held.name} batch"
        want = "an empty shuffler" if expected is None else f"the {expected.name} batch in the shuffler"
        return BatchFault("batch-shuffler-mismatch", seen, want,
                          "Check the batch in the shuffler against the table's two batches.")

    # --- persistence ------------------------------------------------------------

    def to_dict(self) -> dict[str, object]:
        """JSON-ready state, so the controller's store can carry it across a restart."""
        return {
            "batches": [b.name for b in self._batches],
            "place": {b.name: p.value for b, p in self._place.items()},
            "discard_rack": self._discard_rack.name if self._discard_rack is not None else None,
            "last_in_play": self._last_in_play.name if self._last_in_play is not None else None,
        }

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> BatchTracker:
        first, second = (BackColour[name] for name in data["batches"])  # type: ignore[attr-defined]
        tracker = cls(first, second)
        places = data["place"]
        assert isinstance(places, dict)
        tracker._place = {BackColour[name]: BatchPlace(value) for name, value in places.items()}
        for attr in ("discard_rack", "last_in_play"):
            name = data.get(attr)
            setattr(tracker, f"_{attr}", BackColour[name] if isinstance(name, str) else None)
        return tracker

    # --- helpers --------------------------------------------------------------

    def _known(self, back: BackColour) -> BackColour:
        if back not in self._batches:
            raise BatchError(
                f"back colour {BackColour(back).name} is not one of this table's batches "
                f"({self._batches[0].name}, {self._batches[1].name})")
        return BackColour(back)

    def _other(self, back: BackColour) -> BackColour:
        return self._batches[1] if back == self._batches[0] else self._batches[0]

    def _find(self, place: BatchPlace) -> BackColour | None:
        for back, where in self._place.items():
            if where is place:
                return back
        return None
