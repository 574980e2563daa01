"""A subpackage shipped by a second distribution, reaching the core API."""

from toolpass import Session, secured_tool

__all__ = ["Session", "secured_tool"]
