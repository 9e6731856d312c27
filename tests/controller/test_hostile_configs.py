"""Hostile configurations: each is refused by `tablectl config validate` AND by `tabled` at
start (exit 6, no traceback), with a message naming the key and what is allowed."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from controller.cli import exitcodes
from controller.cli import main as tablectl
from controller.daemon import EXIT_CONFIG
from controller.daemon import main as tabled

ROOT = Path(__file__).resolve().parents[2]
SIMULATED = (ROOT / "config" / "simulated-table.toml").read_text(encoding="utf-8")
FEED = (ROOT / "config" / "progressive-heavenly9-mystery.toml").read_text(encoding="utf-8")
FLOOR_HASH = re.findall(r'floor = "(pbkdf2_sha256\$[^"]+)"', SIMULATED)[0]


def _sub(old: str, new: str, text: str = SIMULATED) -> str:
    assert text.count(old) >= 1, old
    return text.replace(old, new, 1)


def _with_pin_iterations(iterations: int) -> Callable[[Path], str]:
    _, _, salt, digest = FLOOR_HASH.split("$")
    return lambda tmp: _sub(FLOOR_HASH, f"pbkdf2_sha256${iterations}${salt}${digest}")


def _store_under_a_file(tmp: Path) -> str:
    blocker = tmp / "not-a-folder"
    blocker.write_text("a file where the store's folder should be")
    return _sub('path = "/var/lib/tabled/table.sqlite"', f'path = "{blocker}/table.sqlite"')


def _socket_is_a_file(tmp: Path) -> str:
    regular = tmp / "control.sock"
    regular.write_text("a regular file")
    return _sub('socket = "/run/tabled/control.sock"', f'socket = "{regular}"')


# (id, the hostile file's text given a scratch folder, a line every refusal must contain)
HOSTILE: list[tuple[str, Callable[[Path], str], str]] = [
    ("max-cents-above-2-63",
     lambda tmp: _sub("max_cents = 500000", f"max_cents = {2**63 + 5}"),
     f"wagers.banker.max_cents = {2**63 + 5}: must be 1..1000000000 (integer cents)"),
    ("wager-without-minimum",
     lambda tmp: _sub("[wagers.banker]\nmin_cents = 500\n", "[wagers.banker]\n"),
     "wagers.banker.min_cents: missing; allowed: the table's minimum for this wager in cents, "
     "1 to 1,000,000,000"),
    ("wager-without-maximum",
     lambda tmp: _sub("max_cents = 100000\n", ""),
     "wagers.tie.max_cents: missing; allowed: the table's maximum for this wager in cents"),
    ("display-baud-minus-1",
     lambda tmp: SIMULATED + '\n[display]\nenabled = true\nurl = "/dev/baccarat-display"\n'
                             'baudrate = -1\n',
     "display.baudrate = -1: not allowed; allowed: one of 9600, 19200, 38400, 57600, 115200, "
     "230400"),
    ("pin-hash-1-iteration", _with_pin_iterations(1),
     "supervisors.floor = 'pbkdf2_sha256$1$...': not allowed; allowed: a PIN hash made by "
     "'tablectl supervisor hash-pin' (pbkdf2_sha256$ITERATIONS$SALT-HEX$HASH-HEX, 100,000 to "
     "2,000,000 iterations); this one has 1 iterations"),
    ("pin-hash-10-12-iterations", _with_pin_iterations(10**12),
     "this one has 1,000,000,000,000 iterations"),
    ("store-path-is-a-directory",
     lambda tmp: _sub('path = "/var/lib/tabled/table.sqlite"', f'path = "{tmp}"'),
     "store.path = '{tmp}': not allowed; allowed: a writable file path whose folder exists or "
     "can be made, e.g. /var/lib/tabled/table.sqlite (this is a directory)"),
    ("table-id-10000-characters",
     lambda tmp: _sub('id = "SIM-BAC-01"', f'id = "{"T" * 10_000}"'),
     "table.id = 'TTTTTTTTTTTTTTTT... (10000 characters)': not allowed; allowed: 1 to 64 "
     "printable characters, e.g. 'BAC-01'"),
    ("table-name-with-a-line-break",
     lambda tmp: _sub('name = "Simulated baccarat table"', 'name = "Salon\\nPrive"'),
     "table.name = 'Salon\\nPrive': not allowed; allowed: at most 48 printable characters "
     "(no line breaks), e.g. 'Main floor baccarat 1'"),
    ("table-name-49-characters",
     lambda tmp: _sub('name = "Simulated baccarat table"', f'name = "{"N" * 49}"'),
     f"table.name = '{'N' * 49}': not allowed; allowed: at most 48 printable characters"),
    ("store-path-unwritable", _store_under_a_file,
     "store.path = '{tmp}/not-a-folder/table.sqlite': not allowed; allowed: a writable file "
     "path whose folder exists or can be made, e.g. /var/lib/tabled/table.sqlite "
     "({tmp}/not-a-folder is a file, not a folder)"),
    # A name no file can have: pathlib's own tests raised out of the check (a traceback, no
    # refusal; found by a probe of one-value mutations of every shipped configuration).
    ("store-path-name-too-long",
     lambda tmp: _sub('path = "/var/lib/tabled/table.sqlite"', f'path = "{tmp}/{"n" * 300}"'),
     "(File name too long)"),
    ("store-path-holds-a-nul",
     lambda tmp: _sub('path = "/var/lib/tabled/table.sqlite"', 'path = "/tmp/a\\u0000b"'),
     "store.path = '/tmp/a\\x00b': not allowed; allowed: a writable file path whose folder "
     "exists or can be made, e.g. /var/lib/tabled/table.sqlite (a path cannot hold a NUL "
     "character)"),
    ("socket-path-holds-a-nul",
     lambda tmp: _sub('socket = "/run/tabled/control.sock"', 'socket = "/run/a\\u0000.sock"'),
     "control.socket = '/run/a\\x00.sock': not allowed; allowed: a Unix socket path of at "
     "most 107 bytes, not an existing file or folder, e.g. /run/tabled/control.sock (a path "
     "cannot hold a NUL character)"),
    # pyserial opened a port named with a NUL only in play, as a device fault.
    ("shoe-url-holds-a-nul",
     lambda tmp: _sub('url = "/dev/baccarat-shoe"', 'url = "/dev/baccarat\\u0000shoe"'),
     "shoe.url = '/dev/baccarat\\x00shoe': not allowed; allowed: a device path, or a URL of a "
     "scheme pyserial opens (alt://, cp2110://, hwgrep://, loop://, rfc2217://, socket://, "
     "spy://), with no NUL character, e.g. /dev/ttyUSB0, /dev/baccarat-shoe, socket://host:port"),
    # A scheme pyserial has no handler for (a typo) was met only in play, as a device fault.
    ("shoe-url-of-an-unknown-scheme",
     lambda tmp: _sub('url = "/dev/baccarat-shoe"', 'url = "sockt://10.0.0.7:4000"'),
     "shoe.url = 'sockt://10.0.0.7:4000': not allowed; allowed: a device path, or a URL of a "
     "scheme pyserial opens (alt://, cp2110://, hwgrep://, loop://, rfc2217://, socket://, "
     "spy://), with no NUL character, e.g. /dev/ttyUSB0, /dev/baccarat-shoe, socket://host:port"),
    ("display-url-holds-a-nul",
     lambda tmp: SIMULATED + '\n[display]\nenabled = true\nurl = "/dev/tty\\u0000USB1"\n',
     "display.url = '/dev/tty\\x00USB1': not allowed; allowed: a device path, or a URL of a "
     "scheme pyserial opens (alt://, cp2110://, hwgrep://, loop://, rfc2217://, socket://, "
     "spy://), with no NUL character, e.g. /dev/ttyUSB1"),
    ("socket-path-over-108-bytes",
     lambda tmp: _sub('socket = "/run/tabled/control.sock"',
                      f'socket = "/run/tabled/{"s" * 120}.sock"'),
     "not allowed; allowed: a Unix socket path of at most 107 bytes, not an existing file or "
     "folder, e.g. /run/tabled/control.sock (this one is 137 bytes)"),
    ("socket-path-is-a-regular-file", _socket_is_a_file,
     "control.socket = '{tmp}/control.sock': not allowed; allowed: a Unix socket path of at "
     "most 107 bytes, not an existing file or folder, e.g. /run/tabled/control.sock (this is "
     "an existing file that is not a socket; the daemon replaces only a socket it left behind)"),
    # A value of thousands of characters is named by its start and end, not printed whole
    # (the refusal of a 3,000-digit seat count was a 3,000-character line).
    ("seats-3000-digits",
     lambda tmp: _sub("seats = 10 ", f"seats = 1{'0' * 2998}7 "),
     "table.seats = 100000000000000000...0000000000000000007: must be 10..14 (631a.2(a), "
     "game.family = 'baccarat')"),
    ("variant-3000-characters",
     lambda tmp: _sub('variant = "standard"', f'variant = "a{"y" * 2998}z"'),
     "game.variant = 'a" + "y" * 96 + "..." + "y" * 97 + "z': must be one of 'standard', "
     "'ez', 'commission-free'"),
    # A digit int() does not read ("²".isdigit() is True): ValueError out of the checks.
    ("metrics-port-superscript-2",
     lambda tmp: SIMULATED + '\n[metrics]\nlisten = "127.0.0.1:\u00b2"\n',
     "metrics.listen = '127.0.0.1:\u00b2': not allowed; allowed: HOST:PORT on this machine"),
    ("display-service-port-superscript-2",
     lambda tmp: SIMULATED + '\n[display_service]\nlisten = "127.0.0.1:\u00b2"\n',
     "display_service.listen = '127.0.0.1:\u00b2': not allowed; allowed: HOST:PORT with PORT "
     "0 to 65535"),
    ("display-service-host-label-over-63",
     lambda tmp: SIMULATED + f'\n[display_service]\nlisten = "{"a" * 70}:8080"\n',
     "display_service.listen = '" + "a" * 70 + ":8080': not allowed; allowed: HOST:PORT"),
    ("pin-hash-superscript-iterations",
     lambda tmp: _sub(FLOOR_HASH, FLOOR_HASH.replace("$", "$\u00b9\u2070\u2070\u2070\u2070\u2070#", 1)
                      .replace("#" + FLOOR_HASH.split("$")[1] + "$", "$")),
     "supervisors.floor = 'pbkdf2_sha256$\u00b9\u2070\u2070\u2070\u2070\u2070$"),
    ("shuffler-backend-module-missing",
     lambda tmp: _sub('backend = "hil.usb_shuffler:get_backend"',
                      'backend = "hil.no_such_backend:get_backend"'),
     "shuffler.backend = 'hil.no_such_backend:get_backend': not allowed; allowed: empty for "
     "libusb, or an importable pyusb backend 'module:attribute' (cannot import "
     "hil.no_such_backend: No module named 'hil.no_such_backend')"),
    ("shuffler-backend-attribute-missing",
     lambda tmp: _sub('backend = "hil.usb_shuffler:get_backend"',
                      'backend = "hil.usb_shuffler:no_such_function"'),
     "(hil.usb_shuffler has no 'no_such_function')"),
]


@pytest.fixture(autouse=True)
def _logging_restored():
    """tabled's main() configures logging onto the captured stream; later tests in the same
    process must not log to it once the capture is closed."""
    import logging

    import structlog

    saved, root = structlog.get_config(), logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    structlog.configure(**saved)
    root.handlers[:], root.level = handlers, level


@pytest.fixture(params=HOSTILE, ids=[case[0] for case in HOSTILE])
def hostile(request, tmp_path) -> tuple[Path, str]:
    _, make, expected = request.param
    path = tmp_path / "table.toml"
    path.write_text(make(tmp_path), encoding="utf-8")
    return path, expected.replace("{tmp}", str(tmp_path))


def test_config_validate_refuses_it_naming_the_key(hostile, capsys):
    path, expected = hostile
    assert tablectl(["config", "validate", str(path)]) == exitcodes.BAD_CONFIGURATION
    out = capsys.readouterr().out
    assert expected in out
    assert out.endswith("1 error(s)\n"), out  # exactly this one problem, nothing collateral
    assert max(map(len, out.splitlines())) < 1_000, out  # no value printed thousands long


def test_the_daemon_refuses_it_at_start_naming_the_key(hostile, capsys):
    path, expected = hostile
    assert tabled(["--config", str(path)]) == EXIT_CONFIG
    err = capsys.readouterr().err
    assert f"{path}: 1 configuration error(s):\n" in err
    assert expected in err
    assert "Traceback" not in err


def test_a_seat_numbered_with_a_superscript_digit_is_named(tmp_path, capsys):
    """'¹'.isdigit() is True and int('¹') raises: the seat's check let ValueError out."""
    path = tmp_path / "table.toml"
    path.write_text(_sub("1  = { sensor = 2,  led = 12 }", '"\u00b9" = { sensor = 2,  led = 12 }'),
                    encoding="utf-8")
    assert tablectl(["config", "validate", str(path)]) == exitcodes.BAD_CONFIGURATION
    out = capsys.readouterr().out
    assert "gpio.seats.\u00b9 = {'led': 12, 'sensor': 2}: not allowed; allowed: seat numbers 1 to " \
        "14 (631a.2(a))" in out
    assert "Traceback" not in out


def test_the_daemon_process_exits_6_which_systemd_does_not_restart(tmp_path):
    """systemd/tabled.service: RestartPreventExitStatus=6, so no restart loop."""
    path = tmp_path / "table.toml"
    path.write_text(HOSTILE[3][1](tmp_path), encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "controller.daemon", "--config", str(path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 6
    assert "display.baudrate = -1: not allowed" in done.stderr
    assert "Traceback" not in done.stderr
    unit = (ROOT / "systemd" / "tabled.service").read_text(encoding="utf-8")
    assert "\nRestartPreventExitStatus=6\n" in unit


def _without_paho(monkeypatch: pytest.MonkeyPatch) -> None:
    """As on a table installed with '.[pi]' only: the 'linked' extra's paho-mqtt is absent
    (a None entry in sys.modules makes every import of it fail, as Python documents)."""
    for name in [n for n in sys.modules if n == "paho" or n.startswith("paho.")] + ["paho"]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "paho.mqtt", None)
    monkeypatch.setitem(sys.modules, "paho.mqtt.client", None)


MQTT_REFUSAL = ("[mqtt]: needs the Python package paho-mqtt, which is not installed here "
                "(import of paho.mqtt.client halted; None in sys.modules); allowed: a release "
                "bundle built with the 'linked' extra (--extras pi,linked-libpq, with apt "
                "install libpq5; docs/deployment.md, step 2), on a development install pip "
                "install '.[pi,linked]', or remove [mqtt]")


def test_an_mqtt_feed_without_the_linked_extra_is_refused_by_both(tmp_path, capsys,
                                                                 monkeypatch):
    path = tmp_path / "table.toml"
    path.write_text(FEED, encoding="utf-8")
    assert tablectl(["config", "validate", str(path)]) == exitcodes.OK  # paho installed here
    capsys.readouterr()
    _without_paho(monkeypatch)
    assert tablectl(["config", "validate", str(path)]) == exitcodes.BAD_CONFIGURATION
    assert f"{path}: {MQTT_REFUSAL}\n1 error(s)\n" in capsys.readouterr().out
    assert tabled(["--config", str(path)]) == EXIT_CONFIG
    assert MQTT_REFUSAL in capsys.readouterr().err


def test_every_problem_is_reported_at_once_in_one_format(tmp_path, capsys):
    text = _with_pin_iterations(1)(tmp_path)
    text = _sub("max_cents = 100000\n", "", text)
    text = _sub('backend = "hil.usb_shuffler:get_backend"', 'backend = "nonsense"', text)
    text += '\n[display]\nenabled = true\nurl = "/dev/baccarat-display"\nbaudrate = -1\n'
    path = tmp_path / "table.toml"
    path.write_text(text, encoding="utf-8")
    assert tablectl(["config", "validate", str(path)]) == exitcodes.BAD_CONFIGURATION
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == "4 error(s)"
    pattern = re.compile(rf"^{re.escape(str(path))}: [\w.\[\]]+( = .+: not allowed|: missing);"
                         r" allowed: .+$")
    assert [bool(pattern.match(line)) for line in lines[:-1]] == [True] * 4, lines


def test_the_shipped_configurations_still_validate(capsys):
    for name in ("simulated-table.toml", "progressive-heavenly9-mystery.toml",
                 "progressive-royal9.toml", "progressive-harmony-linked.toml"):
        assert tablectl(["config", "validate", str(ROOT / "config" / name)]) == exitcodes.OK, \
            capsys.readouterr().out
    if os.environ.get("CI") == "true":
        assert "valid table configuration" in capsys.readouterr().out


def test_a_store_folder_the_daemon_could_not_make_is_refused_before_it_exists(capsys):
    """The store's folder does not exist yet: judged by the nearest folder that does, where
    the daemon would have to make it. Checked as an account that cannot write there: nobody,
    in a child process, when the tests run as root (root may write anywhere)."""
    import contextlib
    import io
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="store-parent-"))
    base.chmod(0o755)  # anyone may look in; only its owner may make a folder in it
    store = base / "missing" / "deeper" / "table.sqlite"
    config = base / "table.toml"
    config.write_text(_sub('path = "/var/lib/tabled/table.sqlite"', f'path = "{store}"'),
                      encoding="utf-8")
    config.chmod(0o644)
    assert tablectl(["config", "validate", str(config)]) == 0  # its owner could make it
    capsys.readouterr()
    reading, writing = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through the pipe
        code = 99
        try:
            if os.geteuid() == 0:
                os.setgid(65534)
                os.setuid(65534)
            else:
                base.chmod(0o555)  # this account owns it: take its own write permission away
            with contextlib.redirect_stdout(io.StringIO()) as out:
                code = tablectl(["config", "validate", str(config)])
            os.write(writing, out.getvalue().encode())
        finally:
            os._exit(code)
    os.close(writing)
    with os.fdopen(reading) as pipe:
        output = pipe.read()
    _, status = os.waitpid(child, 0)
    base.chmod(0o755)
    assert os.waitstatus_to_exitcode(status) == exitcodes.BAD_CONFIGURATION, output
    assert (f"store.path = '{store}': not allowed; allowed: a writable file path whose folder "
            f"exists or can be made, e.g. /var/lib/tabled/table.sqlite ({base} is not writable "
            "by this account; the daemon runs as user tabled: validate with 'sudo -u tabled "
            "tablectl config validate FILE')") in output


def test_a_number_of_5000_digits_in_the_file_or_in_a_set_is_named(tmp_path, capsys):
    """tomllib turns a number's digits into an int, which Python refuses past 4,300 digits
    with a plain ValueError (not a TOMLDecodeError): the daemon and tablectl stopped on it
    for a file, and `--set` let it out too."""
    path = tmp_path / "table.toml"
    path.write_text(_sub("seats = 10 ", f"seats = {'9' * 5000} "), encoding="utf-8")
    assert tablectl(["config", "validate", str(path)]) == exitcodes.BAD_CONFIGURATION
    assert (f"{path}: not valid TOML: a number of more than 4,300 digits, which no setting "
            "takes") in " ".join(capsys.readouterr().out.split())
    assert tabled(["--config", str(path)]) == EXIT_CONFIG
    assert "  - not valid TOML: a number of more than 4,300 digits" in capsys.readouterr().err
    good = tmp_path / "good.toml"
    good.write_text(SIMULATED, encoding="utf-8")
    good.chmod(0o600)
    assert tabled(["--config", str(good), "--set", f"table.seats={'9' * 5000}"]) == EXIT_CONFIG
    err = capsys.readouterr().err
    assert "  - table.seats = '9999" in err and "': must be an integer (631a.2(a)" in err
    assert "Traceback" not in err


def test_a_file_that_is_not_utf8_is_named_by_every_reader(tmp_path, capsys):
    """A configuration saved in another encoding than TOML's UTF-8 (an 'é' from a Windows
    editor, in a comment) stopped tablectl and the daemon on UnicodeDecodeError; so did a
    Rules Submission, a secrets file and a rig file. Each reader now names the byte and
    where it is, as it names any file that is not TOML."""
    from controller.auth import read_secrets
    from hil.rig import RigConfigError, load_rig

    latin1 = SIMULATED.replace("[gpio]\n", "[gpio]  # c\xe2bl\xe9 by the caf\xe9\n", 1)
    line = SIMULATED[:SIMULATED.index("[gpio]\n")].count("\n") + 1
    expected = (f"not valid TOML: not UTF-8 text: byte 0xe2 at line {line}, column 12 (a "
                "TOML file is UTF-8: save it in that encoding)")
    path = tmp_path / "table.toml"
    path.write_bytes(latin1.encode("latin-1"))
    assert tablectl(["config", "validate", str(path)]) == exitcodes.BAD_CONFIGURATION
    assert f"{path}: {expected}" in " ".join(capsys.readouterr().out.split())
    assert tabled(["--config", str(path)]) == EXIT_CONFIG
    err = capsys.readouterr().err
    assert f"  - {expected}\n" in err and "Traceback" not in err
    submission = tmp_path / "rules.toml"
    submission.write_bytes(b'[table]\nname = "Caf\xe9"\n')
    for command in ("par-sheet", "simulate"):
        assert tablectl([command, str(submission)]) == exitcodes.BAD_CONFIGURATION
        assert (f"{submission}: not valid TOML: not UTF-8 text: byte 0xe9 at line 2, column "
                "12") in " ".join(capsys.readouterr().err.split())
    secrets = tmp_path / "secrets.toml"
    secrets.write_bytes(b"[supervisors]\n# Jos\xe9\n")
    secrets.chmod(0o600)
    assert read_secrets(secrets) == ({}, [
        f"access.secrets: {secrets} is not valid TOML: not UTF-8 text: byte 0xe9 at line 2, "
        "column 6 (a TOML file is UTF-8: save it in that encoding)"])
    rig = tmp_path / "rig.toml"
    rig.write_bytes(b"# Ren\xe9's bench\n")
    with pytest.raises(RigConfigError, match=r"byte 0xe9 at line 1, column 6"):
        load_rig(rig)


@pytest.mark.parametrize("kind", ["/dev/zero", "fifo", "huge"])
def test_a_configuration_that_is_a_device_a_pipe_or_huge_is_named(tmp_path, capsys, kind):
    """`tablectl config validate /dev/zero` read until the process ran out of memory
    (MemoryError, a traceback; on a Pi the kernel's OOM killer picks a process), a named
    pipe waited for a writer for ever, a 16 MiB file was read whole. Each is refused by
    tablectl and tabled, naming what is allowed (controller/text_files.py)."""
    if kind == "/dev/zero":
        path, said = Path("/dev/zero"), "not a regular file (a device, a pipe or a socket)"
    elif kind == "fifo":
        path, said = tmp_path / "table.toml", "not a regular file (a device, a pipe or a socket)"
        os.mkfifo(path)
    else:
        path, said = tmp_path / "table.toml", "over 16,777,216 bytes; allowed: a file of at most"
        path.write_bytes(SIMULATED.encode() + b"#" * (16 * 1024 * 1024))
    assert tablectl(["config", "validate", str(path)]) == exitcodes.BAD_CONFIGURATION
    assert f"{path}: cannot read: {said}" in " ".join(capsys.readouterr().out.split())
    assert tabled(["--config", str(path)]) == EXIT_CONFIG
    assert said in " ".join(capsys.readouterr().err.split())


def test_a_release_manifest_that_is_a_device_is_named(tmp_path):
    from controller.software import SoftwareError, load_manifest

    with pytest.raises(SoftwareError, match=r"^manifest /dev/zero: cannot be read \(not a "
                                            r"regular file \(a device, a pipe or a socket\); "
                                            r"allowed: a file\)"):
        load_manifest(Path("/dev/zero"), tmp_path / "key.pem")


def test_the_serial_url_schemes_are_the_installed_pyserials() -> None:
    """The schemes a device's url may use are those pyserial opens: a pyserial that adds or
    drops a URL handler changes this list, and the configuration's check with it."""
    import pkgutil

    import serial.urlhandler

    from controller.config_checks import SERIAL_URL_SCHEMES

    installed = sorted(m.name.removeprefix("protocol_")
                       for m in pkgutil.iter_modules(serial.urlhandler.__path__)
                       if m.name.startswith("protocol_"))
    assert list(SERIAL_URL_SCHEMES) == installed
