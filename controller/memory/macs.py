"""The keyed MACs of critical memory: one log entry's, one protected row's, the seal's and
the checkpoint's, and the canonical JSON they cover (docs/architecture.md, "Critical memory").
An auditor holding the key recomputes each from the texts written out here."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from typing import Any

GENESIS_MAC = "0" * 64
KEY_BYTES = 32
MODULUS = 2**256
ZERO_DIGEST = "0" * 64
# A store made without a key (unit tests, offline tools on a scratch copy) is keyed with
# this public value; the daemon never opens such a store, because its key id differs.
DEVELOPMENT_KEY = b"tabled development key: never used by a live table."
CHECKPOINT_META = "chain_checkpoint"
KEY_ID_META = "key_id"


def key_id(key: bytes) -> str:
    """A public fingerprint of the key: which key made this store, without revealing it."""
    return hmac.new(key, b"tabled key id", hashlib.sha256).hexdigest()[:16]


def unchecked_encoder(encoder: json.JSONEncoder) -> Callable[[Any], str]:
    """`encoder.encode` (UTF-8 as is, no indent), with the C encoder that encode() builds
    afresh for every value built once, and without its circular check: what is encoded this
    way (a log entry's payload, the table's saved state) is plain data made here, never a
    value that contains itself (one would fail with RecursionError, not ValueError), and a
    check whose marks survived a failed encoding would refuse the next value."""
    make: Callable[..., Callable[[Any, int], Any]] | None = getattr(
        json.encoder, "c_make_encoder", None)
    if make is None or encoder.ensure_ascii or encoder.indent is not None:
        return encoder.encode
    c_encode = make(None, encoder.default, json.encoder.encode_basestring, None,
                    encoder.key_separator, encoder.item_separator, encoder.sort_keys,
                    encoder.skipkeys, encoder.allow_nan)
    plain = encoder.encode

    def encode(obj: Any) -> str:
        if type(obj) is str:  # encode() writes a bare text itself
            return plain(obj)
        return "".join(c_encode(obj, 0))

    return encode


canonical = unchecked_encoder(
    json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False))
"""JSON with sorted keys, no spaces, UTF-8 as is: one text for one value."""


def entry_mac(key: bytes, prev_mac: str, seq: int, at: float, kind: str, severity: str,
              device: str | None, round_id: int | None, payload_json: str, *,
              at_text: str | None = None, payload_text: str | None = None,
              prev_text: str | None = None) -> str:
    """The MAC of one log entry, in hex: HMAC-SHA256(key, UTF-8 of the canonical JSON list
    [previous MAC, seq, repr(time), kind, severity, device, round, payload JSON]); so an
    auditor holding the key can recompute it. `at_text` is repr(at) and `payload_text`
    json_string(payload_json) and `prev_text` json_string(prev_mac) if the caller has them
    (`entry_material`)."""
    return mac_of(key, entry_material(prev_mac, seq, at, kind, severity, device, round_id,
                                      payload_json, at_text=at_text, payload_text=payload_text,
                                      prev_text=prev_text).encode("utf-8")).hex()


_PADS: dict[bytes, tuple[Any, Any]] = {}
"""`_pads` by key, read by `mac_of`: a dictionary read of the key (bytes keep their hash),
where an lru_cache's call made a key tuple for the bytes and hashed it, about 800
instructions a MAC (three a card, one for each row MAC and each entry a check reads)."""


def _pads(key: bytes) -> tuple[Any, Any]:
    """SHA-256 with HMAC's inner and outer padded key already hashed (RFC 2104; a key
    longer than a block is hashed first, as HMAC does): every MAC (log entries, protected
    rows at each write and at each check, the seal) copies these two states instead of
    hashing the key's two padded blocks again, which was half of a MAC's cost. Two plain
    hash states copy for less than OpenSSL's HMAC state, which copies and frees three
    digest contexts at every copy and again at every digest()."""
    block = (hashlib.sha256(key).digest() if len(key) > 64 else key).ljust(64, b"\0")
    if len(_PADS) >= 4:  # a few keys at most in one process (tests make more)
        _PADS.clear()
    pads = _PADS[key] = (hashlib.sha256(bytes(byte ^ 0x36 for byte in block)),
                         hashlib.sha256(bytes(byte ^ 0x5C for byte in block)))
    return pads


def mac_of(key: bytes, material: bytes) -> bytes:
    """HMAC-SHA256(key, material): the same bytes as hmac.digest(key, material, "sha256")
    (tests/controller/test_critical_memory.py compares them)."""
    inner, outer = _PADS.get(key) or _pads(key)
    inner = inner.copy()
    inner.update(material)
    outer = outer.copy()
    outer.update(inner.digest())
    mac: bytes = outer.digest()
    return mac


_json_string = json.encoder.encode_basestring  # the escaping `canonical` applies (UTF-8 as is)
int_text = int.__repr__
"""`int.__repr__` as a name (the same function): read off the type at each call, it is an
attribute lookup that Python 3.11 does not specialize, a few hundred instructions, about a
dozen times a card (the entries' and the seal's materials, the stream lines)."""
_float_repr = float.__repr__
_FLOAT_TEXT: dict[int, tuple[float, str]] = {}


def float_text(value: float) -> str:
    """repr(value), remembered for the float object itself: a log entry's time is written
    out for its MAC when it is appended (`Store`) and again for the control socket's stream
    line, and a float's repr is 8,000 instructions. Keyed by identity (the same object: 0.0
    and -0.0 are equal but have two texts), holding the float so its id stays its own. A
    check of the log reads times it never streams: it writes them out itself (`at_text`)."""
    known = _FLOAT_TEXT.get(id(value))
    if known is not None and known[0] is value:
        return known[1]
    if len(_FLOAT_TEXT) >= 64:
        _FLOAT_TEXT.clear()
    text = _float_repr(value)
    _FLOAT_TEXT[id(value)] = (value, text)
    return text


def entry_material(prev_mac: str, seq: int, at: float, kind: str, severity: str,
                   device: str | None, round_id: int | None, payload_json: str, *,
                   at_text: str | None = None, payload_text: str | None = None,
                   prev_text: str | None = None) -> str:
    """The text entry_mac covers: canonical([prev_mac, seq, repr(at), kind, severity, device,
    round_id, payload_json]), written out field by field because it runs for every entry
    (a third of the encoder's time); the two are the same text (tests/controller/
    test_critical_memory.py compares them). `at_text` is repr(at), which needs no escaping
    in a JSON string (digits, '.', 'e', signs, 'inf', 'nan'); `payload_text` is
    json_string(payload_json), which the store has kept for a repeated entry (entries.py);
    `prev_text` is json_string(prev_mac), which the store keeps for the MACs it made
    (MAC_TEXTS): the log's check reads them from the store and leaves it out.
    A kind's, severity's or device's text (a few dozen) is not escaped again each time."""
    if at_text is None:
        at_text = _float_repr(at)
    if payload_text is None:
        payload_text = _json_string(payload_json)
    known = KNOWN_JSON_STRINGS
    return (f"[{prev_text or _json_string(prev_mac)},{int_text(seq)},\"{at_text}\","
            f"{known.get(kind) or known_json_string(kind)},"
            f"{known.get(severity) or known_json_string(severity)},"
            f"{'null' if device is None else known.get(device) or known_json_string(device)},"
            f"{'null' if round_id is None else int_text(round_id)},{payload_text}]")


json_string = _json_string
"""A text as a JSON string, UTF-8 as is: the escaping `canonical` applies to every text."""
KNOWN_JSON_STRINGS: dict[str, str] = {}
"""json_string(text) of the texts `known_json_string` was given: kinds, severities and
devices, a few dozen texts written out at every entry (its MAC's material, its stream
line). A caller on a card's path reads it first (`KNOWN_JSON_STRINGS.get(text) or
known_json_string(text)`): a dictionary lookup, not a call, for each of an entry's texts."""
MAC_TEXTS: dict[str, str] = {}
"""json_string(mac) of the last log entries' MACs the store made (`keep_mac_json`, 64 at
most). Each is written out again as the next entry's previous MAC, in the seal's material
and in the entry's stream line: escaping 64 characters is about 2,000 instructions, five a
card. A MAC not kept here (read from the store, or let go) is escaped: the same text."""


def mac_json(mac_hex: str) -> str:
    """json_string of a MAC made here (`mac_of(...).hex()`): hex digits, which no JSON
    string escapes, so the digits quoted."""
    return f'"{mac_hex}"'


def keep_mac_json(mac_hex: str) -> None:
    """Keep a MAC the store just made as its JSON text (MAC_TEXTS)."""
    if len(MAC_TEXTS) >= 64:
        MAC_TEXTS.clear()
    MAC_TEXTS[mac_hex] = mac_json(mac_hex)


def known_json_string(text: str) -> str:
    """json_string(text), kept in KNOWN_JSON_STRINGS."""
    known = KNOWN_JSON_STRINGS.get(text)
    if known is None:
        if len(KNOWN_JSON_STRINGS) >= 256:
            KNOWN_JSON_STRINGS.clear()
        known = KNOWN_JSON_STRINGS[text] = _json_string(text)
    return known


def row_mac(key: bytes, table: str, values: Sequence[Any]) -> int:
    """One protected row's MAC as a number: HMAC-SHA256(key, table name, NUL, Python's repr
    of the row's tuple), big-endian. repr is exact for SQLite's value types (int, float,
    str, bytes, None), and `digest_of` computes the same bytes in its own loop."""
    material = f"{table}\x00{tuple(values)!r}".encode()
    return int.from_bytes(mac_of(key, material), "big")


def seal_mac(key: bytes, commit_no: int, log_seq: int, log_mac: str,
             digests: Iterable[tuple[str, str, int, str]], *,
             digests_text: str | None = None) -> str:
    """The seal's MAC; `digests_text` is `digests_material(digests)` if the caller kept it."""
    if digests_text is None:
        digests_text = digests_material(digests)
    material = seal_head(commit_no, log_seq, log_mac) + digests_text
    return mac_of(key, material.encode("utf-8")).hex()


def seal_material(commit_no: int, log_seq: int, log_mac: str,
                  digests: Iterable[tuple[str, str, int, str]]) -> str:
    """The text seal_mac covers: canonical(["seal", commit_no, log_seq, log_mac,
    sorted(digests)]), written out field by field because every money step seals (the same
    text: tests/controller/test_critical_memory.py compares them)."""
    return seal_head(commit_no, log_seq, log_mac) + digests_material(digests)


def seal_head(commit_no: int, log_seq: int, log_mac: str) -> str:
    """The seal's material up to its digests (`seal_material`)."""
    return (f'["seal",{int_text(commit_no)},{int_text(log_seq)},'
            f'{MAC_TEXTS.get(log_mac) or _json_string(log_mac)},')


def digests_material(digests: Iterable[tuple[str, str, int, str]]) -> str:
    """The seal's material from its digests on (`seal_material`): the same while the
    digests are, which they are for every step that only appends log entries."""
    rows = ",".join(f"{_digest_head(name, columns)}{int_text(rows)},"
                    f"{_json_string(acc)}]" for name, columns, rows, acc in sorted(digests))
    return f"[{rows}]]"


@lru_cache(maxsize=64)
def _digest_head(name: str, columns: str) -> str:
    """A digest's part of the seal's material before its counts: its table and columns
    (a JSON list, escaped again as a string), the same at every seal until a migration:
    written out once, not at each money step's seal."""
    return f"[{_json_string(name)},{_json_string(columns)},"


def checkpoint_mac(key: bytes, seq: int, mac: str) -> str:
    return hmac.new(key, canonical(["checkpoint", seq, mac]).encode(), hashlib.sha256).hexdigest()
