"""The progressive table game system (605a.7; linked across tables, 605a.8).

Pure decisions in `core`, the SQLite ledger in `ledger`, the shared PostgreSQL
ledger in `linked`, the MQTT display feed in `mqtt`, and the facade the table
calls in `system`. Design and protocols: docs/progressive.md.
"""

from __future__ import annotations

from controller.progressive.config import (
    LevelSpec, ProgressiveConfig, ProgressiveSpec, load_progressive_config,
    parse_progressive_config,
)
from controller.progressive.core import Acceptance, accept_progressive_wagers
from controller.progressive.errors import (
    AwardError, LinkDown, MeterError, ProgressiveConfigError, ProgressiveError,
)
from controller.progressive.ledger import Award, verify_meters
from controller.progressive.system import ProgressiveSystem

__all__ = [
    "Acceptance", "Award", "AwardError", "LevelSpec", "LinkDown", "MeterError",
    "ProgressiveConfig", "ProgressiveConfigError", "ProgressiveError", "ProgressiveSpec",
    "ProgressiveSystem", "accept_progressive_wagers", "load_progressive_config",
    "parse_progressive_config", "verify_meters",
]
