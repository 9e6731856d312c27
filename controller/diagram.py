"""Render the table's state machine as a Mermaid diagram, from the machine itself.

    python -m controller.diagram > docs/state-machine.md

tests/controller/test_diagram.py fails when the committed diagram is out of date.
"""

from __future__ import annotations

import sys

from controller.table import TRANSITIONS, TableState

_HEADER = """# The table's state machine

Generated from `controller.table.TRANSITIONS` by `python -m controller.diagram`;
do not edit by hand. `device_recovered` returns to the state the fault
interrupted (one guarded transition per state). `integrity_failed` leads to
`out_of_order` from every state.

```mermaid
stateDiagram-v2
"""


def mermaid() -> str:
    lines = [f"    [*] --> {TableState.CLOSED.value}"]
    for spec in TRANSITIONS:
        sources = spec["source"]
        if sources == "*":
            continue  # drawn once, below, to keep the diagram readable
        if not isinstance(sources, list):
            sources = [sources]
        for source in sources:
            label = spec["trigger"]
            lines.append(f"    {source.value} --> {spec['dest'].value}: {label}")
    lines.append(f"    note right of {TableState.OUT_OF_ORDER.value}: "
                 "entered from any state by integrity_failed")
    return _HEADER + "\n".join(dict.fromkeys(lines)) + "\n```\n"


if __name__ == "__main__":
    sys.stdout.write(mermaid())
