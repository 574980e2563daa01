"""An approval case driven through an adapter in its pause style (``Approvals``), and the
call that needs a person (``ASKS``, ``DELETE_PAY_1``)."""

from __future__ import annotations

import asyncio
import secrets
from typing import TYPE_CHECKING, Any

from toolpass import ApprovalQueue, Session, Toolkit
from toolpass.adapting import Answer, Traits

from pytest_toolpass.kit_tools import DANA, DELETE, KitTools
from pytest_toolpass.transcript import Call, Transcript

if TYPE_CHECKING:
    from pytest_toolpass.conformance import AdapterConformance

#: A call that needs a person: it declares that it sends out data it read (private and
#: untrusted), so the exfiltration check asks for approval every time.
ASKS = Traits(
    effect="destructive", sends_out=True, reads_private=True, untrusted_output=True, rule=DELETE
)
DELETE_PAY_1 = Call("delete_issue", {"key": "PAY-1"})


class Approvals:
    """One approval case driven through an adapter, in its pause style: ``start`` runs the
    call until it waits for a person; ``answer`` decides and goes on. A native adapter's run
    is resumed with the answer; a refusing adapter's answer is recorded in the queue (as the
    approvals page does) and the model retries the call."""

    def __init__(
        self,
        suite: AdapterConformance,
        mode: str,
        queue: ApprovalQueue,
        engine: Any,
        options: dict[str, Any],
    ) -> None:
        self.suite, self.mode, self.queue, self.engine = suite, mode, queue, engine
        conversation = f"conversation-{secrets.token_hex(6)}"  # one, over every agent built
        self.options = {"session": lambda _: Session(DANA, id=conversation), **options}
        self.tools = KitTools()
        self.call = DELETE_PAY_1

    def _agent(self, script: list[Call]) -> Any:
        kit = Toolkit(approver=self.queue, audit=[])
        return self.suite.build(
            self.engine,
            {"delete_issue": ASKS},
            strict=False,
            tools=self.tools,
            script=script,
            toolkit=kit,
            **self.options,
        )

    def start(self, call: Call) -> Transcript:
        self.call = call
        agent = self._agent([call])
        if self.mode == "sync":
            return self.suite.run(agent, DANA)
        return asyncio.run(self.suite.arun(agent, DANA))

    def answer(self, paused: Transcript, answer: Answer | None, request: Any) -> Transcript:
        suite = self.suite
        if suite.pauses == "native":
            assert answer is not None
            agent = self._agent([])  # built anew, as after a restart; the call was made
            if self.mode == "sync":
                return suite.resume(agent, paused, answer)
            return asyncio.run(suite.aresume(agent, paused, answer))
        if answer is not None and request is not None:
            _decide(self.queue, request.id, answer)
        agent = self._agent([self.call])  # the model's retry of the same call
        if self.mode == "sync":
            return suite.run(agent, DANA)
        return asyncio.run(suite.arun(agent, DANA))


def _decide(queue: ApprovalQueue, request_id: str, answer: Answer) -> None:
    """A person's answer, as the approvals page records it."""
    if answer.decision == "approve":
        queue.approve(request_id, by=answer.by)
    elif answer.decision == "edit":
        assert answer.arguments is not None
        queue.edit(request_id, by=answer.by, arguments=answer.arguments)
    else:
        queue.deny(request_id, by=answer.by, reason=answer.reason)
