"""The Slack channel's outbound side: its jobs as Web API calls (``chat.postMessage``,
``chat.update``, ``chat.postEphemeral``) through ``slack_sdk``'s :class:`WebClient`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from parkgate.channels.base import ChannelReply, Posted, SeenNames, not_yours_reply
from parkgate.channels.slack.blocks import about_text, ask_blocks, closed_blocks, closed_line, question_text, reply_text
from parkgate.channels.slack.spec import NAME
from parkgate.core.kinds import ReplyKind
from parkgate.core.model import Ask
from parkgate.errors import ChannelJobFailed, InputError

#: Slack's errors that no retry mends: the job is given up at once.
PERMANENT_ERRORS = frozenset(
    {
        "channel_not_found",
        "not_in_channel",
        "is_archived",
        "invalid_blocks",
        "msg_too_long",
        "message_not_found",
        "cant_update_message",
        "invalid_auth",
        "account_inactive",
        "user_not_in_channel",
    }
)
#: Seconds a Web API call may take before it is retried later.
API_TIMEOUT_SECONDS = 10


def check_slack_target(where: Mapping[str, Any]) -> dict[str, str]:
    """A Slack target: ``{"channel": "C123", "thread_ts": "..."}`` (``thread_ts`` optional).

    Raises:
        InputError: ``channel`` is missing or either is not a short string.
    """
    channel, thread_ts = where.get("channel"), where.get("thread_ts")
    if not isinstance(channel, str) or not channel.strip() or len(channel) > 80:
        raise InputError("slack.channel must be a Slack channel id, such as 'C123'")
    if thread_ts is not None and (not isinstance(thread_ts, str) or not thread_ts.strip() or len(thread_ts) > 40):
        raise InputError("slack.thread_ts must be a message's ts, such as '1712345678.000100'")
    unknown = sorted(set(where) - {"channel", "thread_ts"})
    if unknown:
        raise InputError(f"slack takes channel and thread_ts, not {unknown[0]!r}")
    return {"channel": channel} if thread_ts is None else {"channel": channel, "thread_ts": thread_ts}


def thread_key(channel: str, thread_ts: str) -> str:
    """The key a Slack thread's replies are routed by: ``C123:1712345678.000100``."""
    return f"{channel}:{thread_ts}"


class SlackChannel:
    """Posts asks to Slack and keeps them up to date.

    Args:
        client: The Web API client, with the bot token (and ``base_url`` for a stand-in).
    """

    name = NAME

    def __init__(self, client: WebClient) -> None:
        self.client = client
        #: The ``@username`` of each person whose click this process has read.
        self.names = SeenNames()

    def known_names(self) -> dict[str, str]:
        """The ``@username`` of each person whose click this process has read
        (:class:`~parkgate.channels.base.KnowsNames`)."""
        return self.names.handles()

    def post(self, ask: Ask, target: Mapping[str, Any]) -> Posted:
        """``chat.postMessage``: the ask with its buttons, in a new thread or in ``thread_ts``'s."""
        where = check_slack_target(target)
        answer = self._call(
            self.client.chat_postMessage,
            channel=where["channel"],
            thread_ts=where.get("thread_ts"),
            text=f"{question_text(ask)}\n{about_text(ask)}",
            blocks=ask_blocks(ask),
        )
        channel, ts = str(answer["channel"]), str(answer["ts"])
        location = {"channel": channel, "ts": ts}
        if "thread_ts" in where:
            location["thread_ts"] = where["thread_ts"]
        return Posted(location, thread_key(channel, where.get("thread_ts", ts)))

    def closed(self, ask: Ask, location: Mapping[str, Any]) -> None:
        """``chat.update``: the message says how the ask ended; its buttons are gone."""
        self._call(
            self.client.chat_update,
            channel=location["channel"],
            ts=location["ts"],
            text=closed_line(ask),
            blocks=closed_blocks(ask),
        )

    def reply(self, ask: Ask, location: Mapping[str, Any], reply: ChannelReply) -> None:
        """The reply in the ask's thread; ``not_yours`` only to the person who clicked or wrote."""
        thread_ts = location.get("thread_ts", location["ts"])
        if reply.kind is ReplyKind.NOT_YOURS and reply.to:
            self.notify(location, reply.to, reply_text(not_yours_reply(ask, reply.to)))
            return
        text = reply_text(reply, ask)
        self._call(self.client.chat_postMessage, channel=location["channel"], thread_ts=thread_ts, text=text)

    def notify(self, location: Mapping[str, Any], user: str, text: str) -> None:
        """``chat.postEphemeral``: ``text`` (escaped already, as :mod:`~parkgate.channels.slack.blocks`
        builds every line) shown to ``user`` alone, in the ask's thread."""
        thread_ts = location.get("thread_ts", location["ts"])
        self._call(
            self.client.chat_postEphemeral, channel=location["channel"], user=user, text=text, thread_ts=thread_ts
        )

    @staticmethod
    def _call(method: Any, **arguments: Any) -> Any:
        """One Web API call; an error no retry mends gives the job up (:class:`ChannelJobFailed`)."""
        try:
            return method(**{name: value for name, value in arguments.items() if value is not None})
        except SlackApiError as error:
            code = str(error.response.get("error", "")) if error.response is not None else ""
            if code in PERMANENT_ERRORS:
                raise ChannelJobFailed(f"Slack refused {method.__name__}: {code}") from None
            raise
