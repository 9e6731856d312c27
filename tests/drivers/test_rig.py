"""hil.rig: the rig file that switches the HIL device tests to real hardware."""

from __future__ import annotations

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
lockout_pin = 10
relay_socket = "/run/table-rig/relays.sock"

[seats]
1 = { sensor_pin = 4, led_pin = 21 }
2 = { sensor_pin = 5, led_pin = 22 }
"""


def test_rig_file_is_read(tmp_path: Path) -> None:
    path = tmp_path / "rig.toml"
    path.write_text(RIG)
    rig = load_rig(path)
    assert rig.shoe_url.endswith("A50285BI-if00-port0")
    assert (rig.shuffler_vendor_id, rig.shuffler_product_id, rig.shuffler_backend) == (0x1234, 0x5678, "")
    assert rig.pin_factory == "lgpio" and rig.lockout_pin == 10
    assert rig.seats == {1: SeatPins(4, 21), 2: SeatPins(5, 22)}
    assert rig.display_url is None


@pytest.mark.parametrize(("broken", "message"), [
    (RIG.replace('url = "/dev', 'uri = "/dev'), "shoe.url: missing"),
    (RIG.replace("vendor_id = 0x1234", 'vendor_id = "0x1234"'), "shuffler.vendor_id = '0x1234': expected"),
    (RIG.replace("1 = {", "one = {"), "seats.one: expected '<seat number> = { sensor_pin, led_pin }'"),
])
def test_a_broken_rig_file_names_the_key(tmp_path: Path, broken: str, message: str) -> None:
    path = tmp_path / "rig.toml"
    path.write_text(broken)
    with pytest.raises(RigConfigError, match=message.replace("(", "\\(").replace("{", "\\{")):
        load_rig(path)


def test_without_the_env_var_there_is_no_rig(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(RIG_ENV, raising=False)
    assert rig_from_env() is None
    assert NO_RIG_REASON.startswith("no rig: set TABLE_HIL_RIG=")
