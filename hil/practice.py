"""A table to practise on: the simulated devices' hands-on controls, from a small page.

`./run-simulated-table --practice` plays one shoe, then keeps the table up and serves
this page on 127.0.0.1 (its address is printed). Each button is what a technician's
hands would do at a real table: draw a card from the shoe, open or close its lid, pull
or plug its cable, let the next card leave the shoe unread, cover or uncover a seat's
progressive sensor, press the dealer's lock-out button, load the next shoe, jam the
shuffler or take cards out of its batch. Below them, what happens to the table's service,
its store and its witness (hil/practice_service.py): the shoe flashed with old firmware,
another program holding the seat pins, the service stopped and started, the store's
hash chain damaged, a backup put back, the witness down, a table never initialised.
`tablectl` in another terminal then shows what the table made of it, as
docs/technician-guide.md's drills describe; every drill there is a test on this table
(hil/test_practice_drills.py, hil/test_practice_service_drills.py).

Each action is also a plain POST, for a terminal or a script:

    curl -d '' http://127.0.0.1:PORT/lid/open
    curl -d seat=3 http://127.0.0.1:PORT/sensor/cover

The devices' controls talk to the simulators only (hil/shoe_sim.py, hil/mock_pins.py'
bridge, hil/usb_shuffler.py's control socket) and to the daemon only as the dealer
does; only the service controls touch the store, and only with the daemon stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import random
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs

from controller.control import ControlError
from hil.practice_actions import Action, PracticeError
from hil.practice_service import ServiceControls

MAX_REQUEST_BYTES = 8 * 1024
BUTTON_PRESS_S = 0.1  # held down this long: longer than the button's 20 ms debounce
BACKS = ("red", "blue", "green", "black")


class PracticeControls:
    """The simulated table's hands-on controls (a hil.table_harness.TableHarness)."""

    def __init__(self, harness: Any, *, seed: int = 7, witness: Any = None) -> None:
        """`witness`: the table's hil.practice_service.PracticeWitness, if it has one."""
        self.h = harness
        self.rng = random.Random(f"practice/{seed}")
        gpio = harness.table_config.gpio
        self.sensor_pins = {w.seat: w.sensor_pin for w in gpio.seats}
        self.lockout_pin = gpio.lockout_pin
        self.actions = [
            Action("/draw", "Draw a card from the shoe", self.draw),
            Action("/misread", "Draw a card the shoe cannot read", self.misread),
            Action("/faceup", "Draw a card that lay face up in the shoe", self.face_up),
            Action("/lid/open", "Open the shoe's lid", self._lid(True)),
            Action("/lid/close", "Close the shoe's lid", self._lid(False)),
            Action("/cable/pull", "Pull the shoe's cable", self.pull_cable),
            Action("/cable/plug", "Plug the shoe's cable back in", self.plug_cable),
            Action("/load", "Load the next shoe (after a verified shuffle)", self.load_shoe),
            Action("/deal", "Let the simulated dealer deal to the end of the shoe",
                   self.deal_out),
            Action("/deal/round", "Let the simulated dealer deal one round (opening the "
                   "table and loading a shoe first if it needs them)", self.deal_round),
            Action("/sensor/cover", "Put a chip on seat", self._sensor(True), "seat"),
            Action("/sensor/uncover", "Lift the chip from seat", self._sensor(False), "seat"),
            Action("/sensor/chatter", "Shake seat's loose sensor cable", self.chatter, "seat"),
            Action("/button", "Press the lock-out button", self.press_button),
            Action("/shuffler/jam", "Jam the shuffler (at card 20 of the next shuffle)",
                   self.jam),
            Action("/shuffler/clear", "Clear the shuffler's jam", self.clear_jam),
            Action("/shuffler/remove", "Take cards out of the shuffler's batch",
                   self.remove_cards, "cards"),
            Action("/shuffler/restore", "Count the batch by hand, put the missing cards back",
                   self.restore_batch),
        ]
        self.service = ServiceControls(harness, witness)
        self.actions += self.service.actions
        self.by_path = {a.path: a for a in self.actions}

    # --- the shoe ------------------------------------------------------------------

    async def draw(self, form: dict[str, str]) -> str:
        shoe = self.h.shoe
        if shoe.remaining == 0:
            raise PracticeError("the shoe is empty: load the next shoe (after tablectl test "
                                "shuffler --shuffle BACK at the end of the shoe)")
        try:
            card = await asyncio.wait_for(shoe.draw(), 5.0)
        except TimeoutError:
            return "a card left the shoe; the table has not acknowledged it (is it up?)"
        except Exception as exc:  # the simulator's own words: an empty shoe, say
            raise PracticeError(str(exc)) from exc
        if card is None:
            return "the cover card came out"
        return f"drew {card}" + ("" if shoe.plugged_in else " (the cable is out: not read)")

    async def misread(self, form: dict[str, str]) -> str:
        self.h.shoe.misread_next()
        return (await self.draw(form)).replace("drew", "drew, unread,", 1)

    async def face_up(self, form: dict[str, str]) -> str:
        self.h.shoe.face_up_next()
        return (await self.draw(form)).replace("drew", "drew, face up,", 1)

    def _lid(self, open_: bool) -> Callable[[dict[str, str]], Awaitable[str]]:
        async def act(form: dict[str, str]) -> str:
            await self.h.shoe.set_lid(open_)
            return "the shoe's lid is " + ("open" if open_ else "closed")
        return act

    async def pull_cable(self, form: dict[str, str]) -> str:
        await self.h.shoe.unplug()
        return "the shoe's cable is out"

    async def plug_cable(self, form: dict[str, str]) -> str:
        await self.h.shoe.replug()
        return "the shoe's cable is back in"

    async def load_shoe(self, form: dict[str, str]) -> str:
        """631a.5(c)-(e): a shuffled, cut stack with its cover card goes into the shoe and
        the dealer tells the table (the simulated dealer's `shoe_loaded`)."""
        from hil.shoe_sim import build_stack

        state = await self._state()
        if state != "cut":
            raise PracticeError(f"the table is {state}: a shoe is loaded after the cut; "
                                "shuffle first (tablectl test shuffler --shuffle BACK at the "
                                "end of a shoe)")
        stack, cover_at = build_stack(self.h.decks, self.rng)
        self.h.shoe.load(stack, self.h.back, cover_at)
        with contextlib.suppress(ControlError):  # the shoe may have told the table first
            await self.h.call("shoe_loaded")
        return f"a new shoe of {len(stack)} cards is loaded; the burn comes next"

    async def _state(self) -> str:
        if not self.service.running:
            raise PracticeError("the table's service is stopped: start it first")
        return str((await self.h.call("status"))["state"])

    async def deal_round(self, form: dict[str, str]) -> str:
        """The simulated dealer deals one round from the table's state now, opening the
        table, shuffling and loading a shoe first if the table needs it."""
        state = await self._state()
        if state in ("device_fault", "out_of_order"):
            raise PracticeError(f"the table is {state}: nothing is dealt until it is cleared")
        self._pins()  # the simulated dealer's lock-out button
        await self.h.skip_history()
        before = len(self.h.result.rounds)
        # From CLOSED play() opens the table itself; from any other state the dealer first
        # does what the state asks for.
        await self.h.play(shoes=1, resume=state != "closed",
                          until=lambda r: len(r.rounds) > before)
        played = self.h.result.rounds[-1]
        return f"round {played['round_no']} settled: {played['result']['winner'].upper()}"

    async def deal_out(self, form: dict[str, str]) -> str:
        """The simulated dealer takes over from the table's state now (what the
        technician did before is history, not prompts to act on) to the end of the shoe."""
        state = await self._state()
        if state in ("end_of_shoe", "device_fault", "out_of_order", "closed"):
            raise PracticeError(f"the table is {state}: nothing to deal (clear a fault first; "
                                "at the end of a shoe, shuffle and load the next)")
        self._pins()  # the simulated dealer's lock-out button
        await self.h.skip_history()
        before = self.h.result.shoes_completed
        await self.h.play(shoes=1, resume=True)
        rounds = len(self.h.result.rounds)
        return f"the shoe is dealt to its end ({self.h.result.shoes_completed - before} shoe, " \
               f"{rounds} rounds so far)"

    # --- the seats and the button -----------------------------------------------------

    def _sensor(self, covered: bool) -> Callable[[dict[str, str]], Awaitable[str]]:
        async def act(form: dict[str, str]) -> str:
            seat = self._seat(form.get("seat", ""))
            pin = self.sensor_pins[seat]
            # The sensors are active-low: a chip on the spot pulls the pin down.
            pins = self._pins()
            (pins.press if covered else pins.release)(pin)
            return f"seat {seat}: " + ("a chip is on the sensor" if covered else
                                       "the sensor is clear")
        return act

    async def chatter(self, form: dict[str, str]) -> str:
        """A loose connector: the sensor flickers as many times as the seats' driver calls
        chatter (drivers/seats.py), quickly, ending clear."""
        from drivers.seats import CHATTER_EDGES

        seat = self._seat(form.get("seat", ""))
        edges = CHATTER_EDGES + CHATTER_EDGES % 2  # an even count ends with the spot clear
        await asyncio.to_thread(self._pins().chatter, self.sensor_pins[seat], edges)
        return f"seat {seat}: the sensor flickered {edges} times"

    def _pins(self) -> Any:
        """The seat pins as the daemon holds them (hil/mock_pins.py's bridge)."""
        if not self.service.running or self.h.pins is None:
            raise PracticeError("the daemon does not hold the seat pins (its service is "
                                "stopped, or another program held them at its start): "
                                "nothing at the seats reaches the table")
        return self.h.pins

    def _seat(self, text: str) -> int:
        seats = sorted(self.sensor_pins)
        if not text.strip().isdecimal() or int(text) not in self.sensor_pins:
            raise PracticeError(f"seat {text!r}: allowed: one of {seats[0]} to {seats[-1]}")
        return int(text)

    async def press_button(self, form: dict[str, str]) -> str:
        pins = self._pins()
        pins.press(self.lockout_pin)
        await asyncio.sleep(BUTTON_PRESS_S)
        pins.release(self.lockout_pin)
        return "the lock-out button was pressed and released"

    # --- the shuffler ----------------------------------------------------------------

    async def jam(self, form: dict[str, str]) -> str:
        self._shuffler("JAM 20")
        return "the shuffler will jam at card 20 of its next shuffle"

    async def clear_jam(self, form: dict[str, str]) -> str:
        self._shuffler("CLEAR_JAM")
        return "the shuffler's jam is cleared"

    async def remove_cards(self, form: dict[str, str]) -> str:
        text = form.get("cards", "").strip() or "2"
        if not text.isdecimal() or not 1 <= int(text) <= 52:
            raise PracticeError(f"cards {text!r}: allowed: a number of cards, 1 to 52")
        held = self._held()
        self._shuffler(f"REMOVE_CARD {held} {text}")
        return f"{text} card(s) taken out of the {held} batch in the shuffler"

    async def restore_batch(self, form: dict[str, str]) -> str:
        held = self._held()
        self._shuffler(f"RESTORE {held}")
        return f"the {held} batch in the shuffler is whole again"

    def _held(self) -> str:
        held = self._shuffler("STATUS").split("held=")[1].split()[0].lower()
        if held not in BACKS:
            raise PracticeError("the shuffler holds no batch")
        return held

    def _shuffler(self, request: str) -> str:
        try:
            return str(self.h.shuffler(request))
        except (OSError, RuntimeError) as exc:
            raise PracticeError(f"the simulated shuffler did not answer: {exc}") from exc

    async def do(self, path: str, form: dict[str, str]) -> tuple[bool, str]:
        action = self.by_path.get(path)
        if action is None:
            return False, f"{path}: no such action; allowed: " + ", ".join(self.by_path)
        try:
            return True, await action.run(form)
        except PracticeError as exc:
            return False, str(exc)
        except (ControlError, ConnectionError) as exc:  # the daemon refused, or went away
            return False, f"the table's service: {exc}"


class PracticePage:
    """The page and its POST actions on 127.0.0.1 (a few lines of HTTP/1.1)."""

    def __init__(self, controls: PracticeControls) -> None:
        self.controls = controls
        self.last = ""
        self._server: asyncio.AbstractServer | None = None
        self.port = 0

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> int:
        self._server = await asyncio.start_server(self._client, host, port,
                                                  limit=MAX_REQUEST_BYTES)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self.port

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        await self.controls.service.close()

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            lines = head.decode("latin-1").split("\r\n")
            method, path = (lines[0].split(" ") + ["", ""])[:2]
            length = next((int(v) for k, _, v in (line.partition(":") for line in lines[1:])
                           if k.strip().lower() == "content-length" and v.strip().isdecimal()), 0)
            body = await reader.readexactly(min(length, MAX_REQUEST_BYTES)) if length else b""
            form = {k: v[-1] for k, v in parse_qs(body.decode("utf-8", "replace")).items()}
            if method == "GET" and path == "/":
                await _reply(writer, 200, self.page(), "text/html; charset=utf-8")
            elif method == "POST":
                ok, message = await self.controls.do(path, form)
                self.last = ("" if ok else "refused: ") + message
                if "text/html" in head.decode("latin-1").lower():  # a browser's form
                    await _reply(writer, 303, "", headers={"Location": "/"})
                else:
                    await _reply(writer, 200 if ok else 409, self.last + "\n")
            else:
                await _reply(writer, 405, "GET / for the page, POST an action\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError,
                ConnectionError, ValueError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError, OSError):
                await writer.wait_closed()

    def page(self) -> str:
        rows = []
        for a in self.controls.actions:
            field = (f' <input name="{a.field}" size="3" required '
                     f'placeholder="{a.field}">' if a.field else "")
            rows.append(f'<form method="post" action="{a.path}"><button>{html.escape(a.label)}'
                        f'</button>{field} <code>{a.path}</code></form>')
        return ("<!doctype html><meta charset='utf-8'><title>Practice table</title>"
                "<style>body{font:18px sans-serif;margin:2em}form{margin:.4em 0}"
                "button{font-size:18px;min-width:22em;text-align:left}</style>"
                "<h1>Practice table</h1><p>The simulated table's devices, as your hands would "
                "work them. Watch the result with <code>tablectl status</code> in a terminal "
                "(docs/technician-guide.md, &ldquo;Practising on the simulated table&rdquo;)."
                "</p><p>The table's service runs <code>"
                f"{html.escape(self.controls.service.command())}</code>: add the guide's "
                "<code>--init-store</code> or <code>--clear-store ...</code> to it, with the "
                f"service stopped.</p><p><b>{html.escape(self.last)}</b></p>" + "".join(rows))


async def _reply(writer: asyncio.StreamWriter, status: int, body: str,
                 content_type: str = "text/plain; charset=utf-8", *,
                 headers: dict[str, str] | None = None) -> None:
    reasons = {200: "OK", 303: "See Other", 405: "Method Not Allowed", 409: "Conflict"}
    data = body.encode()
    extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
    writer.write(f"HTTP/1.1 {status} {reasons.get(status, 'Error')}\r\nContent-Type: "
                 f"{content_type}\r\nContent-Length: {len(data)}\r\nConnection: close\r\n"
                 f"{extra}\r\n".encode() + data)
    await writer.drain()
