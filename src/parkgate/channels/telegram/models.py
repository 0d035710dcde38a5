"""Where a Telegram ask is posted, and where its post lives, as ``POST /v1/asks`` takes the
one and an ask's JSON shows the other (the field ``telegram``)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field


class TelegramTarget(BaseModel):
    """Where ``POST /v1/asks`` posts the ask on Telegram: a chat, and a forum topic of it."""

    chat_id: int = Field(description="The chat's id (a group's is negative).")
    message_thread_id: Annotated[int, Field(ge=1)] | None = Field(default=None, description="The forum topic.")


class TelegramPost(BaseModel):
    """Where the ask's message is: its chat and message id (and the forum topic)."""

    chat_id: int
    message_id: int
    message_thread_id: int | None = Field(default=None, description="The forum topic, for an ask posted in one.")
