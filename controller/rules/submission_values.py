"""Reading typed values out of a Rules Submission's tables: each wrong value is reported
to the one collector (controller/errors.ConfigProblems) in the Rules Submission's form,
naming the file, the dotted key, the value and what is allowed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controller.errors import MISSING, ConfigProblems


def get_table(c: ConfigProblems, data: Mapping[str, Any], key: str, path: str,
               required: bool = False) -> dict[str, Any] | None:
    value = data.get(key, MISSING)
    if value is MISSING:
        if required:
            c.wrong(path, value, "required table")
        return None
    if not isinstance(value, dict):
        c.wrong(path, value, "must be a table")
        return None
    return value


def get_int(c: ConfigProblems, table: Mapping[str, Any], key: str, path: str, default: object,
             lo: int | None = None, hi: int | None = None,
             choices: tuple[int, ...] | None = None, why: str = "") -> int | None:
    value = table.get(key, default)
    if value is MISSING:
        c.wrong(path, value, f"required integer{why}")
        return None
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        c.wrong(path, value, f"must be an integer{why}")
        return None
    if choices is not None and value not in choices:
        c.wrong(path, value, f"must be one of {', '.join(map(str, choices))}{why}")
        return None
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        rng = f"{lo}..{hi}" if hi is not None else f">= {lo}"
        c.wrong(path, value, f"must be {rng}{why}")
        return None
    return value


def get_choice(c: ConfigProblems, table: Mapping[str, Any], key: str, path: str, default: object,
                choices: tuple[str, ...], why: str = "") -> str | None:
    value = table.get(key, default)
    if value not in choices or not isinstance(value, str):
        c.wrong(path, value, f"must be one of {', '.join(repr(x) for x in choices)}{why}")
        return None
    return value


def get_bool(c: ConfigProblems, table: Mapping[str, Any], key: str, path: str,
              default: bool) -> bool:
    value = table.get(key, default)
    if not isinstance(value, bool):
        c.wrong(path, value, "must be true or false")
        return default
    return value
