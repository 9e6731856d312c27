"""Shared fixtures for firmware_bridge tests: hellos, endpoint pairs, a simulation on a fake clock."""

from __future__ import annotations

import itertools
import random

import pytest

from firmware_bridge.impairment import ImpairedChannel, Impairments, LinkSimulation
from firmware_bridge.link import LinkEndpoint, LinkTiming, Role
from firmware_bridge.messages import PROTOCOL_VERSION, DeviceKind, Hello

HOST_HELLO = Hello(PROTOCOL_VERSION, DeviceKind.HOST, "PI-0001", "tabled 0.1", 0)
SHOE_HELLO = Hello(PROTOCOL_VERSION, DeviceKind.SHOE, "SHOE-42", "shoe 2.3.1", 0)


def make_pair(
    impairments: Impairments | None = None,
    seed: int = 0,
    *,
    host_hello: Hello = HOST_HELLO,
    device_hello: Hello = SHOE_HELLO,
    timing: LinkTiming | None = None,
    back_impairments: Impairments | None = None,
    **host_kw: object,
) -> LinkSimulation:
    """Host (a) and device (b) endpoints over impaired channels, with deterministic session ids."""
    rng = random.Random(seed)
    ids = itertools.count(0x1000 + seed * 16)
    host = LinkEndpoint(Role.HOST, host_hello, timing=timing, session_ids=lambda: next(ids), **host_kw)  # type: ignore[arg-type]
    device = LinkEndpoint(Role.DEVICE, device_hello, timing=timing, session_ids=lambda: next(ids))
    imp = impairments or Impairments()
    return LinkSimulation(
        host, device,
        ImpairedChannel(imp, random.Random(rng.random())),
        ImpairedChannel(back_impairments or imp, random.Random(rng.random())),
    )


@pytest.fixture
def sim() -> LinkSimulation:
    return make_pair()
