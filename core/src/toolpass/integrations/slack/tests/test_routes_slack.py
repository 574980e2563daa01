"""The Slack route table (generated from slack_sdk's WebClient) and Slack's override."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import ModuleType

import pytest

from toolpass.engine import literal
from toolpass.engine.config import parse_connections
from toolpass.integrations._generate import generator as load_generator
from toolpass.integrations.routes import Request, fields, load
from toolpass.integrations.slack import Slack, _parse
from toolpass.wire.errors import LookupFailed

REPO = Path(__file__).resolve().parents[6]
GENERATOR = REPO / "core/src/toolpass/integrations/slack/generate.py"
TABLE = REPO / "core/src/toolpass/integrations/slack/routes.json"
SAMPLES = {
    "channel": "C0123ABCD",
    "channel_id": "C0123ABCD",
    "channels": "C0123ABCD",
    "channel_ids": "C0123ABCD",
    "ts": "1712345678.000100",
    "name": "general",
}
JSON = {"content-type": "application/json"}
FORM = {"content-type": "application/x-www-form-urlencoded"}


@pytest.fixture(scope="module")
def slack() -> Slack:
    (config,) = parse_connections(
        [{"id": "sl", "integration": "slack", "token": literal("xoxb-engine")}]
    )
    return Slack(config)


def generator() -> ModuleType:
    return load_generator("slack")


def test_the_table_loads_with_its_source() -> None:
    data = json.loads(TABLE.read_text())
    assert data["generator"] == "core/src/toolpass/integrations/slack/generate.py"
    assert re.fullmatch(r"PyPI slack_sdk \d+\.\d+\.\d+ \(.*\)", data["source"])
    table = load("toolpass.integrations.slack")
    assert len(table) == len(data["routes"]) > 600
    assert [r[:2] for r in data["routes"]] == sorted(
        (r[:2] for r in data["routes"]), key=lambda r: (r[1], r[0])
    )


def test_every_action_is_declared() -> None:
    declared = {a.name for a in Slack.actions}
    assert {r.action for r in load("toolpass.integrations.slack").routes} <= declared


def test_every_resource_template_is_a_resource_slack_parses() -> None:
    for route in load("toolpass.integrations.slack").routes:
        resource = route.resource
        for name in fields(resource):
            resource = resource.replace("{" + name + "}", SAMPLES[name.partition(".")[2]])
        _parse(resource)  # raises LookupFailed when it is not one


def test_get_and_post_of_every_method_agree() -> None:
    rows: dict[str, list[tuple[str, str, str, str]]] = {}
    for r in load("toolpass.integrations.slack").routes:
        rows.setdefault(r.path, []).append((r.method, r.action, r.effect, r.flags))
    for path, both in rows.items():
        assert sorted(m for m, *_ in both) == ["GET", "POST"], path
        assert len({tuple(rest) for _, *rest in both}) == 1, path


def test_coverage_every_web_api_method_of_the_installed_slack_sdk() -> None:
    import slack_sdk

    source = Path(slack_sdk.__file__).parent.parent
    gen = generator()
    if gen.version(source) not in json.loads(TABLE.read_text())["source"]:
        pytest.skip("the installed slack_sdk is not the version the table was generated from")
    methods = gen.methods(source)
    assert {r.path.lstrip("/") for r in load("toolpass.integrations.slack").routes} == set(methods)
    assert len(load("toolpass.integrations.slack")) == 2 * len(methods)
    assert gen.build(source) == json.loads(TABLE.read_text())["routes"]


@pytest.mark.parametrize(
    ("method", "path", "query", "headers", "body", "expected"),
    [
        (
            "POST",
            "/chat.postMessage",
            "",
            JSON,
            b'{"channel": "C0ENG", "text": "hi"}',
            ("chat.postMessage", "channel:C0ENG", "write", "s"),
        ),
        (
            "POST",
            "/chat.postMessage",
            "",
            FORM,
            b"channel=C0ENG&text=hi",
            ("chat.postMessage", "channel:C0ENG", "write", "s"),
        ),
        (
            "GET",
            "/chat.postMessage",
            "channel=C0ENG&text=hi",
            {},
            None,
            ("chat.postMessage", "channel:C0ENG", "write", "s"),
        ),
        (
            "POST",
            "/chat.update",
            "",
            JSON,
            b'{"channel": "C0ENG", "ts": "1712345678.000100"}',
            ("chat.update", "message:C0ENG/1712345678.000100", "write", "s"),
        ),
        (
            "POST",
            "/chat.delete",
            "",
            FORM,
            b"channel=C0ENG&ts=1712345678.000100",
            ("chat.delete", "message:C0ENG/1712345678.000100", "destructive", ""),
        ),
        (
            "GET",
            "/conversations.history",
            "channel=C0ENG&limit=10",
            {},
            None,
            ("conversations.history", "channel:C0ENG", "read", "u"),
        ),
        (
            "POST",
            "/conversations.replies",
            "",
            FORM,
            b"channel=G0PRIV&ts=1712345678.000100",
            ("conversations.replies", "channel:G0PRIV", "read", "u"),
        ),
        (
            "GET",
            "/channels.history",
            "channel=C0ENG",
            {},
            None,
            ("conversations.history", "channel:C0ENG", "read", "u"),
        ),
        (
            "POST",
            "/conversations.kick",
            "",
            FORM,
            b"channel=C0ENG&user=U0DANA",
            ("conversations.kick", "channel:C0ENG", "destructive", ""),
        ),
        (
            "POST",
            "/channels.join",
            "",
            FORM,
            b"name=general",
            ("conversations.join", "channel:#general", "write", ""),
        ),
        (
            "POST",
            "/files.completeUploadExternal",
            "",
            FORM,
            b"files=%5B%5D&channel_id=C0ENG",
            ("files.completeUploadExternal", "channel:C0ENG", "write", "s"),
        ),
        (
            "GET",
            "/search.messages",
            "query=deploy",
            {},
            None,
            ("search.read", "workspace", "read", "u"),
        ),
        ("GET", "/files.info", "file=F0123", {}, None, ("admin.read", "workspace", "read", "u")),
        ("POST", "/auth.test", "", {}, None, ("workspace.read", "workspace", "read", "a")),
        ("GET", "/users.info", "user=U1", {}, None, ("workspace.read", "workspace", "read", "u")),
        ("GET", "/users.getPresence", "", {}, None, ("workspace.read", "workspace", "read", "")),
        ("POST", "/rtm.start", "", {}, None, ("sender_lists", "workspace", "read", "u")),
        (
            "GET",
            "/users.lookupByEmail",
            "email=dana%40example.com",
            {},
            None,
            ("workspace.read", "workspace", "read", "u"),
        ),
        (
            "POST",
            "/conversations.create",
            "",
            FORM,
            b"name=new",
            ("conversations.create", "workspace", "write", "s"),
        ),
        (
            "POST",
            "/admin.conversations.delete",
            "",
            FORM,
            b"channel_id=C0ENG",
            ("admin.manage", "channel:C0ENG", "destructive", ""),
        ),
        (
            "POST",
            "/usergroups.create",
            "",
            FORM,
            b"name=oncall",
            ("workspace.manage", "workspace", "write", ""),
        ),
        (
            "POST",
            "/reactions.add",
            "",
            FORM,
            b"channel=C0ENG&name=tada&timestamp=1.2",
            ("reactions.add", "channel:C0ENG", "write", "s"),
        ),
    ],
)
def test_hand_checked_requests(
    slack: Slack,
    method: str,
    path: str,
    query: str,
    headers: dict[str, str],
    body: bytes | None,
    expected: tuple[str, str, str, str],
) -> None:
    found = slack.match_request(Request(method, path, query, headers, body))
    assert found is not None
    assert (found.action, found.resource, found.effect, found.route.flags) == expected


def test_arguments_are_read_from_multipart_forms(slack: Slack) -> None:
    body = (
        b'--XyZ\r\nContent-Disposition: form-data; name="channels"\r\n\r\nC0ENG\r\n'
        b'--XyZ\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n'
        b"Content-Type: text/plain\r\n\r\nchannels=C0OTHER\r\n--XyZ--\r\n"
    )
    headers = {"Content-Type": "multipart/form-data; boundary=XyZ"}
    found = slack.match_request(Request("POST", "/files.upload", "", headers, body))
    assert found is not None
    assert (found.action, found.resource) == ("files.upload", "channel:C0ENG")


@pytest.mark.parametrize(
    ("query", "headers", "body"),
    [
        ("channel=C0OTHER", FORM, b"channel=C0ENG&text=hi"),  # query and body disagree
        ("channel=C0ENG&channel=C0OTHER", {}, None),  # the query repeats it
        (
            "",
            JSON,
            b'{"channel": ["C0ENG"], "text": "hi"}'.replace(b"[", b"")
            .replace(b"]", b"")
            .replace(b'"C0ENG"', b'{"id": "C0ENG"}'),
        ),  # not a string
        ("", JSON, b'{"text": "hi"}'),  # no channel at all
        ("", JSON, b"not json"),
    ],
)
def test_a_request_naming_no_single_channel_has_no_resource(
    slack: Slack, query: str, headers: dict[str, str], body: bytes | None
) -> None:
    found = slack.match_request(Request("POST", "/chat.postMessage", query, headers, body))
    assert found is not None
    assert found.action == "chat.postMessage"
    assert found.resource is None


def test_several_channels_name_no_resource(slack: Slack) -> None:
    found = slack.match_request(Request("POST", "/files.upload", "", FORM, b"channels=C1,C2"))
    assert found is not None
    assert found.resource is None
    two = b"channel_id=C0ENG&channels=C0OTHER"
    found = slack.match_request(Request("POST", "/files.completeUploadExternal", "", FORM, two))
    assert found is not None
    assert found.resource is None


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/chat.nothing"),
        ("POST", "/"),
        ("POST", "/chat.postMessage/extra"),
        ("POST", "/chat.postMessage%2F"),
        ("POST", "/../chat.postMessage"),
        ("POST", "/chat.postMessage%2F..%2Fchat.delete"),
        ("DELETE", "/chat.postMessage"),
    ],
)
def test_requests_matching_no_route(slack: Slack, method: str, path: str) -> None:
    assert slack.match_request(Request(method, path)) is None


def test_a_hostile_channel_value_names_no_resource_slack_accepts(slack: Slack) -> None:
    found = slack.match_request(
        Request("POST", "/chat.postMessage", "", FORM, b"channel=C0ENG%2F..%2FC0X")
    )
    assert found is not None
    assert found.resource == "channel:C0ENG/../C0X"
    with pytest.raises(LookupFailed):
        _parse(found.resource)


def test_the_new_actions_have_rules(slack: Slack) -> None:
    from toolpass.integrations.slack import _KIND

    for action in Slack.actions:
        assert action.name in _KIND
        assert action.description
        assert action.requires
