"""Where a Slack ask is posted, and where its post lives, as ``POST /v1/asks`` takes the
one and an ask's JSON shows the other (the field ``slack``)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field


class SlackTarget(BaseModel):
    """Where ``POST /v1/asks`` posts the ask on Slack: a channel, and a thread to post in
    (a new thread, under the ask's own message, when ``thread_ts`` is left out)."""

    channel: Annotated[str, Field(min_length=1, max_length=80)] = Field(description="A channel id, such as C123.")
    thread_ts: Annotated[str, Field(min_length=1, max_length=40)] | None = Field(
        default=None, description="The ts of the message whose thread the ask is posted in."
    )


class SlackPost(BaseModel):
    """Where the ask's message is: its channel and ts (and the thread it was posted in)."""

    channel: str
    ts: str
    thread_ts: str | None = Field(default=None, description="The thread's ts, for an ask posted in a thread.")
