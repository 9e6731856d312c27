"""systemd/tabled.service: `systemd-analyze verify` is silent, the security exposure is <= 2.0,
and the unit agrees with the other deployment files.

The systemd-analyze checks skip with a reason where the tool is missing, except
under CI=true, where a missing tool is a failure: the gate must not pass by
being skipped.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from controller.watchdog import DEFAULT_PINGS_PER_INTERVAL
from tests.systemd.unitfile import UNIT, value, values

ROOT = Path(__file__).resolve().parents[2]
SYSUSERS = ROOT / "systemd" / "tabled.sysusers"
MODULES = ROOT / "systemd" / "tabled-modules.conf"
INSTALLED_EXECUTABLE = "/opt/tabled/.venv/bin/tabled"
EXPOSURE_LIMIT = 2.0  # issue 12: 2.0 or better (1.3 measured with systemd 252)
TOOL_TIMEOUT_S = 30
# Groups every Debian system has (base-passwd); others must come from tabled.sysusers.
DEBIAN_STATIC_GROUPS = {"dialout", "plugdev"}


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"true", "1", "yes"}


def require_tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        if in_ci():
            pytest.fail(f"{name} is not installed, and CI=true requires this check "
                        f"(install the systemd package)")
        pytest.skip(f"{name} is not installed; this check is mandatory when CI=true")
    return path


def run(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SYSTEMD_")}
    env["SYSTEMD_PAGER"] = ""
    return subprocess.run(argv, capture_output=True, text=True, timeout=TOOL_TIMEOUT_S,
                          env=env, cwd=cwd, check=False)


# --- systemd-analyze ---------------------------------------------------------------

@pytest.fixture
def verifiable_unit(tmp_path: Path) -> Path:
    """A copy of the unit whose ExecStart points at a stub executable.

    `systemd-analyze verify` insists that ExecStart's binary exists, and on a
    build machine /opt/tabled is not installed. (`--root=` would need a whole
    OS tree with systemd's own units in it.) So only that path is rewritten,
    to an executable stub under tmp_path; every other line is verified as
    shipped, and test_verify_as_shipped_only_misses_the_executable proves the
    rewrite hides nothing else.
    """
    stub = tmp_path / "opt" / "tabled" / ".venv" / "bin" / "tabled"
    stub.parent.mkdir(parents=True)
    stub.write_text("#!/bin/sh\nexit 0\n")
    stub.chmod(0o755)
    text = UNIT.read_text()
    pattern = re.compile(r"^(ExecStart=)" + re.escape(INSTALLED_EXECUTABLE) + r"(?=\s)", re.M)
    copied, count = pattern.subn(lambda m: m.group(1) + str(stub), text)
    assert count == 1, "ExecStart= no longer starts with " + INSTALLED_EXECUTABLE
    unit = tmp_path / "unit" / UNIT.name
    unit.parent.mkdir()
    unit.write_text(copied)
    return unit


def verify(unit: Path) -> subprocess.CompletedProcess[str]:
    tool = require_tool("systemd-analyze")
    # --man=no: don't look up man: pages (the unit's Documentation= is a file:
    # URL, and build machines often lack man-db). --generators=no: don't run
    # the host's unit generators, which can print about the host (fstab,
    # crypttab), not about this unit. Users and groups are not checked by
    # systemd 252's verify, so tabled/gpio need not exist on the build machine.
    return run(tool, "verify", "--man=no", "--generators=no", str(unit), cwd=unit.parent)


def test_verify_is_silent(verifiable_unit: Path) -> None:
    result = verify(verifiable_unit)
    output = (result.stdout + result.stderr).strip()
    assert output == "", f"systemd-analyze verify said:\n{output}"
    assert result.returncode == 0


def test_verify_as_shipped_only_misses_the_executable() -> None:
    result = verify(UNIT)
    lines = [line for line in (result.stdout + result.stderr).splitlines() if line.strip()]
    if Path(INSTALLED_EXECUTABLE).exists():
        assert lines == []
    else:
        assert lines, "verify should notice the missing executable"
        assert all(f"Command {INSTALLED_EXECUTABLE} is not executable" in line for line in lines), \
            "\n".join(lines)


def test_security_exposure_is_at_most_2_0(record_property: object) -> None:
    tool = require_tool("systemd-analyze")
    help_text = run(tool, "security", "--help").stdout
    argv = [tool, "security", "--offline=true", "--no-pager"]
    if "--threshold=" in help_text:
        # --threshold is on the 0..100 scale of the internal score (2.5 -> 25).
        argv.append(f"--threshold={round(EXPOSURE_LIMIT * 10)}")
    result = run(*argv, str(UNIT), cwd=UNIT.parent)
    match = re.search(r"Overall exposure level for tabled\.service:\s*([0-9.]+)", result.stdout)
    assert match, f"no exposure line in:\n{result.stdout}\n{result.stderr}"
    exposure = float(match.group(1))
    record_property("systemd_exposure", exposure)  # type: ignore[operator]
    assert exposure <= EXPOSURE_LIMIT, result.stdout
    assert result.returncode == 0, result.stdout + result.stderr


def test_sysusers_snippet_creates_the_user_and_gpio_group(tmp_path: Path) -> None:
    tool = require_tool("systemd-sysusers")
    etc = tmp_path / "etc"
    etc.mkdir()
    (etc / "passwd").write_text("root:x:0:0:root:/root:/bin/sh\n")
    (etc / "group").write_text("root:x:0:\ndialout:x:20:\nplugdev:x:46:\n")
    result = run(tool, "--dry-run", f"--root={tmp_path}", str(SYSUSERS))
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert f"{SYSUSERS}:" not in output, output  # no "<file>:<line>: ..." parse complaints
    assert "Creating user 'tabled'" in output
    assert "Creating group 'gpio'" in output
    assert "Creating group 'tabled-dealer'" in output
    assert "Creating group 'tabled-tech'" in output


def test_sysusers_ships_the_groups_the_access_defaults_name() -> None:
    from controller.access import AccessConfig

    created = {line.split()[1] for line in SYSUSERS.read_text().splitlines()
               if line.strip() and not line.startswith("#") and line.split()[0] in {"u", "g"}}
    defaults = AccessConfig()
    # u creates a group of the same name (tabled): the read role's group
    assert {defaults.read_group, defaults.dealer_group, defaults.technician_group} <= created


def test_descriptors_cover_the_connection_cap() -> None:
    from controller.access import AccessConfig

    # every connection is a descriptor; the daemon refuses past its cap before the kernel does
    assert int(value("LimitNOFILE")) >= 2 * AccessConfig().max_connections


# --- the unit's content and its agreement with the other files -------------------------

def test_notify_service_with_watchdog_and_restart() -> None:
    assert value("Type") == "notify"
    assert value("NotifyAccess") == "main"
    assert value("Restart") == "on-failure"
    assert value("RestartSec")
    assert value("StartLimitIntervalSec", "Unit") and value("StartLimitBurst", "Unit")
    watchdog = value("WatchdogSec")
    assert watchdog.endswith("s") and float(watchdog[:-1]) / DEFAULT_PINGS_PER_INTERVAL >= 1.0


def test_exec_start_is_the_installed_console_script() -> None:
    assert value("ExecStart") == f"{INSTALLED_EXECUTABLE} --config /etc/tabled/table.toml"
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert Path(INSTALLED_EXECUTABLE).name in scripts


def test_directories_and_lgpio_working_directory() -> None:
    assert value("StateDirectory") == "tabled"
    assert value("RuntimeDirectory") == "tabled"
    assert value("RuntimeDirectoryMode") == "0750"  # group tabled reaches the socket
    assert value("StateDirectoryMode") == "0700"  # the store (mystery trigger) is private
    assert value("UMask") == "0077"
    assert value("WorkingDirectory") == "/var/lib/tabled"
    # lgpio's FIFO must land in a directory the service may write
    assert "LG_WD=/run/tabled" in values("Environment")


def test_device_access() -> None:
    assert value("DevicePolicy") == "closed"
    allowed = {entry.split()[0] for entry in values("DeviceAllow")}
    assert allowed == {"char-ttyUSB", "char-ttyACM", "char-usb_device", "char-gpiochip"}
    modules = {line.strip() for line in MODULES.read_text().splitlines()
               if line.strip() and not line.lstrip().startswith("#")}
    assert modules == {"usbserial", "cdc_acm"}  # register the ttyUSB and ttyACM majors


def test_user_and_groups_come_from_sysusers_or_debian() -> None:
    assert value("User") == "tabled" and value("Group") == "tabled"
    groups = set(value("SupplementaryGroups").split())
    assert groups == {"dialout", "plugdev", "gpio"}
    sysusers = [line.split() for line in SYSUSERS.read_text().splitlines()
                if line.strip() and not line.startswith("#")]
    created = {fields[1] for fields in sysusers if fields[0] in {"u", "g"}}
    assert "tabled" in created
    assert groups <= created | DEBIAN_STATIC_GROUPS


def test_deliberately_unset_options_stay_unset() -> None:
    # Both are explained in the unit: PrivateUsers= hides the device groups,
    # ProcSubset=pid hides /proc/device-tree and /proc/cpuinfo from gpiozero.
    assert values("PrivateUsers") == []
    assert values("ProcSubset") == []
    assert values("PrivateDevices") == []  # would hide /dev/ttyUSB*, /dev/gpiochip*


def test_network_is_localhost_only() -> None:
    assert value("IPAddressDeny") == "any"
    assert value("IPAddressAllow") == "localhost"
    assert set(value("RestrictAddressFamilies").split()) == {
        "AF_UNIX", "AF_NETLINK", "AF_INET", "AF_INET6"}


def test_verify_gate_notices_a_broken_unit(verifiable_unit: Path) -> None:
    """The silence above means something: a typo in a key is reported."""
    broken = verifiable_unit.read_text().replace("WatchdogSec=", "WatchdogSecs=")
    verifiable_unit.write_text(broken)
    result = verify(verifiable_unit)
    assert "WatchdogSecs" in result.stdout + result.stderr


def test_bad_configuration_is_not_restarted() -> None:
    from controller.cli import exitcodes

    assert value("RestartPreventExitStatus") == str(exitcodes.BAD_CONFIGURATION)
    try:
        from controller.daemon import EXIT_CONFIG
    except ImportError as exc:
        pytest.skip(f"controller.daemon not importable here ({exc}); checked against tablectl only")
    assert value("RestartPreventExitStatus") == str(EXIT_CONFIG)


MDWE_PROBE = r"""
import ctypes, sys
PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN = 65, 1
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN, 0, 0, 0) != 0:
    sys.exit(77)  # kernel older than 6.3: no PR_SET_MDWE
import asyncio, sqlite3, serial, usb.core, gpiozero, structlog, transitions
callback = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)(lambda x: x * 2)
assert callback(21) == 42
db = sqlite3.connect(":memory:")
db.execute("create table t (x)")
assert asyncio.run(asyncio.sleep(0, result=7)) == 7
print("ok")
"""


def test_python_stack_runs_without_writable_executable_memory() -> None:
    """What MemoryDenyWriteExecute=yes forbids, enforced by the kernel's PR_SET_MDWE
    (the same rule systemd installs as a seccomp filter): CPython, sqlite3, the
    device libraries and a ctypes callback still work."""
    import sys

    result = subprocess.run([sys.executable, "-c", MDWE_PROBE], capture_output=True, text=True,
                            timeout=TOOL_TIMEOUT_S, check=False)
    if result.returncode == 77:
        pytest.skip("kernel has no PR_SET_MDWE (Linux < 6.3)")
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr
