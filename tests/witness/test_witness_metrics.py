"""The display service's metrics say whether the table's witness takes its heads."""

from __future__ import annotations

from collections import Counter

from controller.display.board import Board
from controller.display.metrics import render_metrics


class Web:
    streams: set[int] = set()
    dropped_streams = 0
    refused: Counter[str] = Counter()


def metrics(board: Board) -> set[str]:
    return set(render_metrics(board, Web(), uptime_s=1.0).splitlines())  # type: ignore[arg-type]


def test_the_witness_gauge_follows_the_witness_events() -> None:
    board = Board(table={"table_id": "T1"})
    assert not any(line.startswith("tabled_witness_up{") for line in metrics(board))
    board.apply({"seq": 1, "at": 1.0, "kind": "witness_up", "payload": {"pending_heads": 0}})
    assert 'tabled_witness_up{table="T1"} 1' in metrics(board)
    board.apply({"seq": 2, "at": 2.0, "kind": "witness_down",
                 "payload": {"reason": "witness unreachable"}})
    lines = metrics(board)
    assert 'tabled_witness_up{table="T1"} 0' in lines
    assert 'tabled_events_total{table="T1",kind="witness_down"} 1' in lines
