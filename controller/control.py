"""The local control API: JSON lines over a Unix socket, for tablectl and the HIL harness.

Request:  {"id": 1, "cmd": "status", "args": {...}, "auth": {"supervisor": "ana", "pin": "1234"}}
Response: {"id": 1, "ok": true, "result": ...}  or  {"id": 1, "ok": false, "error": "...",
           "code": "bad_request" | "forbidden" | "refused" | "unauthorised" | "internal"}
`subscribe` turns the connection into a stream of {"event": {...}} lines (committed
log entries, starting after `after_seq`). The protocol is documented in
docs/control-api.md.

Each command needs one role (controller/access.py), checked against the caller the
kernel reports for the connection. The server holds up under any client: a cap on
connections, an idle timeout, a request size limit, and subscribers that are fed
page by page from the store (nothing is buffered per subscriber beyond one page; a
subscriber that stops reading is dropped with a reason); caught-up subscribers share the
last RECENT_EVENTS committed entries, each encoded once, and are sent a new entry as it is
committed (no wake-up of their task in between: a prompt reaches the dealer's display as soon
as its step is in the store).
"""

from __future__ import annotations

import asyncio
import os
import stat
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from controller.access import AccessConfig, AccessPolicy, Caller, Role
from controller.auth import PinGuard, PinPolicy, PinRefused
from controller.control_args import (
    MAX_NAME_CHARS, MAX_PIN_CHARS, NO_ARGS, Arg, BadArgument, Params, escaped, valid_text,
    whole,
)
from controller.control_stream import HISTORY_PAGE as HISTORY_PAGE
from controller.control_stream import RECENT_EVENTS as RECENT_EVENTS
from controller.control_session import serve_requests
from controller.control_stream import EventStreams, History
from controller.errors import shown
from controller.control_wire import (
    auth_name, bad_request, command_and_args, parse_request, send,
)
from controller.events.codec import EventRecord
from controller.events.system_records import CommandRefused as CommandRefusedRecord
from controller.refusals import RefusalLog
from controller.memory.store import Event, Store

# Where callers have always imported them from: the client and the wire's names.
from controller.control_client import ControlClient as ControlClient
from controller.control_wire import ControlError as ControlError
from controller.control_wire import event_json as event_json

log = structlog.get_logger("control")

MAX_REQUEST_BYTES = 64 * 1024  # a request is a few hundred bytes; this caps a runaway client
TRUSTED_RESERVE = 64  # connections root and the daemon's user may open beyond the cap
ACCEPT_BURST = 32
"""How many connections asyncio accepts in one turn of the loop (its `backlog`). A connection
past the cap is accepted, answered and closed, which takes about ACCEPT_TURNS turns; so up to
ACCEPT_BURST * ACCEPT_TURNS descriptors more than the cap can be open for a moment under a
flood, and the daemon's descriptor budget counts them (controller/limits.py)."""
ACCEPT_TURNS = 4  # accept, transport made, connection served, socket closed
LISTEN_BACKLOG = 4096  # connections the kernel queues for accept(); no descriptor each
ACCEPT_FAILED_LOG_S = 10.0  # accept() failing (out of descriptors): one log line this often
ACCEPT_FAILED = "socket.accept() out of system resource"  # asyncio's message for it

Handler = Callable[[Mapping[str, Any]], Awaitable[Any] | Any]
Record = Callable[[EventRecord], None]  # into the event log (controller/events)


@dataclass(frozen=True)
class Command:
    handler: Handler
    role: Role
    description: str = ""
    params: Params = NO_ARGS  # the arguments it takes (controller/control_args.py)

    @property
    def needs_supervisor(self) -> bool:
        return self.role is Role.SUPERVISOR


SUBSCRIBE = Command(lambda args: None, Role.READ,
                    "a stream of committed event log entries after after_seq",
                    Params({"after_seq": whole(0, 2**62, default=0)}))


class ControlServer:
    def __init__(self, path: str, *, mode: int = 0o660,
                 access: AccessPolicy | None = None,
                 pins: PinGuard | None = None,
                 authorise: Callable[[str, str], bool] | None = None,
                 on_supervisor_command: Callable[[str, str, Mapping[str, Any]], None] | None = None,
                 record: Record | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 ) -> None:
        self.path = path
        self.mode = mode
        self.commands: dict[str, Command] = {"subscribe": SUBSCRIBE}
        self.access = access or AccessPolicy(AccessConfig())
        self.limits = self.access.config
        self._record_to_log = record
        # Every refusal passes here: counted, and written at a bounded rate (refusals.py).
        self.refusals = RefusalLog(self._write_record, clock=clock)
        self.pins = pins or PinGuard(verify=authorise or (lambda name, pin: False),
                                     policy=PinPolicy())
        self.pins.set_record(self._record)
        self._audit = on_supervisor_command
        self._server: asyncio.AbstractServer | None = None
        self._clients: set[asyncio.Task[Any]] = set()  # one per connection being served
        self.streams = EventStreams(self._record, lambda: self.limits.subscriber_stall_s)
        self._closing = False
        self.connections = 0
        # The cap in force: [access] max_connections, or lower to fit the open-files limit
        # (Daemon, controller/limits.py), with what set it for the refusal's message.
        self.max_connections = self.limits.max_connections
        self.cap_source = "[access] max_connections"
        self._accept_failures = 0
        self._accept_logged_at = -ACCEPT_FAILED_LOG_S
        self._previous_handler: Any = None
        self._per_user: dict[int, int] = {}
        self.identify: Callable[[asyncio.StreamWriter], Caller] = self._peer
        self._flusher: asyncio.Task[None] | None = None

    def register(self, name: str, handler: Handler, *, role: Role | None = None,
                 supervisor: bool = False, description: str = "",
                 args: Mapping[str, Arg] | None = None) -> None:
        """`role` is what the caller needs; without one a command is technician-only (the
        narrowest role), or supervisor-only with `supervisor=True`. `args` are the arguments
        it takes; the handler is called only with those, checked, defaults filled in."""
        if role is None:
            role = Role.SUPERVISOR if supervisor else Role.TECHNICIAN
        self.commands[name] = Command(handler, role, description, Params(dict(args or {})))

    def set_history(self, history: History) -> None:
        self.streams.set_history(history)

    def follow(self, store: Store) -> None:
        """Stream what `store` commits (controller/control_stream.py)."""
        self.streams.follow(store)

    def publish(self, event: Event) -> None:
        """Stream one committed entry on its own (a log that is not a Store's)."""
        self.streams.publish(event)

    def set_record(self, record: Record) -> None:
        self._record_to_log = record

    def _record(self, record: EventRecord) -> None:
        self.refusals.record(record)

    def _write_record(self, record: EventRecord) -> None:
        log.warning(record.KIND, **{k: v for k, v in vars(record).items() if k != "event"})
        if self._record_to_log is not None:
            self._record_to_log(record)

    async def start(self) -> None:
        socket_path = Path(self.path)
        socket_path.parent.mkdir(parents=True, exist_ok=True)
        if socket_path.exists() or socket_path.is_symlink():
            if not stat.S_ISSOCK(socket_path.lstat().st_mode):
                raise ControlError(f"{self.path} exists and is not a socket; refusing to replace it",
                                   "internal")
            socket_path.unlink()
        old_umask = os.umask(0o777 & ~self.mode)  # the socket is born with the right mode
        try:
            self._server = await asyncio.start_unix_server(
                self._client, path=self.path, limit=MAX_REQUEST_BYTES, backlog=ACCEPT_BURST)
        finally:
            os.umask(old_umask)
        os.chmod(self.path, self.mode)
        # asyncio's backlog is also what it accepts per turn (ACCEPT_BURST, which bounds the
        # descriptors a burst opens); the kernel's queue may be longer, and should: a client
        # whose connect finds it full gets EAGAIN, which asyncio's clients take for success.
        for listening in self._server.sockets:
            with listening.dup() as sock:
                sock.listen(LISTEN_BACKLOG)
        loop = asyncio.get_running_loop()
        self._previous_handler = loop.get_exception_handler()
        loop.set_exception_handler(self._loop_exception)
        self._flusher = loop.create_task(self._flush_refusals(), name="refusal-log")

    def _loop_exception(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        """asyncio reports accept() failing for want of descriptors once per connection it
        could not take (up to the backlog each turn) and retries a second later: counted
        here, logged once per ACCEPT_FAILED_LOG_S with the count, not once each."""
        if context.get("message") != ACCEPT_FAILED:
            if self._previous_handler is not None:
                self._previous_handler(loop, context)
            else:
                loop.default_exception_handler(context)
            return
        self._accept_failures += 1
        now = loop.time()
        if now - self._accept_logged_at >= ACCEPT_FAILED_LOG_S:
            log.error("control_accept_failed", error=str(context.get("exception")),
                      failures=self._accept_failures, per_s=ACCEPT_FAILED_LOG_S,
                      connections=self.connections, action=(
                          "the daemon is out of file descriptors: raise LimitNOFILE or lower "
                          "[access] max_connections; accepting again in 1 s"))
            self._accept_logged_at, self._accept_failures = now, 0

    async def _flush_refusals(self) -> None:
        while True:
            await asyncio.sleep(self.refusals.window_s)
            self.refusals.flush_due()

    async def close(self) -> int:
        """Stop serving; returns how many connections were open (each ends quietly, so the
        daemon logs one line for them all, not one traceback each)."""
        self._closing = True
        self.streams.close()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        # The server stops accepting; the connections it accepted end here too, each closing
        # its socket (a client reads EOF), not left to the loop's end or the collector.
        clients = [task for task in self._clients if task is not asyncio.current_task()]
        for task in clients:
            task.cancel()
        await asyncio.gather(*clients, return_exceptions=True)
        if self._flusher is not None:
            self._flusher.cancel()
        self.refusals.flush()  # every refusal counted so far is in the log
        if self._server is not None:  # start() put its handler in: the one before it back
            asyncio.get_running_loop().set_exception_handler(self._previous_handler)
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        return len(clients)

    # --- one connection -------------------------------------------------------------------

    def _peer(self, writer: asyncio.StreamWriter) -> Caller:
        return self.access.caller(writer.get_extra_info("socket"))

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        task = asyncio.current_task()
        if task is not None:
            self._clients.add(task)
        caller: Caller | None = None
        try:
            try:
                caller = self.identify(writer)
            except OSError as exc:
                log.error("control_peer_unknown", error=str(exc))
                return
            self._per_user[caller.uid] = self._per_user.get(caller.uid, 0) + 1
            refusal = self._over_limit(caller)
            if refusal:
                await send(writer, {"id": None, "ok": False, "code": "refused",
                                     "error": refusal})
                return
            await self._serve(reader, writer, caller)
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        except asyncio.CancelledError:
            if not self._closing:
                raise
            # close() ends the connection: the task ends normally, or asyncio's callback for
            # the connection logs a CancelledError traceback for each one still open.
            return
        finally:
            self.connections -= 1
            self._clients.discard(task)
            if caller is not None:
                left = self._per_user.pop(caller.uid) - 1
                if left:
                    self._per_user[caller.uid] = left
            writer.close()

    def _over_limit(self, caller: Caller) -> str:
        """Why this connection is one too many, or "". Every user, root and the daemon's own
        included, is held to the per-user cap; root and the daemon's user have a reserve
        above the total, so an account flooding the socket never locks a technician with
        sudo out, and all of it fits the daemon's descriptors (controller/limits.py)."""
        limits = self.limits
        trusted = caller.uid in self.access.trusted
        if self._per_user[caller.uid] > limits.max_connections_per_user:
            return (f"too many connections from uid {caller.uid}: the limit is "
                    f"{limits.max_connections_per_user} per user ([access] "
                    "max_connections_per_user); close idle ones or try again later")
        total = self.max_connections + (TRUSTED_RESERVE if trusted else 0)
        if self.connections > total:
            return (f"too many connections: the limit is {self.max_connections} "
                    f"({self.cap_source}); close idle ones or try again later")
        return ""

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                     caller: Caller) -> None:
        """Requests in order, replies in order once durable (controller/control_session.py)."""
        def subscribe(response: dict[str, Any]) -> Awaitable[None] | None:
            if response.get("result") is not _SUBSCRIBED:
                return None
            return self.streams.serve(response, writer, caller)

        await serve_requests(
            reader, writer, dispatch=lambda line: self.dispatch(line, caller),
            subscribe=subscribe, idle_timeout_s=self.limits.idle_timeout_s,
            max_request_bytes=MAX_REQUEST_BYTES, closing=lambda: self._closing,
            when_durable=self.streams.when_durable)

    async def dispatch(self, line: bytes, caller: Caller) -> dict[str, Any]:
        request_id = None
        try:
            request = parse_request(line)
            request_id = request.get("id")
            name, args = command_and_args(request)
            command = self.commands.get(name)
            if command is None:
                raise bad_request(f"unknown command {name!r}; allowed: "
                                  f"{', '.join(sorted(self.commands))}")
            if command.role not in caller.roles:
                self._refused(caller, name, f"needs the {command.role.value} role", command.role)
                raise ControlError(
                    f"{name} needs the {command.role.value} role; this caller (uid "
                    f"{caller.uid}) has {_roles(caller)} (docs/deployment.md, groups)",
                    "forbidden")
            try:
                args = command.params.check(name, args)
            except BadArgument as exc:
                if command.needs_supervisor:  # the attempt is audited, as any refusal is
                    self._refused(caller, name, f"bad request: {exc}", command.role,
                                  supervisor=auth_name(request))
                raise bad_request(str(exc)) from None
            if command is SUBSCRIBE:
                return {"id": request_id, "ok": True, "result": _SUBSCRIBED,
                        "after_seq": args["after_seq"]}
            if command.needs_supervisor:
                args = await self._supervisor(name, request, args, caller)
            result = command.handler(args)
            if asyncio.iscoroutine(result):
                result = await result
            return {"id": request_id, "ok": True, "result": result}
        except ControlError as exc:
            return {"id": request_id, "ok": False, "error": str(exc), "code": exc.code}
        except Exception as exc:  # a bug must not take the daemon down with it
            log.exception("control_command_failed")
            return {"id": request_id, "ok": False, "error": f"{type(exc).__name__}: {exc}",
                    "code": "internal"}

    async def _supervisor(self, name: str, request: Mapping[str, Any], args: dict[str, Any],
                          caller: Caller) -> dict[str, Any]:
        auth = request.get("auth")
        if auth is None:
            auth = {}
        if not isinstance(auth, Mapping):
            raise bad_request(f"'auth' = {shown(auth)}: allowed: an object "
                              "{\"supervisor\": NAME, \"pin\": DIGITS}")
        who, pin = auth.get("supervisor", ""), auth.get("pin", "")
        if not isinstance(who, str) or not isinstance(pin, str):
            raise bad_request("'auth.supervisor' and 'auth.pin' must be strings")
        for key, value, limit in (("supervisor", who, MAX_NAME_CHARS), ("pin", pin, MAX_PIN_CHARS)):
            if len(value) > limit or not valid_text(value):
                self._refused(caller, name, f"bad request: 'auth.{key}'", Role.SUPERVISOR,
                              supervisor=who)
                raise bad_request(f"'auth.{key}' = {shown(value)}: allowed: text of up to "
                                  f"{limit} characters, valid Unicode")
        if not who:
            self._refused(caller, name, "no supervisor name and PIN", Role.SUPERVISOR)
            raise ControlError(f"{name} needs a floor supervisor's name and PIN", "unauthorised")
        try:
            await self.pins.check(who, pin, caller.key, name)
        except PinRefused as exc:
            self._refused(caller, name, str(exc), Role.SUPERVISOR, supervisor=who)
            raise ControlError(f"{name} needs a floor supervisor's name and PIN: {exc}",
                               "unauthorised") from exc
        if self._audit:
            self._audit(who, name, args)
        return {**args, "_supervisor": who}  # handlers record who authorised them

    def _refused(self, caller: Caller, command: str, reason: str, role: Role,
                 supervisor: str | None = None) -> None:
        """A refused command goes to the event log as refused (never as done), through the
        refusal log: a client looping on a refusal cannot flood the log."""
        self._record(CommandRefusedRecord(
            command, role.value, reason, caller.describe(),
            supervisor=None if supervisor is None else escaped(supervisor, MAX_NAME_CHARS)))

_SUBSCRIBED = object()


def _roles(caller: Caller) -> str:
    return ", ".join(sorted(r.value for r in caller.roles)) or "no role"
