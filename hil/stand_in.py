"""A device with no hardware and no wire: it is up, passes its self-test and reports nothing.

The daemon's tests and benchmarks that exercise the control socket or the store
in-process put it where a driver would be (`Daemon(config, devices={...})`); it
implements `drivers.protocols.Device`, and a test subclasses it to emit events.
"""

from __future__ import annotations

from drivers.protocols import DeviceHealth, Emit, LinkState, SelfTestResult


class StandInDevice:
    """Implements drivers.protocols.Device without hardware."""

    def __init__(self, name: str) -> None:
        self.name = name

    async def start(self, emit: Emit) -> None:
        self.emit = emit

    async def stop(self) -> None:
        pass

    def health(self) -> DeviceHealth:
        return DeviceHealth(self.name, "stand-in", LinkState.UP, "none")

    async def self_test(self) -> SelfTestResult:
        return SelfTestResult(self.name, True, "stand-in")
