"""AWS's Query API versions and its answers: Query and S3 XML (namespaces dropped, DTDs
refused), what its error codes say, and its times."""

from __future__ import annotations

import datetime
import re
import xml.etree.ElementTree as ET

from toolpass.integrations.base import MalformedResponse
from toolpass.wire.errors import LookupFailed

__all__ = [
    "ERRORS",
    "IAM_VERSION",
    "SERVICES",
    "NotFound",
    "expiry",
    "members",
    "parse_xml",
    "text",
]

IAM_VERSION = "2010-05-08"
SERVICES = {"iam": "IAM", "sts": "STS", "identitystore": "Identity Store", "sso": "SSO Admin"}
# What AWS's error codes say (NoSuchEntity names the principal); others by their status.
ERRORS = {
    "AccessDenied": "refused the engine's credential",
    "AccessDeniedException": "refused the engine's credential",
    "Throttling": "rate-limited the engine",
    "ThrottlingException": "rate-limited the engine",
    "RequestLimitExceeded": "rate-limited the engine",
    "InvalidClientTokenId": "does not know the engine's access key",
    "UnrecognizedClientException": "does not know the engine's access key",
    "SignatureDoesNotMatch": "rejected the engine's signature",
    "ExpiredToken": "says the engine's credential has expired",
    "ExpiredTokenException": "says the engine's credential has expired",
    "InvalidInput": "rejected the request as invalid",
    "ServiceFailure": "failed",
}


def parse_xml(body: bytes, label: str) -> ET.Element:
    """The XML of an answer, namespaces dropped; :class:`MalformedResponse` when it is not
    XML, or declares a DTD."""
    if b"<!DOCTYPE" in body or b"<!ENTITY" in body:
        raise MalformedResponse(f"{label}'s answer is not an AWS XML document (it declares a DTD)")
    try:
        root = ET.fromstring(body)  # noqa: S314 - DTDs are refused above
    except ET.ParseError:
        raise MalformedResponse(f"{label} answered with a body that is not XML") from None
    for element in root.iter():
        if isinstance(element.tag, str) and "}" in element.tag:
            element.tag = element.tag.rpartition("}")[2]
    return root


def text(element: ET.Element | None, path: str) -> str | None:
    found = element.find(path) if element is not None else None
    return None if found is None or found.text is None else found.text.strip()


def members(element: ET.Element | None, path: str) -> list[ET.Element]:
    return [] if element is None else element.findall(f"{path}/member")


def expiry(value: object) -> float:
    """Seconds since the epoch for an ISO 8601 time (``2030-01-01T00:00:00Z``)."""
    if not isinstance(value, str):
        raise LookupFailed("the credentials carry no expiration time")
    match = re.fullmatch(
        r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.\d+)?(Z|[+-]\d\d:?\d\d)?", value.strip()
    )
    if not match:
        raise LookupFailed(f"the credentials' expiration {value[:40]!r} is not a time")
    y, mo, d, h, mi, s = (int(g) for g in match.groups()[:6])
    zone = match.group(7) or "Z"
    offset = 0 if zone == "Z" else int(zone[0] + "1") * (int(zone[1:3]) * 60 + int(zone[-2:]))
    moment = datetime.datetime(y, mo, d, h, mi, s, tzinfo=datetime.timezone.utc)
    return moment.timestamp() - offset * 60


class NotFound(LookupFailed):
    """A JSON API's ResourceNotFoundException."""
