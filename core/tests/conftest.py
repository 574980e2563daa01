"""Settings for every core test."""

from hypothesis import HealthCheck, settings

# Property tests must not fail because a shared machine was slow: no deadline, no timing
# health checks (each test still says how many examples it wants).
settings.register_profile(
    "toolpass", deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None
)
settings.load_profile("toolpass")
