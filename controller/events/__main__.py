"""`python -m controller.events [--write | --check]`: the event table of docs/control-api.md."""

import sys

from controller.events.catalogue import main

main(sys.argv[1:])
