"""Refresh the example output in docs/technician-guide.md by running tablectl for real.

    .venv/bin/python tools/capture_cli_examples.py            # the daemon on simulated hardware
    .venv/bin/python tools/capture_cli_examples.py --backend fake   # tests' fake control server

With the default backend the real `tabled` runs as a process on simulated devices
(hil.table_harness.TableHarness: the shoe on a pseudo-terminal, the shuffler behind a
pyusb backend, seat sensors and the lock-out button on a bridged gpiozero mock pin
factory), plays a shoe, and each fault is *injected into the simulator* before the
command that shows it is run. tablectl runs as its own process, exactly as a
technician runs it, with NO_COLOR set.

The guide holds each example between `<!-- example:NAME -->` and
`<!-- /example:NAME -->`; this script replaces only what is between the markers and
records where the examples came from in the `source` block.

Paths: the harness keeps its socket and store in a scratch folder; the examples show
them as /run/tabled/control.sock and /var/lib/tabled/table.sqlite, the paths on a table.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import re
import sys
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hil.practice_service import tamper  # noqa: E402
from hil.tablectl_process import run_tablectl  # noqa: E402

GUIDE = ROOT / "docs" / "technician-guide.md"
SOCKET_ON_TABLE = "/run/tabled/control.sock"
STORE_ON_TABLE = "/var/lib/tabled/table.sqlite"
CLI_TIMEOUT_S = 120.0  # the longest example (a full batch count) takes well under this


class Capture:
    """Runs tablectl commands and keeps their output as Markdown console blocks."""

    def __init__(self, socket: str, workdir: Path) -> None:
        self.socket = socket
        self.workdir = workdir
        self.blocks: dict[str, list[str]] = {}
        # Every run whole (no `keep` cut): (the command as shown, exit code, its output as
        # printed).
        # tests/cli/test_terminal_80_columns.py holds each to an 80-column terminal.
        self.runs: list[tuple[str, int, str]] = []

    def _tidy(self, text: str, *, checkout: bool = True) -> str:
        text = text.replace(self.socket, SOCKET_ON_TABLE)
        text = text.replace(str(self.workdir / "table.toml"), "/etc/tabled/table.toml")
        text = text.replace(str(self.workdir / "tabled.log"), "/var/log/tabled.log")
        text = text.replace(str(self.workdir / "table.sqlite"), STORE_ON_TABLE)
        text = text.replace(str(ROOT / "config"), "/etc/tabled")  # this checkout's path
        text = text.replace(str(self.workdir) + "/", "")  # a file the example wrote itself
        # The simulator's pseudo-terminal stands where udev's stable name would be.
        # In a table's column the name keeps the width of the path it stands for.
        text = re.sub(r"/tmp/sim-shoe-[^/\s]+/tty( *)", lambda m: "/dev/baccarat-shoe".ljust(
            len(m[0])) if m[1] else "/dev/baccarat-shoe", text)
        text = text.replace(str(self.workdir), "/var/lib/tabled")
        # This checkout (its virtualenv's missing release manifest) as a table's install.
        # (A line is wrapped before its paths are replaced: its breaks follow the real ones.)
        return text.replace(str(ROOT), "/opt/tabled") if checkout else text

    async def run(self, name: str, argv: Sequence[str], *, stdin: str | None = None,
                  during: Callable[[], Awaitable[None]] | None = None, when: str = "",
                  socket: str | None = None, keep: int | None = None,
                  daemon: bool = True) -> int:
        """Run `tablectl argv` as a process; `during` runs alongside it (fault injection,
        the technician's hands on the sensors) once a line containing `when` is printed.
        With `keep`, a long output shows its first `keep` lines, "...", and its last.
        `daemon=False`: a command that takes no --socket (configuration, rules engine)."""
        shown = " ".join(argv)
        code, output = await run_tablectl(argv, socket=(socket or self.socket) if daemon
                                          else None, stdin=stdin, during=during, when=when,
                                          env={"COLUMNS": "80"}, timeout=CLI_TIMEOUT_S)
        text = self._tidy(output).rstrip("\n")
        # As a table's terminal shows it: its scratch folders as the table's own (shorter)
        # paths, but this checkout's path as it was when the line was wrapped (the guide's
        # copy shows /opt/tabled there, which may make a wrapped line a column or two longer).
        self.runs.append((self._tidy(f"tablectl {shown}"), code,
                          self._tidy(output, checkout=False).rstrip("\n")))
        lines = text.splitlines()
        if keep is not None and len(lines) > keep + 2:
            text = "\n".join([*lines[:keep], "...", lines[-1]])
        block = [self._tidy(f"$ tablectl {shown}")] + ([text] if text else []) + [f"[exit {code}]"]
        self.blocks.setdefault(name, []).append("\n".join(block))
        print(f"--- {name}: tablectl {shown} -> {code}", file=sys.stderr)
        return code


def write_guide(blocks: dict[str, list[str]], source: str | None) -> list[str]:
    """Replace each example block in the guide (and the `source` block, unless None);
    returns the names with no marker."""
    text = GUIDE.read_text(encoding="utf-8")
    blocks = {**blocks, "source": [source]} if source is not None else dict(blocks)
    missing = []
    for name, outputs in blocks.items():
        pattern = re.compile(rf"(<!-- example:{re.escape(name)} -->\n).*?(<!-- /example:"
                             rf"{re.escape(name)} -->)", re.S)
        if not pattern.search(text):
            missing.append(name)
            continue
        body = outputs[0] + "\n" if name == "source" else \
            "```console\n" + "\n\n".join(outputs) + "\n```\n"
        text = pattern.sub(lambda m: m.group(1) + body + m.group(2), text)
    GUIDE.write_text(text, encoding="utf-8")
    return missing


# --- the real daemon on simulated hardware ------------------------------------------------


async def capture_simulated(workdir: Path, seed: int) -> tuple[dict[str, list[str]], str]:
    blocks, source, _ = await capture_simulated_runs(workdir, seed)
    return blocks, source


async def capture_simulated_runs(workdir: Path, seed: int, *, played: Any = None
                                 ) -> tuple[dict[str, list[str]], str, list[tuple[str, int, str]]]:
    """The guide's examples from the simulated tables, the source line, and every run.

    ``played``: the first table already running with its shoe played (a TableHarness on
    config/simulated-table.toml; tests/cli/test_terminal_80_columns.py shares its own);
    the examples go on to fault it, stop it and tamper with its store."""
    from hil.table_harness import TableHarness

    if played is not None:
        cap = await _first_table(played, seed)
    else:
        harness = TableHarness(ROOT / "config" / "simulated-table.toml", workdir, seed=seed)
        async with harness as h:
            await h.play(shoes=1)
            cap = await _first_table(h, seed)
    await _other_tables(cap, workdir, seed)
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    source = (f"Captured {stamp} by `tools/capture_cli_examples.py` from the real `tabled` "
              f"running on simulated hardware (`hil.table_harness.TableHarness`, "
              f"`config/simulated-table.toml`; the meters from "
              f"`config/progressive-heavenly9-mystery.toml`; seed {seed}); the technician's "
              "hands and the faults through the practice table's controls (`hil/practice.py`, "
              "`./run-simulated-table --practice`) and the simulators. Scratch paths are "
              "shown as the paths on a table.")
    return cap.blocks, source, cap.runs


async def _until(h: Any, what: str, holds: Callable[[dict[str, Any], dict[str, Any]], bool]
                 ) -> None:
    """Wait until ``holds(status, the shoe's devices entry)``: what a fault made with the
    practice controls shows once the daemon has seen it (no fixed sleep to guess it)."""
    deadline = asyncio.get_running_loop().time() + 30
    while True:
        status = await h.call("status")
        shoe = next(d for d in await h.call("devices") if d["device"] == "shoe")
        if holds(status, shoe):
            return
        if asyncio.get_running_loop().time() > deadline:
            raise RuntimeError(f"the table never showed {what}: {status.get('faults_holding')}, "
                               f"shoe {shoe.get('link')} {shoe.get('last_error')!r}")
        await asyncio.sleep(0.05)


def _holding(status: dict[str, Any]) -> set[str]:
    return {f["code"] for f in status.get("faults_holding") or []}


async def _first_table(h: Any, seed: int) -> Capture:
    """The simulated table's examples; ``h`` is running, its shoe played."""
    from hil.practice import PracticeControls

    config = h.config_path
    workdir = h.workdir
    cap = Capture(h.socket, workdir)
    gpio = h.table_config.gpio
    await cap.run("version", ["--version"], daemon=False)
    await cap.run("status", ["status"])
    await cap.run("devices", ["devices"])
    await cap.run("rounds", ["rounds", "--last", "2"])
    await cap.run("events", ["events", "--kind", "card", "--limit", "5"])
    await cap.run("events", ["events", "--kind", "shoe_complete", "--json"])
    await cap.run("verify", ["events", "verify"])
    await cap.run("replay-store", ["replay", str(config), "--store", h.store_path,
                                   "--round", "3"], daemon=False)
    await cap.run("support-bundle", ["support-bundle", "--log", str(h.daemon_log),
                                     "--output", str(workdir / "support.txt")])

    # The technician's hands on the devices, through the practice table's controls
    # (hil/practice.py, `./run-simulated-table --practice`): the guide's drills as a
    # technician follows them there.
    practice = PracticeControls(h, seed=seed)

    async def hands(path: str, **form: str) -> None:
        ok, message = await practice.do(path, form)
        if not ok:
            raise RuntimeError(f"practice {path}: {message}")

    async def touch_every_seat() -> None:
        for wiring in gpio.seats:
            await hands("/sensor/cover", seat=str(wiring.seat))
            await asyncio.sleep(0.15)
            await hands("/sensor/uncover", seat=str(wiring.seat))
            await asyncio.sleep(0.15)

    await cap.run("test-sensors", ["test", "sensors", "--timeout", "20"],
                  during=touch_every_seat, when="Touch each seat")

    async def press_button() -> None:
        await hands("/button")

    await cap.run("test-lockout", ["test", "lockout", "--timeout", "10"],
                  during=press_button, when="Press the dealer's lock-out")
    await cap.run("test-lights", ["test", "lights"], stdin="y\n")
    await cap.run("test-shuffler", ["test", "shuffler", "--shuffle", "blue"])

    async def deal_two() -> None:
        await hands("/load")
        await hands("/draw")
        await hands("/draw")

    await cap.run("test-shoe", ["test", "shoe", "--cards", "2", "--timeout", "15"],
                  during=deal_two, when="Draw cards")

    # Faults, each made with the practice controls, then looked at as a technician would
    # once the table shows it.
    await hands("/lid/open")
    await _until(h, "the open lid", lambda status, _: "shoe_lid_open" in _holding(status))
    await cap.run("fault-lid", ["status"])
    await cap.run("fault-lid", ["test", "shoe"])
    await hands("/lid/close")
    await _until(h, "the lid closed", lambda status, _: "shoe_lid_open" not in _holding(status))

    await hands("/cable/pull")
    # down, and a reopening of the port already failed (the guide shows that error)
    await _until(h, "the shoe's link retrying", lambda status, shoe: (
        "link_down" in _holding(status) and shoe["link"] == "retrying"
        and "cannot open serial port" in shoe["last_error"]))
    await cap.run("fault-unplugged", ["status"])
    await cap.run("fault-unplugged", ["devices"])
    await hands("/cable/plug")
    await _until(h, "the shoe's link up again", lambda status, shoe: (
        "link_down" not in _holding(status) and shoe["link"] == "up"))
    await cap.run("fault-unplugged", ["events", "--device", "shoe", "--limit", "4"])

    await hands("/misread")
    await _until(h, "the misread", lambda status, _: "shoe_misread" in _holding(status))
    await cap.run("fault-misread", ["status"])
    await cap.run("fault-misread", ["fault", "acknowledge", "--supervisor", "floor",
                                    "--pin-stdin"], stdin="2468\n")

    # The shoe's firmware, the table's service and its store: the practice page's service
    # controls (hil/practice_service.py), as the guide's drills use them.
    before = (await h.call("status"))["state"]
    await hands("/firmware/old")
    await _until(h, "the shoe refused", lambda status, shoe: (
        shoe["link"] == "refused" and "incompatible_device" in _holding(status)))
    await cap.run("fault-firmware", ["devices"])
    await cap.run("fault-firmware", ["events", "--kind", "device_fault", "--limit", "1"])
    await hands("/firmware/approved")
    await _until(h, "the shoe up again", lambda status, shoe: (
        shoe["link"] == "up" and status["state"] == before))

    await hands("/service/stop")
    await cap.run("not-running", ["status"])
    await hands("/service/start")
    await hands("/store/damage")
    await cap.run("broken-chain", ["status"])
    await hands("/service/stop")
    await cap.run("broken-chain", ["events", "verify", "--store", h.store_path])
    return cap


async def _other_tables(cap: Capture, workdir: Path, seed: int) -> None:
    """The progressive table's and the offline examples, into ``cap``."""
    from hil.table_harness import TableHarness

    # A second table with the Heavenly 9 progressive and the Must-Hit-By Mystery bonus.
    # Its daemon's simulated shuffler takes fault injection on the harness's socket.
    progressive_dir = workdir / "progressive"
    harness = TableHarness(ROOT / "config" / "progressive-heavenly9-mystery.toml",
                           progressive_dir, seed=seed)
    cap_p = Capture(harness.socket, progressive_dir)
    async with harness as h:
        await h.play(shoes=1)
        await cap_p.run("meters", ["meters"])
        await cap_p.run("meters", ["jackpot", "pending"])
        await cap_p.run("meters", ["jackpot", "validate", "1", "--supervisor", "floor",
                                   "--pin-stdin"], stdin="2468\n")
        held = h.shuffler("STATUS").split("held=")[1].split()[0].lower()
        h.shuffler(f"REMOVE_CARD {held} 2")  # two cards went missing from the batch
        await cap_p.run("fault-shuffler", ["test", "shuffler", "--shuffle", held,
                                           "--timeout", "60"])
        await cap_p.run("fault-shuffler", ["status"])
    for name, outputs in cap_p.blocks.items():
        cap.blocks.setdefault(name, []).extend(outputs)
    cap.runs.extend(cap_p.runs)
    await capture_offline(cap, workdir)


def hostile_configuration(workdir: Path) -> Path:
    """The simulated table's configuration with three mistakes a technician makes."""
    text = (ROOT / "config" / "simulated-table.toml").read_text(encoding="utf-8")
    text = text.replace("max_cents = 100000\n", "", 1)  # the tie's maximum forgotten
    text = text.replace("lockout_pin = 26", "lockout_pin = 12", 1)  # seat 1's LED pin
    text += '\n[display]\nenabled = true\nurl = "/dev/baccarat-display"\nbaudrate = 11520\n'
    path = workdir / "table.toml"
    path.write_text(text, encoding="utf-8")
    return path


async def capture_offline(cap: Capture, workdir: Path) -> None:
    """The commands that need no daemon: the configuration and the rules engine."""
    config = str(ROOT / "config" / "simulated-table.toml")
    rules = str(ROOT / "config" / "baccarat-8deck.toml")
    await cap.run("config-validate", ["config", "validate", config], daemon=False)
    await cap.run("config-validate", ["config", "validate", str(hostile_configuration(workdir))],
                  daemon=False)
    await cap.run("par-sheet", ["par-sheet", rules], keep=22, daemon=False)
    await cap.run("simulate", ["simulate", rules, "--shoes", "1", "--seed", "7"], keep=6,
                  daemon=False)
    await cap.run("hash-pin", ["supervisor", "hash-pin", "ana", "--pin-stdin"],
                  stdin="482913\n", daemon=False)
    for name, replay in replay_examples(workdir).items():
        await cap.run(name, ["replay", *replay], daemon=False)


def replay_examples(workdir: Path) -> dict[str, list[str]]:
    """`tablectl replay` of two disputes: a 21 Baccarat tie of four nines with a Bonus, and a
    Royal 9 suited tie holding seat 1's King 9 with the Minor meter at $2,000.00."""
    nines = workdir / "dispute-nines.txt"
    nines.write_text("# 21 Baccarat, table 7, shoe 3: the cards as dealt\n9♠\n9♥\n9♦\n9♣\n",
                     encoding="utf-8")
    royal = workdir / "dispute-royal9.txt"
    royal.write_text("K♠\nQ♠\n9♠\n9♠\n", encoding="utf-8")
    layout = workdir / "royal9-table.toml"
    layout.write_text((ROOT / "config" / "progressive-royal9.toml").read_text(encoding="utf-8")
                      .replace('1 = "KC9C"', '1 = "KS9S"').replace('4 = "KC9S"', '4 = "KC9C"'),
                      encoding="utf-8")
    return {
        "replay-cards": [str(ROOT / "config" / "21-baccarat-4deck.toml"), "--cards", str(nines),
                         "--wager", "2:player:1000", "--wager", "2:tie:500",
                         "--wager", "2:bonus_player:500"],
        "replay-meter": [str(layout), "--cards", str(royal), "--wager", "1:banker:500",
                         "--wager", "1:royal_9_progressive:500", "--meter", "minor=200000"],
    }


# --- the fake control server --------------------------------------------------------------


async def capture_fake(workdir: Path) -> tuple[dict[str, list[str]], str]:
    sys.path.insert(0, str(ROOT))
    from tests.cli.conftest import FakeDaemon

    fake = FakeDaemon(workdir).start()
    cap = Capture(fake.socket, workdir)
    try:
        for n, (kind, payload, kw) in enumerate([
                ("daemon_started", {"version": "0.1.0", "state": "closed"}, {}),
                ("table_opened", {}, {}),
                ("shuffle_complete", {"back": "red", "cards_counted": 416, "missing": 0,
                                      "extra": 0, "duplicates": 0}, {"device": "shuffler"}),
                ("shoe_loaded", {"shoe_no": 3}, {}),
                ("wager_accepted", {"seat": 1, "wager": "banker", "amount_cents": 123456}, {}),
                ("no_more_bets", {"cause": "button", "round_no": 7}, {}),
                ("card", {"index": 40, "card": "9H", "hand": "player", "slot": "player_1"},
                 {"device": "shoe", "round_id": 41}),
                ("card", {"index": 41, "card": "KS", "hand": "banker", "slot": "banker_1"},
                 {"device": "shoe", "round_id": 41}),
                ("card", {"index": 42, "card": "3C", "hand": "player", "slot": "player_2"},
                 {"device": "shoe", "round_id": 41}),
                ("card", {"index": 43, "card": "7D", "hand": "banker", "slot": "banker_2"},
                 {"device": "shoe", "round_id": 41})]):
            fake.append(kind, payload, **kw)
        await cap.run("status", ["status"])
        await cap.run("devices", ["devices"])
        await cap.run("rounds", ["rounds", "--last", "1"])
        await cap.run("events", ["events", "--limit", "8"])
        await cap.run("verify", ["events", "verify"])
        await cap.run("meters", ["meters"])
        await cap.run("meters", ["jackpot", "validate", "1", "--supervisor", "ana",
                                 "--pin-stdin"], stdin="2468\n")
        fake.on_next_subscribe(*[("late_sensor_change", {"seat": s, "present": p},
                                  {"device": "seats", "severity": "warning"})
                                 for s in range(1, 15) for p in (True, False)])
        await cap.run("test-sensors", ["test", "sensors", "--timeout", "5"])

        def press() -> None:
            fake.devices[2]["counters"]["button_presses"] += 1
        fake.on_next_subscribe_do(press)
        await cap.run("test-lockout", ["test", "lockout", "--timeout", "5"])
        await cap.run("test-lights", ["test", "lights"], stdin="y\n")
        fake.register("shuffle", lambda a: fake.status)
        fake.on_next_subscribe(("shuffle_complete", {"back": "blue", "cards_counted": 416,
                                                     "missing": 0, "extra": 0,
                                                     "duplicates": 0}, {"device": "shuffler"}))
        await cap.run("test-shuffler", ["test", "shuffler", "--shuffle", "blue"])
        fake.on_next_subscribe(
            ("card", {"index": 0, "card": "QH", "hand": "player", "slot": "player_1"},
             {"device": "shoe"}),
            ("card", {"index": 1, "card": "4S", "hand": "banker", "slot": "banker_1"},
             {"device": "shoe"}))
        await cap.run("test-shoe", ["test", "shoe", "--cards", "2", "--timeout", "5"])
        lid = {"device": "shoe", "code": "shoe_lid_open", "detail": "lid opened",
               "action": "Close the shoe's lid; cards are not read while it is open."}
        fake.status.update(state="device_fault", fault=lid)
        fake.self_tests["shoe"] = {"device": "shoe", "passed": False,
                                   "detail": "active faults: SHOE_LID_OPEN"}
        await cap.run("fault-lid", ["status"])
        await cap.run("fault-lid", ["test", "shoe"])
        fake.status["fault"] = {
            "device": "shoe", "code": "link_down",
            "detail": "shoe on /dev/ttyUSB0: [Errno 2] could not open port /dev/ttyUSB0",
            "action": "Check the shoe's cable and power; the table resumes by itself when the "
                      "device answers again."}
        fake.devices[0].update(link="retrying", uptime_s=None,
                               last_error="[Errno 2] could not open port /dev/ttyUSB0")
        await cap.run("fault-unplugged", ["status"])
        await cap.run("fault-unplugged", ["devices"])
        fake.status["fault"] = {
            "device": "shoe", "code": "shoe_misread", "detail": "card 13 not read",
            "action": "Stop: the card that just left the shoe was not read. Do not use it "
                      "until a floorperson rules; the table does not guess a card."}
        await cap.run("fault-misread", ["status"])

        def acknowledge(a: Any) -> Any:
            fake.status.update(state="betting_open", fault=None)
            return fake.status
        fake.register("acknowledge_fault", acknowledge, supervisor=True)
        await cap.run("fault-misread", ["fault", "acknowledge", "--supervisor", "ana",
                                        "--pin-stdin"], stdin="2468\n")
        fake.devices[0].update(link="up", uptime_s=12.0, last_error="")
        fake.self_tests["shoe"] = {"device": "shoe", "passed": True, "detail": "shoe ok"}
        store = str(workdir / "fake.sqlite")
    finally:
        fake.stop()
    await cap.run("not-running", ["status"])
    tamper(store)
    await cap.run("broken-chain", ["events", "verify", "--store", store])
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    source = (f"Captured {stamp} by `tools/capture_cli_examples.py --backend fake`: **not** "
              "from the daemon but from the fake control server of tablectl's tests "
              "(`tests/cli/conftest.py`: the real control socket protocol and a real event "
              "store, with canned status, device and round data), because the daemon did "
              "not yet run end to end on simulated hardware. Refresh with the default "
              "backend once it does.")
    return cap.blocks, source


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["sim", "fake"], default="sim")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--dry-run", action="store_true", help="print, do not edit the guide")
    parser.add_argument("--only", metavar="NAME,...",
                        help="replace only these examples (the names in the guide's markers); "
                             "the others and the source line are left as they are")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tablectl-examples-") as tmp:
        workdir = Path(tmp)
        blocks, source = asyncio.run(capture_simulated(workdir, args.seed) if args.backend == "sim"
                                     else capture_fake(workdir))
    if args.dry_run:
        for name, outputs in blocks.items():
            print(f"## {name}\n" + "\n\n".join(outputs) + "\n")
        return 0
    if args.only:
        wanted = args.only.split(",")
        unknown = [name for name in wanted if name not in blocks]
        if unknown:
            print(f"--only: no example named {', '.join(unknown)}; the examples: "
                  f"{', '.join(blocks)}", file=sys.stderr)
            return 2
        blocks = {name: blocks[name] for name in wanted}
    missing = write_guide(blocks, None if args.only else source)
    if missing:
        print(f"no marker in {GUIDE} for: {', '.join(missing)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
