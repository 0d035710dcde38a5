"""Slack as parkgate knows it: the channel's one declaration (:data:`SPEC`, registered on
import), its name and its settings. Importing it imports no Slack library."""

from __future__ import annotations

from parkgate.channels.registry import ChannelSpec, register

#: The channel's name: the key of its targets (``post_to``), jobs and ask JSON field.
NAME = "slack"
ENV_BOT_TOKEN = "PARKGATE_SLACK_BOT_TOKEN"
ENV_SIGNING_SECRET = "PARKGATE_SLACK_SIGNING_SECRET"
ENV_API_URL = "PARKGATE_SLACK_API_URL"

SPEC = register(
    ChannelSpec(
        name=NAME,
        title="Slack",
        settings={
            ENV_BOT_TOKEN: "the bot token (xoxb-...): set, parkgate serve serves Slack",
            ENV_SIGNING_SECRET: "the app's signing secret, which every request from Slack is verified with",
            ENV_API_URL: "the Web API's base URL (default https://slack.com/api/; a stand-in in tests)",
        },
        switch=ENV_BOT_TOKEN,
        target="parkgate.channels.slack.models:SlackTarget",
        target_id="channel",
        location="parkgate.channels.slack.models:SlackPost",
        serve="parkgate.channels.slack.serving:serve",
        sending="parkgate.channels.slack.serving:sending",
        # An ask posted in a thread keeps its thread_ts; one that started a thread is that thread, its ts.
        thread=("thread_ts", ("thread_ts", "ts")),
        extra="slack",
        package="parkgate.channels.slack",
    )
)
