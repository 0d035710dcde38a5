"""Slack: asks posted as Block Kit messages with a button per option, Cancel and Show
options; clicks and replies in the ask's thread answered through the gateway; every close
shown by updating the message (optional extra ``parkgate[slack]``: ``slack-bolt``).

- :data:`SPEC`: the channel's declaration (:mod:`parkgate.channels.registry`), read
  without the extra.
- :class:`SlackChannel` (outbound): the channel's jobs as Web API calls.
- :func:`register` (inbound): parkgate in your own Bolt app.
- :func:`serve`: what ``parkgate serve`` mounts at ``POST /slack/events`` when
  ``PARKGATE_SLACK_BOT_TOKEN`` and ``PARKGATE_SLACK_SIGNING_SECRET`` are set
  (``PARKGATE_SLACK_API_URL`` points the Web API calls elsewhere, such as a stand-in).
- :func:`sending`: the channel alone from the bot token, for ``parkgate deliver``.

Importing the package imports its declaration alone; each other name is imported on
first use, with the Slack libraries (:class:`~parkgate.errors.MissingExtra` when the
extra is not installed).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from parkgate.channels.slack.spec import ENV_API_URL, ENV_BOT_TOKEN, ENV_SIGNING_SECRET, NAME, SPEC

if TYPE_CHECKING:
    from parkgate.channels.slack.bolt import SlackEvents, register
    from parkgate.channels.slack.channel import SlackChannel, check_slack_target
    from parkgate.channels.slack.serving import EVENTS_PATH, sending, serve, slack_app

#: Where each name imported on first use is.
_LAZY = {
    "SlackEvents": "parkgate.channels.slack.bolt:SlackEvents",
    "register": "parkgate.channels.slack.bolt:register",
    "SlackChannel": "parkgate.channels.slack.channel:SlackChannel",
    "check_slack_target": "parkgate.channels.slack.channel:check_slack_target",
    "EVENTS_PATH": "parkgate.channels.slack.serving:EVENTS_PATH",
    "sending": "parkgate.channels.slack.serving:sending",
    "serve": "parkgate.channels.slack.serving:serve",
    "slack_app": "parkgate.channels.slack.serving:slack_app",
}


#: A name of the package that needs its extra, imported on first use.
__getattr__ = SPEC.lazy(__name__, _LAZY)


__all__ = [
    "ENV_API_URL",
    "ENV_BOT_TOKEN",
    "ENV_SIGNING_SECRET",
    "EVENTS_PATH",
    "NAME",
    "SPEC",
    "SlackChannel",
    "SlackEvents",
    "check_slack_target",
    "register",
    "sending",
    "serve",
    "slack_app",
]
