"""Where ``POST /v1/asks`` posts an ask on a channel whose target holds no text: the
bodies of those channel fields (:data:`CHANNEL_FIELDS`), the target a body's one channel
field names, and whether the caller's token may post there (its tokens-file ``channels``)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from parkgate.channels.base import ChannelTarget
from parkgate.errors import InputError
from parkgate.http.tokens import Caller


class TelegramTargetIn(BaseModel):
    """Where ``POST /v1/asks`` posts the ask on Telegram: a chat, and a forum topic of it."""

    model_config = ConfigDict(strict=True, extra="forbid")

    chat_id: int = Field(description="The chat's id (a group's is negative).")
    message_thread_id: Annotated[int, Field(ge=1)] | None = Field(default=None, description="The forum topic.")


#: The channel fields of ``POST /v1/asks``: each a channel's name (:mod:`parkgate.channels`).
CHANNEL_FIELDS = ("slack", "telegram")
#: Per channel field: the field of its target a token's ``channels`` patterns are matched
#: on, after ``<channel>:`` (a Slack channel id, a Telegram chat id).
TARGET_ID_FIELDS = {"slack": "channel", "telegram": "chat_id"}


def channel_target_of(body: BaseModel) -> ChannelTarget | None:
    """The :class:`~parkgate.channels.ChannelTarget` of the one channel field ``body`` gives."""
    given = [(name, value) for name in CHANNEL_FIELDS if isinstance(value := getattr(body, name, None), BaseModel)]
    if len(given) > 1:
        raise InputError(f"an ask is posted to one channel, not {' and '.join(name for name, _ in given)}")
    return ChannelTarget(given[0][0], given[0][1].model_dump(exclude_none=True)) if given else None


def target_name(target: ChannelTarget) -> str:
    """``target`` as a token's ``channels`` patterns read it: ``"slack:C0OPS"``, ``"telegram:-100777"``."""
    return f"{target.channel}:{target.where.get(TARGET_ID_FIELDS.get(target.channel, ''), '')}"


def channel_refusal(caller: Caller, target: ChannelTarget | None) -> str | None:
    """Why ``caller`` may not post to ``target`` (the 403's detail), or ``None`` when it may.

    A named token posts only where its table's ``channels`` patterns allow; the single
    token and a server without tokens post anywhere (:meth:`Caller.may_post_to`).
    """
    if target is None:
        return None
    name = target_name(target)
    if caller.may_post_to(name):
        return None
    allowed = ", ".join(caller.channels or ()) or "no channels key, so no channel at all"
    return (
        f"the token {caller.name!r} may not post to {name}: its table in the tokens file allows "
        f"only the targets its channels key matches ({allowed}); add a pattern that matches {name} there"
    )
