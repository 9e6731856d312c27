"""hil.rig: the rig file that switches the HIL device tests to real hardware."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from drivers.seats import SeatPins
from hil.rig import NO_RIG_REASON, RIG_ENV, RigConfigError, load_rig, rig_from_env

RIG = """
[shoe]
url = "/dev/serial/by-id/usb-FTDI_FT232R_USB_UART_A50285BI-if00-port0"
feeder_socket = "/run/table-rig/feeder.sock"

[shuffler]
vendor_id = 0x1234
product_id = 0x5678

[gpio]
lockout_pin = 2
relay_socket = "/run/table-rig/relays.sock"

[seats]
1 = { sensor_pin = 4, led_pin = 21 }
2 = { sensor_pin = 5, led_pin = 22 }
3 = { sensor_pin = 6, led_pin = 23 }
4 = { sensor_pin = 7, led_pin = 24 }
5 = { sensor_pin = 8, led_pin = 25 }
6 = { sensor_pin = 9, led_pin = 26 }
7 = { sensor_pin = 10, led_pin = 27 }
8 = { sensor_pin = 11, led_pin = 28 }
9 = { sensor_pin = 12, led_pin = 29 }
10 = { sensor_pin = 13, led_pin = 30 }
"""


def test_rig_file_is_read(tmp_path: Path) -> None:
    path = tmp_path / "rig.toml"
    path.write_text(RIG)
    rig = load_rig(path)
    assert rig.shoe is not None and rig.shoe.url.endswith("A50285BI-if00-port0")
    assert rig.shuffler is not None
    assert (rig.shuffler.vendor_id, rig.shuffler.product_id, rig.shuffler.backend) == (
        0x1234, 0x5678, "")
    assert rig.gpio is not None
    assert rig.gpio.pin_factory == "lgpio" and rig.gpio.lockout_pin == 2
    assert rig.gpio.seats == {n: SeatPins(3 + n, 20 + n) for n in range(1, 11)}  # 631a.2(a)
    assert rig.display_url is None

@pytest.mark.parametrize(("broken", "message"), [
    (RIG.replace('url = "/dev', 'uri = "/dev'), "shoe.uri: unknown key; allowed: feeder_socket, url"),
    (RIG.replace('url = "/dev', 'feeder_socket = "/dev').replace(
        'feeder_socket = "/run/table-rig/feeder.sock"', ""), "shoe.url: missing"),
    (RIG.replace("vendor_id = 0x1234", 'vendor_id = "0x1234"'), "shuffler.vendor_id = '0x1234': expected"),
    (RIG.replace("\n1 = {", "\none = {"),
     "seats.one: expected '<seat number 1-14> = { sensor_pin = PIN, led_pin = PIN }' (631a.2(a))"),
])
def test_a_broken_rig_file_names_the_key(tmp_path: Path, broken: str, message: str) -> None:
    path = tmp_path / "rig.toml"
    path.write_text(broken)
    with pytest.raises(RigConfigError, match=re.escape(message)):
        load_rig(path)


def test_without_the_env_var_there_is_no_rig(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(RIG_ENV, raising=False)
    assert rig_from_env() is None
    assert NO_RIG_REASON.startswith("no rig: set TABLE_HIL_RIG=")
