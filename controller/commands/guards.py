"""How a control command's handler is wrapped: a table refusal becomes the control
socket's answer, and a command that opens the table or moves money waits for the
start's check of the whole history."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from controller.control import ControlError
from controller.table.errors import CommandRefused
from controller.table.table import Table

HISTORY_WAIT_S = 10.0
"""How long a command that opens the table or moves money waits for the start's check of the
whole history before it is refused (a million entries take a few seconds here)."""

Handler = Callable[[Mapping[str, Any]], Any]
T = TypeVar("T")


def refusing(fn: Callable[[], T]) -> T:
    """`fn()`, with the table's refusal turned into the control socket's answer."""
    try:
        return fn()
    except CommandRefused as exc:
        raise ControlError(str(exc)) from exc


def guarded(table: Table, fn: Handler, answer: Callable[[], Any]) -> Handler:
    """A command that changes the table: a refusal (or a trigger the state machine does not
    allow now) is the answer, naming the state; otherwise the answer is `answer()`."""
    def run(args: Mapping[str, Any]) -> Any:
        try:
            fn(args)
        except CommandRefused as exc:
            raise ControlError(str(exc)) from exc
        except Exception as exc:
            if type(exc).__name__ == "MachineError":  # transitions: trigger not allowed now
                raise ControlError(f"not allowed while the table is "
                                   f"{table.state.value}") from exc
            raise
        return answer()
    return run


def after_history_check(checked: asyncio.Event, handler: Handler) -> Callable[
        [Mapping[str, Any]], Awaitable[Any]]:
    """A command that opens the table or moves money waits for the history's check (at
    most HISTORY_WAIT_S, then it is refused with the reason)."""
    async def run(args: Mapping[str, Any]) -> Any:
        if not checked.is_set():
            try:
                await asyncio.wait_for(checked.wait(), HISTORY_WAIT_S)
            except TimeoutError:
                raise ControlError("the check of the table's whole history at start is "
                                   "still running; the table opens when it passes "
                                   "(tablectl status: history_check)") from None
        result = handler(args)
        return await result if asyncio.iscoroutine(result) else result
    return run
