"""`tablectl software verify`: the installed program against the release's signed manifest.

It runs without the daemon (a regulator's agent may check a table that is switched off at
the control socket); the digests are the ones docs/deployment.md tells how to recompute
with `sha256sum` and `openssl`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from controller.cli import exitcodes
from controller.cli.arg_types import seconds


RESTART_COMMAND = "systemctl restart tabled"


def _restart_words(args: argparse.Namespace) -> list[str] | None:
    """--restart-command as the words to run, its program found, checked before any link
    moves (a command that cannot run would leave the links moved and the daemon on the old
    release); None after saying why. Empty with --no-restart."""
    import shlex
    import shutil

    if args.no_restart:
        return []
    try:
        words = shlex.split(args.restart_command)
    except ValueError as exc:  # an unclosed quote
        words, problem = [], str(exc).lower()
    else:
        problem = "" if words and shutil.which(words[0]) else (
            f"{words[0]} is not a program on PATH" if words else "it is empty")
    if problem:
        print(f"error: --restart-command {args.restart_command!r}: {problem}; allowed: a "
              f"command that restarts the daemon, such as '{RESTART_COMMAND}'; nothing was "
              "changed", file=sys.stderr)
        return None
    return words


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    from controller.cli.daemon_call import SUPERVISOR_HELP, supervisor_arguments
    from controller.releases import DEFAULT_BASE
    from controller.software import DEFAULT_PUBLIC_KEY

    parser = subparsers.add_parser("software", help="software authentication of the release")
    sub = parser.add_subparsers(dest="software_command", metavar="ACTION")
    sub.required = True
    verify = sub.add_parser(
        "verify", help="check every installed program file against the signed manifest",
        description="Checks the manifest's Ed25519 signature with the vendor's public key, "
                    "then the SHA-256 of every file it lists, and names every file that "
                    "differs, is missing or is not in the release. With --seed, also prints "
                    "HMAC-SHA256(seed, every file's contents in the manifest's order) for a "
                    "regulator to compare with the approved build's.")
    verify.add_argument("--seed", help="a regulator's seed: 2 to 128 hexadecimal digits, an "
                        "even number of them")
    verify.add_argument("--manifest", help="the release's manifest.json (default: "
                        "manifest.json in this program's virtualenv, or [software] manifest "
                        "of --config)")
    verify.add_argument("--public-key", help=f"the vendor's Ed25519 public key, PEM (default: "
                        f"{DEFAULT_PUBLIC_KEY}, or [software] public_key of --config)")
    verify.add_argument("--config", help="take the manifest and key from this table "
                        "configuration's [software] section")
    verify.add_argument("--root", help="check the files under this directory instead of the "
                        "running program's (e.g. an approved wheel unpacked with unzip); "
                        "console scripts are then not compared")
    verify.add_argument("--json", action="store_true", help="print the result as JSON")
    verify.set_defaults(handler=_verify)

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--base", default=DEFAULT_BASE, help=f"where the releases are "
                        f"(default: {DEFAULT_BASE})")
    common.add_argument("--socket", metavar="PATH", help="tabled's control socket (default: "
                        "$TABLECTL_SOCKET or /run/tabled/control.sock)")
    common.add_argument("--public-key", default=DEFAULT_PUBLIC_KEY,
                        help=f"the vendor's public key (default: {DEFAULT_PUBLIC_KEY})")
    restart = argparse.ArgumentParser(add_help=False, parents=[common])
    restart.add_argument("--restart-command", default=RESTART_COMMAND,
                         help=f"how the daemon is restarted (default: '{RESTART_COMMAND}')")
    restart.add_argument("--no-restart", action="store_true",
                         help="only move the links; restart the daemon yourself")
    restart.add_argument("--wait", type=seconds(1, 3600), default=60.0, metavar="SECONDS",
                         help="how long to wait for the daemon to start the release "
                              "(1 to 3600; default 60)")
    stage = sub.add_parser("stage", parents=[common],
                           help="install a release beside the running one, offline, verified",
                           description="Unpacks a release bundle (its directory or .tar.gz) "
                                       "into BASE/releases/<tag>, installs it offline into its "
                                       "own virtualenv and verifies it. The running release is "
                                       "not touched. Run as root.")
    stage.add_argument("bundle", help="the release's bundle directory or .tar.gz")
    stage.set_defaults(handler=_stage)
    activate = sub.add_parser("activate", parents=[restart],
                              help="run a staged release (supervisor; between shoes)",
                              description="Asks the daemon for a floor supervisor's consent "
                                          "(refused during a shoe), then points BASE/current "
                                          "at the release and restarts the daemon. If it "
                                          "fails to start, tabled-rollback.service puts the "
                                          "previous release back.")
    activate.add_argument("release", help="the staged release's tag, e.g. v0.3.0")
    supervisor_arguments(activate)
    activate.set_defaults(handler=_activate)
    rollback = sub.add_parser("rollback", parents=[restart],
                              help="go back to the previous release (supervisor)",
                              description="Points BASE/current back at the previous release "
                                          "and restarts the daemon. --automatic is for "
                                          "tabled-rollback.service: only while an activation "
                                          "has not started, no supervisor.")
    who = rollback.add_mutually_exclusive_group(required=True)
    who.add_argument("--supervisor", metavar="NAME", help=SUPERVISOR_HELP)
    who.add_argument("--automatic", action="store_true",
                     help="the unit's rollback after a failed start (root only)")
    rollback.add_argument("--pin-stdin", action="store_true", help="read the PIN from stdin")
    rollback.set_defaults(handler=_rollback)
    confirm = sub.add_parser("confirm", parents=[common],
                             help="after activate --no-restart: the release has started",
                             description="Checks that the daemon runs the current release, "
                                         "verified, and ends the pending activation (a later "
                                         "failure is then not rolled back by itself).")
    confirm.set_defaults(handler=_confirm)


def _verify(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from controller.software import SoftwareConfig, SoftwareError, parse_seed, verify_installed

    try:
        seed = parse_seed(args.seed) if args.seed is not None else None
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exitcodes.BAD_ARGUMENTS
    config = SoftwareConfig()
    if args.config:
        from controller.config import ConfigError, load_config

        try:
            config = load_config(args.config).software
        except ConfigError as exc:
            print(str(exc), file=sys.stderr)
            return exitcodes.BAD_CONFIGURATION
    config = replace(config, manifest=args.manifest or config.manifest,
                     public_key=args.public_key or config.public_key)
    root = Path(args.root) if args.root else None
    if root is not None and not root.is_dir():
        print(f"error: --root {args.root}: not a directory; allowed: the directory holding "
              "the packages (cards/, controller/, ...)", file=sys.stderr)
        return exitcodes.BAD_ARGUMENTS
    try:
        result = verify_installed(config, seed=seed, root=root, scripts=root is None)
    except SoftwareError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exitcodes.INTEGRITY_FAILURE if exc.signature else exitcodes.BAD_CONFIGURATION
    if args.json:
        print(json.dumps(result.as_json(), indent=2))
    else:
        m = result.manifest
        print(f"release {m.release} (version {m.version}, commit "
              f"{str(m.fields.get('source_commit', '?'))[:12]})")
        print(f"  manifest      {result.path}: signature good, key {result.key_fingerprint}")
        print(f"  files         {len(m.files)} listed, checked under {result.root}")
        if seed is not None:
            print(f"  seeded HMAC   {result.seeded_hmac or 'not computed: files are missing'}")
        for problem in result.problems():
            print(f"  FAILED        {problem}")
        print("VERIFIED" if result.ok else
              f"NOT VERIFIED: {len(result.problems())} problem(s)")
    return exitcodes.OK if result.ok else exitcodes.INTEGRITY_FAILURE


def _stage(args: argparse.Namespace) -> int:
    from controller.releases import Layout, ReleaseError, stage

    try:
        tag = stage(Layout(Path(args.base)), Path(args.bundle), args.public_key)
    except ReleaseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exitcodes.FAILURE
    print(f"release {tag} staged in {Path(args.base) / 'releases' / tag}: verified")
    print(_tell_log(args, event="staged", release=tag))
    return exitcodes.OK


def _tell_log(args: argparse.Namespace, **call: Any) -> str:
    """A staging or an automatic rollback into the table's log; what became of it."""
    from controller.cli.client import UnsupportedCommand
    from controller.control import ControlError

    try:
        recorded = _tell_daemon(args, "software_record", **call)
    except UnsupportedCommand:
        # Staging a new release is how an older table gets one: its daemon has no record.
        return ("not recorded in the table's log: the running daemon is older than this "
                "release's tablectl (it has no software_record)")
    except ControlError as exc:
        return f"not recorded in the table's log: the daemon refused: {exc}"
    return ("recorded in the table's log" if recorded else
            "not recorded in the table's log: the daemon is not running")


def _tell_daemon(args: argparse.Namespace, command: str, auth: dict[str, str] | None = None,
                 **call: Any) -> bool:
    """Send one command to the daemon; False if it is not running (other failures raise)."""
    import asyncio

    from controller.cli.client import Daemon, DaemonUnavailable
    from controller.cli.daemon_call import socket_path

    async def go() -> None:
        async with Daemon(socket_path(args)) as daemon:
            await daemon.call(command, auth=auth, **call)

    try:
        asyncio.run(go())
    except DaemonUnavailable:
        return False
    return True


def _activate(args: argparse.Namespace) -> int:
    from controller.releases import Layout, ReleaseError, verify_release

    layout = Layout(Path(args.base))
    try:
        release = layout.staged(args.release)
    except ReleaseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exitcodes.FAILURE
    try:
        verify_release(release / "venv", args.public_key)
    except ReleaseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exitcodes.INTEGRITY_FAILURE
    return _change(args, layout, "activate", args.release)


def _rollback(args: argparse.Namespace) -> int:
    from controller.releases import Layout, ReleaseError, rollback_target

    layout = Layout(Path(args.base))
    try:
        target = rollback_target(layout, automatic=args.automatic)
    except ReleaseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exitcodes.REFUSED
    if not args.automatic:
        return _change(args, layout, "rollback", target)
    from controller.releases import switch

    restart = _restart_words(args)
    if restart is None:
        return exitcodes.BAD_ARGUMENTS
    was = switch(layout, target, pending=False)
    print(f"automatic rollback: {was} did not start; {target} is current again")
    code = _restart(args, layout, target, restart)
    print(_tell_log(args, event="automatic_rollback", release=target, from_release=was or ""))
    return code


def _change(args: argparse.Namespace, layout: Any, action: str, release: str) -> int:
    """The daemon's consent (supervisor, between shoes), then the links, then the restart.
    With the daemon not running a rollback goes ahead without it (root): putting back the
    release that ran before is always allowed; an activation never is."""
    from controller.cli.client import UnsupportedCommand
    from controller.cli.daemon_call import not_accepted, read_pin
    from controller.control import ControlError
    from controller.releases import ReleaseError, switch

    restart = _restart_words(args)
    if restart is None:
        return exitcodes.BAD_ARGUMENTS
    pin = read_pin(args)
    if pin is None:
        return exitcodes.BAD_ARGUMENTS
    try:
        running = _tell_daemon(args, "software_change",
                               auth={"supervisor": args.supervisor, "pin": pin},
                               action=action, release=release)
    except UnsupportedCommand:
        # A release before 0.2.0 runs: it can neither check the supervisor nor the shoe.
        print("warning: the running daemon predates software activation: it cannot check "
              "the supervisor or that the table is between shoes, and records nothing; make "
              "sure the table is between shoes", file=sys.stderr)
        running = True
    except ControlError as exc:
        if exc.code == "unauthorised":
            return not_accepted(args, "changed")
        print(f"tablectl: the daemon refused: {exc}", file=sys.stderr)
        return exitcodes.REFUSED
    if not running and action == "activate":
        print("error: the daemon is not running, so no supervisor can allow the activation "
              "at the table; start it, then activate", file=sys.stderr)
        return exitcodes.DAEMON_NOT_RUNNING
    try:
        was = switch(layout, release, pending=action == "activate")
    except ReleaseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exitcodes.FAILURE
    print(f"{'activated' if action == 'activate' else 'rolled back to'} {release} "
          f"(was {was or 'none'})" + ("" if running else
                                      "; not recorded: the daemon was not running"))
    return _restart(args, layout, release, restart)


def _restart(args: argparse.Namespace, layout: Any, release: str, command: list[str]) -> int:
    """Restart the daemon with `command` (`_restart_words`) and wait for it to run `release`;
    an activation that started is confirmed (a later failure then rolls nothing back)."""
    import subprocess
    import time

    from controller.releases import confirm

    if not command:
        print("links moved; restart the daemon (systemctl restart tabled), then run "
              "'tablectl software confirm'")
        return exitcodes.OK
    try:
        done = subprocess.run(command, capture_output=True, text=True)
    except OSError as exc:  # found on PATH a moment ago, and cannot be run
        print(f"error: {args.restart_command} cannot be run ({exc.strerror}); the links are "
              "moved: restart the daemon by hand", file=sys.stderr)
        return exitcodes.FAILURE
    if done.returncode != 0:
        print(f"error: {args.restart_command} failed: {done.stderr.strip()}", file=sys.stderr)
        return exitcodes.FAILURE
    deadline = time.monotonic() + args.wait
    while time.monotonic() < deadline:
        status = _status(args)
        software = (status or {}).get("software") or {}
        if software.get("release") == release:
            confirm(layout)
            print(f"the daemon runs {release}: "
                  f"{'verified' if software.get('verified') else 'NOT VERIFIED'}")
            return exitcodes.OK if software.get("verified") else exitcodes.INTEGRITY_FAILURE
        time.sleep(0.5)
    print(f"error: the daemon did not come up with {release} within {args.wait:g} s; if it "
          "keeps failing, tabled-rollback.service puts the previous release back",
          file=sys.stderr)
    return exitcodes.DAEMON_NOT_RUNNING


def _status(args: argparse.Namespace) -> dict[str, Any] | None:
    import asyncio

    from controller.cli.client import Daemon, DaemonUnavailable
    from controller.cli.daemon_call import socket_path

    async def go() -> Any:
        async with Daemon(socket_path(args)) as daemon:
            return await daemon.call("status")

    try:
        return dict(asyncio.run(go()))
    except (DaemonUnavailable, OSError):
        return None


def _confirm(args: argparse.Namespace) -> int:
    from controller.releases import Layout, confirm

    layout = Layout(Path(args.base))
    software = (_status(args) or {}).get("software") or {}
    if software.get("release") != layout.current() or not software.get("verified"):
        print(f"error: the daemon runs {software.get('release') or 'nothing'} "
              f"({'verified' if software.get('verified') else 'not verified'}); current is "
              f"{layout.current()}: nothing confirmed", file=sys.stderr)
        return exitcodes.FAILURE
    confirm(layout)
    print(f"{layout.current()} confirmed")
    return exitcodes.OK
