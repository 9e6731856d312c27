"""`tablectl software` beside the daemon: what it tells the table's log, and what it says
when the daemon cannot record it."""

from __future__ import annotations

import argparse

from controller.cli.software_commands import _tell_log


def test_a_staging_beside_an_older_daemon_says_it_was_not_recorded(fake):
    """Staging a new release is how an older table gets one; its daemon has no
    `software_record` (the fake has none either). That ended `software stage` in a traceback
    after the release was staged."""
    said = _tell_log(argparse.Namespace(socket=fake.socket), event="staged", release="v9.9.9")
    assert said == ("not recorded in the table's log: the running daemon is older than this "
                    "release's tablectl (it has no software_record)")
