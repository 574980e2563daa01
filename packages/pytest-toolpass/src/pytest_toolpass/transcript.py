"""What an adapter's scripted model is given and what it read back: a ``Call`` of the
script, and the run's ``Transcript``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Call:
    """One tool call the scripted model makes."""

    tool: str
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass
class Transcript:
    """What the model read back after each tool call, in order, and its last answer."""

    outputs: list[str]
    final: str = ""
    #: The payloads of the pauses the run stopped for (``pauses = "native"``), in order.
    pending: list[dict[str, Any]] = field(default_factory=list)
    #: What the adapter's ``resume`` needs to continue the run (a thread's config...).
    state: Any = None
