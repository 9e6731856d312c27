"""Issue 13: the soak with faults, short enough for CI (hil/soak.py has the long version).

`TABLE_SOAK_SHOES=500 ./run-tests hil/test_soak.py` (or `python -m hil.soak --shoes 500`)
is a casino's week; the default is 20 shoes with about 1.5 faults each. The seed is
random and printed (pytest -s, or the failure's report); TABLE_SOAK_SEED replays one.
"""

from __future__ import annotations

import asyncio
import os
import random

import pytest

from hil.soak import soak

pytestmark = [pytest.mark.hil, pytest.mark.slow, pytest.mark.timeout(3600 * 12)]

SHOES = int(os.environ.get("TABLE_SOAK_SHOES", "20"))
SEED = int(os.environ.get("TABLE_SOAK_SEED") or random.SystemRandom().randrange(2**32))


def test_shoes_with_random_faults_end_without_a_wedge_and_tally_exactly(tmp_path, capsys):
    print(f"soak seed {SEED} (replay: TABLE_SOAK_SEED={SEED})")
    result, problems = asyncio.run(soak(SHOES, SEED, tmp_path))
    print(result.summary())
    assert problems == [], f"seed {SEED}: {problems}"
    assert result.shoes == SHOES, f"seed {SEED}"
    # CI's minimum: at least as many faults as shoes, of at least six kinds, and every
    # fault left by its exit (a wedge would have failed the run at FAULT_TIMEOUT_S).
    assert result.faults >= SHOES, f"seed {SEED}: {result.summary()}"
    assert len(result.injected) >= min(6, SHOES), f"seed {SEED}: {result.summary()}"
    assert result.rounds_settled > SHOES * 50
