"""A tool that takes the workflow ``Context``. LlamaIndex finds that parameter by comparing
its annotation with ``Context`` itself, so this module does not postpone annotations."""

from typing import Any

from llama_index.core.tools import FunctionTool
from llama_index.core.workflow import Context


def delete_issue_with_context(ran: list[tuple[str, str]]) -> FunctionTool:
    async def delete_issue(ctx: Context, key: str) -> str:  # type: ignore[type-arg]
        """Delete an issue (a tool that takes the workflow context)."""
        ran.append(("delete_issue", key))
        user: Any = await ctx.store.get("user_id")
        return f"deleted {key} for {user}"

    return FunctionTool.from_defaults(delete_issue)
