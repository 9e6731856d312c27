"""The display service's start-up: what it reads from the table's configuration, and a
clear refusal of a bad file or address."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest

from controller.config import ConfigError
from controller.display.service import DisplayService, _listen_address, main, table_info

ROOT = Path(__file__).resolve().parents[2]


def test_name_game_limits_and_socket_from_the_tables_configuration() -> None:
    info, socket_path = table_info(str(ROOT / "config" / "simulated-table.toml"))
    assert info == {"table_id": "SIM-BAC-01", "name": "Simulated baccarat table",
                    "game": "baccarat", "variant": "standard", "decks": 8, "seats": 10,
                    "limits": [{"wager": "banker", "min_cents": 500, "max_cents": 500000},
                               {"wager": "player", "min_cents": 500, "max_cents": 500000},
                               {"wager": "tie", "min_cents": 500, "max_cents": 100000}]}
    assert socket_path == "/run/tabled/control.sock"


def test_a_secrets_file_it_cannot_read_is_never_opened(tmp_path: Path) -> None:
    # The daemon's PIN hashes stay out of the display's reach (docs/deployment.md).
    text = (ROOT / "config" / "simulated-table.toml").read_text()
    config = tmp_path / "table.toml"
    secrets = 'secrets = "/nonexistent/secrets.toml"\n'
    text = text.replace("[access]\n", "[access]\n" + secrets) if "[access]\n" in text \
        else text + "\n[access]\n" + secrets
    config.write_text(text)
    info, _ = table_info(str(config))
    assert info["table_id"] == "SIM-BAC-01"


def test_a_bad_configuration_names_what_is_wrong(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # main() points logging at this process's stdout; keep that out of the other tests.
    monkeypatch.setattr("controller.display.service.configure_logging", lambda **kw: None)
    config = tmp_path / "table.toml"
    config.write_text('[table]\nid = "T"\nseats = 3\n[game]\nfamily = "baccarat"\ndecks = 8\n')
    with pytest.raises(ConfigError) as info:
        table_info(str(config))
    assert "table.seats = 3" in str(info.value)
    assert main(["--config", str(config)]) == 6
    assert "table.seats = 3" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="cannot be read"):
        table_info(str(tmp_path / "missing.toml"))


@pytest.mark.parametrize("text, expected", [
    ("0.0.0.0:8080", ("0.0.0.0", 8080)), ("127.0.0.1:0", ("127.0.0.1", 0)),
    ("[::]:8080", ("::", 8080)), (":9000", ("0.0.0.0", 9000))])
def test_listen_addresses(text: str, expected: tuple[str, int]) -> None:
    assert _listen_address(text) == expected


@pytest.mark.parametrize("text", ["8080", "host:http", "host:70000"])
def test_a_bad_listen_address_says_what_is_allowed(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="allowed: HOST:PORT"):
        _listen_address(text)


class _Log:
    """The daemon's `events` command over a log of (seq, hash) entries."""

    def __init__(self, entries: list[tuple[int, str]]) -> None:
        self.entries = entries

    async def call(self, cmd: str, *, after_seq: int, limit: int, oldest_first: bool) -> Any:
        assert (cmd, limit, oldest_first) == ("events", 1, True)
        return [{"seq": seq, "hash": mac} for seq, mac in self.entries if seq > after_seq][:1]


async def test_a_reconnect_goes_on_only_while_the_log_holds_the_last_entry_shown() -> None:
    """docs/rulings.md C31: a daemon that died lost the entries that waited in memory, and
    its next entries reuse their numbers. The board follows on only if the log still holds
    the very entry it applied last (the same MAC); else it starts over (the session resets)."""
    service = DisplayService("/nonexistent.sock", {"id": "T1"})
    service.board.apply({"seq": 7, "kind": "prompt", "at": 0.0, "payload": {}, "hash": "a7"})
    assert (service.board.last_seq, service.board.last_mac) == (7, "a7")
    assert await service._still_logged(_Log([(6, "a6"), (7, "a7"), (8, "a8")])) is True
    assert await service._still_logged(_Log([(6, "a6"), (7, "b7")])) is False  # reused
    assert await service._still_logged(_Log([(6, "a6")])) is False  # the log ends before it
    assert await service._still_logged(_Log([])) is False  # another store
