"""Step 6, exfiltration: once a session has read private data and untrusted content, a
``sends_out`` tool needs approval (or is refused with ``exfiltration="refuse"``)."""

from types import SimpleNamespace

import pytest
from toolpass import ApprovalQueue, Session


@pytest.fixture
def session(stored_session):
    """Each test runs with the session's state in the object and in a shared store."""
    return stored_session


@pytest.fixture
def agent(drive, make_kit):
    """The classic trio: a private read, an untrusted read, a tool that sends data out."""
    queue = ApprovalQueue()
    kit = make_kit(approver=queue)
    sent: list[str] = []
    return SimpleNamespace(
        queue=queue,
        sent=sent,
        read_crm=drive.tool(
            kit, lambda: "customer list", name="read_crm", effect="read", reads_private=True
        ),
        browse=drive.tool(
            kit, lambda url: "a web page", name="browse", effect="read", untrusted_output=True
        ),
        post=drive.tool(
            kit,
            lambda url, data: sent.append(data) or "posted",
            name="post",
            effect="write",
            sends_out=True,
        ),
    )


@pytest.mark.parametrize("order", ["private-first", "untrusted-first"])
def test_sending_out_after_both_needs_approval(drive, session, events, agent, order):
    first, second = (agent.read_crm, agent.browse)
    if order == "untrusted-first":
        first, second = second, first
    drive.call(first, *([] if first is agent.read_crm else ["https://x.test"]))
    drive.call(second, *([] if second is agent.read_crm else ["https://x.test"]))

    pending = drive.refused(agent.post, "https://x.test", "customer list")
    assert pending.code == "approval_pending"
    assert agent.sent == []
    [request] = agent.queue.pending()
    assert "sends data out" in request.describe()
    assert events[-1].reasons[-1].startswith("it sends data out")

    agent.queue.approve(pending.request_id, by="lead@example.com")
    assert drive.call(agent.post, "https://x.test", "customer list") == "posted"
    assert agent.sent == ["customer list"]


@pytest.mark.parametrize("where", ["tool", "toolkit"])
def test_exfiltration_refuse(drive, make_kit, session, events, where):
    kit = make_kit(
        approver=ApprovalQueue(), **({"exfiltration": "refuse"} if where == "toolkit" else {})
    )
    read = drive.tool(kit, lambda: "secret", effect="read", reads_private=True)
    browse = drive.tool(kit, lambda: "page", effect="read", untrusted_output=True)
    post = drive.tool(
        kit,
        lambda data: "posted",
        sends_out=True,
        **({"exfiltration": "refuse"} if where == "tool" else {}),
    )
    drive.call(read)
    drive.call(browse)
    refusal = drive.refused(post, "secret")
    assert refusal.code == "exfiltration"
    assert "Tell the user" in refusal.message
    assert events[-1].code == "exfiltration"


@pytest.mark.parametrize("ran", [[], ["private"], ["untrusted"]])
def test_not_before_both_have_happened(drive, session, agent, ran):
    if "private" in ran:
        drive.call(agent.read_crm)
    if "untrusted" in ran:
        drive.call(agent.browse, "https://x.test")
    assert drive.call(agent.post, "https://x.test", "hello") == "posted"


def test_a_tool_that_is_both_kinds_counts_itself(drive, make_kit, session):
    kit = make_kit(exfiltration="refuse")
    browse = drive.tool(kit, lambda: "page", effect="read", untrusted_output=True)
    forward = drive.tool(kit, lambda: "sent", reads_private=True, sends_out=True)
    drive.call(browse)
    assert drive.refused(forward).code == "exfiltration"


def test_a_refused_read_does_not_count(drive, make_kit, session):
    kit = make_kit(exfiltration="refuse")
    read = drive.tool(
        kit, lambda: "secret", effect="read", reads_private=True, authorize=lambda call: False
    )
    browse = drive.tool(kit, lambda: "page", effect="read", untrusted_output=True)
    post = drive.tool(kit, lambda: "posted", sends_out=True)
    assert drive.refused(read).code == "not_authorized"
    drive.call(browse)
    assert drive.call(post) == "posted"


def test_sessions_do_not_share_what_they_have_seen(drive, agent):
    with Session("dana@example.com").active():
        drive.call(agent.read_crm)
    with Session("dana@example.com").active():
        drive.call(agent.browse, "https://x.test")
        assert drive.call(agent.post, "https://x.test", "hello") == "posted"
    with Session("erin@example.com").active():
        assert drive.call(agent.post, "https://x.test", "hello") == "posted"


def test_tools_that_do_not_send_out_are_unaffected(drive, session, agent):
    drive.call(agent.read_crm)
    drive.call(agent.browse, "https://x.test")
    assert drive.call(agent.read_crm) == "customer list"


def test_without_an_approver_it_is_not_configured(drive, make_kit, session):
    kit = make_kit()
    read = drive.tool(kit, lambda: "secret", effect="read", reads_private=True)
    browse = drive.tool(kit, lambda: "page", effect="read", untrusted_output=True)
    post = drive.tool(kit, lambda: "posted", sends_out=True)
    drive.call(read)
    drive.call(browse)
    refusal = drive.refused(post)
    assert refusal.code == "not_configured"
    assert "approv" in refusal.message


def test_modes_are_checked_when_declared(make_kit):
    with pytest.raises(ValueError, match="exfiltration"):
        make_kit(exfiltration="allow")
    with pytest.raises(ValueError, match="exfiltration"):
        make_kit().secured_tool(lambda: None, sends_out=True, exfiltration="off")
    with pytest.raises(ValueError, match="on_untrusted_input"):
        make_kit().secured_tool(lambda: None, on_untrusted_input="allow")
