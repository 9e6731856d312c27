"""Shared fixtures for firmware_bridge tests: hellos, endpoint pairs, a simulation on a fake clock."""

from __future__ import annotations

import itertools
import os
import random
import tty
from collections.abc import Iterator

import pytest

from firmware_bridge.impairment import ImpairedChannel, Impairments, LinkSimulation
from firmware_bridge.link import LinkEndpoint, LinkTiming, Role
from firmware_bridge.messages import PROTOCOL_VERSION, DeviceKind, Hello

HOST_HELLO = Hello(PROTOCOL_VERSION, DeviceKind.HOST, "PI-0001", "tabled 0.1", 0)
SHOE_HELLO = Hello(PROTOCOL_VERSION, DeviceKind.SHOE, "SHOE-42", "shoe 2.3.1", 0)


@pytest.fixture
def pty_ends() -> Iterator[tuple[int, int, str]]:
    """(master fd, slave fd, slave path) of a pseudo-terminal in raw mode (no echo, no line
    editing: bytes pass untouched); the slave stays open so the master never reads EIO."""
    master, slave = os.openpty()
    tty.setraw(slave)
    try:
        yield master, slave, os.ttyname(slave)
    finally:
        for fd in (master, slave):
            try:
                os.close(fd)
            except OSError:
                pass  # the test closed it: a device that went away


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
