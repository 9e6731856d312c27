"""`[display_service]`: where the display service listens and what one client may hold,
every bad value refused naming the key, the value and what is allowed."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Any

import pytest

from controller.config import ConfigError
from controller.display.service import service_config
from controller.display.settings import (
    ClientLimits, DisplayServiceConfig, address_allowed, client_address, parse_display_service,
)

ROOT = Path(__file__).resolve().parents[2]


def test_left_out_it_serves_this_machine_only() -> None:
    assert parse_display_service({}) == (DisplayServiceConfig(("127.0.0.1", 8080),
                                                              ClientLimits()), [])
    assert ClientLimits() == ClientLimits(max_clients=64, max_per_address=16,
                                          max_streams_per_address=4, header_timeout_s=10.0,
                                          dealer_allowed=None)


def test_the_pits_address_limits_and_the_dealers_station() -> None:
    config, problems = parse_display_service({
        "listen": "10.20.30.41:8080", "dealer_allowed": ["10.20.30.42", "10.20.31.0/28"],
        "max_clients": 32, "max_per_address": 8, "max_streams_per_address": 2,
        "header_timeout_s": 2.5})
    assert problems == []
    assert config == DisplayServiceConfig(("10.20.30.41", 8080), ClientLimits(
        max_clients=32, max_per_address=8, max_streams_per_address=2, header_timeout_s=2.5,
        dealer_allowed=(ipaddress.ip_network("10.20.30.42/32"),
                        ipaddress.ip_network("10.20.31.0/28"))))
    networks = config.limits.dealer_allowed
    assert networks is not None
    assert address_allowed("10.20.30.42", networks)
    assert address_allowed("::ffff:10.20.31.7", networks)  # IPv4 over a dual-stack socket
    assert not address_allowed("10.20.30.43", networks)
    assert not address_allowed("not an address", networks)
    assert client_address("::ffff:127.0.0.2") == "127.0.0.2"


@pytest.mark.parametrize("section, problem", [
    ({"listen": "8080"}, "display_service.listen = '8080': not allowed; allowed: HOST:PORT "
                         "with PORT 0 to 65535"),
    ({"listen": 8080}, "display_service.listen = 8080: not allowed; allowed: HOST:PORT"),
    ({"max_clients": 0}, "display_service.max_clients = 0: not allowed; allowed: a whole "
                         "number 1 to 4096"),
    ({"max_per_address": True}, "display_service.max_per_address = True: not allowed; "
                                "allowed: a whole number 1 to 4096"),
    ({"max_streams_per_address": "4"}, "display_service.max_streams_per_address = '4': not "
                                       "allowed; allowed: a whole number 1 to 4096"),
    ({"max_clients": 8, "max_per_address": 9},
     "display_service.max_per_address: 9 is more than max_clients (8); allowed: at most "
     "max_clients"),
    ({"max_per_address": 2, "max_streams_per_address": 3},
     "display_service.max_streams_per_address: 3 is more than max_per_address (2); "
     "allowed: at most max_per_address"),
    ({"header_timeout_s": 0}, "display_service.header_timeout_s = 0: not allowed; allowed: "
                              "seconds, 0.5 to 300"),
    ({"dealer_allowed": "10.20.30.42"}, "display_service.dealer_allowed = '10.20.30.42': not "
                                        "allowed; allowed: a list of IP addresses or networks"),
    ({"dealer_allowed": ["10.20.30.420"]}, "display_service.dealer_allowed = '10.20.30.420': "
                                           "not allowed; allowed: a list of IP addresses"),
    ({"dealer_allowed": [5]}, "display_service.dealer_allowed = 5: not allowed; allowed: a "
                              "list of IP addresses"),
    ({"dealer_allowed": []}, "display_service.dealer_allowed = []: not allowed"),
    # Before, ValueError ('²' is a digit int() does not read) and, at the bind, UnicodeError
    # (a host name's label is at most 63 characters) came out as tracebacks.
    ({"listen": "127.0.0.1:\u00b2"}, "display_service.listen = '127.0.0.1:\u00b2': not "
                                     "allowed; allowed: HOST:PORT with PORT 0 to 65535"),
    ({"listen": "a" * 64 + ".example:8080"}, "display_service.listen = '" + "a" * 64
     + ".example:8080': not allowed; allowed: HOST:PORT"),
    ({"port": 8080}, "display_service.port: unknown key; allowed keys: dealer_allowed, "
                     "header_timeout_s, languages, listen, max_clients, max_per_address, "
                     "max_streams_per_address, table_number"),
    ({"languages": ["en", "fr"]}, "display_service.languages = ['en', 'fr']: not allowed; "
                                  "allowed: a list of one or two of en, zh-hans, zh-hant"),
    ({"languages": []}, "display_service.languages = []: not allowed; allowed: a list of one "
                        "or two of"),
    ({"languages": ["en", "zh-hans", "zh-hant"]}, "display_service.languages = ['en', "
                                                  "'zh-hans', 'zh-hant']: not allowed"),
    ({"languages": ["en", "en"]}, "display_service.languages = ['en', 'en']: not allowed"),
    ({"languages": "en"}, "display_service.languages = 'en': not allowed"),
    ({"table_number": 12}, "display_service.table_number = 12: not allowed; allowed: the "
                           "table's number as the pit knows it, 1 to 12 characters"),
    ({"table_number": "  "}, "display_service.table_number = '  ': not allowed"),
    ({"table_number": "BACCARAT-PIT-3"}, "display_service.table_number = 'BACCARAT-PIT-3': "
                                         "not allowed"),
])
def test_a_bad_value_names_key_value_and_what_is_allowed(section: dict[str, Any],
                                                         problem: str) -> None:
    _, problems = parse_display_service(section)
    assert len(problems) == 1 and problems[0].startswith(problem), problems


def test_the_service_will_not_start_on_a_bad_section(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from controller.display.service import main

    monkeypatch.setattr("controller.display.service.configure_logging", lambda **kw: None)
    config = tmp_path / "table.toml"
    config.write_text((ROOT / "config" / "simulated-table.toml").read_text()
                      + '\n[display_service]\nlisten = "pit"\n')
    assert main(["--config", str(config)]) == 6  # a bad configuration: systemd won't retry
    assert "display_service.listen = 'pit': not allowed; allowed: HOST:PORT" in \
        capsys.readouterr().err


def test_the_service_and_the_daemon_refuse_the_same_section(tmp_path: Path) -> None:
    from controller.config import load_config

    text = (ROOT / "config" / "simulated-table.toml").read_text()
    config = tmp_path / "table.toml"
    config.write_text(text + '\n[display_service]\nlisten = "10.20.30.41:8080"\n'
                             'max_per_address = 0\n')
    expected = ("display_service.max_per_address = 0: not allowed; allowed: a whole number "
                "1 to 4096")
    with pytest.raises(ConfigError) as service:
        service_config(str(config))
    assert service.value.problems == [expected]
    with pytest.raises(ConfigError) as daemon:
        load_config(str(config))
    assert expected in daemon.value.problems
    config.write_text(text + '\n[display_service]\nlisten = "10.20.30.41:8080"\n')
    assert service_config(str(config)).listen == ("10.20.30.41", 8080)
    assert load_config(str(config)).submission.table.id == "SIM-BAC-01"


def test_the_scoreboards_languages_and_table_number() -> None:
    config, problems = parse_display_service({})
    assert (config.languages, config.table_number, problems) == (("en", "zh-hans"), None, [])
    config, problems = parse_display_service({"languages": ["zh-hant", "en"],
                                              "table_number": " 12 "})
    assert (config.languages, config.table_number, problems) == (("zh-hant", "en"), "12", [])
    config, _ = parse_display_service({"languages": ["en"]})
    assert config.languages == ("en",)


def test_the_corner_shows_the_configured_number_else_an_id_that_fits_there() -> None:
    """A table id may be 64 characters; the scoreboard's corner holds 12 at its size (a long
    id there pushed the header's other texts out of their boxes): no corner then."""
    configured, _ = parse_display_service({"table_number": "7"})
    default, _ = parse_display_service({})
    assert [configured.corner_number("B" * 64), default.corner_number("BAC-PIT-3-12"),
            default.corner_number("BAC-PIT-3-123"), default.corner_number("B" * 64)] == [
        "7", "BAC-PIT-3-12", None, None]
