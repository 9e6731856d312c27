"""Where group commit's flush runs: the choices of `[store] flush_in` (docs/rulings.md C30).

A module of its own so that reading a configuration (`tablectl par-sheet` among others)
does not import the store's machinery to check one word.
"""

FLUSH_IN_LOOP = "loop"
"""The event loop's own thread flushes, and reports as soon as the disk returns."""

FLUSH_IN_THREAD = "thread"
"""A thread of its own flushes, while the loop goes on with what needs no flush."""

FLUSH_IN = (FLUSH_IN_LOOP, FLUSH_IN_THREAD)
