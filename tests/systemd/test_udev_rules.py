"""systemd/99-baccarat-table.rules: syntax, stable names, and groups that match the unit.

`udevadm verify` only exists from systemd 254 on (this project targets 252,
Debian 12), so the rules are checked by a small parser of the udev(7)
key/operator/value syntax: the mistakes it catches are the ones that make udev
silently skip a rule (an assignment operator on a match-only key, "==" on an
assignment-only key, an unquoted or unterminated value, upper-case hex ids).
Where `udevadm verify` exists it runs too.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.systemd.unitfile import value as unit_value

RULES = Path(__file__).resolve().parents[2] / "systemd" / "99-baccarat-table.rules"

MATCH_OPS = {"==", "!="}
ASSIGN_OPS = {"=", "+=", "-=", ":="}
# udev(7): keys that only match, keys that only assign, keys that do both.
MATCH_ONLY = {"ACTION", "DEVPATH", "KERNEL", "KERNELS", "SUBSYSTEM", "SUBSYSTEMS", "DRIVER",
              "DRIVERS", "ATTRS", "TAGS", "TEST", "PROGRAM", "RESULT", "CONST", "SYSCTL"}
ASSIGN_ONLY = {"OWNER", "GROUP", "MODE", "SECLABEL", "RUN", "LABEL", "GOTO", "IMPORT", "OPTIONS"}
BOTH = {"NAME", "SYMLINK", "ATTR", "ENV", "TAG"}
WITH_ATTRIBUTE = {"ATTR", "ATTRS", "ENV", "SYSCTL", "TEST", "IMPORT", "RUN", "SECLABEL", "CONST"}
TOKEN = re.compile(r'\s*([A-Z]+)(?:\{([^{}"]+)\})?\s*(==|!=|\+=|-=|:=|=)\s*"([^"]*)"\s*(?:,|$)')


@dataclass(frozen=True)
class Term:
    key: str
    attribute: str | None
    op: str
    value: str

    @property
    def is_match(self) -> bool:
        return self.op in MATCH_OPS


def parse_rule(line: str) -> list[Term]:
    """One rule line as terms; ValueError names what udev would reject or ignore."""
    terms: list[Term] = []
    position = 0
    while position < len(line):
        token = TOKEN.match(line, position)
        if token is None:
            raise ValueError(f"cannot parse at column {position}: {line[position:]!r}")
        key, attribute, op, text = token.groups()
        term = Term(key, attribute, op, text)
        if key not in MATCH_ONLY | ASSIGN_ONLY | BOTH:
            raise ValueError(f"unknown key {key}")
        if key in MATCH_ONLY and not term.is_match:
            raise ValueError(f"{key} can only be matched (== or !=), not {op}")
        if key in ASSIGN_ONLY and term.is_match:
            raise ValueError(f"{key} can only be assigned, not matched with {op}")
        if (key in WITH_ATTRIBUTE) != (attribute is not None) and key not in {"RUN", "IMPORT"}:
            need = "needs" if key in WITH_ATTRIBUTE else "takes no"
            raise ValueError(f"{key} {need} {{attribute}}")
        terms.append(term)
        position = token.end()
    if not any(t.is_match for t in terms) or all(t.is_match for t in terms):
        raise ValueError("a rule needs at least one match and one assignment")
    return terms


def rules() -> list[list[Term]]:
    text = RULES.read_text().replace("\\\n", "")  # udev joins continued lines
    return [parse_rule(line.strip()) for line in text.splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def rule_with_symlink(name: str) -> list[Term]:
    found = [r for r in rules() if Term("SYMLINK", None, "+=", name) in r]
    assert len(found) == 1, f"{len(found)} rules create /dev/{name}"
    return found[0]


def assigned(rule: list[Term], key: str) -> str:
    (term,) = [t for t in rule if t.key == key and not t.is_match]
    return term.value


def test_every_rule_parses() -> None:
    assert len(rules()) == 4


@pytest.mark.parametrize("line", [
    'SUBSYSTEM="tty", SYMLINK+="x"',                       # match-only key assigned
    'SUBSYSTEM=="tty", MODE=="0660"',                      # assign-only key matched
    'SUBSYSTEM=="tty", GROUP="dialout',                    # unterminated value
    "SUBSYSTEM=='tty', GROUP=\"dialout\"",                 # single quotes
    'SUBSYSTEM=="tty" GROUP="dialout"',                    # missing comma
    'SUBSYSTEM=="tty", ATTRS="x", GROUP="dialout"',        # ATTRS without {attribute}
    'SUBSYSTEMS=="usb"',                                   # nothing assigned
    'SYMLNK+="x", SUBSYSTEM=="tty"',                       # typo in a key
])
def test_parser_rejects_what_udev_would_skip(line: str) -> None:
    with pytest.raises(ValueError):
        parse_rule(line)


@pytest.mark.parametrize(("symlink", "subsystem", "group"), [
    ("baccarat-shoe", "tty", "dialout"),
    ("baccarat-display", "tty", "dialout"),
    ("baccarat-shuffler", "usb", "plugdev"),
])
def test_stable_names(symlink: str, subsystem: str, group: str) -> None:
    rule = rule_with_symlink(symlink)
    assert Term("SUBSYSTEM", None, "==", subsystem) in rule
    assert assigned(rule, "GROUP") == group
    assert assigned(rule, "MODE") == "0660"
    ids = {t.attribute: t.value for t in rule if t.key in {"ATTR", "ATTRS"}}
    for attribute in ("idVendor", "idProduct"):
        assert re.fullmatch(r"[0-9a-f]{4}", ids[attribute]), (
            f"{symlink}: {attribute}={ids[attribute]!r}; sysfs shows 4 lower-case hex digits")


def test_shoe_and_display_match_different_adapters() -> None:
    shoe = {t for t in rule_with_symlink("baccarat-shoe") if t.is_match}
    display = {t for t in rule_with_symlink("baccarat-display") if t.is_match}
    assert shoe != display
    assert {t.attribute for t in shoe ^ display} == {"serial"}


def test_shuffler_rule_matches_the_device_node_not_its_interfaces() -> None:
    assert Term("ENV", "DEVTYPE", "==", "usb_device") in rule_with_symlink("baccarat-shuffler")


def test_gpiochips_belong_to_group_gpio() -> None:
    (rule,) = [r for r in rules() if Term("SUBSYSTEM", None, "==", "gpio") in r]
    assert Term("KERNEL", None, "==", "gpiochip[0-9]*") in rule
    assert assigned(rule, "GROUP") == "gpio"
    assert assigned(rule, "MODE") == "0660"


def test_groups_are_the_services_supplementary_groups() -> None:
    groups = {assigned(rule, "GROUP") for rule in rules()}
    assert groups == set(unit_value("SupplementaryGroups").split())


def test_udevadm_verify() -> None:
    udevadm = shutil.which("udevadm")
    if udevadm is None:
        pytest.skip("udevadm not installed (the parser tests above still ran)")
    probe = subprocess.run([udevadm, "verify", "--help"], capture_output=True, timeout=10,
                           check=False)
    if probe.returncode != 0:
        pytest.skip("this udevadm has no 'verify' (systemd < 254); the parser tests above ran")
    result = subprocess.run([udevadm, "verify", "--resolve-names=never", str(RULES)],
                            capture_output=True, text=True, timeout=10, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
