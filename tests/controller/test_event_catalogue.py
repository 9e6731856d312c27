"""Events are typed records: the catalogue, the records and what the code emits agree.

Every kind in `controller.events.CATALOGUE` names its record (a frozen dataclass); its
payload's keys are the record's fields, encoded once by the store and decoded back by
the readers through the same type. The emission sites are read from the source: every
call of the store's `append_event` (and of the wrappers that lead to it) passes a record
built right there, never a dict or a kind's name, and the store refuses anything else at
run time.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from cards import BackColour, Card
from controller.memory.critical import canonical
from controller.events import (
    ABSENT,
    CATALOGUE,
    DOC,
    KINDS,
    SHOE_CARD_KINDS,
    UNDISCLOSED,
    EventDecodeError,
    EventRecord,
    Payload,
    decode,
    document,
)
from controller.events.codec import omitted_when
from controller.events.progressive_records import ProgressiveAward, ProgressiveMeter
from controller.events.records import (
    CardDealt,
    Prompt,
    RoundResult,
    RoundSettled,
    RoundVoid,
    SettledWager,
    ShoeReconciled,
)
from controller.events.system_records import CommandRefused, WitnessDown
from controller.rules.wager import Outcome, Settlement
from controller.memory.store import Store

ROOT = Path(__file__).parents[2]
EMITTERS = frozenset({"_record", "record", "append_event", "_write_record"})
"""The store's emit path and the wrappers every event passes through on its way there
(the table's journal, the daemon's access log, the refusal log, the witness)."""
JOURNAL_EMITTERS = frozenset({"announce"})
"""The table's prompts (controller/table/journal.py), called on its journal."""


def _records() -> list[type[EventRecord]]:
    return [entry.record for entry in CATALOGUE]


# --- the catalogue and the records ------------------------------------------------------


def test_every_record_is_catalogued_once_and_every_entry_names_a_frozen_record():
    assert sorted(EventRecord.REGISTRY) == sorted(KINDS)
    assert len(KINDS) == len(CATALOGUE) == 73
    for entry in CATALOGUE:
        assert EventRecord.REGISTRY[entry.kind] is entry.record
        assert dataclasses.is_dataclass(entry.record), entry.kind
        assert getattr(entry.record, "__dataclass_params__").frozen, entry.kind


def test_the_catalogue_lists_each_kind_with_a_known_severity():
    severities = {"info", "warning", "error", "critical"}
    assert [e.kind for e in CATALOGUE if not set(e.severities) <= severities] == []
    assert SHOE_CARD_KINDS == {"burn_first_card", "burn_card", "card", "card_face_up",
                               "card_discarded"}


def _sample(hint: Any) -> Any:
    """A value of the declared type, not the type's default (so nothing is omitted)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Card:
        return Card.parse("10♥")
    if hint is BackColour:
        return BackColour.BLUE
    if isinstance(hint, type) and issubclass(hint, Payload):
        return _instance(hint)
    if origin in (typing.Union, __import__("types").UnionType):
        return _sample(next(a for a in args if a is not type(None)
                            and a.__name__ not in ("Absent", "Undisclosed")))
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return (_sample(args[0]), _sample(args[0]))
        return tuple(_sample(a) for a in args)
    if origin is dict or hint is dict:
        return {"k": 1}
    return {int: 7, str: "text", bool: True, float: 2.5}.get(hint, "any")


def _instance(record: type[Payload]) -> Any:
    hints = typing.get_type_hints(record)
    build: Any = record
    return build(**{f.name: _sample(hints[f.name]) for f in dataclasses.fields(build)})


@pytest.mark.parametrize("entry", CATALOGUE, ids=lambda e: e.kind)
def test_each_record_has_its_catalogued_fields_and_decodes_to_itself(entry):
    record = _instance(entry.record)
    payload = record.payload()
    assert tuple(payload) == tuple(f.rstrip("?") for f in entry.fields)
    stored = json.loads(canonical(payload))  # as a reader of the log gets it back
    assert decode(entry.kind, stored) == record
    # A key the record may leave out reads back as the value that leaves it out.
    bare = {k: v for k, v in stored.items() if k not in omitted_when(entry.record)}
    left_out = decode(entry.kind, bare)
    for name, value in omitted_when(entry.record).items():
        assert getattr(left_out, name) is value or getattr(left_out, name) == value


def test_a_card_event_is_the_payload_the_log_has_always_stored():
    dealt = CardDealt(12, Card.parse("10h"), "banker", "banker_third", BackColour.RED)
    assert canonical(dealt.payload()) == ('{"back":"red","card":"10♥","hand":"banker",'
                                          '"index":12,"slot":"banker_third"}')
    assert decode("card", json.loads(canonical(dealt.payload()))).card == Card.parse("10♥")


def test_a_card_event_made_by_of_is_the_record_its_constructor_makes():
    """CardDealt.of (a round's cards, without the frozen dataclass's __init__) makes the
    same record: equal, the same fields in the same order, the same payload, still frozen."""
    made = CardDealt(12, Card.parse("10h"), "banker", "banker_third", BackColour.RED)
    fast = CardDealt.of(12, Card.parse("10h"), "banker", "banker_third", BackColour.RED)
    assert (type(fast), fast, hash(fast), list(vars(fast).items()), fast.payload()) == (
        CardDealt, made, hash(made), list(vars(made).items()), made.payload())
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.index = 13  # type: ignore[misc]


def test_keys_some_entries_leave_out_are_left_out_and_a_written_null_stays_written():
    assert "wagers_stand" not in RoundVoid("shoe", ()).payload()
    assert RoundVoid("shoe", (), wagers_stand=True).payload()["wagers_stand"] is True
    created = ProgressiveAward(4, "mega", "grand", 3, 100_000, "pending", label="Royal",
                               section="631c.6", pay_order=1, linked_claim=None, claimed=True)
    assert created.payload() == {"award_id": 4, "progressive": "mega", "level": "grand",
                                 "seat": 3, "amount_cents": 100_000, "state": "pending",
                                 "label": "Royal", "section": "631c.6", "pay_order": 1,
                                 "linked_claim": None, "claimed": True}
    validated = ProgressiveAward(4, "mega", "grand", 3, 100_000, "validated",
                                 supervisor="Ann", paid_via=None)
    assert sorted(validated.payload()) == ["amount_cents", "award_id", "level", "paid_via",
                                           "progressive", "seat", "state", "supervisor"]
    assert decode("progressive_award", validated.payload()).label is ABSENT
    assert Prompt("discard", card=UNDISCLOSED, ruling="631a.15(c)(1)").payload() == {
        "action": "discard", "card": "", "ruling": "631a.15(c)(1)"}
    assert decode("prompt", {"action": "discard", "card": ""}).card is UNDISCLOSED


def test_a_settlement_with_marked_vigorish_keeps_the_rules_figures():
    """631a.13(d)(2): with marked vigorish the seat's net is its whole win until the
    vigorish is collected; at payout (631a.13(d)(1)) it is the win less the vigorish."""
    won = Settlement("banker", 2, 10_000, Outcome.WIN, __import__("fractions").Fraction(1),
                     10_000, 500, "Banker wins with 6", "631a.13(c)")
    marked = SettledWager.of(won, vigorish_marked=True)
    at_payout = SettledWager.of(won, vigorish_marked=False)
    assert (marked.net_cents, marked.vig_marked_cents) == (10_000, 500)
    assert (at_payout.net_cents, at_payout.vig_marked_cents) == (9_500, 0)
    lost = Settlement("player", 5, 2_500, Outcome.LOSE, __import__("fractions").Fraction(0),
                      0, 0, "Player loses", "631a.12(b)")
    settled = RoundSettled.of(3, False, RoundResult((), (), 6, 7, "banker"),
                              (marked, SettledWager.of(lost, vigorish_marked=True)))
    assert settled.table_net_cents == -10_000 + 2_500


def test_decoding_names_what_does_not_fit():
    with pytest.raises(EventDecodeError, match="'card'.*lacks 'hand'"):
        decode("card", {"index": 1, "card": "9H", "slot": "player_first", "back": "red"})
    with pytest.raises(EventDecodeError, match=r"card = 'ZZ'"):
        decode("card", {"index": 1, "card": "ZZ", "hand": "player", "slot": "player_first",
                        "back": "red"})
    with pytest.raises(EventDecodeError, match=r"index = '1': expected int"):
        decode("card", {"index": "1", "card": "9H", "hand": "player", "slot": "player_first",
                        "back": "red"})
    with pytest.raises(EventDecodeError, match=r"present = 1: expected bool"):
        decode("seat_sensor", {"seat": 3, "present": 1})
    with pytest.raises(EventDecodeError, match=r"unknown keys \['colour'\]"):
        decode("shoe_loaded", {"shoe_no": 1, "back": "red", "colour": "red"})
    with pytest.raises(EventDecodeError, match="unknown event kind 'tick'"):
        decode("tick", {})


# --- the store's emit path --------------------------------------------------------------


def test_the_store_refuses_a_dict_an_uncatalogued_record_and_a_severity_not_catalogued():
    store = Store(":memory:")
    with pytest.raises(TypeError, match="typed event record.*not a dict"):
        store.append_event(cast(Any, {"kind": "card", "index": 1}))

    @dataclasses.dataclass(frozen=True)
    class Stray(Payload):
        seat: int

    with pytest.raises(TypeError, match="not a Stray"):
        store.append_event(cast(Any, Stray(1)))
    with pytest.raises(ValueError, match="severity 'critical': allowed: warning, error"):
        store.append_event(WitnessDown("no route"), severity="critical")
    assert store.events() == []  # nothing refused was written
    reconciled = ShoeReconciled(1, BackColour.RED, 410, (), 6, 416, 0, 0, 0, accounted=False)
    written = store.append_event(reconciled, device="shuffler")
    assert (written.kind, written.severity, written.record()) == ("shoe_reconciled", "error",
                                                                   reconciled)
    refused = store.append_event(CommandRefused("open", "dealer", "no role", {"uid": 7}))
    assert (refused.severity, refused.payload) == ("warning", {
        "caller": {"uid": 7}, "command": "open", "reason": "no role", "role_needed": "dealer"})
    meter = ProgressiveMeter("mega", "grand", "adjustment", -5, 1, 995, 0, 1, 2,
                             supervisor="Ann", reason="audit")
    assert store.append_event(meter).severity == "warning"


# --- the emission sites ------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Site:
    where: str
    arg: ast.expr


def _calls(tree: ast.Module) -> Iterator[tuple[ast.FunctionDef | None, ast.Call]]:
    def walk(node: ast.AST, func: Any) -> Iterator[tuple[Any, ast.Call]]:
        for child in ast.iter_child_nodes(node):
            inner = child if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) else func
            if isinstance(child, ast.Call):
                yield func, child
            yield from walk(child, inner)
    yield from walk(tree, None)


def _name(call: ast.Call) -> str | None:
    return call.func.attr if isinstance(call.func, ast.Attribute) else \
        getattr(call.func, "id", None)


def _emits(call: ast.Call) -> bool:
    """A call of the store's emit path, of a wrapper on the way to it, or of the journal."""
    name = _name(call)
    if name in EMITTERS:
        return True
    receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
    named = receiver.attr if isinstance(receiver, ast.Attribute) else \
        getattr(receiver, "id", "")
    return name in JOURNAL_EMITTERS and named.endswith("journal")


def _sources() -> dict[str, ast.Module]:
    return {str(p.relative_to(ROOT)): ast.parse(p.read_text(encoding="utf-8"))
            for p in sorted((ROOT / "controller").rglob("*.py"))}


def _built_records(func: ast.AST | None) -> set[str]:
    """Local names a function binds to a record built in it (`x = Record(...)`, or
    `Record.of(...)`)."""
    names: set[str] = set()
    for node in ast.walk(func) if func is not None else ():
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) \
                and _built_name(node.value) in _RECORD_NAMES:
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return names


_RECORD_NAMES = frozenset(r.__name__ for r in _records()) | {"CommandRefusedRecord",
                                                              "PinRefusedRecord"}


def _emission_sites(sources: dict[str, ast.Module] | None = None
                    ) -> tuple[list[Site], list[str]]:
    """Every emitter call under controller/ and the ones that hand it anything but a record
    built at the call (a record class called there, a name bound to one, or a wrapper's
    own parameter passed on)."""
    sites: list[Site] = []
    bad: list[str] = []
    for path, tree in (sources or _sources()).items():
        for func, call in _calls(tree):
            if not _emits(call) or not call.args:
                continue
            where = f"{path}:{call.lineno}"
            arg = call.args[0]
            params = {a.arg for a in func.args.args + func.args.kwonlyargs} if func else set()
            if isinstance(arg, ast.IfExp):  # `A(...) if c else B(...)`: both must be records
                arms = [arg.body, arg.orelse]
            else:
                arms = [arg]
            if all(_a_record(arm, params, func) for arm in arms):
                sites.append(Site(where, arg))
            else:
                bad.append(f"{where}: {ast.unparse(arg)}")
    return sites, bad


def _a_record(arg: ast.expr, params: set[str], func: ast.AST | None) -> bool:
    if isinstance(arg, ast.Call):  # Record(...), Record.of(...), dataclasses.replace(...)
        return _built_name(arg) in _RECORD_NAMES or _name(arg) == "replace"
    return isinstance(arg, ast.Name) and (arg.id in params or arg.id in _built_records(func))


def test_code_emits_only_records_built_where_the_event_happens():
    sites, bad = _emission_sites()
    assert len(sites) > 60
    assert not bad, ("emit a typed record (controller/events), built at the call, not a dict "
                     "or a kind's name:\n" + "\n".join(bad))


def test_the_scan_finds_a_dict_or_a_kind_handed_to_an_emitter():
    source = ast.parse(
        "def step(self, seat):\n"
        "    self.store.append_event({'kind': 'seat_sensor', 'seat': seat})\n"
        "    self._record('seat_sensor', {'seat': seat, 'present': True})\n"
        "    payload = {'seat': seat}\n"
        "    self.store.append_event(payload)\n"
        "    self.store.append_event(SeatSensor(seat, True))\n")
    sites, bad = _emission_sites({"controller/seats_step.py": source})
    assert bad == ["controller/seats_step.py:2: {'kind': 'seat_sensor', 'seat': seat}",
                   "controller/seats_step.py:3: 'seat_sensor'",
                   "controller/seats_step.py:5: payload"]
    assert [s.where for s in sites] == ["controller/seats_step.py:6"]


def test_only_the_store_appends_an_unchecked_entry():
    callers = [f"{path}:{call.lineno}" for path, tree in _sources().items()
               for _, call in _calls(tree)
               if _name(call) == "append_entry" and path != "controller/memory/store.py"]
    assert callers == []


def test_every_catalogued_record_is_emitted_somewhere():
    built = {_built_name(call) for tree in _sources().values() for _, call in _calls(tree)}
    aliases = {"CommandRefused": "CommandRefusedRecord", "PinRefused": "PinRefusedRecord"}
    unused = [e.kind for e in CATALOGUE
              if e.record.__name__ not in built and aliases.get(e.record.__name__) not in built]
    assert unused == [], "catalogued records nothing builds: remove them (or emit them)"


def _built_name(call: ast.Call) -> str | None:
    """The record class a call builds: `Record(...)`, `Record.of(...)`, or `Prompt.deal(...)`
    (the prompt after a round's card, one record for each card named)."""
    if _name(call) in ("of", "deal") and isinstance(call.func, ast.Attribute):
        return _name(ast.Call(call.func.value, [], [])) if isinstance(
            call.func.value, ast.Attribute | ast.Name) else None
    return _name(call)


def test_the_control_api_event_table_is_generated_from_the_catalogue():
    text = DOC.read_text(encoding="utf-8")
    assert text == document(text), "regenerate: python -m controller.events --write"


def test_the_check_option_passes_a_current_table_and_fails_a_stale_one(tmp_path, monkeypatch,
                                                                        capsys):
    from controller.events import catalogue

    doc = tmp_path / "control-api.md"
    current = document(DOC.read_text(encoding="utf-8"))
    doc.write_text(current, encoding="utf-8")
    monkeypatch.setattr(catalogue, "DOC", doc)
    catalogue.main(["--check"])  # current: nothing printed, nothing written
    assert capsys.readouterr().out == ""
    stale = current.replace("| `card` | info |", "| `card` | warning |")
    assert stale != current
    doc.write_text(stale, encoding="utf-8")
    with pytest.raises(SystemExit) as failed:
        catalogue.main(["--check"])
    assert failed.value.code == ("docs/control-api.md: the event table is stale; run "
                                 "python -m controller.events --write")
    assert doc.read_text(encoding="utf-8") == stale
