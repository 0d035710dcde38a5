"""The LangChain agent the ``HumanInTheLoopMiddleware`` tests review: a fake chat model
from ``langchain_core`` that emits real tool calls, and the middleware in either mode."""

from __future__ import annotations

from typing import Any, Literal

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool


class ToolCallingModel(GenericFakeChatModel):
    """The fake chat model, able to take tools (it answers from its script whatever they are)."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ToolCallingModel:
        return self


def scripted_model(calls: list[dict[str, Any]]) -> ToolCallingModel:
    """A model that asks for ``calls``, then sums up with "Done."."""
    return ToolCallingModel(messages=iter([AIMessage(content="", tool_calls=calls), AIMessage(content="Done.")]))


class Agent:
    """An agent whose model asks to send an email and delete a file, then sums up."""

    def __init__(
        self,
        checkpointer: Any,
        config: RunnableConfig,
        mode: Literal["batched", "per_call"] = "batched",
        more: tuple[Any, ...] = (),
    ) -> None:
        self.ran: list[str] = []
        self.config = config

        @tool
        def send_email(to: str, body: str) -> str:
            """Send an email."""
            self.ran.append(f"send_email {to}")
            return f"sent to {to}"

        @tool
        def delete_file(path: str) -> str:
            """Delete a file."""
            self.ran.append(f"delete_file {path}")
            return f"deleted {path}"

        calls = [
            {"name": "send_email", "args": {"to": "ops@example.com", "body": "Release 1.4"}, "id": "call-1"},
            {"name": "delete_file", "args": {"path": "/tmp/report.txt"}, "id": "call-2"},
        ]
        review = HumanInTheLoopMiddleware(
            interrupt_on={
                "send_email": {"allowed_decisions": ["approve", "edit", "reject", "respond"]},
                "delete_file": {"allowed_decisions": ["approve", "reject"], "description": "Deleting is forever."},
            },
            interrupt_mode=mode,
        )
        self.graph = create_agent(
            scripted_model(calls),
            tools=[send_email, delete_file],
            middleware=[review, *more],  # ``more``: middleware beside the review (ApprovedBy)
            checkpointer=checkpointer,
            name="ops",
        )

    def tool_messages(self) -> list[ToolMessage]:
        messages = self.graph.get_state(self.config).values["messages"]
        return [message for message in messages if isinstance(message, ToolMessage)]
