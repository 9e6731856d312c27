"""The dealer's and the floor's commands that move the table: open, shuffle, the shoe
loaded, a wager, and the progressive's corrections and awards. The roles and arguments
each takes are registered in controller/commands/__init__.py."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from cards import BackColour
from controller.commands.args import back_colour
from controller.commands.guards import refusing
from controller.commands.host import CommandHost
from controller.control import ControlError
from controller.events.records import ShoeLoadDeclared
from controller.table.errors import CommandRefused
from controller.table.machine import TableState
from drivers.errors import DriverError, ShufflerBusyError, ShufflerNotConnectedError
from drivers.protocols import DeviceFault, LinkState, ShoeLoaded, ShuffleComplete

SHUFFLE_RETRY_S = 0.5  # waiting for the shuffler's link; its own reconnect backoff is slower


class PlayCommands:
    """The handlers, over the daemon's table, devices and store."""

    def __init__(self, daemon: CommandHost) -> None:
        self._daemon = daemon

    def open_table(self, args: Mapping[str, Any]) -> None:
        """A table opens only with a working shoe: nothing is dealt from a device in doubt."""
        shoe = self._daemon.devices.get("shoe")
        if shoe is not None:
            health = shoe.health()
            if health.link is not LinkState.UP:
                raise CommandRefused(
                    f"the shoe is {health.link.value}"
                    + (f" ({health.last_error})" if health.last_error else "")
                    + "; the table opens once it is up (tablectl devices)")
        self._daemon.table.cmd_open()

    def place_wager(self, args: Mapping[str, Any]) -> None:
        witness = self._daemon.witness
        refusal = witness.refusal() if witness is not None else None
        if refusal is not None:
            raise CommandRefused(refusal)
        self._daemon.table.cmd_place_wager(args["seat"], args["wager"], args["amount_cents"])

    def shuffle(self, args: Mapping[str, Any]) -> None:
        """The table starts shuffling; the shuffler is asked in a task of its own."""
        daemon = self._daemon
        back = back_colour(args["back"])
        daemon.table.cmd_shuffle(daemon.config.submission.game.decks)
        daemon.spawn(self.request_shuffle(back))

    async def request_shuffle(self, back: BackColour | None) -> None:
        """Ask the shuffler for a shuffle, waiting for its link if it is not up yet.

        Runs as its own task (the table's state machine never awaits device I/O);
        it gives up when the table leaves the shuffling state.
        """
        daemon = self._daemon
        cards = daemon.config.submission.game.decks * 52
        shuffler = daemon.shuffler
        if shuffler is None:
            # 631a.5(a): shuffled by hand; the dealer confirms by loading the shoe.
            daemon.intake.enqueue(ShuffleComplete("manual", back if back is not None else BackColour.RED,
                                           cards, 0, 0, 0))
            return
        while daemon.table.shuffle_wanted:
            # RED is 0, so each fallback tests for None, never for truth.
            batch = next((b for b in (back, shuffler.held_batch,
                                      daemon.table.batch_in_shuffler) if b is not None), None)
            try:
                if batch is None:
                    raise ShufflerNotConnectedError("the shuffler has not said which batch it holds")
                await shuffler.shuffle(batch, cards)
                return
            except ShufflerBusyError:
                return  # a shuffle is already running; its result arrives as events
            except ShufflerNotConnectedError:
                await asyncio.sleep(SHUFFLE_RETRY_S)
            except DriverError as exc:
                daemon.intake.enqueue(DeviceFault("shuffler", "shuffle_request_failed", str(exc),
                                           "check the shuffler, then ask for the shuffle again"))
                return

    def shoe_loaded(self, args: Mapping[str, Any]) -> None:
        """The dealer's word that the shoe is loaded is not a device fact: it becomes the
        same ShoeLoaded the shoe reports and meets the same 681a.3(b) batch check, with the
        batch the shuffler verified (or the colour the dealer names); every card then dealt
        is checked against it like any other."""
        table = self._daemon.table
        named = back_colour(args["back"])
        if table.state is not TableState.CUT:
            raise CommandRefused(f"not allowed while the table is {table.state.value}")
        back = named if named is not None else table.batch_shuffled
        if back is None:
            raise ControlError("no batch was shuffled and verified: say which batch was "
                               "loaded ('back': red, blue, green or black)", "bad_request")
        # Recorded as the dealer's word; then checked and applied as the shoe's own report
        # (the shoe is the device the fact is about, so a mismatch stops play as it would).
        self._daemon.record(ShoeLoadDeclared(back, by="dealer"))
        table.handle(ShoeLoaded("shoe", self._daemon.config.submission.game.decks * 52, back))

    def adjust_meter(self, args: Mapping[str, Any]) -> Any:
        from controller.progressive.errors import ProgressiveError

        progressive = self._daemon.progressive
        if progressive is None:
            raise ControlError("this table offers no progressive wager")
        reason = args["reason"].strip()
        if not reason:
            raise ControlError("'reason' = blank: allowed: say why the meter is corrected",
                               "bad_request")
        try:
            return progressive.adjust_meter(
                args["progressive"], args["level"], args["delta_cents"],
                supervisor=args["_supervisor"], reason=reason)
        except (ProgressiveError, KeyError) as exc:
            raise ControlError(str(exc)) from exc

    def validate_award(self, args: Mapping[str, Any]) -> Any:
        award_id = args["award_id"]
        display, progressive = self._daemon.display, self._daemon.progressive
        if display is not None and progressive is not None:
            award = next((a for a in progressive.pending_awards()
                          if a.award_id == award_id), None)
            if award is not None and not display.win_light_confirmed(award.seat):
                # 631c.6(c)(5): the dealer verifies the win light before the award is paid.
                raise ControlError(f"the win light for seat {award.seat} is not confirmed lit by "
                                   "the display; check the display before validating")
        return refusing(lambda: self._daemon.table.cmd_validate_award(award_id,
                                                                      args["_supervisor"]))
