"""Settings for every core test."""

import os

from hypothesis import HealthCheck, settings

# Property tests must not fail because a shared machine was slow: no deadline, no timing
# health checks (each test still says how many examples it wants). In CI the examples are
# the same on every run (derandomized), so a run tests what was tested before it landed;
# elsewhere every run explores new ones.
settings.register_profile(
    "toolpass",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    database=None,
    derandomize=bool(os.environ.get("CI")),
)
settings.load_profile("toolpass")
