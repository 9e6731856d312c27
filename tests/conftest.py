"""Settings for the whole unit suite.

Hypothesis gives every example a 200 ms deadline and fails a test whose data
generation is slow. Both are timing checks, and this suite must pass on a busy
machine (speed is checked by bench/, not by tests): no deadline, and no
too-slow health check. Each property test keeps its own example count.
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings

settings.register_profile("suite", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("suite")
