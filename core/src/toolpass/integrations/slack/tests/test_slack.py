"""The Slack integration against a fake Slack Web API on 127.0.0.1, and slack_sdk against it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.server import FakeServer, Request
from fakes.slack import FakeSlack
from fakes.tls import make_certs
from pytest_toolpass import IntegrationConformance

from toolpass import integrations
from toolpass.engine import Toolpass
from toolpass.integrations.slack import Slack
from toolpass.wire.errors import ConfigError

BOT = "xoxb-1111-2222-fake"
USER_TOKEN = "xoxp-1111-3333-fake"
ADMIN = "xoxp-1111-4444-admin"
BOT_ID = "U0BOT"


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    with FakeServer() as server:
        fake = FakeSlack(server)
        fake.add_token(BOT, user_id=BOT_ID)
        fake.add_token(USER_TOKEN, user_id="U0HUMAN", bot_id=None)
        fake.add_token(
            ADMIN,
            user_id="U0ORGADMIN",
            bot_id=None,
            scopes=("admin.conversations:read",),
            org_admin=True,
        )
        fake.add_user("U0DANA", "dana@example.com")
        fake.add_user("U0ERIN", "erin@example.com", is_restricted=True)
        fake.add_user("U0GINA", "gina@example.com", is_restricted=True, is_ultra_restricted=True)
        fake.add_user("U0ADA", "ada@example.com", is_admin=True)
        fake.add_user("U0OLGA", "olga@example.com", is_owner=True)
        fake.add_user("U0DAVE", "dave@example.com", deleted=True)
        fake.add_user("U0ROBO", "robo@example.com", is_bot=True)
        fake.add_user("U0IVY", "ivy@example.com", is_invited_user=True)
        fake.add_channel("C0ENG", "eng", [BOT_ID, "U0DANA", "U0ERIN", "U0ADA"])
        fake.add_channel("C0RANDOM", "random", [BOT_ID, "U0ADA"])
        fake.add_channel(
            "C0SECRET", "secret", [BOT_ID, "U0DANA"], is_private=True, is_channel=False
        )
        fake.add_channel("C0HIDDEN", "hidden", ["U0DANA"], is_private=True, is_channel=False)
        fake.add_channel(
            "C0GENERAL", "general", [BOT_ID, "U0DANA", "U0ADA", "U0OLGA"], is_general=True
        )
        fake.add_channel("C0OLD", "old", [BOT_ID, "U0DANA", "U0ADA"], is_archived=True)
        fake.add_channel("C0NEWS", "news", [BOT_ID, "U0DANA", "U0ADA"], is_read_only=True)
        fake.add_channel("C0EXT", "partners", [BOT_ID, "U0DANA"], is_ext_shared=True)
        fake.add_channel(
            "D0DM",
            "",
            [BOT_ID, "U0DANA"],
            is_channel=False,
            is_im=True,
            is_private=False,
            user="U0DANA",
        )
        fake.channels["D0DM"].pop("name")
        yield fake


@pytest.fixture(autouse=True)
def tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", BOT)
    monkeypatch.setenv("SLACK_USER_TOKEN", USER_TOKEN)
    monkeypatch.setenv("SLACK_ADMIN_TOKEN", ADMIN)


def connection(slack: FakeSlack, **extra: Any) -> dict[str, Any]:
    return {
        "id": "slack",
        "integration": "slack",
        "url": slack.url,
        "token": "env:SLACK_BOT_TOKEN",
        **extra,
    }


@pytest.fixture
def tp(slack: FakeSlack) -> Iterator[Toolpass]:
    with Toolpass([connection(slack)]) as engine:
        yield engine


def engine(slack: FakeSlack, **extra: Any) -> Toolpass:
    return Toolpass([connection(slack, **extra)])


def methods(slack: FakeSlack) -> list[str]:
    return [r.path.lstrip("/") for r in slack.server.requests]


# --- the declaration ---------------------------------------------------------------------


def test_registered_and_declared() -> None:
    assert integrations.get("slack") is Slack
    assert "slack" in integrations.available()
    names = [a.name for a in Slack.actions]
    assert len(names) == len(set(names))
    for expected in ("chat.postMessage", "conversations.history", "conversations.archive"):
        assert expected in names
    assert all(a.description and a.requires for a in Slack.actions)
    assert all(k.description for k in Slack.keys)
    keys = {k.name: k for k in Slack.keys}
    assert keys["token"].secret
    assert keys["token"].required
    assert keys["admin_token"].secret
    assert keys["general_posting"].default == "unknown"
    assert Slack.default_url == "https://slack.com/api"
    assert Slack.action("conversations.archive").effect == "destructive"  # type: ignore[union-attr]


def test_default_url_is_slack(slack: FakeSlack) -> None:
    tp = Toolpass([{"id": "s", "integration": "slack", "token": "env:SLACK_BOT_TOKEN"}])
    assert tp.config.connections[0].url == "https://slack.com/api"


@pytest.mark.parametrize(
    ("extra", "key"),
    [
        ({"posting_prefs": True}, "admin_token"),
        ({"team_id": "not-a-team"}, "team_id"),
        ({"page_size": 0}, "page_size"),
        ({"page_size": 5000}, "page_size"),
        ({"max_pages": 0}, "max_pages"),
        ({"general_posting": "sometimes"}, "general_posting"),
        ({"token": "xoxb-inline"}, "token"),
        ({"colour": "blue"}, "colour"),
    ],
)
def test_bad_settings_are_config_errors(slack: FakeSlack, extra: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError, match=key):
        engine(slack, **extra)


# --- allow and deny ------------------------------------------------------------------------


def test_full_member_reads_public_channel_without_listing_members(
    tp: Toolpass, slack: FakeSlack
) -> None:
    d = tp.check("dana@example.com", "slack", "conversations.history", "channel:C0RANDOM")
    assert d.decision == "allow", d.reason
    assert "public" in d.reason
    assert methods(slack) == ["users.lookupByEmail", "conversations.info"]
    sent = slack.server.requests[0]
    assert sent.headers["authorization"] == f"Bearer {BOT}"
    assert sent.query == {"email": ["dana@example.com"]}


def test_private_channel_member_allowed_others_denied(tp: Toolpass) -> None:
    assert tp.check("dana@example.com", "slack", "conversations.history", "channel:C0SECRET")
    d = tp.check("ada@example.com", "slack", "conversations.history", "channel:C0SECRET")
    assert d.decision == "deny"
    assert "private" in d.reason
    assert "not a member" in d.reason


def test_guests_read_only_their_channels(tp: Toolpass) -> None:
    assert tp.check("erin@example.com", "slack", "conversations.replies", "channel:C0ENG").allowed
    d = tp.check("erin@example.com", "slack", "conversations.history", "channel:C0RANDOM")
    assert d.decision == "deny"
    assert "guest" in d.reason
    d = tp.check("gina@example.com", "slack", "conversations.info", "channel:C0RANDOM")
    assert d.decision == "deny"


def test_post_needs_membership(tp: Toolpass) -> None:
    d = tp.check("dana@example.com", "slack", "chat.postMessage", "channel:C0ENG")
    assert d.decision == "allow", d.reason
    d = tp.check("dana@example.com", "slack", "chat.postMessage", "channel:C0RANDOM")
    assert d.decision == "deny"
    assert "not a member" in d.reason
    assert tp.check("dana@example.com", "slack", "files.upload", "channel:C0SECRET").allowed
    assert tp.check("dana@example.com", "slack", "chat.postMessage", "channel:D0DM").allowed
    assert not tp.check("ada@example.com", "slack", "chat.postMessage", "channel:D0DM").allowed


def test_archived_channel_is_read_only(tp: Toolpass) -> None:
    assert tp.check("dana@example.com", "slack", "conversations.history", "channel:C0OLD").allowed
    d = tp.check("dana@example.com", "slack", "chat.postMessage", "channel:C0OLD")
    assert d.decision == "deny"
    assert "archived" in d.reason
    assert (
        tp.check("dana@example.com", "slack", "reactions.add", "channel:C0OLD").decision == "deny"
    )


def test_deactivated_user_denied_everything(tp: Toolpass) -> None:
    for action, resource in [
        ("conversations.history", "channel:C0RANDOM"),
        ("chat.postMessage", "channel:C0ENG"),
        ("admin.users.remove", "workspace"),
    ]:
        d = tp.check("dave@example.com", "slack", action, resource)
        assert d.decision == "deny"
        assert "deactivated" in d.reason


def test_invited_user_denied_and_bot_unknown(tp: Toolpass) -> None:
    assert tp.check("ivy@example.com", "slack", "conversations.info", "channel:C0ENG").decision == (
        "deny"
    )
    d = tp.check("robo@example.com", "slack", "conversations.info", "channel:C0ENG")
    assert d.decision == "unknown"
    assert "bot" in d.reason


def test_member_only_writes(tp: Toolpass) -> None:
    for action in ("reactions.add", "pins.add", "conversations.setTopic", "bookmarks.add"):
        assert tp.check("dana@example.com", "slack", action, "channel:C0ENG").allowed
        assert not tp.check("dana@example.com", "slack", action, "channel:C0RANDOM").allowed
    d = tp.check("dana@example.com", "slack", "reactions.add", "message:C0ENG/1712345678.000100")
    assert d.allowed


def test_invite_join_leave(tp: Toolpass) -> None:
    assert tp.check("dana@example.com", "slack", "conversations.invite", "channel:C0ENG").allowed
    d = tp.check("erin@example.com", "slack", "conversations.invite", "channel:C0ENG")
    assert (d.decision, "guest" in d.reason) == ("deny", True)
    assert not tp.check("dana@example.com", "slack", "conversations.invite", "channel:D0DM")
    assert tp.check("dana@example.com", "slack", "conversations.join", "channel:C0RANDOM").allowed
    assert not tp.check("erin@example.com", "slack", "conversations.join", "channel:C0RANDOM")
    d = tp.check("ada@example.com", "slack", "conversations.join", "channel:C0SECRET")
    assert (d.decision, "invitation" in d.reason) == ("deny", True)
    assert tp.check("dana@example.com", "slack", "conversations.leave", "channel:C0ENG").allowed
    d = tp.check("dana@example.com", "slack", "conversations.leave", "channel:C0GENERAL")
    assert (d.decision, "#general" in d.reason) == ("deny", True)


def test_channel_management_policy(slack: FakeSlack) -> None:
    with engine(slack) as tp:
        d = tp.check("dana@example.com", "slack", "conversations.rename", "channel:C0ENG")
        assert d.decision == "unknown"
        assert "channel_management" in d.reason
        assert tp.check("ada@example.com", "slack", "conversations.archive", "channel:C0ENG")
        d = tp.check("ada@example.com", "slack", "conversations.archive", "channel:C0GENERAL")
        assert d.decision == "deny"
        d = tp.check("ada@example.com", "slack", "conversations.archive", "channel:C0OLD")
        assert (d.decision, "already archived" in d.reason) == ("deny", True)
        assert tp.check("ada@example.com", "slack", "conversations.unarchive", "channel:C0OLD")
        assert not tp.check("ada@example.com", "slack", "conversations.kick", "channel:C0SECRET")
        assert not tp.check("erin@example.com", "slack", "conversations.kick", "channel:C0ENG")
    with engine(slack, channel_management="members") as tp:
        assert tp.check("dana@example.com", "slack", "conversations.kick", "channel:C0ENG")
        assert not tp.check("dana@example.com", "slack", "conversations.kick", "channel:C0RANDOM")
    with engine(slack, channel_management="admins") as tp:
        d = tp.check("dana@example.com", "slack", "conversations.rename", "channel:C0ENG")
        assert d.decision == "deny"


def test_general_posting_policy(slack: FakeSlack) -> None:
    with engine(slack) as tp:
        d = tp.check("dana@example.com", "slack", "chat.postMessage", "channel:C0GENERAL")
        assert d.decision == "unknown"
        assert "general_posting" in d.reason
    with engine(slack, general_posting="everyone") as tp:
        assert tp.check("dana@example.com", "slack", "chat.postMessage", "channel:C0GENERAL")
    with engine(slack, general_posting="admins") as tp:
        assert not tp.check("dana@example.com", "slack", "chat.postMessage", "channel:C0GENERAL")
        assert tp.check("ada@example.com", "slack", "chat.postMessage", "channel:C0GENERAL")
        assert tp.check("olga@example.com", "slack", "chat.postMessage", "channel:C0GENERAL")
    with engine(slack, general_posting="owners") as tp:
        assert not tp.check("ada@example.com", "slack", "chat.postMessage", "channel:C0GENERAL")
        assert tp.check("olga@example.com", "slack", "chat.postMessage", "channel:C0GENERAL")


def test_read_only_channel_without_prefs_is_unknown(tp: Toolpass) -> None:
    d = tp.check("ada@example.com", "slack", "chat.postMessage", "channel:C0NEWS")
    assert d.decision == "unknown"
    assert "posting_prefs" in d.reason


def test_who_can_post_from_conversation_prefs(slack: FakeSlack) -> None:
    slack.prefs["C0NEWS"] = {"who_can_post": {"type": ["admin"], "user": ["U0DANA"]}}
    slack.prefs["C0ENG"] = {"who_can_post": {"type": ["admin"], "user": []}}
    slack.prefs["C0SECRET"] = {"who_can_post": {"type": ["ra"], "user": []}}
    extra = {"posting_prefs": True, "admin_token": "env:SLACK_ADMIN_TOKEN"}
    with engine(slack, **extra) as tp:
        assert tp.check("ada@example.com", "slack", "chat.postMessage", "channel:C0NEWS")
        assert tp.check("dana@example.com", "slack", "chat.postMessage", "channel:C0NEWS")
        d = tp.check("dana@example.com", "slack", "chat.postMessage", "channel:C0ENG")
        assert d.decision == "deny"
        assert "admin" in d.reason
        d = tp.check("dana@example.com", "slack", "chat.postMessage", "channel:C0SECRET")
        assert (d.decision, "ra" in d.reason) == ("unknown", True)
        # no prefs set: anyone who is a member may post
        assert tp.check("dana@example.com", "slack", "chat.postMessage", "channel:C0EXT")
        # #general is not supported by the prefs API: the general_posting policy decides
        d = tp.check("dana@example.com", "slack", "chat.postMessage", "channel:C0GENERAL")
        assert d.decision == "unknown"
    prefs = slack.calls("admin.conversations.getConversationPrefs")
    assert prefs
    assert all(r.headers["authorization"] == f"Bearer {ADMIN}" for r in prefs)


def test_admin_prefs_failure_is_unknown(slack: FakeSlack) -> None:
    slack.tokens[ADMIN].org_admin = False
    extra = {"posting_prefs": True, "admin_token": "env:SLACK_ADMIN_TOKEN"}
    with engine(slack, **extra) as tp:
        d = tp.check("dana@example.com", "slack", "chat.postMessage", "channel:C0ENG")
    assert d.decision == "unknown"
    assert "not_an_admin" in d.reason


def test_message_edit_and_delete(slack: FakeSlack) -> None:
    tp = engine(slack, message_editing="anytime", message_deletion="everyone")
    slack.messages["C0ENG"] = [
        {"type": "message", "ts": "1712345679.000200", "user": "U0ERIN", "text": "later"},
        {"type": "message", "ts": "1712345678.000100", "user": "U0DANA", "text": "hello"},
    ]
    dana_msg = "message:C0ENG/1712345678.000100"
    erin_msg = "message:C0ENG/1712345679.000200"
    assert tp.check("dana@example.com", "slack", "chat.update", dana_msg).allowed
    d = tp.check("dana@example.com", "slack", "chat.update", erin_msg)
    assert (d.decision, "author" in d.reason) == ("deny", True)
    assert not tp.check("ada@example.com", "slack", "chat.update", dana_msg).allowed
    assert tp.check("ada@example.com", "slack", "chat.delete", erin_msg).allowed
    assert not tp.check("dana@example.com", "slack", "chat.delete", erin_msg).allowed
    d = tp.check("dana@example.com", "slack", "chat.delete", "message:C0ENG/1700000000.000001")
    assert d.decision == "unknown"
    history = slack.calls("conversations.history")[0]
    assert history.query["latest"] == history.query["oldest"] == ["1712345678.000100"]
    assert history.query["inclusive"] == ["true"]
    d = tp.check("dana@example.com", "slack", "chat.update", "channel:C0ENG")
    assert d.decision == "unknown"
    tp.close()


@pytest.mark.parametrize(
    ("editing", "deletion", "edit", "delete"),
    [
        ("unknown", "unknown", "unknown", "unknown"),  # the defaults: the token cannot read them
        ("never", "admins", "deny", "deny"),
        ("anytime", "everyone", "allow", "allow"),
    ],
)
def test_the_workspaces_editing_and_deletion_settings_bind_authors(
    slack: FakeSlack, editing: str, deletion: str, edit: str, delete: str
) -> None:
    slack.messages["C0ENG"] = [
        {"type": "message", "ts": "1712345678.000100", "user": "U0DANA", "text": "hello"},
    ]
    mine = "message:C0ENG/1712345678.000100"
    settings = {"message_editing": editing, "message_deletion": deletion}
    if editing == "unknown":
        settings = {}  # the defaults
    with engine(slack, **settings) as tp:
        assert tp.check("dana@example.com", "slack", "chat.update", mine).decision == edit
        assert tp.check("dana@example.com", "slack", "chat.delete", mine).decision == delete
        assert tp.check("ada@example.com", "slack", "chat.delete", mine).allowed  # an admin


@pytest.mark.parametrize("action", ["chat.update", "chat.delete"])
@pytest.mark.parametrize("who", ["dana", "ada"])  # the author, and an admin
def test_a_message_in_a_frozen_channel_is_no_more_editable_than_a_new_one(
    slack: FakeSlack, action: str, who: str
) -> None:
    """A frozen channel (a Slack Connect channel cut off) takes no new message whoever
    asks: an edit or a deletion there was allowed to its author and to admins."""
    slack.messages["C0ENG"] = [
        {"type": "message", "ts": "1712345678.000100", "user": "U0DANA", "text": "hello"},
    ]
    slack.channels["C0ENG"]["is_frozen"] = True
    with engine(slack, message_editing="anytime", message_deletion="everyone") as tp:
        d = tp.check(f"{who}@example.com", "slack", action, "message:C0ENG/1712345678.000100")
    assert not d.allowed, d.reason


def test_search_answers_the_tokens_view_so_it_is_unknown_unless_tokens_are_the_users(
    slack: FakeSlack,
) -> None:
    with engine(slack) as tp:
        d = tp.check("ada@example.com", "slack", "search.read", "workspace")  # even an admin
        assert d.decision == "unknown"
        assert "search_tokens" in d.reason
    with engine(slack, search_tokens="user") as tp:
        assert tp.check("erin@example.com", "slack", "search.read", "workspace").allowed
        assert tp.check("dave@example.com", "slack", "search.read", "workspace").decision == (
            "deny"
        )  # deactivated


def test_slack_sdk_search_is_refused_before_it_leaves(slack: FakeSlack) -> None:
    """Through the request hook: slack_sdk's search.messages is search.read, which an admin
    does not pass on a shared token, and the request never reaches Slack."""
    from slack_sdk import WebClient

    from toolpass import Session, Toolkit, intercept
    from toolpass.intercept import ActionRefused

    events: list[Any] = []
    with engine(slack) as tp:
        kit = Toolkit(permissions=tp, audit=[events.append])

        @kit.tool()
        def search(text: str) -> str:
            client = WebClient(token=USER_TOKEN, base_url=slack.url + "/")
            return str(client.search_messages(query=text)["ok"])

        try:
            with Session("ada@example.com").active(), pytest.raises(ActionRefused) as info:
                search("salary")
        finally:
            intercept.uninstall()
    assert info.value.code == "authorization_error"  # unknown: whose view is it?
    assert slack.server.seen(None, "/search.messages") == []
    action = events[-1].actions[-1]
    assert (action["action"], action["resource"]) == ("search.read", "workspace")


def test_slack_sdk_looks_up_people_as_the_user_and_rtm_start_is_unknown(
    slack: FakeSlack,
) -> None:
    """Through the request hook (#19): a people look-up (users.info) is workspace.read checked
    as the user (erin, a guest, is refused before it leaves); rtm.start answers the workspace
    as the token's user sees it (private channels, DMs), so it is unknown without
    search_tokens: user; the agent's own identity (auth.test) goes."""
    from slack_sdk import WebClient

    from toolpass import Session, Toolkit, intercept
    from toolpass.intercept import ActionRefused

    events: list[Any] = []
    with engine(slack) as tp:
        kit = Toolkit(permissions=tp, audit=[events.append])

        @kit.tool()
        def call(method: str) -> str:
            client = WebClient(token=BOT, base_url=slack.url + "/")
            return str(client.api_call(method, params={"user": "U0DANA"})["ok"])

        def refused(user: str, method: str) -> str:
            with Session(user).active(), pytest.raises(ActionRefused) as info:
                call(method)
            return info.value.code

        try:
            with Session("erin@example.com").active():
                assert "True" in call("auth.test")
            assert refused("erin@example.com", "users.info") == "not_authorized"
            assert refused("ada@example.com", "rtm.start") == "authorization_error"
            with Session("dana@example.com").active():
                assert "True" in call("users.info")  # fenced: a profile is untrusted
        finally:
            intercept.uninstall()
    assert slack.server.seen(None, "/rtm.start") == []
    assert [a["action"] for e in events for a in e.actions][-3:] == [
        "workspace.read",  # erin's users.info, refused
        "sender_lists",
        "workspace.read",
    ]


@pytest.mark.parametrize("twin", [" channel", "channel[]", "channel.", "Channel", "channel\u00a0"])
def test_an_argument_slack_may_read_as_another_names_no_channel(
    slack: FakeSlack, twin: str
) -> None:
    """Through the request hook: beside ``channel=C0ENG`` (erin's), an argument a PHP-style
    reader may take for ``channel`` (`` channel``, ``channel[]``) names no channel, and the
    request never reaches Slack."""
    from slack_sdk import WebClient

    from toolpass import Session, Toolkit, intercept
    from toolpass.intercept import ActionRefused

    events: list[Any] = []
    with engine(slack) as tp:
        kit = Toolkit(permissions=tp, audit=[events.append])

        @kit.tool()
        def history() -> str:
            client = WebClient(token=BOT, base_url=slack.url + "/")
            params = {"channel": "C0ENG", twin: "C0SECRET"}
            return str(client.api_call("conversations.history", params=params)["ok"])

        try:
            with Session("erin@example.com").active(), pytest.raises(ActionRefused):
                history()
        finally:
            intercept.uninstall()
    assert slack.server.seen(None, "/conversations.history") == []
    action = events[-1].actions[-1]
    assert (action["action"], action["resource"]) == ("conversations.history", None)


def test_a_grid_public_channel_is_read_by_its_workspaces_members_only(
    tp: Toolpass, slack: FakeSlack
) -> None:
    """On Enterprise Grid, a public channel of workspace T0SALES is open to T0SALES's members
    (and to those of workspaces it is shared with), not to every member of the org."""
    grid = {"id": "W0X", "enterprise_id": "E0ORG", "teams": ["T0ENG"]}
    slack.add_user("W0ENGER", "enger@example.com", team_id="T0ENG", enterprise_user=grid)
    sales = {**grid, "teams": ["T0SALES"]}
    slack.add_user("W0SALES", "seller@example.com", team_id="T0SALES", enterprise_user=sales)
    both = {**grid, "teams": ["T0MKT", "T0SHARED"]}
    slack.add_user("W0MKT", "marketer@example.com", team_id="T0MKT", enterprise_user=both)
    slack.add_channel(
        "C0DEALS",
        "deals",
        [BOT_ID],
        context_team_id="T0SALES",
        shared_team_ids=["T0SALES", "T0SHARED"],
        enterprise_id="E0ORG",
    )
    slack.add_channel("C0VAGUE", "vague", [BOT_ID], enterprise_id="E0ORG")

    def read(who: str, channel: str = "channel:C0DEALS") -> str:
        d = tp.check(f"{who}@example.com", "slack", "conversations.history", channel, fresh=True)
        return d.decision

    assert read("seller") == "allow"
    assert read("enger") == "deny"  # another workspace of the same org
    assert read("marketer") == "allow"  # in a workspace the channel is shared with
    assert read("seller", "channel:C0VAGUE") == "unknown"  # Slack does not say whose it is
    joined = tp.check("enger@example.com", "slack", "conversations.join", "channel:C0DEALS")
    assert joined.decision == "deny"
    slack.members["C0DEALS"].append("W0ENGER")  # invited: a member reads it
    assert read("enger") == "allow"


def test_message_in_channel_the_bot_cannot_read_is_unknown(tp: Toolpass, slack: FakeSlack) -> None:
    slack.members["C0RANDOM"].append("U0DANA")
    slack.members["C0RANDOM"].remove(BOT_ID)
    d = tp.check("dana@example.com", "slack", "chat.delete", "message:C0RANDOM/1712345678.000100")
    assert d.decision == "unknown"
    assert "not_in_channel" in d.reason


def test_admin_actions(tp: Toolpass, slack: FakeSlack) -> None:
    assert tp.check("ada@example.com", "slack", "admin.users.invite", "workspace").allowed
    assert tp.check("olga@example.com", "slack", "admin.conversations.archive", "channel:C0ENG")
    d = tp.check("dana@example.com", "slack", "admin.users.remove", "workspace")
    assert d.decision == "deny"
    grid = {"id": "W0X", "enterprise_id": "E0", "enterprise_name": "Org", "teams": ["T0FAKE001"]}
    slack.add_user("W0GRIDADMIN", "grid@example.com", enterprise_user={**grid, "is_admin": True})
    slack.add_user("W0WSADMIN", "wsadmin@example.com", is_admin=True, enterprise_user=grid)
    assert tp.check("grid@example.com", "slack", "admin.users.remove", "team:T0FAKE001").allowed
    d = tp.check("wsadmin@example.com", "slack", "admin.users.remove", "workspace")
    assert (d.decision, "org admin" in d.reason) == ("deny", True)


def test_channel_creation_policy_and_grid_workspace(slack: FakeSlack) -> None:
    with engine(slack) as tp:
        assert tp.check("ada@example.com", "slack", "conversations.create", "workspace").allowed
        d = tp.check("dana@example.com", "slack", "conversations.create", "workspace")
        assert (d.decision, "channel_creation" in d.reason) == ("unknown", True)
        assert not tp.check("gina@example.com", "slack", "conversations.create", "workspace")
    with engine(slack, channel_creation="members", team_id="T0FAKE001") as tp:
        assert tp.check("dana@example.com", "slack", "conversations.create", "workspace").allowed
        assert not tp.check("erin@example.com", "slack", "conversations.create", "workspace")
        slack.add_user("W0ELSE", "else@example.com", team_id="T0OTHER")
        d = tp.check("else@example.com", "slack", "conversations.create", "workspace")
        assert (d.decision, "T0FAKE001" in d.reason) == ("deny", True)
        d = tp.check("dana@example.com", "slack", "conversations.create", "team:T0OTHER")
        assert d.decision == "unknown"
    with engine(slack, channel_creation="admins") as tp:
        assert not tp.check("dana@example.com", "slack", "conversations.create", "workspace")


def test_external_channels_setting(slack: FakeSlack) -> None:
    with engine(slack) as tp:
        assert tp.check("dana@example.com", "slack", "chat.postMessage", "channel:C0EXT").allowed
    with engine(slack, external_channels="unknown") as tp:
        d = tp.check("dana@example.com", "slack", "chat.postMessage", "channel:C0EXT")
        assert (d.decision, "Slack Connect" in d.reason) == ("unknown", True)


# --- membership pagination -------------------------------------------------------------------


def test_membership_follows_cursors(slack: FakeSlack) -> None:
    crowd = [f"U{n:06d}" for n in range(450)]
    slack.add_channel("C0BIG", "big", [*crowd, "U0DANA"], is_private=True)
    slack.members["C0BIG"].insert(0, BOT_ID)
    with engine(slack, page_size=100) as tp:
        d = tp.check("dana@example.com", "slack", "conversations.history", "channel:C0BIG")
        assert d.allowed, d.reason
        pages = slack.calls("conversations.members")
        assert len(pages) == 5
        assert [r.query.get("limit") for r in pages] == [["100"]] * 5
        assert "cursor" not in pages[0].query
        assert pages[1].query["cursor"][0]
        d = tp.check("ada@example.com", "slack", "conversations.history", "channel:C0BIG")
        assert d.decision == "deny"
    with engine(slack, page_size=100, max_pages=2) as tp:
        d = tp.check("dana@example.com", "slack", "conversations.history", "channel:C0BIG")
        assert (d.decision, "max_pages" in d.reason) == ("unknown", True)


def test_member_found_on_first_page_stops_paging(tp: Toolpass, slack: FakeSlack) -> None:
    slack.default_limit = 1
    assert tp.check("dana@example.com", "slack", "chat.postMessage", "channel:C0SECRET").allowed
    assert len(slack.calls("conversations.members")) == 1


# --- channel names ---------------------------------------------------------------------------


def test_channel_by_exact_name(tp: Toolpass, slack: FakeSlack) -> None:
    assert tp.check("dana@example.com", "slack", "chat.postMessage", "channel:#eng").allowed
    listed = slack.calls("conversations.list")
    assert len(listed) == 1
    assert listed[0].query["types"] == ["public_channel,private_channel"]
    assert tp.check("dana@example.com", "slack", "reactions.add", "channel:#eng").allowed
    assert len(slack.calls("conversations.list")) == 1  # the name is remembered
    d = tp.check("dana@example.com", "slack", "chat.postMessage", "channel:#en")
    assert (d.decision, "no channel named #en" in d.reason) == ("unknown", True)
    d = tp.check("dana@example.com", "slack", "chat.postMessage", "channel:#hidden")
    assert d.decision == "unknown"


def test_ambiguous_channel_name_is_unknown(tp: Toolpass, slack: FakeSlack) -> None:
    slack.add_channel("C0ENG2", "eng", [BOT_ID, "U0DANA"])
    d = tp.check("dana@example.com", "slack", "chat.postMessage", "channel:#eng")
    assert (d.decision, "2 channels" in d.reason) == ("unknown", True)


def test_channel_names_paginate_and_can_be_turned_off(slack: FakeSlack) -> None:
    for n in range(30):
        slack.add_channel(f"C0X{n:03d}", f"x{n}", [BOT_ID])
    slack.add_channel("C0LAST", "last", [BOT_ID, "U0DANA"])
    with engine(slack, page_size=10) as tp:
        assert tp.check("dana@example.com", "slack", "chat.postMessage", "channel:#last").allowed
        assert len(slack.calls("conversations.list")) >= 4
    with engine(slack, channel_names=False) as tp:
        d = tp.check("dana@example.com", "slack", "chat.postMessage", "channel:#last")
        assert (d.decision, "channel_names" in d.reason) == ("unknown", True)


def test_org_wide_install_sends_team_id(slack: FakeSlack) -> None:
    slack.tokens[BOT].is_enterprise_install = True
    with engine(slack) as tp:
        d = tp.check("dana@example.com", "slack", "chat.postMessage", "channel:#eng")
        assert (d.decision, "missing_argument" in d.reason) == ("unknown", True)
    with engine(slack, team_id="T0FAKE001") as tp:
        assert tp.check("dana@example.com", "slack", "chat.postMessage", "channel:#eng").allowed
    assert slack.calls("conversations.list")[-1].query["team_id"] == ["T0FAKE001"]


# --- every kind of unknown -------------------------------------------------------------------


def test_private_channel_hidden_from_the_bot_is_unknown(tp: Toolpass) -> None:
    d = tp.check("dana@example.com", "slack", "conversations.history", "channel:C0HIDDEN")
    assert d.decision == "unknown"
    assert "channel_not_found" in d.reason
    assert "bot is not in it" in d.reason


def test_no_such_channel_is_unknown(tp: Toolpass) -> None:
    d = tp.check("dana@example.com", "slack", "conversations.history", "channel:C0NOPE")
    assert d.decision == "unknown"


def test_unmapped_email_is_unknown(tp: Toolpass, slack: FakeSlack) -> None:
    d = tp.check("nobody@example.com", "slack", "conversations.history", "channel:C0ENG")
    assert d.decision == "unknown"
    assert "maps to no slack user" in d.reason
    assert methods(slack) == ["users.lookupByEmail"]


def test_lookup_answering_another_email_is_unknown(tp: Toolpass, slack: FakeSlack) -> None:
    body = {"ok": True, "user": slack.users["U0ADA"]}
    slack.server.fail(200, body=body, path=r"/users\.lookupByEmail")
    d = tp.check("dana@example.com", "slack", "conversations.history", "channel:C0ENG")
    assert (d.decision, "another email" in d.reason) == ("unknown", True)


def test_rejected_token_is_unknown(slack: FakeSlack, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-revoked")
    with engine(slack) as tp:
        d = tp.check("dana@example.com", "slack", "conversations.history", "channel:C0ENG")
    assert d.decision == "unknown"
    assert "invalid_auth" in d.reason


def test_missing_scope_is_unknown(slack: FakeSlack) -> None:
    slack.tokens[BOT].scopes = ("users:read", "channels:read")
    with engine(slack) as tp:
        d = tp.check("dana@example.com", "slack", "conversations.history", "channel:C0ENG")
    assert d.decision == "unknown"
    assert "missing_scope" in d.reason
    assert "users:read.email" in d.reason


def test_wrong_kind_of_token_is_unknown(slack: FakeSlack) -> None:
    with engine(slack, token="env:SLACK_USER_TOKEN") as tp:
        d = tp.check("dana@example.com", "slack", "conversations.history", "channel:C0ENG")
    assert d.decision == "unknown"
    assert "not a Slack bot token" in d.reason
    assert BOT not in d.reason
    assert USER_TOKEN not in d.reason
    assert slack.server.requests == []


def test_rate_limit_429_is_unknown_and_not_cached(tp: Toolpass, slack: FakeSlack) -> None:
    slack.rate_limit(30, method="conversations.info")
    d = tp.check("dana@example.com", "slack", "conversations.history", "channel:C0ENG")
    assert d.decision == "unknown"
    assert "429" in d.reason
    assert "retry after 30s" in d.reason
    assert "ratelimited" in d.reason
    d = tp.check("dana@example.com", "slack", "conversations.history", "channel:C0ENG")
    assert d.decision == "allow"


def test_ratelimited_error_body_is_unknown(tp: Toolpass, slack: FakeSlack) -> None:
    slack.server.fail(200, body={"ok": False, "error": "ratelimited"}, path=r"/users\..*")
    d = tp.check("dana@example.com", "slack", "conversations.history", "channel:C0ENG")
    assert (d.decision, "rate-limited" in d.reason) == ("unknown", True)


@pytest.mark.parametrize(
    ("path", "body", "words"),
    [
        (r"/conversations\.info", {"channel": {"id": "C0ENG"}}, "'ok'"),
        (r"/conversations\.info", {"ok": True}, "no matching channel"),
        (r"/conversations\.members", {"ok": True, "members": "U0DANA"}, "no members list"),
        (
            r"/conversations\.members",
            {"ok": True, "members": [], "response_metadata": {"next_cursor": 7}},
            "next_cursor",
        ),
        (r"/users\.lookupByEmail", {"ok": True, "user": {"name": "x"}}, "no user object"),
        (r"/users\.lookupByEmail", {"ok": True, "user": {"id": "../x"}}, "not one"),
        (r"/users\.lookupByEmail", {"ok": False}, "unknown_error"),
    ],
)
def test_malformed_answers_are_unknown(
    tp: Toolpass, slack: FakeSlack, path: str, body: Any, words: str
) -> None:
    slack.server.fail(200, body=body, path=path)
    d = tp.check("dana@example.com", "slack", "chat.postMessage", "channel:C0ENG")
    assert d.decision == "unknown"
    assert words in d.reason


def test_bad_resources_are_unknown(tp: Toolpass, slack: FakeSlack) -> None:
    for action, resource in [
        ("chat.postMessage", "C0ENG"),
        ("chat.postMessage", "channel:c0eng"),
        ("chat.postMessage", "channel:#has space"),
        ("chat.postMessage", "workspace"),
        ("chat.update", "message:C0ENG/notats"),
        ("conversations.create", "channel:C0ENG"),
    ]:
        d = tp.check("dana@example.com", "slack", action, resource)
        assert d.decision == "unknown", (action, resource)
    assert slack.server.requests == []  # refused before any look-up


def test_unknown_action_is_unknown(tp: Toolpass) -> None:
    d = tp.check("dana@example.com", "slack", "chat.explode", "channel:C0ENG")
    assert d.decision == "unknown"


# --- identity modes --------------------------------------------------------------------------


def test_users_mapping_skips_the_lookup(slack: FakeSlack) -> None:
    identity = {"mode": "users", "users": {"dana@corp.example": "U0DANA"}}
    with engine(slack, identity=identity) as tp:
        assert tp.check("dana@corp.example", "slack", "chat.postMessage", "channel:C0ENG").allowed
        d = tp.check("ada@example.com", "slack", "chat.postMessage", "channel:C0ENG")
        assert d.decision == "unknown"
    assert "users.lookupByEmail" not in methods(slack)
    assert slack.calls("users.info")[0].query == {"user": ["U0DANA"]}


def test_mapping_to_an_id_slack_does_not_know_is_unknown(slack: FakeSlack) -> None:
    identity = {"mode": "users", "users": {"dana@example.com": "U0GONE"}}
    with engine(slack, identity=identity) as tp:
        d = tp.check("dana@example.com", "slack", "chat.postMessage", "channel:C0ENG")
    assert (d.decision, "U0GONE" in d.reason) == ("unknown", True)


def test_template_identity_limited_to_domains(slack: FakeSlack) -> None:
    identity = {"mode": "template", "template": "U0{local}", "domains": ["corp.example"]}
    with engine(slack, identity=identity) as tp:
        d = tp.check("DANA@corp.example", "slack", "chat.postMessage", "channel:C0ENG")
        assert d.decision == "unknown"  # U0dana is not a Slack id: fail closed
        d = tp.check("dana@other.example", "slack", "chat.postMessage", "channel:C0ENG")
        assert (d.decision, "domain" in d.reason) == ("unknown", True)


def test_file_identity_and_ambiguity(slack: FakeSlack, tmp_path: Path) -> None:
    mapping = tmp_path / "slack-users.json"
    mapping.write_text(json.dumps({"dana@corp.example": "U0DANA"}))
    with engine(slack, identity={"mode": "file", "file": str(mapping)}) as tp:
        assert tp.check("dana@corp.example", "slack", "chat.postMessage", "channel:C0ENG").allowed


def test_callable_identity_ambiguous_is_unknown(slack: FakeSlack) -> None:
    def resolve(email: str) -> list[str]:
        return ["U0DANA", "U0ADA"] if email.startswith("twin") else ["U0DANA"]

    with engine(slack, identity=resolve) as tp:
        assert tp.check("x@example.com", "slack", "chat.postMessage", "channel:C0ENG").allowed
        d = tp.check("twin@example.com", "slack", "chat.postMessage", "channel:C0ENG")
        assert (d.decision, "refusing to guess" in d.reason) == ("unknown", True)


def test_http_identity_service(slack: FakeSlack) -> None:
    with FakeServer() as directory:

        @directory.route("GET", "/who")
        def who(request: Request) -> dict[str, Any]:
            assert request.arg("system") == "slack"
            return {"user": "U0DANA" if request.arg("email") == "dana@corp.example" else None}

        identity = {"mode": "http", "url": f"{directory.url}/who"}
        with engine(slack, identity=identity) as tp:
            assert tp.check("dana@corp.example", "slack", "chat.postMessage", "channel:C0ENG")
            d = tp.check("bob@corp.example", "slack", "chat.postMessage", "channel:C0ENG")
            assert d.decision == "unknown"


# --- auth modes ------------------------------------------------------------------------------


def test_user_token_mode(slack: FakeSlack) -> None:
    slack.members["C0ENG"].append("U0HUMAN")
    with engine(slack, token="env:SLACK_USER_TOKEN", auth="user") as tp:
        assert tp.check("dana@example.com", "slack", "chat.postMessage", "channel:C0ENG").allowed
        assert tp.probe()["slack"].ok
    assert slack.server.requests[0].headers["authorization"] == f"Bearer {USER_TOKEN}"


def test_rotating_bot_token_accepted(slack: FakeSlack, monkeypatch: pytest.MonkeyPatch) -> None:
    slack.add_token("xoxe.xoxb-1-rotating", user_id=BOT_ID)
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxe.xoxb-1-rotating")
    with engine(slack) as tp:
        assert tp.check("dana@example.com", "slack", "chat.postMessage", "channel:C0ENG").allowed


def test_token_from_file(slack: FakeSlack, tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text(BOT + "\n")
    with engine(slack, token=f"file:{path}") as tp:
        assert tp.check("dana@example.com", "slack", "chat.postMessage", "channel:C0ENG").allowed


def test_https_with_own_ca(slack: FakeSlack, tmp_path: Path) -> None:
    certs = make_certs(tmp_path)
    with FakeServer(tls=(certs.cert_file, certs.key_file)) as server:
        secure = FakeSlack(server)
        secure.tokens = slack.tokens
        secure.users = slack.users
        secure.channels = slack.channels
        secure.members = slack.members
        url = f"https://localhost:{server.port}"
        with engine(secure, url=url, ca_file=certs.ca_file) as tp:
            d = tp.check("dana@example.com", "slack", "chat.postMessage", "channel:C0ENG")
            assert d.allowed, d.reason
        with engine(secure, url=url) as tp:
            d = tp.check("dana@example.com", "slack", "chat.postMessage", "channel:C0ENG")
            assert (d.decision, "not trusted" in d.reason) == ("unknown", True)


# --- caching ---------------------------------------------------------------------------------


def test_decisions_cached_fresh_skips_unknown_never(tp: Toolpass, slack: FakeSlack) -> None:
    first = tp.check("dana@example.com", "slack", "chat.postMessage", "channel:C0ENG")
    count = len(slack.server.requests)
    again = tp.check("dana@example.com", "slack", "chat.postMessage", "channel:C0ENG")
    assert again.allowed
    assert again.cached
    assert not first.cached
    assert len(slack.server.requests) == count
    slack.members["C0ENG"].remove("U0DANA")
    d = tp.check("dana@example.com", "slack", "chat.postMessage", "channel:C0ENG", fresh=True)
    assert d.decision == "deny"
    assert "users.lookupByEmail" in methods(slack)[count:]  # fresh asks who it is anew too


def test_fresh_reads_a_deactivation_within_the_user_cache(tp: Toolpass, slack: FakeSlack) -> None:
    assert tp.check("dana@example.com", "slack", "chat.postMessage", "channel:C0ENG").allowed
    slack.users["U0DANA"]["deleted"] = True  # deactivated; the flags are kept 30 s
    d = tp.check("dana@example.com", "slack", "chat.postMessage", "channel:C0ENG", fresh=True)
    assert d.decision == "deny", d.reason
    assert "deactivated" in d.reason


def test_user_flags_refetched_when_cache_off(slack: FakeSlack) -> None:
    with engine(slack, user_cache_ttl=0) as tp:
        assert tp.check("dana@example.com", "slack", "chat.postMessage", "channel:C0ENG").allowed
        slack.users["U0DANA"]["deleted"] = True
        d = tp.check("dana@example.com", "slack", "chat.postMessage", "channel:C0ENG", fresh=True)
        assert d.decision == "deny"
    assert len(slack.calls("users.info")) == 2


def test_user_flags_reused_within_ttl(tp: Toolpass, slack: FakeSlack) -> None:
    tp.check("dana@example.com", "slack", "chat.postMessage", "channel:C0ENG")
    tp.check("dana@example.com", "slack", "pins.add", "channel:C0ENG")
    assert slack.calls("users.info") == []
    assert len(slack.calls("users.lookupByEmail")) == 1


async def test_async_check(tp: Toolpass) -> None:
    d = await tp.acheck("dana@example.com", "slack", "chat.postMessage", "channel:C0ENG")
    assert d.allowed


# --- probe -----------------------------------------------------------------------------------


def test_probe_ok(tp: Toolpass, slack: FakeSlack) -> None:
    result = tp.probe()["slack"]
    assert result.ok, result.detail
    assert "U0BOT" in result.detail
    assert "T0FAKE001" in result.detail
    assert methods(slack) == ["auth.test"]


def test_probe_reports_missing_scopes(slack: FakeSlack) -> None:
    slack.tokens[BOT].scopes = ("users:read", "channels:read", "groups:read")
    with engine(slack) as tp:
        result = tp.probe()["slack"]
    assert not result.ok
    assert "users:read.email" in result.detail
    slack.tokens[BOT].scopes = ("users:read", "users:read.email", "channels:read", "groups:read")
    with engine(slack) as tp:
        result = tp.probe()["slack"]
    assert result.ok
    assert "channels:history" in result.detail


def test_probe_without_scope_header_still_ok(slack: FakeSlack) -> None:
    slack.server.fail(200, body={"ok": True, "user": "bot", "user_id": BOT_ID, "bot_id": "B1"})
    with engine(slack) as tp:
        assert tp.probe()["slack"].ok


def test_probe_rejected_token(slack: FakeSlack, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-nope")
    with engine(slack) as tp:
        result = tp.probe()["slack"]
    assert not result.ok
    assert "invalid_auth" in result.detail


def test_probe_user_token_in_bot_mode(slack: FakeSlack, monkeypatch: pytest.MonkeyPatch) -> None:
    slack.add_token("xoxb-not-really-a-bot", user_id="U0HUMAN", bot_id=None)
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-not-really-a-bot")
    with engine(slack) as tp:
        result = tp.probe()["slack"]
    assert (result.ok, "not a bot" in result.detail) == (False, True)


def test_probe_team_and_admin_token(slack: FakeSlack) -> None:
    with engine(slack, team_id="T0OTHER") as tp:
        result = tp.probe()["slack"]
        assert (result.ok, "T0OTHER" in result.detail) == (False, True)
    extra = {"posting_prefs": True, "admin_token": "env:SLACK_ADMIN_TOKEN", "team_id": "T0FAKE001"}
    with engine(slack, **extra) as tp:
        result = tp.probe()["slack"]
        assert result.ok, result.detail
        assert "U0ORGADMIN" in result.detail


def test_probe_server_down_is_not_ok(slack: FakeSlack) -> None:
    slack.server.fail(503)
    with engine(slack) as tp:
        result = tp.probe()["slack"]
    assert (result.ok, "503" in result.detail) == (False, True)


# --- the fake is faithful to slack_sdk ---------------------------------------------------------


def test_slack_sdk_drives_the_fake(slack: FakeSlack) -> None:
    from slack_sdk import WebClient
    from slack_sdk.errors import SlackApiError

    client = WebClient(token=BOT, base_url=slack.url + "/")
    me = client.auth_test()
    assert (me["ok"], me["user_id"], me["team_id"], me["bot_id"]) == (
        True,
        BOT_ID,
        "T0FAKE001",
        "B0FAKE001",
    )
    user = client.users_lookupByEmail(email="dana@example.com")["user"]
    assert (user["id"], user["deleted"], user["is_restricted"]) == ("U0DANA", False, False)
    info = client.conversations_info(channel="C0SECRET")["channel"]
    assert (info["is_private"], info["is_member"]) == (True, True)
    members: list[str] = []
    cursor = None
    while True:
        page = client.conversations_members(channel="C0ENG", limit=2, cursor=cursor)
        members += page["members"]
        cursor = page["response_metadata"]["next_cursor"]
        if not cursor:
            break
    assert members == slack.members["C0ENG"]
    assert len(slack.calls("conversations.members")) == 2
    with pytest.raises(SlackApiError) as e:
        client.users_lookupByEmail(email="nobody@example.com")
    assert e.value.response["error"] == "users_not_found"
    with pytest.raises(SlackApiError) as e:
        client.conversations_info(channel="C0HIDDEN")
    assert e.value.response["error"] == "channel_not_found"
    slack.rate_limit(7, method="conversations.info")
    with pytest.raises(SlackApiError) as e:
        client.conversations_info(channel="C0ENG")
    assert e.value.response.status_code == 429
    assert e.value.response.headers["Retry-After"] == "7"
    assert e.value.response["error"] == "ratelimited"
    with pytest.raises(SlackApiError) as e:
        WebClient(token="xoxb-wrong", base_url=slack.url + "/").auth_test()
    assert e.value.response["error"] == "invalid_auth"
    assert all(r.headers["authorization"] == f"Bearer {BOT}" for r in slack.server.requests[:-1])


def test_slack_sdk_post_form_and_json(slack: FakeSlack) -> None:
    from slack_sdk import WebClient

    client = WebClient(token=BOT, base_url=slack.url + "/")
    assert client.api_call("conversations.info", params={"channel": "C0ENG"})["ok"]
    assert client.api_call("users.info", json={"user": "U0ADA"})["user"]["is_admin"] is True
    listed = client.conversations_list(types="public_channel,private_channel", limit=1000)
    names = {c["name"] for c in listed["channels"]}
    assert "secret" in names
    assert "hidden" not in names
    prefs = WebClient(token=ADMIN, base_url=slack.url + "/")
    slack.prefs["C0NEWS"] = {"who_can_post": {"type": ["admin"], "user": []}}
    answer = prefs.admin_conversations_getConversationPrefs(channel_id="C0NEWS")
    assert answer["prefs"]["who_can_post"]["type"] == ["admin"]


def test_yaml_config(slack: FakeSlack, tmp_path: Path) -> None:
    path = tmp_path / "toolpass.yaml"
    path.write_text(
        "connections:\n"
        "  - id: chat\n"
        "    integration: slack\n"
        f"    url: {slack.url}\n"
        "    token: env:SLACK_BOT_TOKEN\n"
        "    team_id: T0FAKE001\n"
        "    general_posting: members\n"
        "    identity:\n"
        "      mode: lookup\n"
        "      domains: [example.com]\n"
    )
    with Toolpass.from_config(path) as tp:
        assert tp.check("dana@example.com", "chat", "chat.postMessage", "channel:C0GENERAL")
        d = tp.check("dana@elsewhere.example", "chat", "chat.postMessage", "channel:C0GENERAL")
        assert d.decision == "unknown"
    path.write_text(path.read_text().replace("members\n", "sometimes\n"))
    with pytest.raises(ConfigError, match=r"line 7.*general_posting"):
        Toolpass.from_config(path)


# --- actions the route table added ------------------------------------------------------------
def test_workspace_actions_need_a_full_member(tp: Toolpass) -> None:
    for action in ("workspace.read", "workspace.write", "conversations.open"):
        assert tp.check("dana@example.com", "slack", action, "workspace").allowed, action
        d = tp.check("erin@example.com", "slack", action, "workspace")
        assert d.decision == "deny"
        assert "guest" in d.reason
        assert tp.check("dave@example.com", "slack", action, "workspace").decision == "deny"


def test_admin_read_and_manage_need_an_admin(tp: Toolpass) -> None:
    for action in ("admin.read", "admin.manage", "workspace.manage"):
        assert tp.check("ada@example.com", "slack", action, "workspace").allowed, action
        assert tp.check("dana@example.com", "slack", action, "workspace").decision == "deny"


def test_mark_and_close_need_a_member(tp: Toolpass) -> None:
    assert tp.check("dana@example.com", "slack", "conversations.mark", "channel:C0ENG").allowed
    d = tp.check("dana@example.com", "slack", "conversations.close", "channel:C0RANDOM")
    assert d.decision == "deny"


# --- the shared conformance suite ----------------------------------------------------------
class TestSlackConformance(IntegrationConformance):
    integration = "slack"
    user, action, resource = "dana@example.com", "chat.postMessage", "channel:C0ENG"
    system_user = "U0DANA"
    credential = BOT

    @pytest.fixture
    def api(self, slack: FakeSlack) -> FakeSlack:
        return slack

    def server(self, api: FakeSlack) -> FakeServer:
        return api.server

    def connection(self, api: FakeSlack, **extra: Any) -> dict[str, Any]:
        return connection(api, **extra)

    def disable_account(self, api: FakeSlack) -> None:
        api.users["U0DANA"]["deleted"] = True

    def make_read_only(self, api: FakeSlack) -> str:
        api.channels["C0ENG"]["is_archived"] = True
        return "chat.postMessage"

    def bind_admins(self, api: FakeSlack) -> None:
        api.users["U0DANA"]["is_admin"] = True
        api.channels["C0ENG"]["is_frozen"] = True  # a frozen channel binds admins too

    def revoke(self, api: FakeSlack) -> None:
        api.members["C0ENG"].remove("U0DANA")
