"""Two-batch alternation, 681a.3(b)."""

from __future__ import annotations

import pytest

from cards import BackColour
from controller.rules.batches import BatchError, BatchPlace, BatchTracker

RED, BLUE, GREEN = BackColour.RED, BackColour.BLUE, BackColour.GREEN


def _table_in_play() -> BatchTracker:
    """RED in play, BLUE shuffled in the shuffler: the steady state of 681a.3(b)(3)."""
    tracker = BatchTracker(RED, BLUE)
    assert tracker.shuffler_loaded(RED) is None
    assert tracker.shuffle_complete(RED, verified=True) is None
    assert tracker.shoe_loaded(RED) is None
    assert tracker.shuffler_loaded(BLUE) is None
    assert tracker.shuffle_complete(BLUE, verified=True) is None
    return tracker


def test_681a_3_b_2_batches_must_have_different_back_colours() -> None:
    with pytest.raises(BatchError, match="681a.3\\(b\\)\\(2\\)"):
        BatchTracker(RED, RED)


def test_681a_3_b_3_one_batch_in_play_while_the_other_is_shuffled() -> None:
    tracker = _table_in_play()
    assert tracker.in_play is RED
    assert tracker.in_shuffler is BLUE
    assert tracker.place(BLUE) is BatchPlace.SHUFFLED
    assert tracker.shuffler_reports(BLUE) is None


def test_681a_3_b_4_batches_alternate_every_shoe() -> None:
    tracker = _table_in_play()
    assert tracker.card_drawn(RED) is None
    tracker.shoe_collected()
    assert tracker.next_to_play is BLUE
    assert tracker.shoe_loaded(BLUE) is None
    assert tracker.shuffler_loaded(RED) is None
    assert tracker.shuffle_complete(RED, verified=True) is None
    tracker.shoe_collected()
    # Loading BLUE again would skip the alternation.
    fault = tracker.shoe_loaded(BLUE)
    assert fault is not None and fault.code == "batch-not-alternated"
    assert fault.expected == "the RED batch (681a.3(b)(4): batches alternate every shoe)"
    assert tracker.shoe_loaded(RED) is None


def test_shoe_back_colour_must_match_the_batch_in_play() -> None:
    tracker = _table_in_play()
    fault = tracker.card_drawn(BLUE)
    assert fault is not None
    assert fault.code == "batch-back-mismatch"
    assert fault.detail == "saw a BLUE-backed card left the shoe; expected a RED-backed card (the batch in play)"
    foreign = tracker.card_drawn(GREEN)
    assert foreign is not None and foreign.seen == "a GREEN-backed card left the shoe"


def test_681a_3_b_5_only_one_batch_in_the_discard_rack() -> None:
    tracker = _table_in_play()
    assert tracker.card_drawn(RED) is None
    assert tracker.discard_rack is RED
    # The shoe was emptied but the rack was not: the other batch may not be dealt yet.
    tracker._place[RED] = BatchPlace.OUT  # shoe emptied by hand, rack forgotten
    fault = tracker.shoe_loaded(BLUE)
    assert fault is not None and fault.code == "batch-discard-rack-occupied"
    assert fault.expected == "an empty discard rack, but it holds RED cards"
    tracker.shoe_collected()
    assert tracker.discard_rack is None
    assert tracker.shoe_loaded(BLUE) is None


def test_a_miscounted_batch_may_not_be_dealt() -> None:
    tracker = BatchTracker(RED, BLUE)
    tracker.shuffler_loaded(RED)
    fault = tracker.shuffle_complete(RED, verified=False)
    assert fault is not None and fault.code == "batch-count-failed"
    refused = tracker.shoe_loaded(RED)
    assert refused is not None and refused.code == "batch-not-shuffled"


def test_shuffler_holding_the_wrong_batch_is_a_fault() -> None:
    tracker = _table_in_play()
    fault = tracker.shuffler_reports(RED)
    assert fault is not None
    assert fault.detail == "saw the shuffler holding the RED batch; expected the BLUE batch in the shuffler"
    assert tracker.shuffler_reports(None) is not None


def test_second_batch_into_an_occupied_shuffler_is_a_fault() -> None:
    tracker = BatchTracker(RED, BLUE)
    tracker.shuffler_loaded(RED)
    fault = tracker.shuffler_loaded(BLUE)
    assert fault is not None and fault.code == "batch-shuffler-occupied"


def test_unknown_colour_is_a_programming_error() -> None:
    tracker = BatchTracker(RED, BLUE)
    with pytest.raises(BatchError, match="GREEN is not one of this table's batches"):
        tracker.shuffler_loaded(GREEN)


def test_the_tracker_round_trips_through_its_dict_681a_3_b():
    tracker = BatchTracker(BackColour.RED, BackColour.BLUE)
    assert tracker.shuffler_loaded(BackColour.RED) is None
    assert tracker.shuffle_complete(BackColour.RED, True) is None
    assert tracker.shoe_loaded(BackColour.RED) is None
    assert tracker.card_drawn(BackColour.RED) is None
    assert tracker.shuffler_loaded(BackColour.BLUE) is None
    copy = BatchTracker.from_dict(tracker.to_dict())
    assert copy.to_dict() == tracker.to_dict() == {
        "batches": ["RED", "BLUE"], "place": {"RED": "in-play", "BLUE": "shuffler"},
        "discard_rack": "RED", "last_in_play": "RED"}
    assert (copy.in_play, copy.in_shuffler, copy.discard_rack) == (
        BackColour.RED, BackColour.BLUE, BackColour.RED)
