"""The scoreboard's roads on hand-worked shoes, and their invariants on random shoes.

The expected grids below were worked out by hand from the rules in docs/roads.md.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from controller.display.roads import (
    BIG_EYE_BOY, COCKROACH_PIG, DERIVED_ROADS, ROWS, SMALL_ROAD, Mark, RoadRound, Roads,
    Winner, bead_plate, big_road, derived_mark, derived_marks, derived_road, place_streaks,
    predict, shoe_counts,
)

B, P, T = Winner.BANKER, Winner.PLAYER, Winner.TIE
RED, BLUE = Mark.RED, Mark.BLUE


def shoe(text: str) -> list[RoadRound]:
    """'BBPT' -> rounds; lower-case b/p marks a banker/player pair on that round."""
    rounds = []
    for ch in text.replace(" ", ""):
        winner = {"B": B, "P": P, "T": T}[ch.upper()]
        rounds.append(RoadRound(winner, banker_pair=ch == "b", player_pair=ch == "p"))
    return rounds


def grid(text: str) -> list[tuple[int, int, str]]:
    return [(c.col, c.row, c.round.winner.value[0].upper() + str(c.ties) if c.ties else
             c.round.winner.value[0].upper()) for c in big_road(shoe(text)).cells]


def test_long_ties_at_the_start_of_a_shoe_wait_for_the_first_cell() -> None:
    road = big_road(shoe("TTTT BBP"))
    assert road.leading_ties == 4
    assert grid("TTTT BBP") == [(0, 0, "B"), (0, 1, "B"), (1, 0, "P")]
    # Every round still has its Bead Plate cell, ties included.
    assert [(c.col, c.row, c.round.winner) for c in bead_plate(shoe("TTTT BBP"))] == [
        (0, 0, T), (0, 1, T), (0, 2, T), (0, 3, T), (0, 4, B), (0, 5, B), (1, 0, P)]


def test_only_ties_so_far_draw_no_cell_but_keep_their_count() -> None:
    road = big_road(shoe("TT"))
    assert road.cells == () and road.leading_ties == 2
    assert Roads(tuple(shoe("TT"))).to_json()["leading_ties"] == 2


def test_a_tie_after_a_long_streak_is_marked_on_the_tail_cell_before_it() -> None:
    # Seven Bankers: six down the first column, the seventh turns right at the bottom.
    assert grid("BBBBBBB TT P") == [
        (0, 0, "B"), (0, 1, "B"), (0, 2, "B"), (0, 3, "B"), (0, 4, "B"), (0, 5, "B"),
        (1, 5, "B2"), (1, 0, "P")]


def test_ties_between_streaks_and_within_a_streak() -> None:
    assert grid("B T B TT P T") == [(0, 0, "B1"), (0, 1, "B2"), (1, 0, "P1")]


def test_dragon_tail_turns_right_and_a_later_tail_turns_above_it() -> None:
    # 8 Bankers: column 0 then right along row 5 to columns 1 and 2. Then 7 Players from
    # column 1: down to row 4 (row 5 is the Banker tail), then right along row 4.
    cells = grid("BBBBBBBB PPPPPPP B")
    assert cells == [
        (0, 0, "B"), (0, 1, "B"), (0, 2, "B"), (0, 3, "B"), (0, 4, "B"), (0, 5, "B"),
        (1, 5, "B"), (2, 5, "B"),
        (1, 0, "P"), (1, 1, "P"), (1, 2, "P"), (1, 3, "P"), (1, 4, "P"), (2, 4, "P"),
        (3, 4, "P"),
        (2, 0, "B")]


def test_a_streak_starting_beside_a_top_row_tail_moves_right_of_it() -> None:
    # Streaks of 7, 6, 6: the first tails along row 5, the second meets it and tails
    # along row 4, the third meets that and tails along row 3 (nested tails).
    assert place_streaks([7, 6, 6]) == [
        [(0, 0), (0, 1), (0, 2), (0, 3), (0, 4), (0, 5), (1, 5)],
        [(1, 0), (1, 1), (1, 2), (1, 3), (1, 4), (2, 4)],
        [(2, 0), (2, 1), (2, 2), (2, 3), (3, 3), (4, 3)]]
    # A tail along the top row (a streak that meets a taken cell at row 1 at once)
    # pushes the next streak's start right, past the tail.
    taken_top = place_streaks([1, 1], rows=1)
    assert taken_top == [[(0, 0)], [(1, 0)]]
    assert place_streaks([3, 1], rows=1) == [[(0, 0), (1, 0), (2, 0)], [(3, 0)]]


def test_derived_roads_on_a_hand_worked_shoe() -> None:
    # Big Road streaks: BB, PPP, B, P  -> lengths 2, 3, 1, 1.
    road = big_road(shoe("BBPPPBP"))
    assert road.streak_lengths == (2, 3, 1, 1)
    # Big Eye Boy starts at streak 1 depth 1: streak 0 has depth 1 -> red; depth 2:
    # streak 0 ends at depth 1 -> blue; new streak 2: lengths 3 vs 2 -> blue; new
    # streak 3: lengths 1 vs 3 -> blue.
    assert derived_marks(road, BIG_EYE_BOY) == [RED, BLUE, BLUE, BLUE]
    # Small Road starts at streak 3 (new): lengths of streaks 2 and 0: 1 vs 2 -> blue.
    assert derived_marks(road, SMALL_ROAD) == [BLUE]
    assert derived_marks(road, COCKROACH_PIG) == []
    assert [(c.col, c.row, c.mark) for c in derived_road(derived_marks(road, BIG_EYE_BOY))] == [
        (0, 0, RED), (1, 0, BLUE), (1, 1, BLUE), (1, 2, BLUE)]


def test_chop_shoe_all_three_roads_and_predictions() -> None:
    # B P B P B B: five streaks of one, then the fifth grows to two.
    road = big_road(shoe("BPBPBB"))
    assert derived_marks(road, BIG_EYE_BOY) == [RED, RED, RED, BLUE]
    assert derived_marks(road, SMALL_ROAD) == [RED, RED, BLUE]
    assert derived_marks(road, COCKROACH_PIG) == [RED, BLUE]
    # Another Banker: depth 2 of streak 4; streaks 3, 2, 1 all end at depth 0 -> red.
    assert [predict(road, B, k) for k in (1, 2, 3)] == [RED, RED, RED]
    # A Player: new streak 5; streak 4 (2) vs streaks 3, 2, 1 (1 each) -> blue.
    assert [predict(road, P, k) for k in (1, 2, 3)] == [BLUE, BLUE, BLUE]


def test_no_prediction_before_the_road_can_compare() -> None:
    road = big_road(shoe("B"))
    assert predict(road, B, BIG_EYE_BOY) is None  # depth 1 of streak 0: nothing to its left
    assert predict(road, P, BIG_EYE_BOY) is None  # new streak 1 needs streaks 0 and -1
    assert predict(big_road([]), B, BIG_EYE_BOY) is None
    # Depth 1 of streak 1: streak 0 ends at depth 0 -> blue.
    assert predict(big_road(shoe("BP")), P, BIG_EYE_BOY) is BLUE


def test_counts_of_a_shoe() -> None:
    rounds = shoe("bBpPTT") + [RoadRound(B, natural=True), RoadRound(P, True, True, True)]
    assert shoe_counts(rounds).__dict__ == {
        "rounds": 8, "banker": 3, "player": 3, "tie": 2, "banker_pairs": 2,
        "player_pairs": 2, "naturals": 2}


def test_json_for_the_page() -> None:
    data = Roads(tuple(shoe("TBPPT"))).to_json()
    assert data["bead_plate"][0] == {"col": 0, "row": 0, "winner": "tie", "banker_pair": False,
                                     "player_pair": False, "natural": False, "total": 0}
    assert [(c["col"], c["row"], c["winner"], c["ties"]) for c in data["big_road"]] == [
        (0, 0, "banker", 0), (1, 0, "player", 0), (1, 1, "player", 1)]
    assert data["leading_ties"] == 1
    assert data["big_eye_boy"] == [{"col": 0, "row": 0, "mark": "blue"}]
    assert data["predictions"] == {
        # Banker: new streak 2, streaks 1 and 0 differ (2 vs 1) -> blue.
        "banker": {"big_eye_boy": "blue", "small_road": None, "cockroach_pig": None},
        # Player: depth 2 of streak 1; streak 0 has neither depth 2 nor 1 -> red.
        "player": {"big_eye_boy": "red", "small_road": None, "cockroach_pig": None}}


# --- properties -------------------------------------------------------------------

rounds_strategy = st.lists(
    st.builds(RoadRound, st.sampled_from([B, P, T]), st.booleans(), st.booleans(),
              st.booleans()),
    max_size=90)


@given(rounds_strategy)
def test_every_round_lands_in_exactly_one_bead_plate_cell(rounds: list[RoadRound]) -> None:
    cells = bead_plate(rounds)
    assert [c.round for c in cells] == rounds
    assert len({(c.col, c.row) for c in cells}) == len(rounds)
    assert all(0 <= c.row < ROWS for c in cells)


@given(rounds_strategy)
def test_big_road_cells_plus_tie_marks_equal_the_rounds(rounds: list[RoadRound]) -> None:
    road = big_road(rounds)
    assert len(road.cells) + sum(c.ties for c in road.cells) + road.leading_ties == len(rounds)
    assert len({(c.col, c.row) for c in road.cells}) == len(road.cells)  # no overdraw
    assert all(0 <= c.row < ROWS for c in road.cells)
    assert [c.round for c in road.cells] == [r for r in rounds if r.winner is not T]


def _oracle_marks(rounds: list[RoadRound], distance: int) -> list[Mark]:
    """The comparison rules on a set of logical (streak, depth) cells, written apart from
    the module: new streak -> "did the two compared streaks end level?"; further down ->
    "does the compared streak have this depth and the one above alike?"."""
    cells: set[tuple[int, int]] = set()
    marks: list[Mark] = []
    col, depth, last = -1, 0, None
    for r in rounds:
        if r.winner is T:
            continue
        if r.winner is last:
            depth += 1
        else:
            col, depth, last = col + 1, 0, r.winner
        cells.add((col, depth))

        def height(c: int) -> int:
            return sum(1 for cc, _ in cells if cc == c)

        if depth == 0 and col - 1 - distance >= 0:
            marks.append(RED if height(col - 1) == height(col - 1 - distance) else BLUE)
        elif depth > 0 and col - distance >= 0:
            here = (col - distance, depth) in cells
            above = (col - distance, depth - 1) in cells
            marks.append(RED if here == above else BLUE)
    return marks


@given(rounds_strategy)
def test_derived_roads_match_an_independent_reading_of_the_rules(
        rounds: list[RoadRound]) -> None:
    road = big_road(rounds)
    for distance in DERIVED_ROADS.values():
        marks = derived_marks(road, distance)
        assert marks == _oracle_marks(rounds, distance)
        cells = derived_road(marks)
        assert [c.mark for c in cells] == marks
        assert len({(c.col, c.row) for c in cells}) == len(cells)


@given(rounds_strategy, st.sampled_from([B, P]))
def test_a_prediction_is_the_mark_the_next_round_adds(rounds: list[RoadRound],
                                                      winner: Winner) -> None:
    road = big_road(rounds)
    after = big_road([*rounds, RoadRound(winner)])
    for distance in DERIVED_ROADS.values():
        before, now = derived_marks(road, distance), derived_marks(after, distance)
        expected = now[-1] if len(now) > len(before) else None
        assert predict(road, winner, distance) == expected


def test_derived_mark_refuses_nothing_it_cannot_compare() -> None:
    assert derived_mark([1], 0, 0, BIG_EYE_BOY) is None
    assert derived_mark([1, 1], 1, 0, BIG_EYE_BOY) is None
    assert derived_mark([1, 1, 1], 2, 0, BIG_EYE_BOY) is RED
