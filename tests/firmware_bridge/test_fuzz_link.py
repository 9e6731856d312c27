"""Hostile peers: arbitrary bytes and arbitrary well-formed frames never make an endpoint raise or hang."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from firmware_bridge.frame import MAX_PAYLOAD, Frame, FrameKind
from firmware_bridge.impairment import LinkSimulation
from firmware_bridge.link import LinkState
from firmware_bridge.messages import MESSAGES, encode_message

from .conftest import make_pair
from .test_messages import any_message

pytestmark = pytest.mark.timeout(60)


def _endpoint_in(state: str) -> LinkSimulation:
    sim = make_pair()
    if state != "idle":
        sim.a.connect(sim.now)
    if state == "up":
        sim.run_until(lambda: sim.a.state is LinkState.UP and sim.b.state is LinkState.UP,
                      timeout=5)
    return sim


payloads = st.one_of(
    st.binary(min_size=1, max_size=MAX_PAYLOAD),
    any_message.map(encode_message),
    st.builds(lambda i, rest: bytes([i]) + rest, st.sampled_from(sorted(MESSAGES)),
              st.binary(max_size=30)),
)
hostile_frames = st.one_of(
    st.builds(Frame, st.just(FrameKind.DATA), st.integers(0, 255), st.integers(0, 255), payloads),
    st.builds(Frame, st.sampled_from([FrameKind.ACK, FrameKind.NAK]), st.integers(0, 255),
              st.integers(0, 255)),
    st.builds(Frame, st.sampled_from([FrameKind.RESET, FrameKind.RESET_ACK]), st.just(0),
              st.just(0), st.binary(min_size=4, max_size=4)),
)


@pytest.mark.parametrize("state", ["idle", "resetting", "up"])
@settings(max_examples=40, deadline=None)
@given(chunks=st.lists(st.one_of(st.binary(max_size=120),
                                 hostile_frames.map(Frame.encode)), max_size=12),
       step=st.floats(0, 2))
def test_endpoint_survives_anything(state: str, chunks: list[bytes], step: float) -> None:
    sim = _endpoint_in(state)
    endpoint = sim.a
    now = sim.now
    for chunk in chunks:
        now += step
        endpoint.receive(chunk, now)  # must not raise
        endpoint.poll(now)
        endpoint.outgoing()
        endpoint.events()
        deadline = endpoint.next_deadline()
        assert deadline is None or deadline > now  # a timer poll() did not move would spin
    # and it still works afterwards: a clean restart brings the link up
    sim.now = now
    sim.b.connect(now)
    assert sim.run_until(lambda: sim.a.state is LinkState.UP and sim.b.state is LinkState.UP,
                         timeout=10)
