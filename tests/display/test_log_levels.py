"""`--log-level` of the display service and the pit page: one of the levels the log knows, or
refused by name. Before, any word was taken: 'loud' quietly meant info, and a word that is
also an attribute of Python's logging module ('basic_format') ended the start in a
TypeError traceback."""

from __future__ import annotations

import pytest

from controller.display import pit, service


@pytest.mark.parametrize("main", [service.main, pit.main], ids=["tabledisplay", "pit page"])
@pytest.mark.parametrize("level", ["loud", "basic_format", "INFO"])
def test_a_log_level_the_log_does_not_know_is_refused_by_name(
        main, level: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as refused:
        main(["--log-level", level])
    assert refused.value.code == 2
    assert (f"error: argument --log-level: invalid choice: '{level}' (choose from 'debug', "
            "'info', 'warning', 'error')") in capsys.readouterr().err
