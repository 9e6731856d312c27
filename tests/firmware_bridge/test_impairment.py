"""Two LinkEndpoints over impaired channels on a fake clock: every message arrives exactly once, in order.

Impairments: one byte at a time, random splits, loss, duplication,
corruption, garbage, delay and jitter, alone and together, in both directions,
plus device reboots in the middle of a stream.  No test sleeps: the
simulation jumps the fake clock to the next deadline.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from firmware_bridge.errors import LinkBusyError, LinkDownError
from firmware_bridge.impairment import Impairments, LinkSimulation
from firmware_bridge.link import (
    LinkDown,
    LinkEndpoint,
    LinkState,
    MessageAcked,
    MessageReceived,
    Role,
)
from firmware_bridge.messages import CardDrawn, Message, ShowPrompt

from .conftest import SHOE_HELLO, make_pair

pytestmark = pytest.mark.timeout(60)


def cards(n: int) -> list[Message]:
    return [CardDrawn(i, i % 13 + 1, i % 4, i % 4, i % 7 == 0) for i in range(n)]


def prompts(n: int) -> list[Message]:
    return [ShowPrompt(f"prompt {i} " + "x" * (i % 200)) for i in range(n)]


def both_up(sim: LinkSimulation) -> bool:
    return sim.a.state is LinkState.UP and sim.b.state is LinkState.UP


def exchange(sim: LinkSimulation, to_host: list[Message], to_device: list[Message],
             timeout: float = 600) -> dict[str, dict[int, int]]:
    """Stream both lists at once, feeding the send queues as they drain (a side sends only
    while UP); the stream ends when every message was sent and each side has accounted for
    each of its tickets, acknowledged or, on a channel bad enough to end a session, reported
    unconfirmed by a LinkDown (docs/protocol.md 5.6: no valid frame for SILENCE_TIMEOUT
    fails the link). Returns, per side, the index each ticket was sent for."""
    pending = {"a": list(range(len(to_device))), "b": list(range(len(to_host)))}
    messages = {"a": to_device, "b": to_host}
    sent: dict[str, dict[int, int]] = {"a": {}, "b": {}}

    def feed() -> None:
        for name, endpoint in (("a", sim.a), ("b", sim.b)):
            queue = pending[name]
            while queue and endpoint.state is LinkState.UP:
                try:
                    ticket = endpoint.send(messages[name][queue[0]], sim.now)
                except LinkBusyError:
                    break
                sent[name][ticket] = queue.pop(0)

    def done() -> bool:
        feed()
        return not pending["a"] and not pending["b"] and all(
            set(acked(events)) | unconfirmed(events) == set(sent[name])
            for name, events in (("a", sim.events_a), ("b", sim.events_b)))

    assert sim.run_until(done, timeout=timeout), (sim.a.state, sim.b.state,
                                                    sim.a.counters, sim.b.counters)
    return sent


def acked(events: Sequence[object]) -> list[int]:
    return [e.ticket for e in events if isinstance(e, MessageAcked)]


def unconfirmed(events: Sequence[object]) -> set[int]:
    return {u.ticket for e in events if isinstance(e, LinkDown) for u in e.unconfirmed}


def received(events: Sequence[object]) -> list[Message]:
    return [e.message for e in events if isinstance(e, MessageReceived)]


SCENARIOS = {
    "byte_at_a_time": Impairments(byte_at_a_time=True),
    "random_splits": Impairments(random_splits=True),
    "loss_15pc": Impairments(loss=0.15, random_splits=True),
    "duplication_30pc": Impairments(duplicate=0.3),
    "corruption_15pc": Impairments(corrupt=0.15, random_splits=True),
    "garbage_20pc": Impairments(garbage=0.2),
    "delay_and_jitter": Impairments(delay=0.03, jitter=0.05),
    "everything": Impairments(loss=0.08, duplicate=0.08, corrupt=0.08, garbage=0.05,
                              delay=0.01, jitter=0.02, random_splits=True),
}


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_exactly_once_in_order_under_impairment(name: str) -> None:
    sim = make_pair(SCENARIOS[name], seed=zlib.crc32(name.encode()) % 1000)
    sim.a.connect(sim.now)
    assert sim.run_until(lambda: both_up(sim), timeout=60)
    to_host, to_device = cards(60), prompts(25)
    exchange(sim, to_host, to_device)
    assert received(sim.events_a) == to_host
    assert received(sim.events_b) == to_device
    assert not [e for e in sim.events_a + sim.events_b if isinstance(e, LinkDown)]


def test_impairments_are_actually_exercised() -> None:
    sim = make_pair(SCENARIOS["everything"], seed=7)
    sim.a.connect(sim.now)
    sim.run_until(lambda: both_up(sim), timeout=60)
    exchange(sim, cards(80), prompts(20))
    assert (len(acked(sim.events_a)), len(acked(sim.events_b))) == (20, 80)  # every one
    totals = {k: sim.a.counters.as_dict()[k] + sim.b.counters.as_dict()[k]
              for k in ("crc_errors", "resyncs", "retransmits", "duplicates", "timeouts",
                        "naks_sent")}
    assert all(v > 0 for v in totals.values()), totals


def check_accounted(sim: LinkSimulation, sent: dict[str, dict[int, int]],
                    to_host: list[Message], to_device: list[Message]) -> None:
    """At most once and in order on each side; every ticket acknowledged or unconfirmed,
    never both; every acknowledged message received; and exactly once when no session
    ended."""
    for name, events, peer_events, messages in (
            ("a", sim.events_a, sim.events_b, to_device),
            ("b", sim.events_b, sim.events_a, to_host)):
        got_acked, lost = acked(events), unconfirmed(events)
        assert len(got_acked) == len(set(got_acked)), f"{name}: a ticket acknowledged twice"
        assert not set(got_acked) & lost, f"{name}: a ticket both acknowledged and unconfirmed"
        assert set(got_acked) | lost == set(sent[name])
        positions = [messages.index(m) for m in received(peer_events)]
        assert positions == sorted(set(positions)), f"{name}'s messages repeated or reordered"
        assert {sent[name][t] for t in got_acked} <= set(positions)
    ended = [e for e in sim.events_a + sim.events_b if isinstance(e, LinkDown)]
    if not ended:
        assert received(sim.events_a) == to_host
        assert received(sim.events_b) == to_device


# The channel hypothesis found (seed 463): a bit flip in a frame's closing delimiter joined
# it to the next frame, which was then lost with it, so a side that sends one keepalive a
# second went three seconds without a valid frame, and the link failed as 5.6 requires.
# Since a frame after a quiet line opens with a delimiter (link.QUIET_LINE) it ends none.
DELIMITER_FLIPPED = dict(seed=463, loss=0.0625, duplicate=0.0625, corrupt=0.0625,
                         jitter=0.046875, byte_at_a_time=True)
# A channel twice as bad (12 % of writes lost, 12 % corrupted) that still ends a session:
# the accounting, not exactly-once, is what holds then.
SESSIONS_END = dict(seed=348, loss=0.12, duplicate=0.0625, corrupt=0.12,
                    jitter=0.046875, byte_at_a_time=True)


def stream_over(seed: int, *, byte_at_a_time: bool, **channel: float
                ) -> tuple[LinkSimulation, dict[str, dict[int, int]], list[Message],
                           list[Message]]:
    """25 cards to the host and 8 prompts to the device over a channel of these impairments
    (whole writes split at random unless one byte at a time), once both sides are UP: the
    simulation, each side's tickets (`exchange`) and the two lists."""
    imp = Impairments(byte_at_a_time=byte_at_a_time, random_splits=not byte_at_a_time,
                      **channel)
    sim = make_pair(imp, seed=seed)
    sim.a.connect(sim.now)
    assert sim.run_until(lambda: both_up(sim), timeout=120)
    to_host, to_device = cards(25), prompts(8)
    return sim, exchange(sim, to_host, to_device), to_host, to_device


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    loss=st.floats(0, 0.12), duplicate=st.floats(0, 0.3), corrupt=st.floats(0, 0.12),
    jitter=st.floats(0, 0.05), byte_at_a_time=st.booleans(),
)
@example(**SESSIONS_END)
@example(**DELIMITER_FLIPPED)
def test_exactly_once_property(seed: int, loss: float, duplicate: float, corrupt: float,
                               jitter: float, byte_at_a_time: bool) -> None:
    """Any channel of these: every message is accounted for, received at most once and in
    order, and exactly once while no session ends (the fixed scenarios above end none)."""
    sim, sent, to_host, to_device = stream_over(
        seed, loss=loss, duplicate=duplicate, corrupt=corrupt, jitter=jitter,
        byte_at_a_time=byte_at_a_time)
    check_accounted(sim, sent, to_host, to_device)


def test_sessions_that_end_on_a_bad_channel_lose_nothing_unaccounted() -> None:
    """The channel of SESSIONS_END does end sessions (so the accounting's branch runs), and
    each side's tickets come out as the core reported them."""
    sim, sent, to_host, to_device = stream_over(**SESSIONS_END)
    check_accounted(sim, sent, to_host, to_device)
    # The device's session ends on silence with its last nine cards unconfirmed, four of
    # which the host did receive: "unconfirmed" says the sender cannot know, not that it
    # was lost.
    assert [e.reason for e in sim.events_b if isinstance(e, LinkDown)] == [
        "peer silent for 3.0 s"]
    assert (len(acked(sim.events_b)), len(unconfirmed(sim.events_b))) == (16, 9)
    assert {sent["b"][t] for t in unconfirmed(sim.events_b)} == set(range(16, 25))
    assert received(sim.events_a) == to_host[:20]
    assert (len(acked(sim.events_a)), received(sim.events_b)) == (8, to_device)


def test_a_corrupted_delimiter_no_longer_ends_the_session() -> None:
    """DELIMITER_FLIPPED's channel ended the device's session on silence, its last card
    unconfirmed: a closing delimiter flipped joined a frame to the next. The next frame
    now opens with a delimiter of its own after a quiet line, and nothing is lost."""
    sim, _, to_host, to_device = stream_over(**DELIMITER_FLIPPED)
    assert [e for e in sim.events_a + sim.events_b if isinstance(e, LinkDown)] == []
    assert (received(sim.events_a), received(sim.events_b)) == (to_host, to_device)
    assert (len(acked(sim.events_b)), len(acked(sim.events_a))) == (25, 8)


@pytest.mark.parametrize("seed", range(4))
def test_device_reboot_mid_stream_never_duplicates(seed: int) -> None:
    """Reboot the device while messages flow: each message is delivered at most once, in
    order, and every message is either acknowledged or reported unconfirmed, never both."""
    imp = Impairments(loss=0.05, duplicate=0.1, random_splits=True, jitter=0.01)
    sim = make_pair(imp, seed=seed)
    sim.a.connect(sim.now)
    assert sim.run_until(lambda: both_up(sim), timeout=60)
    to_device = prompts(40)
    sent: list[tuple[int, Message]] = []
    reboot_after = 10 + seed * 5
    rebooted = False
    index = 0
    received_by_device: list[Message] = []
    while index < len(to_device) or sim.a.unconfirmed():
        if sim.now > 600:
            pytest.fail("did not finish")
        if sim.a.state is LinkState.UP and index < len(to_device):
            try:
                sent.append((sim.a.send(to_device[index], sim.now), to_device[index]))
                index += 1
            except LinkBusyError:
                pass
        if not rebooted and index >= reboot_after:
            rebooted = True
            received_by_device += received(sim.events_b)
            sim.events_b.clear()
            sim.b = LinkEndpoint(Role.DEVICE, SHOE_HELLO, session_ids=lambda: 0xD00D + seed)
            sim.b.connect(sim.now)
        sim.step()
    received_by_device += received(sim.events_b)
    confirmed, lost = set(acked(sim.events_a)), unconfirmed(sim.events_a)
    tickets = {t for t, _ in sent}
    assert confirmed | lost == tickets
    assert not confirmed & lost
    # at most once, in order: the received list is a subsequence of what was sent, no repeats
    assert lost or seed != 0  # seed 0 reboots with frames in flight
    positions = [to_device.index(m) for m in received_by_device]
    assert positions == sorted(set(positions))
    for ticket, message in sent:
        if ticket in confirmed:
            assert message in received_by_device


def test_send_after_failure_raises_link_down() -> None:
    sim = make_pair()
    sim.a.connect(sim.now)
    sim.run_until(lambda: both_up(sim), timeout=10)
    sim.a_to_b.impairments.loss = sim.b_to_a.impairments.loss = 1.0
    sim.run_until(lambda: sim.a.state is LinkState.FAILED, timeout=20)
    with pytest.raises(LinkDownError):
        sim.a.send(ShowPrompt("x"), sim.now)
    # the cable comes back and the driver reconnects
    sim.a_to_b.impairments.loss = sim.b_to_a.impairments.loss = 0.0
    sim.a.connect(sim.now)
    assert sim.run_until(lambda: both_up(sim), timeout=10)
