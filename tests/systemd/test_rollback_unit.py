"""systemd/tabled-rollback.service: tabled.service's OnFailure= rolls a pending activation
back with the previous release's own tablectl; `systemd-analyze verify` is silent."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from tests.systemd.test_unit import require_tool, run
from tests.systemd.unitfile import unit_settings

ROOT = Path(__file__).resolve().parents[2]
SERVICE = ROOT / "systemd" / "tabled-rollback.service"
TABLED = ROOT / "systemd" / "tabled.service"


def setting(path: Path, section: str, key: str) -> list[str]:
    return [v for s, k, v in unit_settings(path.read_text()) if s == section and k == key]


def test_a_failed_tabled_starts_the_rollback_with_the_previous_releases_tablectl() -> None:
    assert setting(TABLED, "Unit", "OnFailure") == ["tabled-rollback.service"]
    assert setting(SERVICE, "Service", "Type") == ["oneshot"]
    (command,) = setting(SERVICE, "Service", "ExecStart")
    argv = shlex.split(command)
    assert argv == ["/opt/tabled/previous/venv/bin/tablectl", "software", "rollback",
                    "--automatic", "--restart-command",
                    "/bin/sh -c 'systemctl reset-failed tabled && systemctl restart tabled'"]
    # What tablectl runs as the restart: reset the start limit, then start again.
    assert shlex.split(argv[-1]) == ["/bin/sh", "-c", "systemctl reset-failed tabled && "
                                     "systemctl restart tabled"]


def test_verify_is_silent(tmp_path: Path) -> None:
    tool = require_tool("systemd-analyze")
    stub = tmp_path / "tablectl"
    stub.write_text("#!/bin/sh\nexit 0\n")
    stub.chmod(0o755)
    units = tmp_path / "units"
    units.mkdir()
    text = re.sub(r"/opt/tabled/previous/venv/bin/tablectl(?=\s)", str(stub),
                  SERVICE.read_text())
    (units / SERVICE.name).write_text(text)
    result = run(tool, "verify", "--man=no", "--generators=no", SERVICE.name, cwd=units)
    output = (result.stdout + result.stderr).strip()
    assert output == "", f"systemd-analyze verify said:\n{output}"
    assert result.returncode == 0
