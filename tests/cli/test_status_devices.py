"""tablectl status and devices through the real control socket protocol."""

from __future__ import annotations

import json

from controller.cli import exitcodes, main


def test_status_shows_state_game_shoe_and_betting(fake, capsys):
    assert main(["status", "--socket", fake.socket]) == exitcodes.OK
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "Table SIM-BAC-01: BETTING OPEN"
    assert "  game:             baccarat (standard)" in out
    assert "  configuration:    /etc/tabled/table.toml" in out
    assert "  daemon uptime:    01:02:05" in out
    assert "Shoe 3:" in out
    assert "  cards dealt:      45" in out
    assert "  cards left:       371" in out
    assert "  cover card:       not yet" in out
    assert "Betting: 2 wagers totalling $125.00" in out
    assert "FAULT" not in out


def test_status_in_device_fault_names_the_device_and_the_action(fake, capsys):
    fake.status.update(state="device_fault", fault={
        "device": "shoe", "code": "link_retrying", "detail": "no reply from /dev/ttyUSB0",
        "action": "check the device's cable and power; the table resumes by itself when it "
                  "is back"})
    assert main(["status", "--socket", fake.socket]) == exitcodes.DEVICE_FAULT
    out = capsys.readouterr().out
    assert "Table SIM-BAC-01: DEVICE FAULT" in out
    assert "FAULT: shoe: no reply from /dev/ttyUSB0 [link_retrying]" in out
    assert "  Action: check the device's cable and power" in out


def test_status_out_of_order_exits_5(fake, capsys):
    fake.status.update(state="out_of_order",
                       out_of_order="event chain: entry 12 (card) was altered")
    assert main(["status", "--socket", fake.socket]) == exitcodes.INTEGRITY_FAILURE
    out = capsys.readouterr().out
    assert "OUT OF ORDER: event chain: entry 12 (card) was altered" in out
    assert "Run 'tablectl events verify'" in out


def test_status_out_of_order_says_what_to_do_for_what_failed(fake, capsys):
    """A table never initialised is initialised, not restored; a store the witness finds
    behind is restored only from a backup reaching the witnessed head."""
    fake.status.update(state="out_of_order", out_of_order=(
        "not initialised: no store at /var/lib/tabled/table.sqlite and no key at "
        "/var/lib/tabled/table.critical/key"))
    assert main(["status", "--socket", fake.socket]) == exitcodes.INTEGRITY_FAILURE
    out = capsys.readouterr().out
    assert out.split("OUT OF ORDER: ")[1] == (  # piped, with no $COLUMNS: not wrapped
        "not initialised: no store at /var/lib/tabled/table.sqlite and no key at "
        "/var/lib/tabled/table.critical/key\n"
        "  Action: a new table: initialise its critical memory once with 'tabled --config "
        "FILE --init-store' (docs/deployment.md), as the daemon's user; then restart the "
        "table service (sudo systemctl restart tabled)\n")
    fake.status["out_of_order"] = "witness: store behind: the store is at commit 11"
    assert main(["status", "--socket", fake.socket]) == exitcodes.INTEGRITY_FAILURE
    out = " ".join(capsys.readouterr().out.split())
    assert "OUT OF ORDER: witness: store behind: the store is at commit 11 Action: do not " \
        "play; keep the store, its critical-memory directory and the witness's rows as " \
        "evidence" in out
    assert "Restore the store from a backup that reaches the witnessed head, or have a " \
        "supervisor clear critical memory (tabled --clear-store)" in out


def test_status_round_in_progress_and_batches(fake, capsys):
    fake.status["round"].update(round_id=42, round_no=8, next="banker")
    fake.status["batches"] = {"in_play": "red", "in_shuffler": "blue"}
    assert main(["status", "--socket", fake.socket]) == exitcodes.OK
    out = capsys.readouterr().out
    assert "Round in progress: round 8 (id 42)" in out
    assert "  next card:        banker" in out
    assert "  in play:          red" in out
    assert "  in the shuffler:  blue" in out


def test_status_json_is_the_daemons_answer(fake, capsys):
    fake.status["state"] = "device_fault"
    assert main(["status", "--json", "--socket", fake.socket]) == exitcodes.DEVICE_FAULT
    assert json.loads(capsys.readouterr().out) == fake.status


def test_devices_table_aligned_with_counters(fake, capsys):
    assert main(["devices", "--socket", fake.socket]) == exitcodes.OK
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["DEVICE", "LINK", "PORT", "SERIAL", "FIRMWARE"]
    assert lines[1].split() == ["shoe", "up", "/dev/ttyUSB0", "SH-00042", "2.1.0"]
    assert lines[3].split() == ["seats", "up", "gpio:lgpio", "-", "-"]
    # Columns line up: every row's LINK starts where the header's does.
    column = lines[0].index("LINK")
    assert all(line[column:column + 2] == "up" for line in lines[1:4])
    assert lines[4] == ""
    assert lines[5].split() == ["DEVICE", "PROTO", "UPTIME", "CRC", "RETX", "RESYNC", "RECONN"]
    assert lines[6].split() == ["shoe", "1", "01:02:00", "2", "5", "1", "0"]
    assert lines[8].split() == ["seats", "-", "-", "-", "-", "-", "-"]
    assert "shoe counters: frames_in=1200" in lines
    assert "seats counters: button_presses=4" in lines


def test_devices_fit_80_columns_with_long_ports_and_versions(fake, capsys, monkeypatch):
    """A serial console is 80 columns: long cells are cut in the middle, never wrapped."""
    monkeypatch.setenv("COLUMNS", "200")  # a wide terminal still gets the 80-column view
    fake.devices[2]["port"] = "gpio:hil.mock_pins:BridgedMockFactory"
    fake.devices[1].update(firmware_version="shuffler-firmware 5.0.17-rc3+build.20261121",
                           serial_number="SHUFFLER-SERIAL-000000017",
                           counters={f"link_counter_{n}": n for n in range(1, 30)},
                           last_error="a long last error " * 8)
    assert main(["devices", "--socket", fake.socket]) == exitcodes.OK
    lines = capsys.readouterr().out.splitlines()
    assert max(len(line) for line in lines) <= 80
    shuffler = lines[2].split()
    assert shuffler[:2] == ["shuffler", "up"]
    assert shuffler[-1].startswith("shuffler-f") and shuffler[-1].endswith(".20261121")
    assert "…" in shuffler[-1]
    assert lines[3].split()[2].startswith("gpio:hil") and lines[3].split()[2].endswith("Factory")


def test_devices_unplugged_shoe_exits_4(fake, capsys):
    fake.devices[0].update(link="retrying", uptime_s=None,
                           last_error="/dev/ttyUSB0: No such file or directory")
    assert main(["devices", "--socket", fake.socket]) == exitcodes.DEVICE_FAULT
    out = capsys.readouterr().out
    assert "shoe last error: /dev/ttyUSB0: No such file or directory" in out
    assert "NOT UP: shoe (retrying) - check its cable and power; the table reconnects by\n" \
        "  itself" in out  # wrapped at 80 columns


def test_devices_wrong_firmware_is_refused(fake, capsys):
    fake.devices[0].update(link="refused", firmware_version="shoe-fw 0.9", protocol_version=0,
                           last_error="incompatible protocol version: shoe speaks version 0, "
                                      "this host speaks version 1")
    assert main(["devices", "--socket", fake.socket]) == exitcodes.DEVICE_FAULT
    out = capsys.readouterr().out
    assert out.splitlines()[1].split() == ["shoe", "refused", "/dev/ttyUSB0", "SH-00042",
                                           "shoe-fw", "0.9"]
    assert "shoe last error: incompatible protocol version: shoe speaks version 0" in out
    assert "NOT UP: shoe (refused) - wrong firmware or protocol version" in out


def test_devices_seat_pins_not_claimed_are_not_called_firmware(fake, capsys):
    why = "GPIOPinInUse: GPIO busy: GPIO2 is held by another program"
    fake.devices[2].update(link="refused", last_error=why)
    assert main(["devices", "--socket", fake.socket]) == exitcodes.DEVICE_FAULT
    out = capsys.readouterr().out
    assert f"seats last error: {why}" in out
    assert out.rstrip().endswith(
        "NOT UP: seats (refused) - the seat pins could not be claimed: fix\n"
        "  gpio.pin_factory or stop the program holding them, then restart the table\n"
        "  service")


def test_devices_json(fake, capsys):
    assert main(["devices", "--socket", fake.socket, "--json"]) == exitcodes.OK
    assert json.loads(capsys.readouterr().out) == fake.devices


def test_devices_link_prefixed_counters(fake, capsys):
    fake.devices[1]["counters"] = {"link_crc_errors": 3, "link_retransmits": 9,
                                   "link_resyncs": 2, "reconnects": 1, "shuffles_completed": 4}
    assert main(["devices", "--socket", fake.socket]) == exitcodes.OK
    out = capsys.readouterr().out
    assert out.splitlines()[7].split()[-4:] == ["3", "9", "2", "1"]
    assert "shuffler counters: shuffles_completed=4" in out


def test_fault_acknowledged_by_a_supervisor(fake, capsys, monkeypatch):
    import io

    from tests.cli.conftest import SUPERVISOR_PIN

    fake.status.update(state="device_fault", fault={
        "device": "shoe", "code": "shoe_misread", "detail": "card 13 left the shoe unread",
        "action": "Stop: the card that just left the shoe was not read."})

    def acknowledge(a):
        fake.status.update(state="end_of_shoe", fault=None)
        return fake.status
    fake.register("acknowledge_fault", acknowledge, supervisor=True)
    monkeypatch.setattr("sys.stdin", io.StringIO("0000\n"))
    rc = main(["fault", "acknowledge", "--supervisor", "ana", "--pin-stdin",
               "--socket", fake.socket])
    assert rc == exitcodes.REFUSED
    assert "nothing was acknowledged" in capsys.readouterr().err
    monkeypatch.setattr("sys.stdin", io.StringIO(SUPERVISOR_PIN + "\n"))
    rc = main(["fault", "acknowledge", "--supervisor", "ana", "--pin-stdin",
               "--socket", fake.socket])
    assert rc == exitcodes.OK
    out = capsys.readouterr().out
    assert out.startswith("fault acknowledged by ana\nTable SIM-BAC-01: END OF SHOE")


def test_status_says_whether_the_display_feed_reaches_its_broker(fake, capsys, monkeypatch):
    """A pit boss who sees the table as lost asks why: the feed's broker, how it logs in,
    and the broker's own reason (controller/progressive/mqtt.py)."""
    fake.status["display_feed"] = {"broker": "mqtt.casino.lan:8883", "tls": True,
                                   "username": "table-BAC-01", "connected": True,
                                   "reason": None}
    assert main(["status", "--socket", fake.socket]) == exitcodes.OK
    assert "Display feed: connected to mqtt.casino.lan:8883 (TLS, as table-BAC-01)\n" \
        in capsys.readouterr().out
    fake.status["display_feed"].update(connected=False, reason="Not authorized")
    monkeypatch.setenv("COLUMNS", "200")  # the line unwrapped
    assert main(["status", "--socket", fake.socket]) == exitcodes.OK
    assert ("Display feed: NOT CONNECTED to mqtt.casino.lan:8883 (TLS, as table-BAC-01): Not "
            "authorized; the meter displays and the pit page miss this table's changes (money "
            "is not affected)") in capsys.readouterr().out
    fake.status["display_feed"] = None  # no [mqtt]: nothing to say
    assert main(["status", "--socket", fake.socket]) == exitcodes.OK
    assert "Display feed" not in capsys.readouterr().out

