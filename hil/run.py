"""Play simulated shoes through the real daemon and print every round as it is settled.

    python -m hil.run --config config/simulated-table.toml --shoes 1 --seed 7

This is the Quickstart's main job. Exit status 0 when every shoe completed and
the table's win/loss plus every seat's result balance to the cent.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

from controller.config import ConfigError
from hil.display_process import DisplayProcess
from hil.table_harness import TableHarness, render_summary


async def _play(args: argparse.Namespace, workdir: Path) -> int:
    def say(line: str) -> None:
        print(line, flush=True)

    say(f"Simulated table from {args.config}; daemon log: {workdir / 'tabled.log'}")
    async with (TableHarness(Path(args.config), workdir, seed=args.seed, on_line=say) as table,
                DisplayProcess(Path(args.config), table.socket, workdir,
                               port=args.display_port) as display):
        status = await table.call("status")
        say(f"Table {status['table_id']}: {status['game']} ({status['variant']}), "
            f"{table.decks} decks; shoe on {table.shoe.port}")
        say(f"Scoreboard: {display.url('/scoreboard')}   Dealer: {display.url('/dealer')}\n")
        result = await table.play(shoes=args.shoes)
        if args.keep_open:
            say(f"\nShoe done; the pages stay up at {display.url('/scoreboard')} until Ctrl-C")
            await asyncio.Event().wait()
    say(render_summary(result))
    balance = sum(r["table_net_cents"] for r in result.rounds) + sum(
        s["net_cents"] for r in result.rounds for s in r["settlements"])
    return 0 if balance == 0 and result.shoes_completed == args.shoes else 1


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m hil.run", description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="config/simulated-table.toml")
    parser.add_argument("--shoes", type=int, default=1)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--workdir", help="keep the store and logs here (default: a temp dir)")
    parser.add_argument("--display-port", type=int, default=0,
                        help="serve the scoreboard and dealer pages on this local port "
                             "(default: a free one)")
    parser.add_argument("--keep-open", action="store_true",
                        help="after the shoes, keep the daemon and the pages up until Ctrl-C")
    args = parser.parse_args()
    if args.shoes < 1:
        parser.error("--shoes must be 1 or more")
    try:
        if args.workdir:
            return asyncio.run(_play(args, Path(args.workdir)))
        with tempfile.TemporaryDirectory(prefix="tabled-sim-") as tmp:
            return asyncio.run(_play(args, Path(tmp)))
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return 6
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
