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

from controller.cli import exitcodes


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
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
    verify.add_argument("--seed", help="a regulator's seed: 2 to 128 hexadecimal digits")
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
