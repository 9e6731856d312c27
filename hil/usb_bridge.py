"""A pyusb backend whose bus is in another process: the software rig's shuffler over a socket.

pyusb talks to a USB bus only through a backend object (``usb.backend.IBackend``:
enumeration, descriptors, open/claim/release, bulk and control transfers), so a
backend that forwards those calls over a Unix socket puts the device behind a
process boundary as libusb puts a real one behind the kernel. The shuffler's
process serves its ``SimulatedUsbBackend`` with ``UsbBridgeServer``; the test's
process (or a daemon) is configured with::

    [shuffler]
    backend = "hil.usb_bridge:get_backend"      # the rig file adds
    backend_socket = "usb.sock"                 # exported as TABLE_USB_BRIDGE_SOCKET

Wire format: one JSON object a line each way. A request is ``{"call": <IBackend
method>, "args": [...]}`` where a device is ``{"dev": n}``, an open handle
``{"handle": n}``, bytes ``{"bytes": "<hex>"}`` and a buffer to be filled
``{"buf": <size>}``; the reply is ``{"ok": <result>}`` (a filled buffer adds
``"buf": "<hex>"``, a descriptor is its fields) or ``{"usb_error": [text, code,
errno]}`` / ``{"index_error": text}``, raised again on the caller's side.
"""

from __future__ import annotations

import array
import contextlib
import dataclasses
import json
import os
import socket
import socketserver
import threading
from types import SimpleNamespace
from typing import Any

import usb.backend
import usb.core

from hil.os_threads import os_named
from hil.usb_shuffler import SimulatedUsbBackend

BRIDGE_SOCKET_ENV = "TABLE_USB_BRIDGE_SOCKET"
REPLY_TIMEOUT_S = 30.0
"""Longest wait for a reply: a bulk read waits up to its own timeout (the driver's is ~1 s)."""

_FORWARDED = (
    "get_device_descriptor", "get_configuration_descriptor", "get_interface_descriptor",
    "get_endpoint_descriptor", "close_device", "set_configuration", "get_configuration",
    "set_interface_altsetting", "claim_interface", "release_interface", "is_kernel_driver_active",
    "detach_kernel_driver", "attach_kernel_driver", "clear_halt", "reset_device",
)


# --- the device's side ---------------------------------------------------------------------


class _Handler(socketserver.StreamRequestHandler):
    server: _Server

    def handle(self) -> None:
        owner = 0
        while line := self.rfile.readline():
            request = json.loads(line)
            owner = request.get("pid", owner)
            reply = self.server.bridge.answer(request["call"], request["args"], owner)
            self.wfile.write(json.dumps(reply).encode() + b"\n")


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True

    def __init__(self, path: str, bridge: UsbBridgeServer) -> None:
        self.bridge = bridge
        super().__init__(path, _Handler)


def _alive(pid: int) -> bool:
    """``pid`` runs (a zombie, killed and not yet reaped by its parent, does not)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(")")[2].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:
        return True


class UsbBridgeServer:
    """Serves ``backend``'s bus on ``path`` (one thread per caller connection)."""

    def __init__(self, backend: SimulatedUsbBackend, path: str) -> None:
        self.backend = backend
        self.path = path
        self._handles: dict[int, tuple[Any, int]] = {}
        """Handle number -> (the backend's handle, the pid of the process that opened it)."""
        self._next = 1
        self._lock = threading.Lock()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        self._server = _Server(path, self)
        threading.Thread(target=os_named("sim-usb-bridge", self._server.serve_forever), args=(0.05,),
                         name="sim-usb-bridge", daemon=True).start()

    def _decode(self, arg: Any) -> Any:
        if isinstance(arg, dict):
            if "dev" in arg:
                return self.backend.devices[arg["dev"]]
            if "handle" in arg:
                return self._handles[arg["handle"]][0]
            if "bytes" in arg:
                return array.array("B", bytes.fromhex(arg["bytes"]))
            if "buf" in arg:
                return array.array("B", bytes(arg["buf"]))
        return arg

    def _release_dead_owners(self) -> None:
        """A caller killed with the device open (a crashed test run) must not leave the
        interface claimed for the next one, as the kernel releases a dead process's claim."""
        for number, (handle, pid) in list(self._handles.items()):
            if not _alive(pid):
                del self._handles[number]
                self.backend.close_device(handle)

    def answer(self, call: str, raw_args: list[Any], owner: int) -> dict[str, Any]:
        try:
            args = [self._decode(a) for a in raw_args]
            if call == "enumerate_devices":
                plugged = list(self.backend.enumerate_devices())
                return {"ok": [{"dev": self.backend.devices.index(d)} for d in plugged]}
            if call == "open_device":
                with self._lock:
                    self._release_dead_owners()
                    handle = self.backend.open_device(*args)
                    number, self._next = self._next, self._next + 1
                    self._handles[number] = (handle, owner)
                return {"ok": {"handle": number}}
            if call not in _FORWARDED + ("bulk_write", "bulk_read", "ctrl_transfer"):
                return {"index_error": f"{call} is not a backend call the bridge forwards"}
            result = getattr(self.backend, call)(*args)
            if call == "close_device":
                self._handles.pop(raw_args[0]["handle"], None)
            if dataclasses.is_dataclass(result):
                return {"ok": dataclasses.asdict(result)}  # type: ignore[arg-type]
            buffers = [a for raw, a in zip(raw_args, args) if isinstance(raw, dict) and "buf" in raw]
            if buffers:
                return {"ok": result, "buf": bytes(buffers[0][:result]).hex()}
            return {"ok": result}
        except usb.core.USBError as exc:
            return {"usb_error": [exc.strerror, exc.backend_error_code, exc.errno]}
        except (IndexError, KeyError) as exc:
            return {"index_error": str(exc)}

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)


# --- the host's side ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Remote:
    """A device or handle on the other side: only its number crosses."""

    kind: str
    number: int


def _encode(arg: Any) -> Any:
    if isinstance(arg, _Remote):
        return {arg.kind: arg.number}
    if isinstance(arg, (bytes, bytearray, array.array)):
        return {"bytes": bytes(arg).hex()}
    return arg


def _descriptor(fields: dict[str, Any]) -> SimpleNamespace:
    return SimpleNamespace(**{k: tuple(v) if isinstance(v, list) else v for k, v in fields.items()})


class RemoteUsbBackend(usb.backend.IBackend):  # type: ignore[misc]
    """pyusb backend forwarding every call to a ``UsbBridgeServer`` (one connection per thread)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._local = threading.local()

    def _connection(self) -> tuple[socket.socket, Any]:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(REPLY_TIMEOUT_S)
            try:
                sock.connect(self.path)
            except OSError as exc:
                sock.close()
                raise usb.core.USBError(f"USB bridge {self.path}: {exc}", -4, exc.errno) from exc
            conn = self._local.conn = (sock, sock.makefile("rb"))
        return conn

    def _call(self, call: str, *args: Any, buffer: array.array | None = None) -> Any:
        sock, reader = self._connection()
        raw = [_encode(a) for a in args]
        if buffer is not None:
            raw = [{"buf": len(buffer) * buffer.itemsize} if a is buffer else _encode(a) for a in args]
        try:
            sock.sendall(json.dumps({"call": call, "args": raw, "pid": os.getpid()}).encode() + b"\n")
            line = reader.readline()
        except OSError as exc:
            self._local.conn = None
            raise usb.core.USBError(f"USB bridge {self.path}: {exc}", -4, exc.errno) from exc
        if not line:
            self._local.conn = None
            raise usb.core.USBError(f"USB bridge {self.path}: closed", -4, None)
        reply = json.loads(line)
        if "usb_error" in reply:
            raise usb.core.USBError(*reply["usb_error"])
        if "index_error" in reply:
            raise IndexError(reply["index_error"])
        if buffer is not None:
            data = bytes.fromhex(reply["buf"])
            buffer[:len(data)] = array.array("B", data)
        return reply["ok"]

    def enumerate_devices(self) -> list[_Remote]:
        return [_Remote("dev", d["dev"]) for d in self._call("enumerate_devices")]

    def open_device(self, dev: _Remote) -> _Remote:
        return _Remote("handle", self._call("open_device", dev)["handle"])

    def bulk_write(self, dev_handle: _Remote, ep: int, intf: int, data: Any, timeout: int) -> int:
        return int(self._call("bulk_write", dev_handle, ep, intf, data, timeout))

    def bulk_read(self, dev_handle: _Remote, ep: int, intf: int, buff: array.array,
                  timeout: int) -> int:
        return int(self._call("bulk_read", dev_handle, ep, intf, buff, timeout, buffer=buff))

    def ctrl_transfer(self, dev_handle: _Remote, bmRequestType: int, bRequest: int,
                      wValue: int, wIndex: int, data: array.array, timeout: int) -> int:
        device_to_host = bool(bmRequestType & 0x80)
        return int(self._call("ctrl_transfer", dev_handle, bmRequestType, bRequest, wValue, wIndex,
                              data, timeout, buffer=data if device_to_host else None))


def _forward(call: str) -> Any:
    def method(self: RemoteUsbBackend, *args: Any) -> Any:
        result = self._call(call, *args)
        return _descriptor(result) if isinstance(result, dict) else result
    method.__name__ = call
    return method


for _call_name in _FORWARDED:
    setattr(RemoteUsbBackend, _call_name, _forward(_call_name))

_BACKENDS: dict[str, RemoteUsbBackend] = {}


def get_backend() -> RemoteUsbBackend:
    """``[shuffler] backend = "hil.usb_bridge:get_backend"``: the bus at TABLE_USB_BRIDGE_SOCKET."""
    path = os.environ.get(BRIDGE_SOCKET_ENV, "")
    if not path:
        raise RuntimeError(f"hil.usb_bridge:get_backend needs {BRIDGE_SOCKET_ENV}=<the bridge's socket> "
                           "(a rig file's [shuffler] backend_socket sets it)")
    if path not in _BACKENDS:
        _BACKENDS[path] = RemoteUsbBackend(path)
    return _BACKENDS[path]
