"""The HIL rig file (TABLE_HIL_RIG, docs/wiring.md): checked at load by the daemon's own rules,
relative paths beside the file, every device optional."""

from __future__ import annotations

from pathlib import Path

import pytest

from drivers.seats import SeatPins
from hil.rig import TABLE_A, RigConfigError, load_rig

TEN_SEATS = "\n".join(f"{seat} = {{ sensor_pin = {p.sensor_pin}, led_pin = {p.led_pin} }}"
                      for seat, p in TABLE_A.items())
GPIO = 'pin_factory = "lgpio"\nlockout_pin = 10\nrelay_socket = "relays.sock"\n'
BENCH = f"""
[shoe]
url = "tty-shoe"
feeder_socket = "feeder.sock"

[shuffler]
vendor_id = 0x1234
product_id = 0x5678

[display]
url = "socket://10.0.0.5:7000"

[gpio]
{GPIO}
[seats]
{TEN_SEATS}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "bench" / "rig.toml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    return path


def test_relative_paths_resolve_beside_the_rig_file_whatever_the_working_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, BENCH)
    monkeypatch.chdir("/")
    rig = load_rig(path)
    folder = str(path.parent)
    assert rig.shoe is not None and rig.gpio is not None and rig.shuffler is not None
    assert (rig.shoe.url, rig.shoe.feeder_socket) == (f"{folder}/tty-shoe", f"{folder}/feeder.sock")
    assert rig.gpio.relay_socket == f"{folder}/relays.sock"
    assert rig.display_url == "socket://10.0.0.5:7000"  # a pyserial URL stays as written
    assert (rig.shuffler.vendor_id, rig.shuffler.product_id, rig.shuffler.backend) == (0x1234, 0x5678, "")
    assert rig.gpio.seats[10] == SeatPins(20, 9) and len(rig.gpio.seats) == 10
    assert [rig.lacks(d) for d in ("shoe", "card feeder", "shuffler", "display", "relay board")] == [
        None] * 5
    assert rig.lacks("known batch") == f"rig has no known batch ([shuffler] batch_cards in {path})"


def test_every_device_section_is_optional_and_a_missing_one_names_itself(tmp_path: Path) -> None:
    path = write(tmp_path, '[display]\nurl = "/dev/ttyUSB1"\n')
    rig = load_rig(path)
    assert rig.lacks("display") is None
    assert rig.lacks("shuffler") == f"rig has no shuffler ([shuffler] in {path})"
    assert rig.lacks("card feeder") == f"rig has no shoe ([shoe] in {path})"
    assert rig.lacks("relay board") == f"rig has no relay board ([gpio] and [seats] in {path})"
    no_feeder = load_rig(write(tmp_path, '[shoe]\nurl = "/dev/ttyUSB0"\n'))
    assert no_feeder.lacks("card feeder") == (
        f"rig has no card feeder ([shoe] feeder_socket in {path})")


@pytest.mark.parametrize(("change", "error"), [
    # 631a.2(a): the seat panel refuses fewer than 10 seats at start; the rig file does at load.
    (lambda t: t.split("3 = ")[0], "seats: 2 configured; 631a.2(a) allows 10 to 14"),
    (lambda t: t.replace("sensor_pin = 5,", "sensor_pin = 4,"),
     "seats.2.sensor_pin = 4: already used by seats.1.sensor_pin"),
    (lambda t: t.replace("lockout_pin = 10", "lockout_pin = 20"),
     "gpio.lockout_pin = 20: already used by a seat"),
    (lambda t: t.replace("led_pin = 9 }", "led_pin = 60 }"),
     "seats.10.led_pin = 60: expected a BCM GPIO number 0-53 or a pin name like 'GPIO17'"),
    (lambda t: t.replace('pin_factory = "lgpio"', 'pin_factory = "mock"'),
     "gpio.pin_factory = 'mock': gpiozero's mock pins live inside the test's process"),
    (lambda t: t.replace('pin_factory = "lgpio"', 'pin_factory = "nowhere:Factory"'),
     "gpio.pin_factory = 'nowhere:Factory': cannot import it"),
    (lambda t: t.replace("product_id = 0x5678", "product_id = 0x10000"),
     "shuffler.product_id = 0x10000: expected a USB id 0x0001-0xFFFF"),
    (lambda t: t.replace("feeder_socket", "feeder"),
     "shoe.feeder: unknown key; allowed: feeder_socket, url"),
    (lambda t: t.split("[seats]")[0], "[gpio] and [seats] go together: a relay board needs both"),
    (lambda t: t.replace("15 = ", "x = ").replace("1 = {", "15 = {"),
     "seats.15: expected '<seat number 1-14> = { sensor_pin = PIN, led_pin = PIN }' (631a.2(a))"),
    (lambda t: "", "no device: expected at least one of [shoe], [shuffler], [display]"),
])
def test_a_wrong_rig_file_is_refused_at_load_naming_the_key(
        tmp_path: Path, change: object, error: str) -> None:
    path = write(tmp_path, change(BENCH))  # type: ignore[operator]
    with pytest.raises(RigConfigError) as raised:
        load_rig(path)
    assert str(raised.value).startswith(f"TABLE_HIL_RIG={path}: {error}")
