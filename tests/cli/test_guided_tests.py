"""tablectl test shoe | shuffler | sensors | lockout | lights against the fake daemon."""

from __future__ import annotations

import io
import json

from controller.cli import exitcodes, main


def _seat(seat: int, present: bool) -> tuple[str, dict, dict]:
    return ("late_sensor_change", {"seat": seat, "present": present},
            {"severity": "warning", "device": "seats"})


def test_shoe_self_test_then_cards_read_live(fake, capsys):
    fake.on_next_subscribe(
        ("burn_first_card", {"card": "7♠", "index": 0, "burn": 7, "back": "red"}, {}),
        ("prompt", {"action": "burn"}, {}),  # not about the shoe: not shown
        ("card", {"index": 8, "card": "Q♥", "hand": "player", "slot": "player_first",
                  "back": "red"}, {"device": "shoe"}),
        ("card_face_up", {"index": 9, "card": "2♦", "ruling": "631a.15(d)"},
         {"device": "shoe", "severity": "warning"}))
    assert main(["test", "shoe", "--cards", "3", "--socket", fake.socket]) == exitcodes.OK
    out = capsys.readouterr().out
    assert "shoe self-test: PASS - shoe ok" in out
    assert "  card #1   7♠  exposed first card: burn 7 more" in out
    assert "  card #9   Q♥  player back red" in out
    assert "  card #10  2♦  FACE UP in the shoe: set aside (631a.15(d))" in out
    assert "3 card(s) read" in out
    assert ("self_test", {"device": "shoe"}) in fake.calls


def test_shoe_self_test_failure_exits_1(fake, capsys):
    fake.self_tests["shoe"] = {"device": "shoe", "passed": False,
                               "detail": "lid open: close the shoe's lid"}
    assert main(["test", "shoe", "--socket", fake.socket]) == exitcodes.FAILURE
    assert "shoe self-test: FAIL - lid open: close the shoe's lid" in capsys.readouterr().out


def test_shoe_too_few_cards_before_timeout(fake, capsys):
    rc = main(["test", "shoe", "--cards", "2", "--timeout", "0.3", "--socket", fake.socket])
    assert rc == exitcodes.FAILURE
    assert "only 0 of 2 cards were read before the timeout" in capsys.readouterr().err


def test_sensors_every_seat_touched_and_lifted(fake, capsys):
    fake.status["seats"] = 3
    fake.on_next_subscribe(*[_seat(s, p) for s in (1, 2, 3) for p in (True, False)])
    assert main(["test", "sensors", "--socket", fake.socket]) == exitcodes.OK
    out = capsys.readouterr().out
    assert "seats self-test: PASS - seats ok" in out
    assert "  seat  2: wager present" in out
    assert "  seat  2: clear" in out
    assert "seat    1  2  3\nsensor  +  +  +" in out
    assert "all seat sensors respond" in out


def test_sensors_stop_at_the_self_test_when_the_seat_pins_are_not_claimed(fake, capsys):
    """Another program holds the pins (docs/technician-guide.md, common faults, seat pins
    unavailable): the guided part would only end in every seat "never seen"."""
    why = "GPIOPinInUse: GPIO busy: GPIO2 is held by another program"
    fake.self_tests["seats"] = {"device": "seats", "passed": False,
                                "detail": f"GPIO not available: {why}"}
    rc = main(["test", "sensors", "--timeout", "5", "--socket", fake.socket])
    assert rc == exitcodes.FAILURE
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"seats self-test: FAIL - GPIO not available: {why}"
    assert " ".join(out.splitlines()[1:]).split() == (
        "no sensor can be read until the daemon holds the seat pins: fix gpio.pin_factory or "
        "stop the program holding them, then restart the table service").split()
    rc = main(["test", "sensors", "--json", "--socket", fake.socket])
    assert rc == exitcodes.FAILURE
    assert json.loads(capsys.readouterr().out) == {
        "device": "seats", "passed": False, "detail": f"GPIO not available: {why}"}


def test_sensors_dead_seat_named_after_timeout(fake, capsys):
    fake.on_next_subscribe(*[_seat(s, p) for s in (1, 2) for p in (True, False)])
    rc = main(["test", "sensors", "--seats", "3", "--timeout", "0.5", "--socket", fake.socket])
    assert rc == exitcodes.FAILURE
    out = capsys.readouterr().out
    assert "sensor  +  +  ." in out
    assert "seats never seen with a wager: 3 - check those sensors and their cables" in out


def test_sensors_stuck_seat_and_json(fake, capsys):
    fake.on_next_subscribe(_seat(1, True), _seat(2, True), _seat(2, False))
    rc = main(["test", "sensors", "--seats", "2", "--timeout", "0.5", "--json",
               "--socket", fake.socket])
    assert rc == exitcodes.FAILURE
    report = json.loads(capsys.readouterr().out)
    assert report["touched"] == [1, 2]
    assert report["still_present"] == [1]
    assert report["passed"] is False


def test_lockout_button_press_seen_in_the_counters(fake, capsys):
    def press() -> None:
        fake.devices[2]["counters"]["button_presses"] += 1
    fake.on_next_subscribe_do(press)
    assert main(["test", "lockout", "--socket", fake.socket]) == exitcodes.OK
    assert "lock-out button press seen (button presses 4 -> 5)" in capsys.readouterr().out


def test_lockout_no_press_exits_1(fake, capsys):
    assert main(["test", "lockout", "--timeout", "0.4", "--socket", fake.socket]) == 1
    assert "no lock-out button press seen - check the button" in capsys.readouterr().out


def test_lights_with_yes_runs_the_lamp_test(fake, capsys):
    assert main(["test", "lights", "--yes", "--socket", fake.socket]) == exitcodes.OK
    out = capsys.readouterr().out
    assert "seats self-test: PASS - seats ok" in out
    assert "lights confirmed" in out


def test_lights_technician_says_no(fake, capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO("maybe\nn\n"))
    assert main(["test", "lights", "--socket", fake.socket]) == exitcodes.FAILURE
    captured = capsys.readouterr()
    assert "Did every seat LED (and the win light) light up? [y/n]" in captured.err
    assert "lights NOT confirmed by the technician" in captured.out


def test_lights_json_keeps_stdout_clean(fake, capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO("y\n"))
    assert main(["test", "lights", "--json", "--socket", fake.socket]) == exitcodes.OK
    report = json.loads(capsys.readouterr().out)
    assert report["confirmed"] is True
    assert report["tests"][0]["device"] == "seats"


def test_lights_uses_the_daemons_pattern_when_offered(fake, capsys):
    fake.register("light_test", lambda a: {"device": "lights", "passed": True,
                                           "detail": "chase pattern on 14 seat LEDs and the "
                                                     "win light"})
    assert main(["test", "lights", "--yes", "--socket", fake.socket]) == exitcodes.OK
    assert "lights self-test: PASS - chase pattern on 14 seat LEDs" in capsys.readouterr().out


def test_shuffler_counts_and_verifies_a_batch(fake, capsys):
    fake.register("shuffle", lambda a: fake.status)
    fake.on_next_subscribe(
        ("shuffle_complete", {"back": "red", "cards_counted": 416, "missing": 0, "extra": 0,
                              "duplicates": 0}, {"device": "shuffler"}))
    rc = main(["test", "shuffler", "--shuffle", "red", "--socket", fake.socket])
    assert rc == exitcodes.OK
    out = capsys.readouterr().out
    assert "shuffler self-test: PASS - shuffler ok" in out
    assert ("batch red: 416 cards counted, 0 missing, 0 extra, 0 duplicates - VERIFIED") in out
    assert ("shuffle", {"back": "red"}) in fake.calls


def test_shuffler_miscount_exits_1(fake, capsys):
    fake.register("shuffle", lambda a: fake.status)
    fake.on_next_subscribe(
        ("shuffle_complete", {"back": "blue", "cards_counted": 414, "missing": 2, "extra": 0,
                              "duplicates": 0}, {"device": "shuffler"}))
    rc = main(["test", "shuffler", "--shuffle", "blue", "--socket", fake.socket])
    assert rc == exitcodes.FAILURE
    out = capsys.readouterr().out
    assert "414 cards counted, 2 missing, 0 extra, 0 duplicates - NOT VERIFIED" in out
    assert "Action: do not use this batch" in out


def test_table_without_a_shuffler(fake, capsys):
    del fake.self_tests["shuffler"]
    assert main(["test", "shuffler", "--socket", fake.socket]) == exitcodes.FAILURE
    assert "this table has no 'shuffler' device configured" in capsys.readouterr().err


def test_shuffle_refused_by_the_table_state(fake, capsys, at_80_columns):
    from controller.control import ControlError

    def refuse(a):
        raise ControlError("not allowed while the table is betting_open")
    fake.register("shuffle", refuse)
    rc = main(["test", "shuffler", "--shuffle", "red", "--socket", fake.socket])
    assert rc == exitcodes.REFUSED
    assert ("tablectl: the daemon refused: not allowed while the table is betting_open\n"
            "  (refused)\n") == capsys.readouterr().err  # wrapped at 80 columns


def test_sensors_seat_count_from_the_self_test(fake, capsys):
    fake.self_tests["seats"]["detail"] = "2 seats, LEDs and sensors ok"
    fake.on_next_subscribe(*[_seat(s, p) for s in (1, 2) for p in (True, False)])
    assert main(["test", "sensors", "--socket", fake.socket]) == exitcodes.OK
    assert "seat    1  2\nsensor  +  +" in capsys.readouterr().out


def test_shuffler_progress_survives_quiet_polls(fake, capsys):
    # The batch completes only after several quiet poll intervals: waiting with a timeout
    # must not end the event stream.
    fake.register("shuffle", lambda a: fake.status)

    def complete_later() -> None:
        fake.loop.call_later(0.8, lambda: fake._commit(
            "shuffle_complete", {"back": "red", "cards_counted": 416, "missing": 0,
                                 "extra": 0, "duplicates": 0}, {"device": "shuffler"}))
    fake.on_next_subscribe_do(complete_later)
    assert main(["test", "shuffler", "--shuffle", "red", "--timeout", "10",
                 "--socket", fake.socket]) == exitcodes.OK
    assert "VERIFIED" in capsys.readouterr().out


def test_sensors_warns_while_betting_is_open(fake, capsys):
    fake.status["state"] = "betting_open"
    rc = main(["test", "sensors", "--seats", "1", "--timeout", "0.2", "--socket", fake.socket])
    assert rc == exitcodes.FAILURE
    assert "betting is open: touches now are wagers and may not be shown" in \
        capsys.readouterr().out


def test_shuffler_jam_ends_the_wait(fake, capsys):
    fake.register("shuffle", lambda a: fake.status)
    fake.on_next_subscribe(("device_fault", {
        "code": "shuffler_jam", "detail": "cards jammed after 212 cards",
        "action": "Clear the jam in the shuffler. 681a.9(c): the batch must be reshuffled."},
        {"device": "shuffler", "severity": "error"}))
    rc = main(["test", "shuffler", "--shuffle", "red", "--socket", fake.socket])
    assert rc == exitcodes.FAILURE
    out = capsys.readouterr().out
    assert "SHUFFLER FAULT: cards jammed after 212 cards [shuffler_jam]" in out
    assert "  Action: Clear the jam in the shuffler." in out


def test_sensors_chattering_seat_is_reported(fake, capsys):
    fake.on_next_subscribe(
        ("device_fault", {"code": "seat_sensor_chatter:2",
                          "detail": "seat 2: 8 sensor edges within 1.0 s",
                          "action": "Seat 2's progressive wagers are not accepted until its "
                                    "sensor is quiet; check the sensor and its cable."},
         {"device": "seats", "severity": "error"}),
        _seat(1, True), _seat(1, False))
    rc = main(["test", "sensors", "--seats", "2", "--timeout", "0.5", "--socket", fake.socket])
    assert rc == exitcodes.FAILURE
    out = capsys.readouterr().out
    assert "  SENSOR FAULT: seat 2: 8 sensor edges within 1.0 s - Seat 2's progressive" in out
    assert "seats never seen with a wager: 2" in out
