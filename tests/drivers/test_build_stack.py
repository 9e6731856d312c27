"""hil.shoe_sim.build_stack: a shuffled, cut stack with the cover card where 631a.5 / 681a.5 allow."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cards import shoe_of
from hil.shoe_sim import COVER_MIN_FROM_BOTTOM_631A, COVER_MIN_FROM_BOTTOM_681A, build_stack


@settings(max_examples=50, deadline=None)
@given(decks=st.sampled_from([1, 4, 6, 8]), seed=st.integers(0, 2**32 - 1))
def test_631a_5_d_cover_card_at_least_14_cards_above_the_bottom(decks: int, seed: int) -> None:
    stack, cover_at = build_stack(decks, random.Random(seed))
    assert Counter(stack) == Counter(shoe_of(decks))  # every card once per deck: nothing lost
    assert len(stack) - cover_at >= COVER_MIN_FROM_BOTTOM_631A
    assert 0 < cover_at < len(stack)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_681a_5_d_cover_card_at_least_10_cards_above_the_bottom(seed: int) -> None:
    stack, cover_at = build_stack(8, random.Random(seed), cover_min_from_bottom=COVER_MIN_FROM_BOTTOM_681A)
    assert len(stack) - cover_at >= 10


def test_same_seed_same_shoe() -> None:
    assert build_stack(8, random.Random(7)) == build_stack(8, random.Random(7))
    assert build_stack(8, random.Random(7)) != build_stack(8, random.Random(8))


def test_no_decks_is_refused() -> None:
    with pytest.raises(ValueError, match="decks = 0: need at least one deck"):
        build_stack(0, random.Random(1))
