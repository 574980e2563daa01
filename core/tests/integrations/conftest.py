"""The fake GitHub fixtures of GitHub's own tests, for the engine tests here that use it."""

from toolpass.integrations.github.tests.conftest import (
    ENGINE_TOKEN,
    engine_token,
    ghes,
    github,
)

__all__ = ["ENGINE_TOKEN", "engine_token", "ghes", "github"]
