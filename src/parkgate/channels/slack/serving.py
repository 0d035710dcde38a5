"""``POST /slack/events`` in ``parkgate serve``: the Events API and interactivity on one
URL, verified with Slack's signing secret before anything is read or written, then
dispatched to a Bolt app (:func:`slack_app`) on a worker thread.

A bad signature, or a timestamp that is not whole seconds or is more than 5 minutes away,
is a 401; a body that is not Slack's (not JSON, or a form without a JSON ``payload``) is a
400; both change nothing, and neither logs more than a line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

import anyio
from slack_bolt import App
from slack_bolt.adapter.starlette.handler import to_bolt_request, to_starlette_response
from slack_sdk import WebClient
from slack_sdk.signature import SignatureVerifier
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from parkgate.channels.serving import ServedChannel
from parkgate.channels.slack.bolt import register
from parkgate.channels.slack.channel import API_TIMEOUT_SECONDS, SlackChannel
from parkgate.channels.slack.spec import ENV_API_URL, ENV_BOT_TOKEN, ENV_SIGNING_SECRET, NAME
from parkgate.errors import BadRequest, SettingsError, Unauthorized

if TYPE_CHECKING:
    from parkgate.gateway import Gateway

#: Where Slack sends events and clicks (the app manifest's request URLs).
EVENTS_PATH = "/slack/events"
DEFAULT_API_URL = "https://slack.com/api/"
#: A request's ``X-Slack-Request-Timestamp``: whole seconds since the epoch, as Slack sends it.
TIMESTAMP = re.compile(r"[0-9]{1,12}")


def web_client(token: str, api_url: str = DEFAULT_API_URL) -> WebClient:
    """A Web API client for the bot token, at ``api_url`` (a stand-in in tests)."""
    client = WebClient(token=token, base_url=api_url if api_url.endswith("/") else api_url + "/")
    client.timeout = API_TIMEOUT_SECONDS
    return client


def sending(environ: Mapping[str, str]) -> SlackChannel:
    """The channel alone, for sending (``parkgate deliver``): the bot token is all it needs.

    Args:
        environ: The environment: the bot token and the Web API's URL.

    Returns:
        The channel, with no events route.

    Raises:
        SettingsError: The bot token is missing.
    """
    token = environ.get(ENV_BOT_TOKEN, "").strip()
    if not token:
        raise SettingsError(f"Slack needs {ENV_BOT_TOKEN}")
    return SlackChannel(web_client(token, environ.get(ENV_API_URL, "").strip() or DEFAULT_API_URL))


def slack_app(gateway: Gateway, token: str, signing_secret: str, api_url: str = DEFAULT_API_URL) -> App:
    """A Bolt app that answers parkgate's asks and acknowledges every other event.

    Args:
        gateway: The gateway the asks are parked in (the Slack channel is added to it).
        token: The bot token (``xoxb-...``).
        signing_secret: The app's signing secret.
        api_url: The Web API's base URL (a stand-in in tests).

    Returns:
        The app, with :func:`~parkgate.channels.slack.register` applied.
    """
    client = web_client(token, api_url)
    # The client carries the token: Bolt takes it from there (given both, Bolt warns at every start).
    app = App(signing_secret=signing_secret, client=client, token_verification_enabled=False)
    register(app, gateway, SlackChannel(client))

    @app.event("message")
    def ignore_message() -> None:
        """A message where nothing is parked: acknowledged, and left alone."""

    return app


def _malformed(body: bytes, content_type: str) -> str | None:
    """Why ``body`` is not an event or a click Slack sends, or ``None``."""
    try:
        if content_type.startswith("application/x-www-form-urlencoded"):
            form = parse_qs(body.decode("utf-8"), strict_parsing=True)
            payload = json.loads(form["payload"][0]) if "payload" in form else None
            if "payload" in form and not isinstance(payload, dict):
                return "payload is not a JSON object"
            return None if payload is not None or "command" in form else "a form without a payload"
        value = json.loads(body)
    except (ValueError, KeyError, UnicodeDecodeError) as error:
        return f"the body does not parse: {error}"
    return None if isinstance(value, dict) and isinstance(value.get("type"), str) else "not a Slack event"


def _one_timestamp(request: Request) -> bool:
    """Whether the request has one ``X-Slack-Request-Timestamp`` and one signature, and the
    timestamp is whole seconds (what the verifiers, ours and Bolt's, read as a number)."""
    timestamps = request.headers.getlist("x-slack-request-timestamp")
    signatures = request.headers.getlist("x-slack-signature")
    return len(timestamps) == 1 and len(signatures) == 1 and TIMESTAMP.fullmatch(timestamps[0]) is not None


class SlackEndpoint:
    """The ``POST /slack/events`` route: verify, check the body's shape, dispatch to Bolt."""

    def __init__(self, app: App, signing_secret: str) -> None:
        self.app = app
        self.verifier = SignatureVerifier(signing_secret)

    async def handle(self, request: Request) -> Response:
        """One request from Slack: 401 unsigned, 400 malformed, else what Bolt answers."""
        body = await request.body()
        headers: dict[str, Any] = dict(request.headers)
        if not _one_timestamp(request) or not self.verifier.is_valid_request(body, headers):
            detail = "the request is not signed with this app's signing secret, or its timestamp is too old"
            return JSONResponse(
                {"error": Unauthorized.wire_code, "detail": detail}, status_code=Unauthorized.http_status
            )
        problem = _malformed(body, headers.get("content-type", ""))
        if problem is not None:
            return JSONResponse({"error": BadRequest.wire_code, "detail": problem}, status_code=BadRequest.http_status)
        bolt_request = to_bolt_request(request, body)
        answer = await anyio.to_thread.run_sync(self.app.dispatch, bolt_request)
        return to_starlette_response(answer)


def serve(gateway: Gateway, environ: Mapping[str, str]) -> ServedChannel:
    """The Slack channel and its route, from ``PARKGATE_SLACK_*``.

    Args:
        gateway: The gateway the asks are parked in.
        environ: The environment: the bot token, the signing secret, the Web API's URL.

    Returns:
        The channel and ``POST /slack/events``.

    Raises:
        SettingsError: The signing secret is missing.
    """
    token = environ.get(ENV_BOT_TOKEN, "").strip()
    secret = environ.get(ENV_SIGNING_SECRET, "").strip()
    if not token or not secret:
        raise SettingsError(f"Slack needs both {ENV_BOT_TOKEN} and {ENV_SIGNING_SECRET}")
    app = slack_app(gateway, token, secret, environ.get(ENV_API_URL, "").strip() or DEFAULT_API_URL)
    route = Route(EVENTS_PATH, SlackEndpoint(app, secret).handle, methods=["POST"])
    return ServedChannel(gateway.channels[NAME], [route], frozenset({EVENTS_PATH}))
