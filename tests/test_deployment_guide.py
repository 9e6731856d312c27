"""docs/deployment.md, followed as far as a build machine allows: its configuration
snippet with the Rules Submission it starts from, a supervisor made with `supervisor
hash-pin` in a secrets file, validated exactly as the daemon would; its pip extras exist."""

from __future__ import annotations

import io
import re
import textwrap
import tomllib
from pathlib import Path

from controller.auth import verify_pin
from controller.cli import exitcodes, main
from controller.config import load_config

ROOT = Path(__file__).resolve().parents[1]
GUIDE = (ROOT / "docs" / "deployment.md").read_text(encoding="utf-8")
PIN = "482913"


def guide_snippet() -> str:
    block = re.search(r"<!-- deployment-config:[^>]*-->\n(.*?)<!-- /deployment-config -->",
                      GUIDE, re.S)
    assert block is not None, "the guide's configuration block has lost its markers"
    body = textwrap.dedent(block[1])
    assert body.startswith("```toml\n") and body.rstrip().endswith("```")
    return body.strip().removeprefix("```toml").removesuffix("```")


def test_the_guides_configuration_installs_a_table_with_a_supervisor(tmp_path, capsys,
                                                                    monkeypatch):
    snippet = tomllib.loads(guide_snippet())
    assert snippet["gpio"]["lockout_pin"] == 22
    assert len(snippet["gpio"]["seats"]) == 14  # baccarat-8deck.toml's seats, all wired
    # Step 4: hash-pin prints the supervisor's line for the secrets file.
    monkeypatch.setattr("sys.stdin", io.StringIO(PIN + "\n"))
    assert main(["supervisor", "hash-pin", "ana", "--pin-stdin"]) == exitcodes.OK
    line = capsys.readouterr().out.strip()
    assert re.fullmatch(r'ana = "pbkdf2_sha256\$600000\$[0-9a-f]+\$[0-9a-f]{64}"', line), line
    secrets = tmp_path / "secrets.toml"
    secrets.write_text(f"[supervisors]\n{line}\n", encoding="utf-8")
    secrets.chmod(0o400)
    table = tmp_path / "table.toml"
    table.write_text((ROOT / "config" / "baccarat-8deck.toml").read_text(encoding="utf-8")
                     + guide_snippet().replace("/etc/tabled/secrets.toml", str(secrets)),
                     encoding="utf-8")
    table.chmod(0o640)  # root:tabled 0640, as the guide installs it
    assert main(["config", "validate", str(table)]) == exitcodes.OK, capsys.readouterr().out
    assert capsys.readouterr().out.startswith(
        f"{table}: valid table configuration (baccarat, 8 decks, 14 seats")
    config = load_config(table)
    assert config.gpio.lockout_pin == 22
    assert [(w.seat, w.sensor_pin, w.led_pin) for w in config.gpio.seats][:2] == [
        (1, 4, 1), (2, 5, 2)]
    # The supervisor the guide set up is the one the daemon will accept.
    assert list(config.supervisor_pin_hashes) == ["ana"]
    assert verify_pin(PIN, config.supervisor_pin_hashes["ana"])
    assert not verify_pin("000000", config.supervisor_pin_hashes["ana"])


def test_the_guides_commands_name_extras_that_exist():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))[
        "project"]["optional-dependencies"]
    named = set()
    for group in re.findall(r"/opt/tabled\[([a-z,-]+)\]", GUIDE):
        named.update(group.split(","))
    assert named == {"pi", "linked", "linked-libpq"}
    assert named <= set(extras)
    assert "psycopg-binary" not in " ".join(extras["linked-libpq"])
    assert "apt install libpq5" in GUIDE
    assert "sudo -u tabled /opt/tabled/.venv/bin/tablectl config validate " \
           "/etc/tabled/table.toml" in GUIDE
    assert "tablectl fault acknowledge --supervisor ana" in GUIDE
