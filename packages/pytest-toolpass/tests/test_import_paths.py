"""The suite's parts live in modules of their own; every name adapters and tests import
from ``pytest_toolpass.conformance`` (or the package) is still there, the same object."""

from __future__ import annotations

import importlib

import pytest

#: Where each part lives now, and the names it held in ``conformance`` before the split.
HOMES = {
    "pytest_toolpass.kit_tools": ("DANA", "ERIN", "DELETE", "INBOX", "KitTools"),
    "pytest_toolpass.transcript": ("Call", "Transcript"),
    "pytest_toolpass.approvals": ("ASKS", "DELETE_PAY_1", "Approvals"),
}


@pytest.mark.parametrize(("home", "names"), HOMES.items())
def test_conformance_still_exports_what_moved(home: str, names: tuple[str, ...]) -> None:
    conformance = importlib.import_module("pytest_toolpass.conformance")
    part = importlib.import_module(home)
    for name in names:
        assert getattr(conformance, name) is getattr(part, name)
        assert name in conformance.__all__


def test_the_package_exports_the_suite_and_its_types() -> None:
    package = importlib.import_module("pytest_toolpass")
    conformance = importlib.import_module("pytest_toolpass.conformance")
    for name in ("AdapterConformance", "Call", "KitTools", "Transcript"):
        assert getattr(package, name) is getattr(conformance, name)
