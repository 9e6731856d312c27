"""The atheris harness stays runnable: replay inputs through it without atheris."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from firmware_bridge import fuzz_atheris

pytestmark = pytest.mark.timeout(30)


def test_seed_corpus_replays(tmp_path: Path) -> None:
    fuzz_atheris.make_corpus(tmp_path)
    seeds = sorted(tmp_path.iterdir())
    assert seeds
    fuzz_atheris.main(["fuzz_atheris", "--replay", *map(str, seeds)])


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=400))
def test_harness_accepts_arbitrary_input(data: bytes) -> None:
    fuzz_atheris.fuzz_one_input(data)
