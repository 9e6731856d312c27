"""`--log-level` of the daemon, the display service and the pit page: one of the levels the
log knows, or refused by name (the daemon's lacked `error`). Before, any word was taken: 'loud' quietly meant info, and a word that is
also an attribute of Python's logging module ('basic_format') ended the start in a
TypeError traceback."""

from __future__ import annotations

import pytest

from controller.daemon_args import command_line
from controller.display import pit, service


def tabled(argv: list[str]) -> None:
    command_line().parse_args(["--config", "table.toml", *argv])


@pytest.mark.parametrize("main", [tabled, service.main, pit.main],
                         ids=["tabled", "tabledisplay", "pit page"])
@pytest.mark.parametrize("level", ["loud", "basic_format", "INFO"])
def test_a_log_level_the_log_does_not_know_is_refused_by_name(
        main, level: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as refused:
        main(["--log-level", level])
    assert refused.value.code == 2
    assert (f"error: argument --log-level: invalid choice: '{level}' (choose from 'debug', "
            "'info', 'warning', 'error')") in capsys.readouterr().err


@pytest.mark.parametrize("level", ["debug", "info", "warning", "error"])
def test_the_daemon_takes_every_level_the_log_knows(level: str) -> None:
    args = command_line().parse_args(["--config", "table.toml", "--log-level", level])
    assert args.log_level == level
