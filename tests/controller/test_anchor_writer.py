"""The anchor leaves the event loop: newest wins, at most one write per interval, the last at close."""

from __future__ import annotations

import threading

import pytest

from controller.memory.anchor import AnchorWriter


class SlowDisk:
    """Records the anchors written; the first write blocks until the test lets it finish."""

    def __init__(self) -> None:
        self.written: list[int] = []
        self.first_started = threading.Event()
        self.release = threading.Event()

    def write(self, anchor: int) -> None:
        if not self.written and not self.first_started.is_set():
            self.first_started.set()
            self.release.wait(10)
        self.written.append(anchor)


def test_steps_during_a_write_are_coalesced_into_one_write_of_the_newest():
    disk = SlowDisk()
    writer = AnchorWriter(disk.write, interval_s=3600)  # no second write before close
    writer.submit(1)
    assert disk.first_started.wait(10)
    for commit in range(2, 50):  # 48 durable steps while the first anchor is being written
        writer.submit(commit)
    disk.release.set()
    writer.close()
    assert disk.written == [1, 49]  # the newest, once, at close
    assert writer.writes == 2


def test_close_with_nothing_pending_writes_nothing_more():
    written: list[int] = []
    writer = AnchorWriter(written.append, interval_s=0.0)
    writer.submit(7)
    writer.close()
    assert written == [7]


def test_a_failed_write_is_logged_and_the_next_anchor_still_written():
    attempts: list[int] = []

    def flaky(anchor: int) -> None:
        attempts.append(anchor)
        if anchor == 1:
            raise OSError(28, "No space left on device")

    writer = AnchorWriter(flaky, interval_s=3600)
    writer.submit(1)
    writer.submit(2)
    writer.close()
    assert attempts[-1] == 2 and writer.writes == 1


def test_a_stopped_writer_refuses_an_anchor_it_would_never_write():
    written: list[int] = []
    writer = AnchorWriter(written.append, interval_s=0.0)
    writer.close()
    with pytest.raises(RuntimeError, match="already stopped"):
        writer.submit(3)
    assert written == []


def test_submits_while_the_writer_waits_out_its_interval_do_not_wake_it():
    """Every durable step submits an anchor; between two writes the writer's thread sleeps
    out its interval, and a step that woke it would only hand it the interpreter's lock to
    find nothing due. The newest anchor is written when the interval is out."""
    written: list[int] = []
    wrote = threading.Event()

    def write(anchor: int) -> None:
        written.append(anchor)
        wrote.set()

    writer = AnchorWriter(write, interval_s=0.5)
    writer.submit(1)
    assert wrote.wait(10)
    wrote.clear()
    notified: list[int] = []
    notify = writer._changed.notify
    writer._changed.notify = lambda n=1: (notified.append(n), notify(n))  # type: ignore[method-assign]
    for commit in range(2, 50):
        writer.submit(commit)
    assert notified == []
    assert wrote.wait(10)  # the interval out: the newest, once
    writer.close()
    assert written == [1, 49]
