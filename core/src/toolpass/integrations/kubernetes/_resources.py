"""Kubernetes' resource syntax: ``[namespaces/<ns>/]<resource>[.<group>][/<name>
[/<subresource>]]``, or a ``/path`` (an API path, or a non-resource URL), split as the API
server's RequestInfo splits it."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from toolpass.wire.errors import BadResource, LookupFailed

__all__ = ["NAMESPACE_SUBRESOURCES", "PARAM_NAME", "Target", "parse_resource"]

NAMESPACE_SUBRESOURCES = ("status", "finalize")


@dataclass(frozen=True, slots=True)
class Target:
    """What a review asks about: resource attributes, or a non-resource URL (``path``)."""

    resource: str = ""
    group: str = ""
    version: str = ""
    namespace: str = ""
    name: str = ""
    subresource: str = ""
    path: str = ""

    @property
    def type(self) -> str:
        """``resource[.group][/subresource]``, as RBAC rules name it."""
        kind = f"{self.resource}.{self.group}" if self.group else self.resource
        return f"{kind}/{self.subresource}" if self.subresource else kind

    def describe(self) -> str:
        """The target in words, for a decision's reason."""
        if self.path:
            return f"the URL {self.path}"
        what = f"{self.type} {self.name}" if self.name else f"all {self.type}"
        if self.namespace:
            return f"{what} in namespace {self.namespace}"
        return what

    def attributes(self, verb: str) -> dict[str, str]:
        """The review's ``resourceAttributes`` (empty fields left out)."""
        fields = {
            "namespace": self.namespace,
            "verb": verb,
            "group": self.group,
            "version": self.version,
            "resource": self.resource,
            "subresource": self.subresource,
            "name": self.name,
        }
        return {k: v for k, v in fields.items() if v}


_DNS_LABEL = r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?"
_LABEL = re.compile(rf"\*|{_DNS_LABEL}")
_NAMESPACE = re.compile(_DNS_LABEL)
_GROUP = re.compile(rf"\*|{_DNS_LABEL}(?:\.{_DNS_LABEL})*")
PARAM_NAME = re.compile(r"\{([A-Za-z_][A-Za-z0-9_.-]*)\+?\}")
_SYNTAX = "[namespaces/<ns>/]<resource>[.<group>][/<name>[/<subresource>]], or a /path"


def _bad(resource: str, why: str) -> LookupFailed:
    """The refusal of a malformed resource, saying why and what is expected."""
    return BadResource(f"{resource!r} is not a Kubernetes resource ({why}; expected {_SYNTAX})")


def _segment_ok(segment: str) -> bool:
    """Whether a segment is not empty, no dot-segment, no escape, no space or control."""
    return (
        bool(segment)
        and segment not in (".", "..")
        and "%" not in segment
        and not any(c.isspace() or unicodedata.category(c)[0] == "C" for c in segment)
    )


def parse_resource(resource: str) -> Target:
    """Parse the resource syntax of the module docstring; :class:`LookupFailed` if invalid."""
    if not isinstance(resource, str) or not resource or len(resource) > 2048:
        raise _bad(str(resource)[:80], "empty or too long")
    if resource.startswith("/"):
        parts = resource[1:].split("/")
        if parts[-1] == "":
            parts.pop()  # one trailing slash, as the API server allows
        if parts and parts[0] == "api" and len(parts) >= 3:
            group, version, rest = "", parts[1], parts[2:]
        elif parts and parts[0] == "apis" and len(parts) >= 4:
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            if not all(_segment_ok(p) for p in parts):
                raise _bad(resource, "a path segment is empty or not allowed")
            return Target(path=resource)
        if not all(_segment_ok(p) for p in (group or "x", version, *rest)):
            raise _bad(resource, "a path segment is empty or not allowed")
        return _split(resource, rest, group, version, grouped=False)
    parts = resource.split("/")
    if not all(_segment_ok(p) for p in parts):
        raise _bad(resource, "a segment is empty or not allowed")
    return _split(resource, parts, "", "", grouped=True)


def _split(resource: str, parts: list[str], group: str, version: str, *, grouped: bool) -> Target:
    """Split ``parts`` as the API server's RequestInfo does (``grouped``: ``type.group``)."""
    namespace = ""
    if parts[0] == "namespaces" and len(parts) >= 2:
        namespace = parts[1]
        if len(parts) > 2 and parts[2] not in NAMESPACE_SUBRESOURCES:
            parts = parts[2:]
    kind = parts[0]
    if grouped:
        kind, dot, group = kind.partition(".")
        if not kind or (dot and not group):
            raise _bad(resource, "the type must be <resource> or <resource>.<group>")
    name = parts[1] if len(parts) > 1 else ""
    subresource = parts[2] if len(parts) > 2 else ""
    if len(parts) > 3 and subresource != "proxy":
        raise _bad(resource, "too many segments after the subresource")
    for value, pattern, what in (
        (kind, _LABEL, "resource type"),
        (subresource, _LABEL, "subresource"),
        (namespace, _NAMESPACE, "namespace"),
        (group, _GROUP, "API group"),
        (version, _LABEL, "version"),
    ):
        if value and not pattern.fullmatch(value):
            raise _bad(resource, f"{value!r} is not a valid {what}")
    return Target(kind, group, version, namespace, name, subresource)
