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
import json
import os
import stat
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from controller.access import AccessConfig, AccessPolicy, Caller, Role
from controller.auth import PinGuard, PinPolicy, PinRefused
from controller.control_args import (
    MAX_NAME_CHARS, MAX_PIN_CHARS, NO_ARGS, Arg, BadArgument, Params, escaped, shown, valid_text,
    whole,
)
from controller.refusals import RefusalLog
from controller.memory.store import Event, Store

log = structlog.get_logger("control")

MAX_REQUEST_BYTES = 64 * 1024  # a request is a few hundred bytes; this caps a runaway client
HISTORY_PAGE = 256  # entries read from the store per step of a stream (about 100 KB)
RECENT_EVENTS = HISTORY_PAGE
"""Committed entries kept, each encoded at most once, for the streams that are caught up:
they take a new entry from here instead of each reading it back from the store and encoding
it again (a card's step is two entries, and every stream is woken for them)."""
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
IDLE_CLOSED = "closed: no request for"  # how the idle refusal starts; clients reconnect on it

Handler = Callable[[Mapping[str, Any]], Awaitable[Any] | Any]
History = Callable[[int, int], Sequence[Event]]  # (after_seq, count) -> the next entries
Record = Callable[[str, Mapping[str, Any], str], None]  # kind, payload, severity


class ControlError(Exception):
    """A request the daemon refuses; `code` is the machine-readable reason."""

    def __init__(self, message: str, code: str = "refused") -> None:
        super().__init__(message)
        self.code = code


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


class _Stream:
    """One subscriber's connection and how far it has been sent. `live` while its task is
    waiting, caught up and with nothing unsent: then a commit's lines are written to it as
    the commit ends (`send_live`); otherwise its task is woken, which pages, drains and
    drops a stalled reader."""

    __slots__ = ("wake", "writer", "last", "live", "unsent")

    def __init__(self, writer: asyncio.StreamWriter, after_seq: int) -> None:
        self.wake = asyncio.Event()
        self.writer = writer
        self.last = after_seq
        self.live = False
        self.unsent: list[bytes] = []  # a commit's lines for a live stream, until it ends


def event_json(event: Event) -> dict[str, Any]:
    return {"seq": event.seq, "at": event.at, "kind": event.kind, "severity": event.severity,
            "device": event.device, "round_id": event.round_id, "payload": event.payload,
            "hash": event.hash}


def bad_request(message: str) -> ControlError:
    return ControlError(message, "bad_request")


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
        self._subscribers: set[_Stream] = set()
        self._clients: set[asyncio.Task[Any]] = set()  # one per connection being served
        # The last RECENT_EVENTS published entries, consecutive seqs, oldest first: [event,
        # its stream line or None until a stream first needs it].
        self._recent: deque[list[Any]] = deque(maxlen=RECENT_EVENTS)
        self._history: History | None = None
        self._when_durable: Callable[[Callable[[BaseException | None], None]], None] | None = None
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
        self._history = history

    def set_record(self, record: Record) -> None:
        self._record_to_log = record

    def _record(self, kind: str, payload: Mapping[str, Any], severity: str) -> None:
        self.refusals.record(kind, payload, severity)

    def _write_record(self, kind: str, payload: Mapping[str, Any], severity: str) -> None:
        log.warning(kind, **{k: v for k, v in payload.items() if k != "event"})
        if self._record_to_log is not None:
            self._record_to_log(kind, payload, severity)

    def follow(self, store: Store) -> None:
        """Stream what `store` commits: each entry is taken as it is given out, and once a
        commit's entries are all out, `send_live` writes them together."""
        store.subscribe(self._take, after_each_commit=self.send_live)
        self._when_durable = store.when_durable

    def publish(self, event: Event) -> None:
        """Stream one committed entry on its own (a log that is not a Store's)."""
        self._take(event)
        self.send_live()

    def _take(self, event: Event) -> None:
        """Every committed log entry, in order. A live stream (caught up, nothing unsent) is
        given the entry's line to send with the rest of its commit (`send_live`); any other
        is woken: it takes entries from the last RECENT_EVENTS kept here (encoded once for
        every stream), or, further behind, reads the store itself, page by page (so a slow
        one costs no memory here)."""
        recent = self._recent
        if recent and recent[-1][0].seq + 1 != event.seq:
            recent.clear()  # not the next entry: what is kept must have no gap
        item: list[Any] = [event, None]
        recent.append(item)
        for stream in self._subscribers:
            if stream.live and stream.last + 1 == event.seq:
                stream.unsent.append(_kept_line(item))
                stream.last = event.seq
            else:
                stream.live = False
                stream.wake.set()

    def send_live(self) -> None:
        """Write each live stream's lines of the commit just given out, in one write: the
        dealer's prompt goes out with the card it answers, not one wake-up of the reader
        later. A stream whose socket does not take it all, or has gone, is its task's."""
        for stream in self._subscribers:
            if not stream.unsent:
                continue
            lines, stream.unsent = stream.unsent, []
            transport = stream.writer.transport
            sent = False
            if not transport.is_closing():
                try:
                    transport.write(b"".join(lines))
                    sent = True
                except Exception:  # its task finds what failed (drain raises), ends the stream
                    log.debug("stream_write_failed", exc_info=True)
            if not sent:
                stream.last -= len(lines)  # the task pages them again from the kept ones
            if not sent or transport.get_write_buffer_size():
                stream.live = False
                stream.wake.set()

    def stream_page(self, after_seq: int, *, kept: bool = True) -> list[tuple[int, bytes]]:
        """The next entries of a stream that has sent up to `after_seq`, as (seq, line):
        from the entries kept here if the next one is kept (and `kept`), else a page read
        from the store."""
        page = self._recent_lines(after_seq) if kept else None
        if page is not None:
            return page
        history = self._history(after_seq, HISTORY_PAGE) if self._history else []
        return [(event.seq, _event_line(event)) for event in history]

    def _recent_lines(self, after_seq: int) -> list[tuple[int, bytes]] | None:
        """The kept entries after `after_seq` as stream lines, or None if the entry right
        after it is no longer (or not yet) kept."""
        recent = self._recent
        if not recent:
            return None
        first = recent[0][0].seq
        if not first <= after_seq + 1 <= recent[-1][0].seq + 1:
            return None
        return [(recent[index][0].seq, _kept_line(recent[index]))
                for index in range(after_seq + 1 - first, len(recent))]

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
        for stream in list(self._subscribers):
            stream.live = False
            stream.wake.set()
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
                await _send(writer, {"id": None, "ok": False, "code": "refused",
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
        """Requests in order, replies in the same order: a reply that reports a step held
        for a shared flush is sent once it is on the disk, while the next request is read
        and run (a client may send several requests before reading their replies)."""
        replying: asyncio.Future[None] | None = None
        try:
            while not self._closing:
                try:
                    # Not wait_for, which runs the read as a task of its own (a loop turn a
                    # line): a request already read in is run at once, so a client's
                    # pipelined requests run in one loop turn and share one flush.
                    async with asyncio.timeout(self.limits.idle_timeout_s):
                        line = await reader.readline()
                except TimeoutError:
                    await _send(writer, {"id": None, "ok": False, "code": "refused", "error": (
                        f"{IDLE_CLOSED} {self.limits.idle_timeout_s:g} s "
                        "([access] idle_timeout_s); reconnect to continue")})
                    return
                except (asyncio.LimitOverrunError, ValueError):
                    await _send(writer, {"id": None, "ok": False, "code": "bad_request",
                                         "error": f"request longer than {MAX_REQUEST_BYTES} bytes; "
                                                  "allowed: one JSON object per line, up to that"})
                    return
                if not line:
                    break
                response = await self.dispatch(line, caller)
                if response.get("result") is _SUBSCRIBED:
                    if replying is not None:
                        await replying
                    await self._stream(response, writer, caller)
                    return
                if replying is not None and replying.done():
                    finished, replying = replying, None
                    finished.result()  # a reply that could not be sent ends the connection
                if replying is None and self._acknowledged():
                    await _send(writer, response)
                else:  # its step waits for a shared flush: read the next request meanwhile
                    replying = asyncio.ensure_future(self._reply(writer, response, replying))
        finally:
            if replying is not None:  # every reply sent before the connection ends
                await replying

    def _acknowledged(self) -> bool:
        """Whether everything committed so far is on the disk and given out, so a reply may
        report it now (group commit, controller/memory/delivery.py)."""
        answered: list[BaseException | None] = []
        if self._when_durable is not None:
            self._when_durable(answered.append)
        return self._when_durable is None or bool(answered)

    async def _reply(self, writer: asyncio.StreamWriter, response: dict[str, Any],
                     before: asyncio.Future[None] | None) -> None:
        """Send `response` after the replies before it, once what it reports is on the
        disk; if the flush failed, nothing it did is acknowledged."""
        if before is not None:
            await before
        assert self._when_durable is not None
        done: asyncio.Future[BaseException | None] = asyncio.get_running_loop().create_future()

        def settle(error: BaseException | None) -> None:
            if not done.done():
                done.set_result(error)

        self._when_durable(settle)
        error = await done
        if error is not None:
            response = {"id": response.get("id"), "ok": False, "code": "internal", "error": (
                f"not acknowledged: the store could not flush ({error}); see the table's log")}
        await _send(writer, response)

    async def dispatch(self, line: bytes, caller: Caller) -> dict[str, Any]:
        request_id = None
        try:
            request = _parse(line)
            request_id = request.get("id")
            name, args = _command_and_args(request)
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
                                  supervisor=_auth_name(request))
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
            raise bad_request(f"'auth' = {auth!r}: allowed: an object "
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
        payload: dict[str, Any] = {"command": command, "role_needed": role.value,
                                   "reason": reason, "caller": caller.describe()}
        if supervisor is not None:
            payload["supervisor"] = escaped(supervisor, MAX_NAME_CHARS)
        self._record("command_refused", payload, "warning")

    # --- subscribe ------------------------------------------------------------------------

    async def _stream(self, response: dict[str, Any], writer: asyncio.StreamWriter,
                      caller: Caller) -> None:
        stream = _Stream(writer, response["after_seq"])
        self._subscribers.add(stream)  # before reading so nothing committed falls in between
        try:
            await _send(writer, {"id": response["id"], "ok": True, "result": "subscribed"})
            history = True  # the first page is the store's, whatever is kept: the history
            while not self._closing:
                stream.wake.clear()  # before the read: a commit after it sets the flag again
                stream.live = False
                page = self.stream_page(stream.last, kept=not history)
                history = False
                if page:
                    writer.writelines([line for _, line in page])  # one send, not one a line
                    stream.last = page[-1][0]
                if (page or writer.transport.get_write_buffer_size()) and not await \
                        self._drained(writer, caller, stream.last):
                    return
                if len(page) < HISTORY_PAGE:
                    # Caught up, everything sent: publish writes what comes next, and wakes
                    # this task only if the socket backs up or the stream falls behind.
                    stream.live = not stream.wake.is_set()
                    await stream.wake.wait()
                else:
                    await asyncio.sleep(0)  # a long history: let the rest of the loop run
        finally:
            stream.live = False
            self._subscribers.discard(stream)

    async def _drained(self, writer: asyncio.StreamWriter, caller: Caller, last: int) -> bool:
        if not writer.transport.get_write_buffer_size():
            # Everything went out at once (the usual case): drain cannot wait, so it needs no
            # timer; it still raises if the subscriber has gone.
            await writer.drain()
            return True
        try:
            await asyncio.wait_for(writer.drain(), self.limits.subscriber_stall_s)
            return True
        except TimeoutError:
            reason = (f"read nothing for {self.limits.subscriber_stall_s:g} s "
                      "([access] subscriber_stall_s); reconnect with after_seq "
                      f"= the last seq received")
            self._record("subscriber_dropped", {"caller": caller.describe(), "reason": reason,
                                                "sent_up_to_seq": last}, "warning")
            writer.write(_line({"closed": reason}))
            writer.transport.abort()  # its buffer is full: nothing more is kept for it
            return False


_SUBSCRIBED = object()


def _parse(line: bytes) -> dict[str, Any]:
    try:
        request = json.loads(line)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise bad_request(f"not a JSON object: {exc}") from exc
    except ValueError:  # Python reads no integer of more than 4,300 digits
        raise bad_request("not a JSON object the daemon reads: a number has more than 4300 "
                          "digits; allowed: the numbers each argument allows "
                          "(docs/control-api.md)") from None
    except RecursionError:
        raise bad_request("not a JSON object: nested too deeply; allowed: "
                          "{\"cmd\": NAME, \"args\": {...}}") from None
    if not isinstance(request, dict):
        raise bad_request("a request is a JSON object with 'cmd'")
    return request


def _command_and_args(request: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    name = request.get("cmd")
    if not isinstance(name, str):
        raise bad_request(f"'cmd' = {name!r}: allowed: a command name (a string)")
    args = request.get("args")
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise bad_request("'args' must be a JSON object")
    if "_supervisor" in args:
        raise bad_request("'_supervisor' is set by the daemon from 'auth', never by a client")
    return name, args


def _auth_name(request: Mapping[str, Any]) -> str | None:
    """The supervisor a request names, if it names one as text (escaped when recorded)."""
    auth = request.get("auth")
    who = auth.get("supervisor") if isinstance(auth, Mapping) else None
    return who if isinstance(who, str) else None


def _roles(caller: Caller) -> str:
    return ", ".join(sorted(r.value for r in caller.roles)) or "no role"


_LINE = json.JSONEncoder(separators=(",", ":"))  # json.dumps would build one per line


def _line(obj: Mapping[str, Any]) -> bytes:
    return _LINE.encode(obj).encode() + b"\n"


_text = json.encoder.encode_basestring  # a JSON string with UTF-8 as is, as the payload's


def _event_line(event: Event) -> bytes:
    """A log entry as a subscriber's stream line: {"event": event_json(event)}, with the
    payload written as the store holds it, the text the entry's MAC covers, not encoded a
    second time (tests/controller/test_control.py checks the two agree)."""
    device = "null" if event.device is None else _text(event.device)
    round_id = "null" if event.round_id is None else int.__repr__(event.round_id)
    return (f'{{"event":{{"seq":{int.__repr__(event.seq)},"at":{float.__repr__(event.at)},'
            f'"kind":{_text(event.kind)},"severity":{_text(event.severity)},"device":{device},'
            f'"round_id":{round_id},"payload":{event.payload_json},"hash":{_text(event.hash)}'
            f'}}}}\n').encode()


def _kept_line(item: list[Any]) -> bytes:
    """A kept entry's stream line ([event, line or None]), encoded once, when first needed."""
    if item[1] is None:
        item[1] = _event_line(item[0])
    line: bytes = item[1]
    return line


async def _send(writer: asyncio.StreamWriter, obj: Mapping[str, Any]) -> None:
    writer.write(_line(obj))
    await writer.drain()


class ControlClient:
    """A small synchronous-feeling async client used by tablectl and the HIL harness."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._next_id = 0

    async def connect(self) -> ControlClient:
        self._reader, self._writer = await asyncio.open_unix_connection(self.path,
                                                                        limit=16 * 1024 * 1024)
        return self

    async def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            try:
                await self._writer.wait_closed()
            except (ConnectionError, BrokenPipeError):
                pass

    async def call(self, cmd: str, auth: Mapping[str, str] | None = None, **args: Any) -> Any:
        self._next_id += 1
        request: dict[str, Any] = {"id": self._next_id, "cmd": cmd, "args": args}
        if auth:
            request["auth"] = dict(auth)
        try:
            response = await self._exchange(request)
        except ConnectionError:
            # Writing to a connection the daemon already closed can fail before the line it
            # left (why it closed) is read: read that line now, if there is one.
            assert self._reader is not None
            left = await self._reader.readline()
            if not left:
                raise
            response = json.loads(left)
        if response.get("id") is None and str(response.get("error", "")).startswith(IDLE_CLOSED):
            # The daemon closed this connection for idleness before reading the request:
            # nothing was done, so asking again on a new connection is safe.
            await self.close()
            await self.connect()
            response = await self._exchange(request)
        if not response.get("ok"):
            raise ControlError(response.get("error", "refused"), response.get("code", "refused"))
        return response.get("result")

    async def call_many(self, calls: Sequence[tuple[str, Mapping[str, Any]]]
                        ) -> AsyncIterator[Any]:
        """Send every request at once, then yield each reply in order: its result, or the
        ControlError of a refused one. The daemon runs them in order and may report them
        after one shared flush (a round's wagers). A ConnectionError ends the replies: the
        requests not answered may or may not have been done."""
        assert self._reader is not None and self._writer is not None
        lines = []
        for cmd, args in calls:
            self._next_id += 1
            lines.append(json.dumps({"id": self._next_id, "cmd": cmd, "args": dict(args)}
                                    ).encode() + b"\n")
        self._writer.writelines(lines)
        await self._writer.drain()
        for _ in lines:
            line = await self._reader.readline()
            if not line:
                raise ConnectionError("the daemon closed the control connection")
            response = json.loads(line)
            yield (response.get("result") if response.get("ok") else
                   ControlError(response.get("error", "refused"), response.get("code", "refused")))

    async def _exchange(self, request: Mapping[str, Any]) -> dict[str, Any]:
        assert self._reader is not None and self._writer is not None
        self._writer.write(json.dumps(request).encode() + b"\n")
        await self._writer.drain()
        line = await self._reader.readline()
        if not line:
            raise ConnectionError("the daemon closed the control connection")
        answer: dict[str, Any] = json.loads(line)
        return answer

    async def subscribe(self, after_seq: int = 0):  # type: ignore[no-untyped-def]
        """Yield committed events (dicts) from after_seq on, until the daemon ends the stream
        (ConnectionError with its reason if it dropped this subscriber)."""
        await self.call("subscribe", after_seq=after_seq)
        assert self._reader is not None
        while True:
            line = await self._reader.readline()
            if not line:
                return
            item = json.loads(line)
            if "closed" in item:
                raise ConnectionError(f"the daemon ended the stream: {item['closed']}")
            yield item["event"]
