"""Render the table's state machine as a Mermaid diagram, from the machine itself.

    python -m controller.diagram > docs/state-machine.md

tests/controller/test_diagram.py fails when the committed diagram is out of date.
"""

from __future__ import annotations

import argparse
import sys

from controller.table.machine import TRANSITION_TABLE, TableState

_HEADER = """# The table's state machine

Generated from `controller.table.machine.TRANSITION_TABLE` by `python -m controller.diagram`;
do not edit by hand. Each arrow is labelled with its trigger and the rule that
allows it. `device_recovered` returns to the state the fault interrupted (one
guarded transition per state). `integrity_failed` leads to `out_of_order`
from every state. A transition marked "implied by the cards" saves no state of
its own: the card's log entry implies it, and a restart makes it again.

```mermaid
stateDiagram-v2
"""


def mermaid() -> str:
    lines = [f"    [*] --> {TableState.CLOSED.value}"]
    for spec in TRANSITION_TABLE:
        if isinstance(spec.sources, str):
            continue  # "*": drawn once, below, to keep the diagram readable
        # Mermaid ends a label at ':' and takes ';' as a statement end: keep both out.
        section = spec.section.replace(":", " -").replace(";", ",")
        if spec.implied_by_cards:
            section += ", implied by the cards"
        for source in spec.sources:
            lines.append(f"    {source.value} --> {spec.dest.value}: "
                         f"{spec.trigger} ({section})")
    lines.append(f"    note right of {TableState.OUT_OF_ORDER.value}: "
                 "entered from any state by integrity_failed")
    return _HEADER + "\n".join(dict.fromkeys(lines)) + "\n```\n"


if __name__ == "__main__":
    # No options: --help says what it does, an argument it does not take is refused.
    argparse.ArgumentParser(prog="python -m controller.diagram",
                            description=__doc__.splitlines()[0]).parse_args()
    sys.stdout.write(mermaid())
