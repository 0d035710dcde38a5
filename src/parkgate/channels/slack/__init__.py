"""Slack: asks posted as Block Kit messages with a button per option, Cancel and Show
options; clicks and replies in the ask's thread answered through the gateway; every close
shown by updating the message (optional extra ``parkgate[slack]``: ``slack-bolt``).

- :class:`SlackChannel` (outbound): the channel's jobs as Web API calls.
- :func:`register` (inbound): parkgate in your own Bolt app.
- :func:`serve`: what ``parkgate serve`` mounts at ``POST /slack/events`` when
  ``PARKGATE_SLACK_BOT_TOKEN`` and ``PARKGATE_SLACK_SIGNING_SECRET`` are set
  (``PARKGATE_SLACK_API_URL`` points the Web API calls elsewhere, such as a stand-in).
- :func:`sending`: the channel alone from the bot token, for ``parkgate deliver``.
"""

from __future__ import annotations

from parkgate.errors import MissingExtra

try:
    import slack_bolt  # noqa: F401
    import slack_sdk  # noqa: F401
except ModuleNotFoundError as missing:  # pragma: no cover - the extra is installed in dev
    raise MissingExtra(__name__, missing, extra="slack") from None

from parkgate.channels.slack.bolt import SlackEvents, register
from parkgate.channels.slack.channel import NAME, SlackChannel, check_slack_target
from parkgate.channels.slack.serving import (
    ENV_API_URL,
    ENV_BOT_TOKEN,
    ENV_SIGNING_SECRET,
    EVENTS_PATH,
    sending,
    serve,
    slack_app,
)

__all__ = [
    "ENV_API_URL",
    "ENV_BOT_TOKEN",
    "ENV_SIGNING_SECRET",
    "EVENTS_PATH",
    "NAME",
    "SlackChannel",
    "SlackEvents",
    "check_slack_target",
    "register",
    "sending",
    "serve",
    "slack_app",
]
