"""A pit on this machine: N real daemons on simulated hardware sharing one linked progressive
on PostgreSQL and one MQTT broker, with the pit page following them.

    ./run-pit                              # 20 tables, one shoe each, on the local servers
    ./run-pit --tables 5 --pace 2 --keep-running
    ./run-pit --campaign --seed 11         # issue 30's campaign (docs/deployment.md)

Each table is `config/pit-table.toml` with its own id (PIT-01 ...), store, sockets and
simulated shoe, shuffler and pins; all of them contribute to one linked Heavenly 9 meter
(605a.8) and are witnessed on the same PostgreSQL. Without --campaign they use the local
PostgreSQL (127.0.0.1:5432) and Mosquitto (127.0.0.1:1883), in a schema of their own that
is dropped at the end, and no fault is injected (those servers are other programs' too).

With --campaign (or --private) the pit runs on a PostgreSQL cluster and a broker of its own
(hil/pit_servers.py) which it restarts during play, and each table reaches PostgreSQL
through a proxy of its own (hil/cuttable_proxy.py), so one table can be cut off alone. The
faults (hil/pit_campaign.py): PostgreSQL restarted, the broker restarted, one table cut
off, pairs of tables forced to hit the linked meter together (their claims held at a gate
and released at once, so they race at the server: hil/pit_race.py), tables killed with
SIGKILL right after a lock-out with its contribution unsent (their link sync held until the
kill); then every check of issue 30, with the seed, the counts and each pair's claim
spacing printed. Exit status 0 when every check held. The two seams the daemons run with
are controller/progressive/link_seams.py's, inert in service.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import signal
import sys
import tempfile
from pathlib import Path

from hil.pit_campaign import CAMPAIGN, SHORT, Pit, PitPlan
from hil.pit_checks import run_pit
from hil.pit_servers import private_servers_missing
from hil.witness_sim import clients_missing

ROOT = Path(__file__).resolve().parents[1]


def plan_from(args: argparse.Namespace) -> PitPlan:
    if args.campaign:
        base = CAMPAIGN
    elif args.short:
        base = SHORT
    else:
        base = PitPlan(tables=20, shoes=20, faults=False, private=False)
    plan = base.but(seed=args.seed if args.seed is not None else random.randrange(2**31))
    if args.pace is not None:
        plan = plan.but(pace_s=args.pace)
    if args.tables is not None:
        plan = plan.but(tables=args.tables, shoes=max(args.tables, plan.shoes)
                        if args.shoes is None else plan.shoes)
    if args.shoes is not None:
        plan = plan.but(shoes=args.shoes, rounds=None)
    if args.private:
        plan = plan.but(private=True)
    return plan


def main(argv: list[str] | None = None) -> int:
    # The docstring's first sentence, which runs over two lines.
    parser = argparse.ArgumentParser(prog="./run-pit",
                                     description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--tables", type=int, help="how many daemons (default 20; 2 to 40)")
    parser.add_argument("--shoes", type=int, help="shoes in all, shared out over the tables "
                                                  "(default 20, or one per table when there "
                                                  "are more; --short: 12 rounds a table)")
    parser.add_argument("--pace", type=float, metavar="SECONDS",
                        help="the players take this long over their bets each round (0-60; "
                             "default 0, and 1 for --campaign)")
    parser.add_argument("--seed", type=int, help="the run's seed (printed; default: drawn)")
    parser.add_argument("--campaign", action="store_true",
                        help="issue 30's campaign: 20 tables, 20 shoes, PostgreSQL restarted 3 "
                             "times, the broker twice, one table cut off for 60 s, 10 forced "
                             "simultaneous hits, tables killed mid-play; then every check")
    parser.add_argument("--short", action="store_true",
                        help="the campaign in small: 3 tables, a few rounds each, every fault "
                             "once (what the suite runs)")
    parser.add_argument("--private", action="store_true",
                        help="a PostgreSQL and a broker of the pit's own (implied by "
                             "--campaign and --short)")
    parser.add_argument("--page-port", type=int, default=0,
                        help="serve the pit page on this local port (default: a free one)")
    parser.add_argument("--keep-running", action="store_true",
                        help="after the shoes, keep the tables and the pit page up until Ctrl-C")
    parser.add_argument("--workdir", help="keep every table's store and log here")
    args = parser.parse_args(argv)
    if args.tables is not None and not 2 <= args.tables <= 40:
        parser.error(f"--tables {args.tables}: allowed: 2 to 40 (a pit runs 10 to 40)")
    if args.shoes is not None and args.shoes < 1:
        parser.error(f"--shoes {args.shoes}: allowed: 1 or more")
    if args.pace is not None and not 0 <= args.pace <= 60:
        parser.error(f"--pace {args.pace}: allowed: 0 to 60 seconds")
    if why := clients_missing("psycopg", "paho.mqtt.client"):
        print(f"run-pit: {why}", file=sys.stderr)
        return 2
    plan = plan_from(args)
    if plan.private and (why := private_servers_missing()):
        print(f"run-pit: cannot run the pit's own servers: {why}", file=sys.stderr)
        return 2

    async def run(workdir: Path) -> int:
        task = asyncio.current_task()
        assert task is not None
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
        pit = Pit(plan, workdir, ROOT / "config" / "pit-table.toml", say=print,
                  page_port=args.page_port, keep_running=args.keep_running)
        report = await run_pit(pit)
        print(report.render())
        return 0 if report.ok else 1

    try:
        if args.workdir:
            return asyncio.run(run(Path(args.workdir).resolve()))
        with tempfile.TemporaryDirectory(prefix="tabled-pit-") as tmp:
            return asyncio.run(run(Path(tmp)))
    except KeyboardInterrupt:
        return 130
    except asyncio.CancelledError:
        return 128 + signal.SIGTERM


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):
        sys.exit(main())
