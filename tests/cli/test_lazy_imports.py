"""tablectl loads only what a command needs: `par-sheet` runs without asyncio or the daemon client."""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from controller import cli

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("module_name", cli._COMMAND_MODULES)
def test_every_command_is_mapped_to_the_module_that_registers_it(module_name):
    parser = argparse.ArgumentParser()
    subparsers = parser.add_subparsers()
    importlib.import_module(module_name).register(subparsers)
    for command in subparsers.choices:
        assert cli.COMMAND_MODULE.get(command) == module_name, (
            f"add {command!r}: {module_name!r} to COMMAND_MODULE in controller/cli/__init__.py")


def loaded_by(*argv: str) -> set[str]:
    """The modules a fresh interpreter has loaded after running `tablectl ARGV`."""
    probe = ("import json, sys, contextlib, io\n"
             "from controller.cli import main\n"
             "with contextlib.redirect_stdout(io.StringIO()):\n"
             f"    code = main({list(argv)!r})\n"
             "print(json.dumps([code, sorted(sys.modules)]))\n")
    out = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True,
                         text=True, check=True).stdout
    code, modules = json.loads(out.splitlines()[-1])
    assert code == 0
    return set(modules)


def test_par_sheet_loads_neither_asyncio_nor_the_daemon_client_nor_logging():
    modules = loaded_by("par-sheet", "config/baccarat-8deck.toml")
    assert "controller.rules.par" in modules
    assert not modules & {"asyncio", "structlog", "controller.control",
                          "controller.cli.table_commands", "controller.cli.client"}
    # Nor the wagers this table does not offer (controller.rules.registry.WAGER_MODULES).
    assert not {m for m in modules if m.startswith("controller.rules.side")}
    assert not modules & {"controller.rules.twentyone", "controller.rules.par21"}


def test_a_21_baccarat_par_sheet_loads_no_631a_wager_rules():
    modules = loaded_by("par-sheet", "config/21-baccarat-8deck.toml")
    assert "controller.rules.twentyone" in modules
    assert "controller.rules.baccarat_wagers" not in modules


def test_a_progressive_table_par_sheet_reads_its_sections_without_the_ledger():
    # `[progressive.*]` is parsed by controller.progressive.config; the package must not pull
    # in the ledger (SQLite, structlog) or the system (asyncio) the daemon runs.
    modules = loaded_by("par-sheet", "config/progressive-royal9.toml")
    assert "controller.progressive.config" in modules
    assert not modules & {"asyncio", "structlog", "sqlite3", "controller.memory.store",
                          "controller.progressive.ledger", "controller.progressive.system"}
    # Nor the rules of the progressive games this table does not offer.
    assert "controller.rules.side.royal9" in modules
    assert not modules & {"controller.rules.side.harmony", "controller.rules.side.heavenly9"}


def test_help_still_lists_every_command(capsys):
    with pytest.raises(SystemExit):
        cli.build_parser(["--help"]).parse_args(["--help"])
    listed = capsys.readouterr().out
    for command in cli.COMMAND_MODULE:
        assert command in listed
