"""The daemon's configuration: every error names the key, the bad value and what is allowed."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from controller.config import ConfigError, apply_overrides, load_config, parse_config

SIMULATED = Path(__file__).parents[2] / "config" / "simulated-table.toml"


def simulated() -> dict:
    return tomllib.loads(SIMULATED.read_text(encoding="utf-8"))


def problems(data: dict) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        parse_config(data, "table.toml")
    return caught.value.problems


def test_the_shipped_simulated_table_is_valid():
    config = load_config(SIMULATED)
    assert (config.table_id, config.shoe.baudrate, len(config.gpio.seats)) == ("SIM-BAC-01",
                                                                              115200, 10)
    assert config.control_socket_mode == 0o660


@pytest.mark.parametrize(("path", "value", "message"), [
    (("shoe", "baudrate"), 12345, "shoe.baudrate = 12345: not allowed; allowed: one of 9600, "
                                  "19200, 38400, 57600, 115200, 230400"),
    (("gpio", "lockout_pin"), 99, "gpio.lockout_pin = 99: not allowed; allowed: a BCM GPIO "
                                  "number 0-53"),
    (("gpio", "pin_factory"), "rpigpio", "gpio.pin_factory = 'rpigpio': not allowed; allowed: "
                                         "'lgpio' (Raspberry Pi), 'mock', or an import path"),
    (("control", "mode"), "0666", "control.mode = '0666': not allowed; allowed: '0600' (owner "
                                  "only) or '0660' (group)"),
    (("shuffler", "vendor_id"), 0, "shuffler.vendor_id = 0: not allowed; allowed: a USB vendor "
                                   "id 0x0001-0xFFFF"),
    (("store", "colour"), "red", "store.colour: unknown key; allowed keys: "
                                 "anchor_interval_s, critical_dir, flush_delay_ms, flush_in, path, "
                                 "seal_every_step"),
    (("store", "flush_delay_ms"), -5, "store.flush_delay_ms = -5: not allowed; allowed: 0 to "
                                      "1000 milliseconds"),
    (("shuffler", "batches"), ["red", "red"], "shuffler.batches = ['red', 'red']: not allowed; "
                                              "allowed: two different back colours"),
    (("shoe", "reconnect_max_s"), 0.1, "shoe.reconnect_max_s = 0.1: not allowed; allowed: 0.5 "
                                       "to 60 seconds"),
    (("shoe", "reconnect_max_s"), "10", "shoe.reconnect_max_s = '10': not allowed; allowed: "
                                        "0.5 to 60 seconds"),
])
def test_a_bad_device_value_is_named(path, value, message):
    data = simulated()
    data[path[0]][path[1]] = value
    assert any(p.startswith(message) for p in problems(data)), problems(data)


ANCHOR_ALLOWED = "1 to 3600 seconds (how far the anchor may lag the store; docs/rulings.md C24)"
SEAL_ALLOWED = ("true or false (true: every step sealed by itself, a card's too; "
                "docs/rulings.md C29)")


@pytest.mark.parametrize(("key", "value", "allowed"), [
    *(("anchor_interval_s", value, ANCHOR_ALLOWED) for value in (0, 0.5, 3601, -60, "60", True)),
    *(("seal_every_step", value, SEAL_ALLOWED) for value in ("yes", 1, 0)),
])
def test_a_store_option_out_of_its_range_is_refused(key, value, allowed):
    """docs/rulings.md C24: `[store] anchor_interval_s` is a number, 1 to 3600 seconds;
    C29's option `seal_every_step` is a boolean, nothing that passes for one."""
    data = simulated()
    data["store"][key] = value
    assert f"store.{key} = {value!r}: not allowed; allowed: {allowed}" in problems(data)


def test_the_anchor_interval_is_a_minute_unless_set_and_reaches_the_store(tmp_path):
    """docs/rulings.md C24: a minute by default; a set value (1 and 3600 the bounds) is the
    interval of the daemon's store's anchor writer."""
    from controller.memory.lifecycle import init_store
    from controller.wiring import open_checked_store

    assert load_config(SIMULATED).store_anchor_interval_s == 60.0
    assert [load_config(SIMULATED, [f"store.anchor_interval_s={v}"]).store_anchor_interval_s
            for v in (1, 2.5, 3600)] == [1.0, 2.5, 3600.0]
    config = load_config(SIMULATED, [f"store.path={tmp_path / 'table.sqlite'}",
                                     "store.anchor_interval_s=7"])
    init_store(config.store_path, operator="test", table_id=config.table_id).close()
    store, failure = open_checked_store(config)
    try:
        assert failure is None
        store.append_entry("wager_locked", {"seat": 1, "amount_cents": 500})  # flushed
        writer = store.durability.anchor_writer
        assert writer is not None and writer._interval_s == 7.0
    finally:
        store.close()


def test_seal_every_step_is_off_unless_set_and_reaches_the_store(tmp_path):
    """docs/rulings.md C29: a card's step waits for the next flushed step's seal by default;
    with `[store] seal_every_step = true` the daemon's store seals it by itself, and its start
    says so in the log."""
    from controller.memory.lifecycle import init_store
    from controller.wiring import open_checked_store

    assert load_config(SIMULATED).store_seal_every_step is False
    for value, card_sealed in (("false", False), ("true", True)):
        config = load_config(SIMULATED, [f"store.path={tmp_path / value / 'table.sqlite'}",
                                         f"store.seal_every_step={value}"])
        Path(config.store_path).parent.mkdir()
        init_store(config.store_path, operator="test", table_id=config.table_id).close()
        store, failure = open_checked_store(config)
        try:
            assert failure is None and store.verify().unsealed == 0
            # The start records the option in the log, left out while false.
            started = store.events(kind="critical_memory_verified")[-1].payload
            assert ("seal_every_step" in started, started.get("seal_every_step")) == (
                (True, True) if card_sealed else (False, None)), started
            store.append_entry("card", {"index": 0})  # a grouped kind: may wait for a seal
            assert (store.verify().unsealed == 0) is card_sealed, value
        finally:
            store.close()


def test_the_flush_runs_on_the_loops_thread_unless_set_and_a_bad_place_is_named():
    """docs/rulings.md C30: `[store] flush_in` is "loop" by default, "thread" if set; any
    other word is refused by name, with what is allowed."""
    assert load_config(SIMULATED).store_flush_in == "loop"
    assert load_config(SIMULATED, ["store.flush_in=thread"]).store_flush_in == "thread"
    data = simulated()
    data["store"]["flush_in"] = "disk"
    assert [p for p in problems(data) if "flush_in" in p] == [
        "store.flush_in = 'disk': not allowed; allowed: 'loop' (the event loop's thread flushes "
        "and reports at once) or 'thread' (a thread of its own, the loop going on meanwhile; "
        "docs/rulings.md C30)"]


def test_the_shoes_reconnect_cap_reaches_its_driver():
    from controller.wiring import build_devices

    assert load_config(SIMULATED).shoe.reconnect_max_s == 10.0  # drivers/reconnect.py's cap
    config = load_config(SIMULATED, ["shoe.reconnect_max_s=0.5"])
    policy = build_devices(config)["shoe"]._reconnector.policy
    assert (policy.initial_delay_s, policy.max_delay_s) == (0.5, 0.5)
    policy = build_devices(load_config(SIMULATED, ["shoe.reconnect_max_s=30"])
                           )["shoe"]._reconnector.policy
    assert (policy.initial_delay_s, policy.max_delay_s) == (0.5, 30.0)


def test_a_pin_wired_twice_is_refused():
    data = simulated()
    data["gpio"]["seats"]["2"]["sensor"] = 2  # seat 1's sensor
    assert "gpio: pin(s) 2 wired to more than one input or output; allowed: each pin used " \
           "once" in problems(data)


def test_wiring_must_match_the_number_of_seats_631a_2_a():
    data = simulated()
    del data["gpio"]["seats"]["10"]
    assert "gpio.seats: 9 seats wired but table.seats = 10; allowed: one sensor and LED per " \
           "seat" in problems(data)


def test_every_problem_is_reported_at_once():
    data = simulated()
    data["game"]["decks"] = 5
    data["shoe"]["url"] = ""
    found = problems(data)
    assert "game.decks = 5: must be one of 6, 7, 8 (631a.3(a))" in found
    assert any(p.startswith("shoe.url = '': not allowed") for p in found)


def test_overrides_use_toml_values_and_bare_strings():
    data = simulated()
    apply_overrides(data, ["shoe.url=/dev/ttyUSB1", "shoe.baudrate=57600",
                           "gpio.factory_options.bridge_socket=/tmp/p.sock"], "t")
    assert (data["shoe"]["url"], data["shoe"]["baudrate"]) == ("/dev/ttyUSB1", 57600)
    assert data["gpio"]["factory_options"]["bridge_socket"] == "/tmp/p.sock"
    with pytest.raises(ConfigError, match="expected KEY=VALUE"):
        apply_overrides(data, ["shoe.url"], "t")


def test_an_unreadable_file_says_so(tmp_path):
    with pytest.raises(ConfigError, match="cannot read the file"):
        load_config(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[table\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(bad)


def test_fourteen_seats_put_their_leds_on_an_expander_631a_2_a():
    """14 sensors + 14 LEDs + the button are 29 lines; the header has 28 (docs/wiring.md B)."""
    data = simulated()
    data["table"]["seats"] = 14
    data["gpio"]["seats"] = {str(seat): {"sensor": sensor, "led": seat}
                             for seat, sensor in zip(range(1, 15), [4, 5, 6, 7, 8, 9, 12, 13,
                                                                    16, 17, 18, 19, 20, 21])}
    data["gpio"]["lockout_pin"] = 22
    assert any(p.startswith("gpio: pin(s)") for p in problems(data))  # LED 4..9 clash
    data["gpio"]["led_pin_factory"] = "lgpio"
    data["gpio"]["led_factory_options"] = {"chip": 2}
    config = parse_config(data, "table.toml")
    assert (len(config.gpio.seats), config.gpio.led_pin_factory,
            dict(config.gpio.led_factory_options)) == (14, "lgpio", {"chip": 2})


def test_approved_firmware_lists_are_read_and_checked():
    data = simulated()
    data["shoe"]["firmware_versions"] = ["shoe-sim 1.0", "shoe-fw 2.1"]
    config = parse_config(data, "table.toml")
    assert config.shoe.firmware_versions == ("shoe-sim 1.0", "shoe-fw 2.1")
    assert config.shuffler.firmware_versions is None  # not listed: any version is accepted
    data["shuffler"]["firmware_versions"] = "1.0"
    assert any(p.startswith("shuffler.firmware_versions = '1.0': not allowed; allowed: a "
                            "non-empty list") for p in problems(data))


def test_an_empty_firmware_list_is_refused_and_a_missing_one_accepts_any():
    """docs/wiring.md, docs/configuration.md: leave the key out to accept any version."""
    data = simulated()
    data["shoe"]["firmware_versions"] = []
    assert problems(data) == ["shoe.firmware_versions = []: not allowed; allowed: a non-empty "
                              "list of the approved firmware version strings, e.g. "
                              "[\"shoe-fw 2.1\"]"]
    del data["shoe"]["firmware_versions"]
    assert parse_config(data, "table.toml").shoe.firmware_versions is None


def test_a_simulation_section_is_refused_as_an_unknown_section():
    """[simulation] was once listed among the device sections but nothing read it: a file
    that has one is refused, naming every section a table's configuration may have."""
    data = simulated()
    data["simulation"] = {"speed": 2}
    assert problems(data) == [
        "simulation = {'speed': 2}: unknown section; allowed here: table, game, wagers, shoe, "
        "shuffler, gpio, store, control, display, progressive, linked, mqtt, supervisors, "
        "access, metrics, witness, software, display_service"]


def test_the_rules_submission_skips_exactly_the_sections_the_configuration_checks():
    """A Rules Submission tool (par-sheet, simulate, replay) reading a whole table
    configuration skips the sections controller/config.py checks, and no other."""
    from controller.config import DEVICE_SECTIONS
    from controller.rules.submission import OTHER_OWNED_SECTIONS

    assert sorted(DEVICE_SECTIONS) == sorted(OTHER_OWNED_SECTIONS)
    assert len(set(DEVICE_SECTIONS)) == len(DEVICE_SECTIONS)
