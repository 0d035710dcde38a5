"""Where a Discord ask is posted, and where its post lives, as ``POST /v1/asks`` takes the
one and an ask's JSON shows the other (the field ``discord``)."""

from __future__ import annotations

from pydantic import BaseModel, Field

#: A Discord id (a snowflake): a whole number, sent as a string.
SNOWFLAKE = r"^[0-9]{1,20}$"


class DiscordTarget(BaseModel):
    """Where ``POST /v1/asks`` posts the ask on Discord: a channel (a thread is one too)."""

    channel_id: str = Field(pattern=SNOWFLAKE, description="The channel's id, such as 1234567890123456789.")


class DiscordPost(BaseModel):
    """Where the ask's message is: its channel and message ids."""

    channel_id: str
    message_id: str
