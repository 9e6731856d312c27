"""The harness's event window (hil/event_window.py): a soak keeps the newest events only,
numbered from the run's first, and never answers from history it dropped."""

import pytest

from hil.event_window import EventWindow


def events(n: int, start: int = 1) -> list[dict[str, int]]:
    return [{"seq": seq} for seq in range(start, start + n)]


def test_unbounded_window_is_every_event_in_order():
    window = EventWindow()
    for event in events(5):
        window.append(event)
    assert len(window) == 5
    assert window.dropped == 0
    assert [e["seq"] for e in window] == [1, 2, 3, 4, 5]
    assert window[0] == {"seq": 1}
    assert window[-1] == {"seq": 5}
    assert window[2:] == [{"seq": 3}, {"seq": 4}, {"seq": 5}]


def test_bounded_window_keeps_the_newest_and_counts_every_event():
    window = EventWindow(keep=3)
    for event in events(10):
        window.append(event)
    assert len(window) == 10  # a mark taken before an action stays a valid index
    assert window.dropped == 7
    assert window[-1] == {"seq": 10}
    assert window[7] == {"seq": 8}
    assert window[8:] == [{"seq": 9}, {"seq": 10}]
    assert window[10:] == []  # nothing after the last mark yet


def test_a_mark_survives_appends_as_long_as_the_window_holds_it():
    window = EventWindow(keep=4)
    for event in events(6):
        window.append(event)
    mark = len(window)
    for event in events(3, start=7):
        window.append(event)
    assert [e["seq"] for e in window[mark:]] == [7, 8, 9]


def test_reading_a_dropped_event_is_an_error_not_a_shorter_answer():
    window = EventWindow(keep=3)
    for event in events(10):
        window.append(event)
    with pytest.raises(LookupError, match="event 6 is no longer kept: the window keeps the "
                                          "last 3 of 10; read from 7 on"):
        window[6]
    with pytest.raises(LookupError, match="event 0 is no longer kept"):
        window[0:]
    with pytest.raises(LookupError, match="event 0 is no longer kept"):
        list(window)
    with pytest.raises(IndexError, match="event 10 of 10"):
        window[10]


def test_a_window_of_nothing_is_refused_with_what_is_allowed():
    with pytest.raises(ValueError, match="keep = 0: must be 1 or more, or None"):
        EventWindow(keep=0)
