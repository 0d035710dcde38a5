"""A deploy approval in Slack, from your own Bolt app: parkgate posts the question with a
button per option, Cancel and Show options, takes the click (or a reply in the thread),
and updates the message when it closes: answered, dropped, or expired.

Run it (the Slack app is set up as docs/channels/slack.md says; its request URL reaches
port 3000 at /slack/events)::

    export PARKGATE_SLACK_BOT_TOKEN=xoxb-...  PARKGATE_SLACK_SIGNING_SECRET=...
    python examples/slack_approval.py C0123456789

It prints the ask as it closes. Without a Slack workspace, tests/channels/test_slack_example.py
runs the same code against a local stand-in of Slack's Web API.
"""

from __future__ import annotations

import os
import sys
import threading

from slack_bolt import App
from slack_sdk import WebClient

from parkgate import Ask, ChannelTarget, Gateway
from parkgate.channels.slack import register

#: How long the approval stays open before it expires (and the message says so).
TTL_SECONDS = 15 * 60


def build_app(gateway: Gateway, token: str, signing_secret: str, api_url: str = "https://slack.com/api/") -> App:
    """Your Bolt app, with parkgate registered: its buttons and its threads' replies go to ``gateway``."""
    app = App(
        token=token,
        signing_secret=signing_secret,
        client=WebClient(token=token, base_url=api_url),
        token_verification_enabled=False,
    )

    @app.event("message")
    def everything_else(event: dict[str, object]) -> None:
        """Your own listener: it still gets every message where nothing is parked."""

    register(app, gateway)
    return app


def request_approval(gateway: Gateway, channel: str, timeout: float = TTL_SECONDS + 5) -> Ask:
    """Post the approval to ``channel`` and wait until it closes (answered, cancelled or expired)."""
    asked = gateway.ask(
        f"deploy-approval-{channel}",
        "Deploy build 1042 to production?",
        ["Deploy", "Hold"],
        ttl=TTL_SECONDS,
        replace=True,
        post_to=ChannelTarget("slack", {"channel": channel}),
    )
    assert asked.ask_id is not None
    return gateway.wait(asked.ask_id, timeout)


def main() -> None:
    channel = sys.argv[1] if len(sys.argv) > 1 else os.environ["SLACK_CHANNEL"]
    token, secret = os.environ["PARKGATE_SLACK_BOT_TOKEN"], os.environ["PARKGATE_SLACK_SIGNING_SECRET"]
    # deliver=True: a deliverer thread posts the ask, updates it on close, and expires it on time.
    with Gateway("sqlite:///slack-approvals.db", deliver=True) as gateway:
        app = build_app(gateway, token, secret)
        waiter = threading.Thread(target=lambda: print(request_approval(gateway, channel)), daemon=True)
        waiter.start()
        app.start(port=3000, path="/slack/events")


if __name__ == "__main__":
    main()
