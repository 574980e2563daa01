"""A test that needs a program that is missing fails, whoever runs it (no `CI` needed),
saying what to install."""

from __future__ import annotations

import os
import sys

import pytest

from .conftest import installed


def test_a_missing_program_fails_and_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable))  # no redis-server there
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.fail.Exception, match="apt-get install redis-server"):
        installed("redis-server")


def test_a_program_that_is_there_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable))
    assert installed(os.path.basename(sys.executable)) == sys.executable
