"""Device conformance kit: checks a device (or a simulator) against docs/protocol.md 1.2.

``run_suite(wire, kind, baudrate)`` drives the device through ``wire`` (a serial
port, a USB device, or a simulator on simulated time) with a scripted host
(``prober.Prober``) that sends exact bytes and timestamps everything it hears,
and returns a ``Report`` (JSON and human text) with one verdict per check of
``checks.CHECKS``.  ``tablectl conformance`` is the vendor's front end
(docs/conformance.md).
"""

from __future__ import annotations

from firmware_bridge.conformance.checks import CHECKS, Check
from firmware_bridge.conformance.report import Report, Verdict, run_suite

__all__ = ["CHECKS", "Check", "Report", "Verdict", "run_suite"]
