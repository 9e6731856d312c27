"""tablectl subcommands of the rules engine: `par-sheet`, `simulate`, `config validate`."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from controller.cli import exitcodes
from controller.cli.arg_types import whole
from controller.cli.output import fit  # every line of text fits the terminal


def register(subparsers: Any) -> None:
    """Add the rules subcommands to tablectl's parser."""
    par = subparsers.add_parser(
        "par-sheet", help="exact par sheet of every wager a configuration offers",
        description="Probability of each paying outcome, hit frequency and house edge of "
                    "every offered wager, by exact enumeration of the configured full shoe.")
    par.add_argument("config", metavar="CONFIG",
                     help="the table's configuration or Rules Submission (TOML)")
    par.add_argument("--json", action="store_true", help="machine-readable output")
    par.set_defaults(handler=_par_sheet)

    sim = subparsers.add_parser(
        "simulate", help="deal shuffled shoes through the rules engine",
        description="Deal complete shuffled shoes (cut, burn, cover card, last hand) and "
                    "print every round; format in docs/simulate-format.md.")
    sim.add_argument("config", metavar="CONFIG",
                     help="the table's configuration or Rules Submission (TOML)")
    sim.add_argument("--shoes", type=whole(1, 100_000, "a number of shoes"), default=1,
                     help="number of shoes (default 1)")
    sim.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    sim.add_argument("--unit-cents", type=whole(1, 10**12, "cents"), default=10000,
                     help="amount of each wager in cents (default 10000), kept within each "
                          "wager's min_cents..max_cents; Royal 9 at its denomination")
    sim.add_argument("--json", action="store_true", help="one JSON object per round")
    sim.set_defaults(handler=_simulate)

    cfg = subparsers.add_parser("config", help="table configuration tools")
    cfg_sub = cfg.add_subparsers(dest="config_command", metavar="ACTION")
    cfg_sub.required = True
    val = cfg_sub.add_parser("validate", help="check a table configuration file",
                             description="Validate a table's configuration as tabled does at "
                                         "start, or a Rules Submission (the game sections "
                                         "only); exit 6 listing every error if it is not "
                                         "valid.")
    val.add_argument("file", metavar="FILE",
                     help="the table's configuration or Rules Submission (TOML)")
    val.set_defaults(handler=_validate)


def _load(path: str) -> Any:
    from controller.rules.game import load_game
    from controller.rules.submission import SubmissionError

    try:
        return load_game(path)
    except SubmissionError as exc:
        for line in exc.errors:
            print(line, file=sys.stderr)
        return None


def _progressive_config(path: str) -> Any:
    """The table's `[progressive.<name>]` sections (a `ProgressiveConfig`); False when it
    declares none; None (errors printed) when they are invalid."""
    from controller.text_files import read_toml

    if "progressive" not in read_toml(path):  # already read once by _load: readable, valid
        return False  # and the progressive package (asyncio, logging) stays unloaded
    from controller.progressive.config import load_progressive_config
    from controller.progressive.errors import ProgressiveConfigError

    try:
        return load_progressive_config(path)
    except ProgressiveConfigError as exc:
        for line in exc.problems:
            print(f"{path}: {line}", file=sys.stderr)
        return None


def _progressive_rules(path: str) -> dict[str, Any] | None:
    """The progressives a table declares under `[progressive.<name>]` (not in `[wagers]`),
    by their wager key; None (errors printed) when those sections are invalid."""
    config = _progressive_config(path)
    if config is None:
        return None
    return {spec.wager_key: spec.rule for spec in config.progressives} if config else {}


def simulated_progressive(path: str, seed: int) -> Any:
    """The table's progressive for a shoe dealt off the table (`SimulatedProgressive`), its
    mystery triggers drawn from a generator of their own seeded by `seed`; False when the
    table has none; None (errors printed) when it cannot be had."""
    import random

    config = _progressive_config(path)
    if not config:
        return config
    from controller.progressive.simulated import SimulatedProgressive

    try:
        return SimulatedProgressive(config, random.Random(seed * 1_000_003 + 29))
    except ValueError as exc:
        print(f"{path}: {exc.args[0]}", file=sys.stderr)
        return None


def _par_sheet(args: argparse.Namespace) -> int:
    from controller.rules.par import compute_par_sheet
    from controller.rules.par_render import render_text, to_json_obj

    game = _load(args.config)
    if game is None:
        return exitcodes.BAD_CONFIGURATION
    progressives = _progressive_rules(args.config)
    if progressives is None:
        return exitcodes.BAD_CONFIGURATION
    started = time.perf_counter()
    sheet = compute_par_sheet(game, progressives)
    elapsed = time.perf_counter() - started
    if args.json:
        import json  # only here: the text sheet, the default, starts without it

        obj = to_json_obj(sheet)
        obj["seconds"] = round(elapsed, 4)
        print(json.dumps(obj, indent=2))
    else:
        print(fit(render_text(sheet)))
        print(f"(computed in {elapsed:.3f} s)")
    return exitcodes.OK


def _simulate(args: argparse.Namespace) -> int:
    import json

    from controller.cli.output import ProgressBar
    from controller.rules.simulate import SimulationOptions, human_line, signed_dollars, simulate

    game = _load(args.config)
    if game is None:
        return exitcodes.BAD_CONFIGURATION
    progressive = simulated_progressive(args.config, args.seed)
    if progressive is None:
        return exitcodes.BAD_CONFIGURATION
    options = SimulationOptions(shoes=args.shoes, seed=args.seed, unit_cents=args.unit_cents)
    total = 0
    # Shoes done, on stderr (a terminal only, after a second): stdout stays the data.
    bar = ProgressBar("simulating shoes", args.shoes)
    shares_terminal = sys.stdout.isatty()
    shoe = 0
    try:
        for record in simulate(game, options, progressive or None):
            if record["shoe"] != shoe:
                shoe = record["shoe"]
                bar.update(shoe - 1)
            elif shares_terminal:
                bar.finish()  # the rounds scroll on the same screen: no bar over them
            total += record["seat_net_cents"]
            print(json.dumps(record, ensure_ascii=False) if args.json
                  else fit(human_line(record)))
    finally:
        bar.finish()
    if not args.json:
        print(f"seat net over all rounds: {signed_dollars(total)}")
    return exitcodes.OK


def _validate(args: argparse.Namespace) -> int:
    import tomllib

    from controller.config import DEVICE_SECTIONS, ConfigError, load_config
    from controller.rules.submission import SubmissionError, load_submission
    from controller.text_files import read_toml

    try:
        sections = set(read_toml(args.file))
    except (OSError, tomllib.TOMLDecodeError):
        sections = set()
    if sections & set(DEVICE_SECTIONS) - {"progressive"}:
        # A table's whole configuration: exactly the validation the daemon applies.
        try:
            config = load_config(args.file)
        except ConfigError as exc:
            for line in exc.problems:
                print(fit(f"{args.file}: {line}"))
            print(f"{len(exc.problems)} error(s)")
            return exitcodes.BAD_CONFIGURATION
        sub = config.submission
        print(fit(f"{args.file}: valid table configuration ({sub.game.family}, "
                  f"{sub.game.decks} decks, {sub.table.seats} seats, wagers: "
                  f"{', '.join(w.key for w in sub.wagers)}"
                  + (", progressive: " + ", ".join(p.name for p in
                                                   config.progressive.progressives)
                     if config.progressive else "") + ")"))
        return exitcodes.OK
    try:
        sub = load_submission(args.file)
    except SubmissionError as exc:
        for line in exc.errors:
            print(fit(line))
        print(f"{len(exc.errors)} error(s)")
        return exitcodes.BAD_CONFIGURATION
    print(fit(f"{args.file}: valid Rules Submission ({sub.game.family}, {sub.game.decks} "
              f"decks, wagers: {', '.join(w.key for w in sub.wagers)}); no device sections, "
              "so it is not yet a whole table configuration"))
    return exitcodes.OK
