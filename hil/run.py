"""Play simulated shoes through the real daemon and print every round as it is settled.

    python -m hil.run --config config/simulated-table.toml --shoes 1 --seed 7
    python -m hil.run --keep-running          # then talk to the table with tablectl

With --keep-running, Ctrl-C (or SIGTERM) ends the wait after the shoes: the table stops
and the summary and balance check are printed as without it.

This is the Quickstart's main job. Exit status 0 when every shoe completed and
the table's win/loss plus every seat's result balance to the cent.

With --workdir the store and the daemon's log are kept there; running again with
the same --workdir continues that table (new shoes after the ones it played), or
refuses, saying why, when the last run stopped in the middle of a shoe. Without
it they live in a scratch folder, and the daemon's log is kept in var/.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shlex
import signal
import sys
import tempfile
from pathlib import Path
from typing import Any

from controller.config import ConfigError, TableConfig
from hil.display_process import DisplayProcess
from hil.table_harness import PlayerPlan, TableHarness, render_summary
from hil.practice_service import PracticeWitness
from hil.witness_sim import SimulatedWitness, clients_missing, postgres_answers

ROOT = Path(__file__).resolve().parents[1]
LAST_LOG = ROOT / "var" / "simulated-table.log"  # without --workdir: kept after the run
EXIT_REFUSED = 2
# States a table left by an earlier run can be taken up from: between shoes. In the middle
# of a shoe the cards left in the simulated shoe went with the last run.
CONTINUABLE = {"closed", "end_of_shoe", "shuffling", "cut"}


def tablectl_line(socket: str, command: str = "status") -> str:
    """The exact command line that talks to this simulated table."""
    tablectl = Path(sys.executable).parent / "tablectl"
    program = shlex.quote(str(tablectl)) if tablectl.exists() else \
        f"{shlex.quote(sys.executable)} -m controller.cli"
    return f"TABLECTL_SOCKET={shlex.quote(socket)} {program} {command}"


def clear_broker(config: TableConfig, say: Any) -> None:
    """A simulated table leaves no retained meter messages on the broker."""
    progressive = config.progressive
    if progressive is None or progressive.mqtt is None:
        return
    from hil.mqtt_cleanup import clear_retained

    feed = progressive.mqtt
    try:
        cleared = clear_retained(feed.host, feed.port, feed.prefix, feed.site, config.table_id)
    except (OSError, TimeoutError) as exc:
        say(f"could not clear the retained meter messages on {feed.host}:{feed.port}: {exc}")
        return
    say(f"Cleared {len(cleared)} retained meter message(s) of table {config.table_id} on the "
        f"MQTT broker {feed.host}:{feed.port}")


def _witness(args: argparse.Namespace, continuing: bool, say: Any
             ) -> tuple[SimulatedWitness | PracticeWitness | None, list[str]]:
    """A real witness on the local PostgreSQL for a new table, or why the table runs
    unwitnessed (docs/architecture.md, "The witness"). The practice table reaches it
    through a proxy its page can cut ("Take the witness down")."""
    from controller.text_files import read_toml
    from controller.witness.server import WitnessRefused, WitnessUnreachable

    absent = postgres_answers() or clients_missing("psycopg")
    if continuing or absent is not None:
        why = absent or "a continued table keeps the witness of its first run, which is gone"
        say(f"The table is unwitnessed: {why}; its heads are kept by no one off the table")
        return None, []
    try:
        table_id = str(read_toml(args.config)["table"]["id"])
    except (OSError, ValueError, KeyError, TypeError):  # ValueError: not TOML
        return None, []  # the table's own start names what is wrong with the file
    witness: SimulatedWitness | PracticeWitness = \
        PracticeWitness() if args.practice else SimulatedWitness()
    try:
        overrides = witness.set_up(table_id)
    except (WitnessUnreachable, WitnessRefused) as exc:
        say(f"The table is unwitnessed: the witness could not be set up ({exc})")
        if isinstance(witness, PracticeWitness):
            witness.proxy.close()
        return None, []
    schema = witness.current.schema if isinstance(witness, PracticeWitness) else witness.schema
    say(f"Witness: PostgreSQL on 127.0.0.1:5432, schema {schema} (its own roles; "
        "dropped at the end): every durable step's head is sent there, signed")
    return witness, overrides


async def _play(args: argparse.Namespace, workdir: Path, log: Path) -> int:
    def say(line: str) -> None:
        print(line, flush=True)

    # SIGTERM (a script, a service manager) stops the table as cleanly as Ctrl-C does:
    # without this the daemon and the display service it started would be left running.
    main_task = asyncio.current_task()
    assert main_task is not None
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, main_task.cancel)
    continuing = (workdir / "table.sqlite").exists()
    say(f"Simulated table from {args.config}; daemon log: {log}")
    witness, overrides = _witness(args, continuing, say)
    harness = TableHarness(Path(args.config), workdir, seed=args.seed, on_line=say,
                           daemon_log=log, players=PlayerPlan(betting_s=args.pace),
                           extra_overrides=overrides)
    try:
        async with (harness as table,
                    DisplayProcess(Path(args.config), table.socket, workdir,
                                   port=args.display_port) as display):
            status = await table.call("status")
            say(f"Table {status['table_id']}: {status['game']} ({status['variant']}), "
                f"{table.decks} decks; shoe on {table.shoe.port}")
            say(f"Scoreboard: {display.url('/scoreboard')}   Dealer: {display.url('/dealer')}")
            if continuing:
                await table.skip_history()
                state = status["state"]
                if state not in CONTINUABLE:
                    why = status.get("fault") or status.get("out_of_order") or {}
                    say(f"\nThe table in {workdir} stopped in state {state.upper()}"
                        + (f" ({why.get('detail', why) if isinstance(why, dict) else why})"
                           if why else "")
                        + ": it cannot be continued here (the simulated shoe's cards went with "
                        "the last run). Use a new --workdir, or delete "
                        f"{workdir} to start that table again.")
                    return EXIT_REFUSED
                shoe_no = (status.get("shoe") or {}).get("shoe_no") or 0
                # New cards for the new shoes: the same seed would deal the first run's again.
                table.rng = random.Random(f"{args.seed}/{shoe_no}")
                say(f"Continuing the table in {workdir} (state {state}, {shoe_no} shoe(s) "
                    f"played): {args.shoes} more, dealt with seed '{args.seed}/{shoe_no}'")
            say("")
            result = await table.play(shoes=args.shoes,
                                      resume=continuing and status["state"] != "closed")
            if args.keep_running:
                say("\nThe shoes are done; the simulated table stays up until Ctrl-C. In "
                    "another terminal:\n")
                say(f"    {tablectl_line(table.socket)}\n")
                say(f"Scoreboard: {display.url('/scoreboard')}; daemon log: {log}")
                practice = await start_practice(
                    table, args.seed, say,
                    witness if isinstance(witness, PracticeWitness) else None) \
                    if args.practice else None
                try:
                    await asyncio.Event().wait()
                except asyncio.CancelledError:
                    # Ctrl-C or SIGTERM ends the wait, not the run: the table stops
                    # cleanly and the summary and balance check below are still printed.
                    main_task.uncancel()
                    say("\nStopping the simulated table.")
                finally:
                    if practice is not None:
                        await practice.close()
    finally:
        clear_broker(harness.table_config, say)
        if witness is not None:
            say("Witness (tablewitness verify): " + witness.verify(
                harness.table_config.table_id, harness.store_path).replace("\n", "\n    "))
            witness.drop()
    say(render_summary(result))
    balance = sum(r["table_net_cents"] for r in result.rounds) + sum(
        s["net_cents"] for r in result.rounds for s in r["settlements"])
    return 0 if balance == 0 and result.shoes_completed == args.shoes else 1


async def start_practice(table: TableHarness, seed: int, say: Any,
                         witness: PracticeWitness | None = None) -> Any:
    """The practice page (hil/practice.py): the devices' hands-on controls, and the
    table's service, store and witness (hil/practice_service.py)."""
    from hil.practice import PracticeControls, PracticePage

    controls = PracticeControls(table, seed=seed, witness=witness)
    page = PracticePage(controls)
    await page.start()
    say(f"Practice page (draw a card, the lid, the cable, a seat's sensor, the lock-out "
        f"button, the shuffler; the firmware, the seat pins, the service, the store, the "
        f"witness): {page.url()}")
    say(f"  or from a terminal: curl -d '' {page.url('/lid/open')}   "
        "(docs/technician-guide.md, \"Practising on the simulated table\")")
    say(f"  the table's service runs: {controls.service.command()}")
    return page


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m hil.run", description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="config/simulated-table.toml",
                        help="the table's configuration (default: %(default)s)")
    parser.add_argument("--shoes", type=int, default=1, help="how many shoes (default 1)")
    parser.add_argument("--seed", type=int, default=7,
                        help="the seed of the cards and the players' wagers (default 7)")
    parser.add_argument("--workdir", help="keep the store and the daemon's log here; the same "
                                          "--workdir again continues that table")
    parser.add_argument("--display-port", type=int, default=0,
                        help="serve the scoreboard and dealer pages on this local port "
                             "(default: a free one)")
    parser.add_argument("--keep-running", "--keep-open", dest="keep_running",
                        action="store_true",
                        help="after the shoes, keep the daemon and the pages up until Ctrl-C, "
                             "and print the tablectl line that talks to it")
    parser.add_argument("--practice", action="store_true",
                        help="after the shoes, keep the table up (as --keep-running) with a "
                             "page of the devices' controls to practise the technician "
                             "guide's drills on")
    parser.add_argument("--pace", type=float, default=0.0, metavar="SECONDS",
                        help="the players take this long over their bets each round, so a "
                             "person can follow the pages (0 to 60; default 0: full speed)")
    args = parser.parse_args()
    args.keep_running = args.keep_running or args.practice
    if not 0 <= args.pace <= 60:
        parser.error(f"--pace {args.pace}: allowed: 0 to 60 seconds")
    if args.shoes < 1:
        parser.error("--shoes must be 1 or more")
    try:
        if args.workdir:
            workdir = Path(args.workdir).resolve()
            return asyncio.run(_play(args, workdir, workdir / "tabled.log"))
        LAST_LOG.parent.mkdir(parents=True, exist_ok=True)
        LAST_LOG.write_bytes(b"")  # this run's log only
        with tempfile.TemporaryDirectory(prefix="tabled-sim-") as tmp:
            return asyncio.run(_play(args, Path(tmp), LAST_LOG))
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return 6
    except KeyboardInterrupt:
        return 130
    except asyncio.CancelledError:  # SIGTERM, above
        return 128 + signal.SIGTERM


if __name__ == "__main__":
    sys.exit(main())
