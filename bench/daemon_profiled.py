"""`tabled` with cProfile on its loop's thread, for bench/bench_daemon.py --profile.

    python bench/daemon_profiled.py OUT.prof --config ... (tabled's own arguments)

The profiler is off at the start: SIGUSR1 turns it on (the benchmark sends it as the shoe
starts, so the start-up is not in it), SIGUSR2 turns it off and writes OUT.prof. It counts
the thread's CPU time (`time.thread_time`), not the wall clock, so what the loop waits for
(the disk, the other processes) is not in it; its own cost inflates every function's time
(more for small functions called often): read the proportions, not the times.
"""

from __future__ import annotations

import cProfile
import signal
import sys
import time
from pathlib import Path
from types import FrameType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> int:
    out, argv = sys.argv[1], sys.argv[2:]
    profiler = cProfile.Profile(time.thread_time)

    def start(_: int, __: FrameType | None) -> None:
        profiler.enable()

    def stop(_: int, __: FrameType | None) -> None:
        profiler.disable()
        profiler.dump_stats(out)

    # Signal handlers run on the main thread, which is the daemon's loop: the profiler is
    # enabled for that thread only.
    signal.signal(signal.SIGUSR1, start)
    signal.signal(signal.SIGUSR2, stop)
    from controller.daemon import main as tabled

    return tabled(argv)


if __name__ == "__main__":
    sys.exit(main())
