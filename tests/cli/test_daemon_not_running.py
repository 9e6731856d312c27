"""When tabled is not reachable, tablectl says exactly why and how to check (exit 3)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from controller.cli import exitcodes, main

SERVICE_HINTS = ("systemctl status tabled", "journalctl -u tabled -n 50")


@pytest.mark.parametrize("argv", [["status"], ["devices"], ["rounds"], ["events"],
                                  ["events", "verify"], ["meters"], ["test", "shoe"]])
def test_no_socket_file_every_command_exits_3(tmp_path, capsys, argv):
    path = tmp_path / "control.sock"
    assert main([*argv, "--socket", str(path)]) == exitcodes.DAEMON_NOT_RUNNING
    err = capsys.readouterr().err
    assert f"the daemon is not running: there is no control socket at {path}" in err
    for hint in SERVICE_HINTS:
        assert hint in err


def test_socket_file_left_behind_with_nobody_listening(tmp_path, capsys):
    path = tmp_path / "control.sock"
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(path))  # bound, never listening, then closed: what a crash leaves
    stale.close()
    assert main(["status", "--socket", str(path)]) == exitcodes.DAEMON_NOT_RUNNING
    err = capsys.readouterr().err
    assert (f"the daemon is not running: the control socket {path} exists but nobody is "
            "listening (connection refused") in err
    assert "systemctl status tabled" in err


def test_path_that_is_not_a_socket(tmp_path, capsys):
    path = tmp_path / "control.sock"
    path.write_text("not a socket")
    assert main(["status", "--socket", str(path)]) == exitcodes.DAEMON_NOT_RUNNING
    assert f"{path} exists but is not a socket" in capsys.readouterr().err


@pytest.mark.parametrize("answer", [b"HTTP/1.0 400 Bad Request\r\n\r\n", b"[1, 2]\n",
                                    b"{\"hello\": 1}\n", b"[" * 100_000 + b"\n"])
def test_a_socket_that_is_not_tabled_is_named(tmp_path, capsys, answer):
    """--socket at another program's socket (a web server, a stale path reused): its answer
    is not the control protocol. tablectl stopped on a JSONDecodeError, AttributeError or
    RecursionError traceback; it says the socket is not tabled's, exit 3, and JSON names
    the reason."""
    import json
    import threading

    path = tmp_path / "other.sock"
    other = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    other.bind(str(path))
    other.listen(8)

    def serve() -> None:
        while True:
            try:
                connection, _ = other.accept()
            except OSError:
                return  # closed: the test is over
            with connection:
                connection.recv(65536)
                connection.sendall(answer)

    threading.Thread(target=serve, daemon=True).start()
    try:
        assert main(["status", "--socket", str(path)]) == exitcodes.DAEMON_NOT_RUNNING
        err = " ".join(capsys.readouterr().err.split())
        assert f"tablectl: {path} is not tabled's control socket: it answered " in err, err
        assert ", which is not the control protocol (check --socket / the [control] socket " \
               "setting)" in err, err
        assert main(["--json", "status", "--socket", str(path)]) == \
            exitcodes.DAEMON_NOT_RUNNING
        answer_json = json.loads(capsys.readouterr().out)
        assert (answer_json["reason"], answer_json["socket"]) == ("not_tabled", str(path))
    finally:
        other.close()


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores socket permissions")
def test_permission_denied(fake, capsys):
    os.chmod(fake.socket, 0o000)
    try:
        assert main(["status", "--socket", fake.socket]) == exitcodes.DAEMON_NOT_RUNNING
    finally:
        os.chmod(fake.socket, 0o660)
    err = capsys.readouterr().err
    assert f"permission denied: the control socket {fake.socket} exists (mode 0000)" in err
    assert "tabled group" in err


def test_socket_from_environment(tmp_path, capsys, monkeypatch):
    path = tmp_path / "elsewhere.sock"
    monkeypatch.setenv("TABLECTL_SOCKET", str(path))
    assert main(["status"]) == exitcodes.DAEMON_NOT_RUNNING
    assert f"no control socket at {path}" in capsys.readouterr().err


def test_as_a_process_with_the_default_socket_name_in_the_message(tmp_path):
    env = {**os.environ, "TABLECTL_SOCKET": str(tmp_path / "x.sock"), "NO_COLOR": "1"}
    done = subprocess.run([sys.executable, "-m", "controller.cli", "devices"], env=env,
                          capture_output=True, text=True, timeout=30,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == exitcodes.DAEMON_NOT_RUNNING
    assert done.stdout == ""
    assert f"no control socket at {tmp_path / 'x.sock'}" in done.stderr


def test_bad_arguments_exit_2(capsys):
    assert main(["rounds", "--last", "many"]) == exitcodes.BAD_ARGUMENTS
    assert main(["test", "toaster"]) == exitcodes.BAD_ARGUMENTS


def test_permission_denied_message_even_when_running_as_root(fake):
    # Root ignores the socket's mode, so feed the diagnosis the error a technician's
    # account gets; the message must still name the socket and its mode.
    from controller.cli.client import _diagnose

    os.chmod(fake.socket, 0o660)
    problem = _diagnose(fake.socket, PermissionError(13, "Permission denied"))
    assert problem.reason == "permission_denied"
    assert str(problem).startswith(f"permission denied: the control socket {fake.socket} "
                                   "exists (mode 0660) but your account may not open it")
