"""systemd/tabled-verify.{service,timer}: the daily full critical-memory check.

`systemd-analyze verify` must be silent (executables stubbed, as for tabled.service), the
service must run exactly `tablectl events verify --full` against the daemon's socket as
the daemon's user, and only while tabled runs.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.systemd.test_unit import require_tool, run
from tests.systemd.unitfile import unit_settings

ROOT = Path(__file__).resolve().parents[2]
SERVICE = ROOT / "systemd" / "tabled-verify.service"
TIMER = ROOT / "systemd" / "tabled-verify.timer"


def setting(path: Path, section: str, key: str) -> list[str]:
    return [v for s, k, v in unit_settings(path.read_text()) if s == section and k == key]


def test_the_service_runs_the_full_check_through_the_daemon() -> None:
    assert setting(SERVICE, "Service", "ExecStart") == [
        "/opt/tabled/.venv/bin/tablectl events verify --full --socket /run/tabled/control.sock"]
    assert setting(SERVICE, "Service", "Type") == ["oneshot"]
    assert setting(SERVICE, "Service", "User") == ["tabled"]
    assert setting(SERVICE, "Unit", "Requisite") == ["tabled.service"]


def test_the_timer_runs_daily_and_catches_up() -> None:
    assert setting(TIMER, "Timer", "OnCalendar") == ["*-*-* 06:00:00"]
    assert setting(TIMER, "Timer", "Persistent") == ["yes"]
    assert setting(TIMER, "Install", "WantedBy") == ["timers.target"]


def test_verify_is_silent(tmp_path: Path) -> None:
    tool = require_tool("systemd-analyze")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("tablectl", "tabled"):
        stub = bin_dir / name
        stub.write_text("#!/bin/sh\nexit 0\n")
        stub.chmod(0o755)
    units = tmp_path / "units"
    units.mkdir()
    for source in (SERVICE, TIMER, ROOT / "systemd" / "tabled.service"):
        text = re.sub(r"/opt/tabled/\.venv/bin/(tablectl|tabled)(?=\s)",
                      lambda m: str(bin_dir / m.group(1)), source.read_text())
        (units / source.name).write_text(text)
    result = run(tool, "verify", "--man=no", "--generators=no", "tabled-verify.service",
                 "tabled-verify.timer", cwd=units)
    output = (result.stdout + result.stderr).strip()
    assert output == "", f"systemd-analyze verify said:\n{output}"
    assert result.returncode == 0
