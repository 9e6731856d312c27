"""What the README's demo commands install is what they import.

`./run-simulated-table` sets up a real witness on the local PostgreSQL and `./run-pit`
linked progressives and an MQTT feed besides, so both need the PostgreSQL and MQTT clients,
which the daemon's own dependencies leave out. Until 2026-12-07 both installed only those,
and on a fresh clone with PostgreSQL answering both stopped on `No module named 'psycopg'`
(a checkout whose tests had run had it from the test extra). They install the `simulated`
extra now; scripts/venv.sh lets a test install stand in for it, since the test extra holds
every one of its lines.
"""

from __future__ import annotations

import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

import pytest

import hil.pit
from hil.witness_sim import CLIENTS, clients_missing

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
EXTRAS = PROJECT["optional-dependencies"]


def _installed_extra(script: str) -> str:
    calls = re.findall(r"^ensure_venv (\S*)$", (ROOT / script).read_text(encoding="utf-8"), re.M)
    assert len(calls) == 1, f"{script}: {calls}"
    return calls[0]


def _distribution(requirement: str) -> str:
    return re.split(r"[\[<>=!~; ]", requirement, maxsplit=1)[0]


def _name(distribution: str) -> str:
    return re.sub(r"[-_.]+", "-", distribution).lower()


def modules_only_the_tests_install() -> list[str]:
    """The modules of the packages only the test extra installs (neither the daemon's
    dependencies nor the `simulated` extra): what a fresh clone's ./run-simulated-table does
    not have. hil/test_run_newcomer.py runs the demo with each of them refused."""
    others = {_name(_distribution(r)) for r in [*PROJECT["dependencies"], *EXTRAS["simulated"]]}
    only = {_name(_distribution(r)) for r in EXTRAS["test"]} - others
    return sorted(module for module, distributions in
                  importlib.metadata.packages_distributions().items()
                  if module.isidentifier() and not module.startswith("_")
                  and any(_name(d) in only for d in distributions))


def test_the_test_extras_own_modules_are_known() -> None:
    """What the demo is run without (hil/test_run_newcomer.py): atheris and playwright are
    there only on the platforms that have their wheels."""
    expected = {"atheris", "atheris_no_libfuzzer", "hypothesis", "mypy", "mypyc", "playwright",
                "prometheus_client", "py", "pytest", "pytest_asyncio", "pytest_timeout", "ruff",
                "xdist"}
    found = set(modules_only_the_tests_install())
    assert {"pytest", "hypothesis", "mypy", "ruff", "prometheus_client"} <= found <= expected
    assert not {"psycopg", "paho", "cryptography", "serial", "gpiozero"} & found


def test_the_demo_commands_install_the_simulated_extra() -> None:
    assert [_installed_extra(s) for s in ("run-simulated-table", "run-pit", "run-tests")] == [
        "simulated", "simulated", "test"]


def test_the_simulated_extra_holds_each_client_the_simulated_services_import() -> None:
    assert sorted({_distribution(r) for r in EXTRAS["simulated"]}) == ["paho-mqtt", "psycopg"]
    assert sorted(distribution for distribution, _ in CLIENTS.values()) == [
        "paho-mqtt", "psycopg"]
    # psycopg-binary has wheels for x86_64 and aarch64 only: elsewhere (32-bit Raspberry Pi
    # OS) the pure-Python psycopg. The two markers never hold together.
    psycopg = [r for r in EXTRAS["simulated"] if _distribution(r) == "psycopg"]
    assert psycopg == [
        "psycopg[binary]>=3.1; platform_machine == 'x86_64' or platform_machine == 'aarch64'",
        "psycopg>=3.1; platform_machine != 'x86_64' and platform_machine != 'aarch64'"]


def test_the_test_extra_holds_every_line_of_the_simulated_one() -> None:
    """scripts/venv.sh takes a test install for a simulated one."""
    assert [r for r in EXTRAS["simulated"] if r not in EXTRAS["test"]] == []


def test_a_client_that_does_not_import_is_named_with_what_installs_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert clients_missing("psycopg", "paho.mqtt.client") is None  # the test extra has both
    monkeypatch.setitem(sys.modules, "paho.mqtt.client", None)  # an import of it fails
    assert clients_missing("psycopg", "paho.mqtt.client") == (
        "paho-mqtt, the MQTT client, cannot be imported (import of paho.mqtt.client halted; "
        "None in sys.modules); the simulated tables' extra installs it: .venv/bin/pip install "
        "-e '.[simulated]'")


def test_run_pit_without_its_clients_stops_before_starting_anything(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)
    monkeypatch.setattr(hil.pit, "plan_from", lambda _: pytest.fail("the pit was planned"))
    assert hil.pit.main([]) == 2
    assert capsys.readouterr().err == (
        "run-pit: psycopg, the PostgreSQL client, cannot be imported (import of psycopg "
        "halted; None in sys.modules); the simulated tables' extra installs it: "
        ".venv/bin/pip install -e '.[simulated]'\n")
