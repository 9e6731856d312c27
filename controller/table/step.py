"""The table's step (`Table._step`): the store's transaction around everything one entry
point does, and the table's state saved at its end if the save rule says so.

An object made once per table and re-entered by an entry point that a port's callback
calls during a step (which joins that step): a generator's context manager cost every
step 10,000 instructions.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from types import TracebackType


class TableStep:
    """`with step:` runs one step; nested, it joins the step running."""

    def __init__(self, transaction: Callable[[], AbstractContextManager[object]],
                 saves_state: Callable[[], bool], save_state: Callable[[], None]) -> None:
        self._open = transaction  # the facade's: its store's step (the store may be swapped)
        self._saves_state = saves_state
        self._save_state = save_state
        self._depth = 0
        self._transaction: AbstractContextManager[object] | None = None

    def __enter__(self) -> None:
        self._depth += 1
        if self._depth > 1:
            return
        try:
            self._saves_state()  # nothing carries over from a step that raised
            transaction = self._open()
            transaction.__enter__()
        except BaseException:
            self._depth = 0
            raise
        self._transaction = transaction

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._depth -= 1
        if self._depth:
            return
        transaction, self._transaction = self._transaction, None
        assert transaction is not None
        if kind is None:
            try:
                if self._saves_state():
                    self._save_state()
            except BaseException as failed:  # the store's step rolls back, and it goes on
                transaction.__exit__(type(failed), failed, failed.__traceback__)
                raise
        transaction.__exit__(kind, error, trace)
