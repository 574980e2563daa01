"""The pytest plugin: a conformance test that a subclass skips fails instead."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

from pytest_toolpass.conformance import AdapterConformance

_ALLOWED_SKIPS = ("the framework has no sync run", "the framework has no async run")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[Any]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    cls = getattr(item, "cls", None)
    if (
        report.skipped
        and cls is not None
        and issubclass(cls, AdapterConformance)
        and not hasattr(report, "wasxfail")
    ):
        reason = str(report.longrepr[2]) if isinstance(report.longrepr, tuple) else ""
        reason = reason.removeprefix("Skipped: ")
        if not any(allowed in reason for allowed in _ALLOWED_SKIPS):
            report.outcome = "failed"
            report.longrepr = f"conformance tests may not be skipped ({reason or 'no reason'})"
    return report
