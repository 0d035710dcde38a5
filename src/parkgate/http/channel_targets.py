"""Where ``POST /v1/asks`` posts an ask on a channel whose target holds no text: the
bodies of those channel fields (:data:`parkgate.http.models.CHANNEL_FIELDS`)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field


class TelegramTargetIn(BaseModel):
    """Where ``POST /v1/asks`` posts the ask on Telegram: a chat, and a forum topic of it."""

    model_config = ConfigDict(strict=True, extra="forbid")

    chat_id: int = Field(description="The chat's id (a group's is negative).")
    message_thread_id: Annotated[int, Field(ge=1)] | None = Field(default=None, description="The forum topic.")
