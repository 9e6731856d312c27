"""Write a store as an older release wrote it, for tests/controller/test_old_stores.py.

    .venv/bin/python tools/make_store_fixture.py 9b19c01 [--seed 7]

Checks the commit out beside this repository (a detached `git worktree`), plays one
simulated shoe through that commit's own daemon (`python -m hil.run --shoes 1 --seed`,
run from the checkout so every module is the old one), and keeps what a table keeps:
the store (gzipped, byte for byte), its key and its anchor, under
tests/fixtures/stores/<commit>/. The shoe's cards and wagers follow the seed, so a
second run gives the same rounds and cents (the entries' times differ).

Where PostgreSQL answers (127.0.0.1:5432), the simulated table runs its witness too and
the log holds a `witness_up` entry; the test's expected counts are those of the fixture
as committed.
"""

from __future__ import annotations

import argparse
import gzip
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "stores"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("commit", help="the commit whose code writes the store, e.g. 9b19c01")
    parser.add_argument("--seed", type=int, default=7, help="the simulated shoe's seed")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="store-fixture-") as scratch:
        source, run = Path(scratch) / "source", Path(scratch) / "run"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(source),
                        args.commit], check=True)
        try:
            env = {**os.environ, "PYTHONPATH": str(source)}
            subprocess.run([sys.executable, "-m", "hil.run", "--config",
                            "config/simulated-table.toml", "--shoes", "1", "--seed",
                            str(args.seed), "--workdir", str(run)],
                           cwd=source, env=env, check=True)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                            str(source)], check=True)
        wal = run / "table.sqlite-wal"
        if wal.exists() and wal.stat().st_size:
            raise SystemExit(f"{wal} is not empty: the daemon did not stop cleanly")
        target = FIXTURES / args.commit
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        with open(run / "table.sqlite", "rb") as store, \
                gzip.GzipFile(target / "table.sqlite.gz", "wb", mtime=0) as packed:
            shutil.copyfileobj(store, packed)
        for name in ("key", "anchor"):
            shutil.copyfile(run / "table.critical" / name, target / name)
    print(f"wrote {target.relative_to(ROOT)}: table.sqlite.gz, key, anchor")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
