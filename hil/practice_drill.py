"""The technician at the practice table, for the drill tests (hil/test_practice_drills.py,
hil/test_practice_service_drills.py): the page's buttons as plain POSTs, `tablectl` as
its own process at 80 columns, and waits on the table's state."""

from __future__ import annotations

import asyncio
import urllib.error
import urllib.request
from collections.abc import Awaitable, Callable
from typing import Any

from hil.practice import PracticePage
from hil.table_harness import TableHarness
from hil.tablectl_process import run_tablectl


class Practice:
    def __init__(self, table: TableHarness, page: PracticePage) -> None:
        self.table = table
        self.page = page

    async def press(self, path: str, *, answer: int = 200, **form: str) -> str:
        """One button of the practice page (a POST, as the page's form sends it); `answer`:
        the HTTP status expected (409: the page refused, saying why)."""
        data = "&".join(f"{k}={v}" for k, v in form.items()).encode()

        def post() -> tuple[int, str]:
            request = urllib.request.Request(self.page.url(path), data=data, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=180) as answer:
                    return answer.status, answer.read().decode()
            except urllib.error.HTTPError as exc:
                return exc.code, exc.read().decode()

        status, text = await asyncio.to_thread(post)
        assert status == answer, f"POST {path} {form}: {status} {text}"
        return text.strip()

    async def tablectl(self, *argv: str, stdin: str | None = None, during: Any = None,
                       when: str = "") -> tuple[int, str]:
        return await run_tablectl(list(argv), socket=self.table.socket, stdin=stdin,
                                  during=during, when=when, env={"COLUMNS": "80"}, timeout=120)

    async def state(self, *states: str) -> dict[str, Any]:
        return await self.table.wait_for_state(*states, timeout=30)

    async def until(self, what: str, check: Callable[[], Awaitable[bool]],
                    timeout: float = 60) -> None:
        """Wait for a state the table has no event for (a device's link, the witness's),
        polling it as the harness polls a state; fails naming `what` after `timeout`."""
        deadline = asyncio.get_running_loop().time() + timeout
        while not await check():
            assert asyncio.get_running_loop().time() < deadline, f"{what}: not after {timeout} s"
            await asyncio.sleep(0.05)

    async def fault(self, path: str) -> str:
        """A fault made with the page's button `path`: the table stops, and `tablectl
        status` says so with exit 4; its output."""
        await self.press(path)
        await self.state("device_fault")
        code, out = await self.tablectl("status")
        assert code == 4, out
        return out
