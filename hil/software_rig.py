"""A HIL rig made of software: each simulator its own process, behind the rig's interfaces.

    .venv/bin/python -m hil.software_rig --out /tmp/rig/rig.toml
    TABLE_HIL_RIG=/tmp/rig/rig.toml ./run-tests hil -k rig

starts, in the rig file's folder (a short path: Unix sockets hold 108 bytes):

* the shoe on a pseudo-terminal (``shoe.tty``) with its card-feeding robot on
  ``feeder.sock`` (``DRAW`` -> ``OK`` once a card left the shoe; an empty shoe
  is reloaded with a fresh 8-deck stack first, as the bench's operator would);
* the display on a pseudo-terminal (``display.tty``);
* the relay board (``hil.relay_board``): relays and photodiodes on
  ``relays.sock``, the Pi's side of its wires on ``wires.sock``, which the
  tests' gpiozero factory (``hil.relay_board:WiredFactory``) connects to;
* the shuffler behind a USB bus in its own process (``hil.usb_bridge``) on
  ``usb.sock``; ``--no-shuffler`` leaves it out (the rig file then has no
  ``[shuffler]``, and the shuffler's rig variants skip with "rig has no shuffler").

It writes the rig file once every device answers, prints ``rig ready: <file>``
and runs until SIGINT or SIGTERM (or until a device's process dies, with an
error). Nothing in the rig file says "simulator": the tests drive it exactly as
they drive a bench (docs/wiring.md, "HIL rig file").
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from cards import BackColour, Card
from hil.rig import TABLE_A, TABLE_A_LOCKOUT_PIN
from hil.shoe_sim import SimulatedShoe, build_stack

DEVICES = ("shoe", "display", "relays", "shuffler")
READY_TIMEOUT_S = 30.0
"""A device process answers within this (about 0.5 s normally; a loaded CI machine is slower)."""
FEEDER_LINE_MAX = 64
ENDPOINTS = ("shoe.tty", "feeder.sock", "display.tty", "relays.sock", "wires.sock", "usb.sock")
"""What the devices' processes make in the rig file's folder."""


def rig_text(folder: Path, shuffler: bool) -> str:
    """The rig file: device paths relative to its own folder, factory options absolute
    (they go to the factory as they are)."""
    seats = "\n".join(f"{seat} = {{ sensor_pin = {p.sensor_pin}, led_pin = {p.led_pin} }}"
                      for seat, p in TABLE_A.items())
    shuffler_section = ("[shuffler]\nvendor_id = 0x1209\nproduct_id = 0x0001\n"
                        'backend = "hil.usb_bridge:get_backend"\nbackend_socket = "usb.sock"\nbatch_cards = 416\n\n'
                        if shuffler else "# no [shuffler]: started with --no-shuffler\n\n")
    return (f"# The software rig (python -m hil.software_rig), pid {os.getpid()}.\n\n"
            '[shoe]\nurl = "shoe.tty"\nfeeder_socket = "feeder.sock"\n\n'
            + shuffler_section +
            '[display]\nurl = "display.tty"\n\n'
            '[gpio]\npin_factory = "hil.relay_board:WiredFactory"\n'
            f'factory_options = {{ wires_socket = "{folder / "wires.sock"}" }}\n'
            f'lockout_pin = {TABLE_A_LOCKOUT_PIN}\nrelay_socket = "relays.sock"\n\n'
            f"[seats]\n{seats}\n")


# --- one device per process ----------------------------------------------------------------


async def _serve_until_stopped(folder: Path, device: str) -> None:
    (folder / f"{device}.ready").touch()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()


def _link(target: str, link: Path) -> None:
    """``link`` -> ``target``, so the rig file names a stable path like /dev/serial/by-id."""
    with contextlib.suppress(FileNotFoundError):
        link.unlink()
    link.symlink_to(target)


async def run_shoe(folder: Path) -> None:
    rng = random.Random(631)
    shoe = SimulatedShoe(*_fresh_stack(rng))
    await shoe.start()
    _link(shoe.port, folder / "shoe.tty")

    async def feed(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while line := await reader.readline():
            request = line[:FEEDER_LINE_MAX].decode("ascii", "replace").strip()
            if request == "PING":
                reply = "OK"
            elif request == "DRAW":
                if shoe.remaining == 0:
                    shoe.load(*_fresh_stack(rng))
                await shoe.draw()
                reply = "OK"
            else:
                reply = f"ERR unknown request {request!r}; expected DRAW or PING"
            writer.write(reply.encode() + b"\n")
            await writer.drain()
        writer.close()

    server = await asyncio.start_unix_server(feed, str(folder / "feeder.sock"))
    try:
        await _serve_until_stopped(folder, "shoe")
    finally:
        server.close()
        await shoe.stop()


def _fresh_stack(rng: random.Random) -> tuple[list[Card], BackColour, int]:
    stack, cover = build_stack(8, rng)
    return stack, BackColour.RED, cover


async def run_display(folder: Path) -> None:
    from hil.display_sim import SimulatedDisplay

    display = SimulatedDisplay()
    await display.start()
    _link(display.port, folder / "display.tty")
    try:
        await _serve_until_stopped(folder, "display")
    finally:
        await display.stop()


async def run_relays(folder: Path) -> None:
    from hil.relay_board import RelayBoard

    board = RelayBoard({str(p.sensor_pin) for p in TABLE_A.values()} | {str(TABLE_A_LOCKOUT_PIN)},
                       {str(p.led_pin) for p in TABLE_A.values()})
    servers = board.serve(str(folder / "relays.sock"), str(folder / "wires.sock"))
    try:
        await _serve_until_stopped(folder, "relays")
    finally:
        for server in servers:
            server.shutdown()


async def run_shuffler(folder: Path) -> None:
    from hil.usb_bridge import UsbBridgeServer
    from hil.usb_shuffler import SimulatedUsbBackend, SimulatedShuffler

    backend = SimulatedUsbBackend()
    backend.add(SimulatedShuffler())
    bridge = UsbBridgeServer(backend, str(folder / "usb.sock"))
    try:
        await _serve_until_stopped(folder, "shuffler")
    finally:
        bridge.close()
        for device in list(backend.devices):
            backend.remove(device)


RUNNERS = {"shoe": run_shoe, "display": run_display, "relays": run_relays, "shuffler": run_shuffler}


# --- the rig: its device processes and its file ------------------------------------------------


class SoftwareRig:
    """Starts the device processes in ``folder`` and writes ``rig_file`` once they all answer."""

    def __init__(self, rig_file: Path, *, shuffler: bool = True) -> None:
        self.rig_file = rig_file.resolve()
        self.folder = self.rig_file.parent
        self.devices = [d for d in DEVICES if shuffler or d != "shuffler"]
        self.processes: dict[str, subprocess.Popen[bytes]] = {}

    def start(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.rig_file.unlink(missing_ok=True)
        try:
            for device in self.devices:
                (self.folder / f"{device}.ready").unlink(missing_ok=True)
                log = open(self.folder / f"{device}.log", "wb")  # noqa: SIM115 - handed to the child
                self.processes[device] = subprocess.Popen(
                    [sys.executable, "-m", "hil.software_rig", "--device", device,
                     "--out", str(self.rig_file)], stdout=log, stderr=subprocess.STDOUT)
                log.close()
            deadline = time.monotonic() + READY_TIMEOUT_S
            for device in self.devices:
                while not (self.folder / f"{device}.ready").exists():
                    self.check_alive()
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"software rig: the {device} did not start within "
                                           f"{READY_TIMEOUT_S:g} s; see {self.folder / device}.log")
                    time.sleep(0.05)
        except BaseException:
            self.stop()
            raise
        tmp = self.rig_file.with_suffix(".new")
        tmp.write_text(rig_text(self.folder, "shuffler" in self.devices))
        tmp.replace(self.rig_file)

    def check_alive(self) -> None:
        for device, process in self.processes.items():
            if process.poll() is not None:
                log = self.folder / f"{device}.log"
                raise RuntimeError(f"software rig: the {device}'s process exited with "
                                   f"{process.returncode}; see {log}:\n{log.read_text()[-2000:]}")

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.terminate()
        for process in self.processes.values():
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.rig_file.unlink(missing_ok=True)
        for device in self.devices:
            (self.folder / f"{device}.ready").unlink(missing_ok=True)
        for name in ENDPOINTS:
            (self.folder / name).unlink(missing_ok=True)  # the logs stay, for a post-mortem

    def __enter__(self) -> SoftwareRig:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hil.software_rig", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, type=Path,
                        help="the rig file to write; its folder holds the devices' sockets and ptys")
    parser.add_argument("--no-shuffler", action="store_true", help="a rig without a shuffler")
    parser.add_argument("--device", choices=DEVICES, help=argparse.SUPPRESS)  # one device's process
    args = parser.parse_args(argv)
    if args.device:
        asyncio.run(RUNNERS[args.device](args.out.resolve().parent))
        return 0
    if len(str(args.out.resolve().parent / "relays.sock")) > 100:
        parser.error(f"--out {args.out}: its folder's path is too long for Unix sockets (108 bytes)")
    rig = SoftwareRig(args.out, shuffler=not args.no_shuffler)
    stopped = False

    def stop(*_: object) -> None:
        nonlocal stopped
        stopped = True

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    rig.start()
    print(f"rig ready: {rig.rig_file}", flush=True)
    try:
        while not stopped:
            rig.check_alive()
            time.sleep(0.2)
    finally:
        rig.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
