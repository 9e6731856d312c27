"""tablectl exit codes, documented in docs/technician-guide.md."""

# Ctrl-C (130): with what tablectl answers to it, which its entry point reads too.
from controller.interrupted import INTERRUPTED as INTERRUPTED

OK = 0
FAILURE = 1  # the command ran and found a problem (e.g. a self-test failed)
BAD_ARGUMENTS = 2
DAEMON_NOT_RUNNING = 3
DEVICE_FAULT = 4
INTEGRITY_FAILURE = 5
BAD_CONFIGURATION = 6
UNSUPPORTED = 7  # the daemon does not offer the command (it is older than this tablectl),
# or an offline check met a store a newer release wrote and could not compare its schema
REFUSED = 8  # the daemon refused the request: wrong supervisor PIN, or not allowed now
NO_DEVICE = 9  # tablectl conformance: not one byte came back from the port (nothing attached)
UNREACHABLE = 10  # a server the command reads (the linked ledger) cannot be reached or read
