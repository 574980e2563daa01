"""The pytest plugin: a conformance test that a subclass skips fails instead, and the skips
the suites allow are counted, with their reasons, at the end of the run."""

from __future__ import annotations

from collections import Counter
from collections.abc import Generator
from typing import Any

import pytest

from pytest_toolpass.conformance import IN_THE_PARENT, AdapterConformance
from pytest_toolpass.integration import IntegrationConformance

_ALLOWED_SKIPS = ("the framework has no sync run", "the framework has no async run", IN_THE_PARENT)
#: The user property a conformance test's allowed skip carries to the summary (it travels
#: with the report from pytest-xdist's workers).
SKIP = "toolpass_conformance_skip"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[Any]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    cls = getattr(item, "cls", None)
    suites = (AdapterConformance, IntegrationConformance)
    if not (report.skipped and isinstance(cls, type) and issubclass(cls, suites)):
        return report
    if hasattr(report, "wasxfail"):
        return report
    reason = str(report.longrepr[2]) if isinstance(report.longrepr, tuple) else ""
    reason = reason.removeprefix("Skipped: ")
    if issubclass(cls, AdapterConformance) and not any(a in reason for a in _ALLOWED_SKIPS):
        report.outcome = "failed"
        report.longrepr = f"conformance tests may not be skipped ({reason or 'no reason'})"
    else:
        report.user_properties.append((SKIP, reason))
    return report


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    reasons = Counter(
        value
        for report in terminalreporter.stats.get("skipped", [])
        for name, value in getattr(report, "user_properties", [])
        if name == SKIP
    )
    if reasons:
        total = sum(reasons.values())
        terminalreporter.write_sep("-", f"pytest-toolpass: {total} conformance tests skipped")
        for reason, count in sorted(reasons.items()):
            terminalreporter.write_line(f"{count:4d}  {reason}")
