"""One exception root for the controller (controller/errors.py), and one collector of
configuration problems."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import controller
from controller.errors import (
    MISSING, CommandError, ConfigProblems, ConfigurationError, ControllerError, RulesError,
)


def exception_classes() -> dict[str, type[BaseException]]:
    """Every exception class defined in a module of controller/ (entry points aside)."""
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(controller.__path__, "controller."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if inspect.isclass(obj) and issubclass(obj, BaseException) \
                    and obj.__module__ == info.name:
                found[f"{info.name}.{name}"] = obj
    return found


def test_every_exception_class_in_the_controller_derives_from_the_one_root() -> None:
    classes = exception_classes()
    assert len(classes) >= 30  # the walk found the tree, not an empty package
    assert [name for name, cls in classes.items() if not issubclass(cls, ControllerError)] == []


def test_every_configuration_error_shares_one_base_and_stays_a_value_error() -> None:
    classes = exception_classes()
    configuration = sorted(name.rsplit(".", 1)[1] for name, cls in classes.items()
                           if issubclass(cls, ConfigurationError) and cls is not ConfigurationError)
    assert configuration == ["ConfigError", "ProgressiveConfigError", "SideWagerConfigError",
                             "SubmissionError", "WagerConfigError"]
    # Callers that catch ValueError (a bad --set value, tablectl config validate) still do.
    assert all(issubclass(classes[name], ValueError) for name in classes
               if issubclass(classes[name], ConfigurationError))


@pytest.mark.parametrize(("name", "concern", "builtin"), [
    ("controller.control_wire.ControlError", CommandError, None),
    ("controller.table.errors.CommandRefused", CommandError, None),
    ("controller.control_args.BadArgument", CommandError, ValueError),
    ("controller.rules.shoe.CutError", RulesError, ValueError),
    ("controller.rules.batches.BatchError", RulesError, ValueError),
    ("controller.rules.replay.ReplayError", RulesError, ValueError),
    ("controller.progressive.errors.AwardError", ControllerError, LookupError),
    ("controller.progressive.errors.LinkDown", ControllerError, ConnectionError),
])
def test_each_error_keeps_the_builtin_class_its_callers_catch(
        name: str, concern: type, builtin: type | None) -> None:
    cls = exception_classes()[name]
    assert issubclass(cls, concern)
    if builtin is not None:
        assert issubclass(cls, builtin)


def test_the_one_collector_writes_every_form_and_names_the_file_when_given_one() -> None:
    table = ConfigProblems()
    table.add("shoe.baudrate", 1234, "one of 9600, 115200")
    table.missing("shoe.url", "a serial device path")
    table.clash("gpio.seats.3", "pin 17 is wired twice", "one pin per line")
    table.unknown("shoe.speed", {"url", "baudrate"})
    assert table.items == [
        "shoe.baudrate = 1234: not allowed; allowed: one of 9600, 115200",
        "shoe.url: missing; allowed: a serial device path",
        "gpio.seats.3: pin 17 is wired twice; allowed: one pin per line",
        "shoe.speed: unknown key; allowed keys: baudrate, url",
    ]
    submission = ConfigProblems("t.toml")
    submission.wrong("game.decks", 5, "must be one of 6, 7, 8")
    submission.wrong("table", MISSING, "required table")
    submission.unknown_keys("game", {"decks": 8, "colour": "red"}, ("family", "decks"))
    assert submission.items == [
        "t.toml: game.decks = 5: must be one of 6, 7, 8",
        "t.toml: table = (missing): required table",
        "t.toml: game.colour = 'red': unknown key; allowed here: family, decks",
    ]
    assert len(submission) == 3
    submission.unknown_keys("", {"table": {}, "simulation": {}}, ("table", "game"))
    assert submission.items[-1] == ("t.toml: simulation = {}: unknown section; allowed here: "
                                    "table, game")


def test_the_rules_submission_reports_through_the_one_collector() -> None:
    from controller.rules.submission import SubmissionError, parse_submission

    with pytest.raises(SubmissionError) as refused:
        parse_submission({"table": {"id": "T", "seats": 14},
                          "game": {"family": "baccarat", "decks": 5}}, "t.toml")
    assert refused.value.errors[0] == "t.toml: game.decks = 5: must be one of 6, 7, 8 (631a.3(a))"
    assert refused.value.errors[-1] == "t.toml: wagers = (missing): required table"
    assert isinstance(refused.value, ConfigurationError)
    import controller.rules.submission as submission

    assert not hasattr(submission, "_Collector")  # its own collector is gone


def test_no_exception_class_has_two_project_bases() -> None:
    """One line of descent each: a concern's class under the root, and at most a built-in
    class beside it (a progressive configuration error is a configuration error, not also
    a progressive one: nothing catches it as that)."""
    project = ("controller", "drivers", "cards", "firmware_bridge")
    twice = [name for name, cls in exception_classes().items()
             if len([b for b in cls.__bases__ if b.__module__.split(".")[0] in project]) > 1]
    assert twice == []
