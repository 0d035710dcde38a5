"""Where ``POST /v1/asks`` posts an ask on a channel whose target holds no text: the
bodies of those channel fields (:data:`CHANNEL_FIELDS`), and the target a body's one channel field names."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from parkgate.channels.base import ChannelTarget
from parkgate.errors import InputError


class TelegramTargetIn(BaseModel):
    """Where ``POST /v1/asks`` posts the ask on Telegram: a chat, and a forum topic of it."""

    model_config = ConfigDict(strict=True, extra="forbid")

    chat_id: int = Field(description="The chat's id (a group's is negative).")
    message_thread_id: Annotated[int, Field(ge=1)] | None = Field(default=None, description="The forum topic.")


#: The channel fields of ``POST /v1/asks``: each a channel's name (:mod:`parkgate.channels`).
CHANNEL_FIELDS = ("slack", "telegram")


def channel_target_of(body: BaseModel) -> ChannelTarget | None:
    """The :class:`~parkgate.channels.ChannelTarget` of the one channel field ``body`` gives."""
    given = [(name, value) for name in CHANNEL_FIELDS if isinstance(value := getattr(body, name, None), BaseModel)]
    if len(given) > 1:
        raise InputError(f"an ask is posted to one channel, not {' and '.join(name for name, _ in given)}")
    return ChannelTarget(given[0][0], given[0][1].model_dump(exclude_none=True)) if given else None
