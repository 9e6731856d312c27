"""systemd/tabledisplay.service: verified and scored by systemd-analyze, and consistent with
the daemon's unit, the console script and its sysusers snippet.

As in test_unit.py, the systemd-analyze checks skip with a reason where the tool is
missing, and fail under CI=true.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from tests.systemd.test_unit import require_tool, run
from tests.systemd.unitfile import UNIT, unit_settings

ROOT = Path(__file__).resolve().parents[2]
DISPLAY_UNIT = ROOT / "systemd" / "tabledisplay.service"
SYSUSERS = ROOT / "systemd" / "tabledisplay.sysusers"
INSTALLED_EXECUTABLE = "/opt/tabled/.venv/bin/tabledisplay"
EXPOSURE_LIMIT = 1.5  # measured 1.2 with systemd 252; the daemon's own limit is 2.0


def setting(key: str, unit: Path = DISPLAY_UNIT) -> list[str]:
    return [v for s, k, v in unit_settings(unit.read_text()) if s == "Service" and k == key]


def test_verify_is_silent(tmp_path: Path) -> None:
    tool = require_tool("systemd-analyze")
    stub = tmp_path / "tabledisplay"
    stub.write_text("#!/bin/sh\nexit 0\n")
    stub.chmod(0o755)
    text = DISPLAY_UNIT.read_text()
    assert text.count("ExecStart=" + INSTALLED_EXECUTABLE + " ") == 1
    unit = tmp_path / "unit" / DISPLAY_UNIT.name
    unit.parent.mkdir()
    unit.write_text(text.replace("ExecStart=" + INSTALLED_EXECUTABLE, f"ExecStart={stub}"))
    result = run(tool, "verify", str(unit))
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_security_exposure_is_low() -> None:
    tool = require_tool("systemd-analyze")
    result = run(tool, "security", "--offline=true", "--no-pager", str(DISPLAY_UNIT))
    match = re.search(r"Overall exposure level for tabledisplay\.service:\s*([0-9.]+)",
                      result.stdout)
    assert match, f"no exposure line in:\n{result.stdout}\n{result.stderr}"
    assert float(match.group(1)) <= EXPOSURE_LIMIT, result.stdout


def test_runs_the_console_script_on_the_daemons_configuration() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["scripts"]["tabledisplay"] == "controller.display.service:main"
    (exec_start,) = setting("ExecStart")
    (daemon_exec,) = setting("ExecStart", UNIT)
    config = daemon_exec.split("--config ", 1)[1].split()[0]
    # No --listen: where it listens is the configuration's [display_service] listen.
    assert exec_start == f"{INSTALLED_EXECUTABLE} --config {config}"
    assert setting("Type") == ["notify"]  # READY=1 once it listens (controller/sdnotify.py)


def test_reads_the_daemon_as_a_member_of_its_group_and_nothing_more() -> None:
    assert setting("User") == ["tabledisplay"]
    assert setting("SupplementaryGroups") == ["tabled"]
    assert "m tabledisplay tabled" in SYSUSERS.read_text().splitlines()
    # No state, no devices, no capabilities, no user namespace that would hide the group.
    assert setting("StateDirectory") == [] and setting("PrivateDevices") == ["yes"]
    assert setting("CapabilityBoundingSet") == [""]
    assert setting("PrivateUsers") == []
    assert setting("RestrictAddressFamilies") == ["AF_UNIX AF_INET AF_INET6"]


def test_never_starves_or_stops_the_daemon() -> None:
    assert int(setting("CPUWeight")[0]) < 100  # below an ordinary service such as tabled
    assert setting("MemoryMax") == ["128M"]
    unit_section = [(k, v) for s, k, v in unit_settings(DISPLAY_UNIT.read_text()) if s == "Unit"]
    assert not [k for k, _ in unit_section if k in ("Requires", "BindsTo", "PartOf")]
