"""Discord's REST API as the channel calls it: one request is one call to
``{root}/{path}`` with the bot's token (``Authorization: Bot ...``).

The root is ``https://discord.com/api/v10``, or ``PARKGATE_DISCORD_API_URL`` (a proxy, a
stand-in in tests). Calls are made off every request path: by the channel's jobs (in
the deliverer's worker thread, so the client is a blocking one) and by the interactions
endpoint's workers after the interaction was acknowledged.

What an answer means for the job that made the call:

- a 429 (rate limited) is waited out when Discord asks for at most
  :data:`MAX_WAIT_SECONDS` (its ``retry_after``, in seconds, or the ``Retry-After``
  header), then the call is made again; a longer wait raises
  :class:`~parkgate.errors.ChannelRetryLater`, so the job is retried no sooner;
- a 400, 401, 403 or 404 is a refusal no retry changes (a channel that is gone, a
  missing permission, a form Discord does not take):
  :class:`~parkgate.errors.ChannelJobFailed`, and the job is given up at once, kept as
  failed with Discord's code and message (a code the caller expects, ``tolerate``, is
  answered ``None`` instead);
- anything else (Discord away, a 5xx, a timeout) raises :class:`ConnectionError`, and
  the job is retried with backoff.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import httpx

from parkgate.errors import ChannelJobFailed, ChannelRetryLater

#: The public REST API's root (version 10).
DEFAULT_ROOT = "https://discord.com/api/v10"
#: One call's deadline, in seconds (connect, send, response).
CALL_TIMEOUT = 10.0
#: The longest 429 wait made inside a call, in seconds; a longer one retries the job later.
MAX_WAIT_SECONDS = 5.0
#: How many 429s one call waits out before it leaves the wait to the job's retry.
MAX_WAITS = 3
#: The statuses no retry changes.
PERMANENT_STATUSES = frozenset({400, 401, 403, 404})
#: Discord asks every bot to name itself so (``DiscordBot ($url, $version)``).
USER_AGENT = "DiscordBot (https://github.com/parkgate/parkgate, 0.1)"


class DiscordApi:
    """Calls Discord's REST API as one bot.

    Args:
        token: The bot's token.
        root: The API's root URL (no trailing ``/`` needed).
        client: The HTTP client to use; one of its own (closed by :meth:`close`) by default.
        sleep: How a 429's wait is waited (tests pass their own).
    """

    def __init__(
        self,
        token: str,
        root: str = DEFAULT_ROOT,
        client: httpx.Client | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._root = root.rstrip("/")
        self._headers = {"Authorization": f"Bot {token}", "User-Agent": USER_AGENT}
        self._client = client or httpx.Client(timeout=CALL_TIMEOUT, follow_redirects=False)
        self._owns_client = client is None
        self._sleep = sleep

    def call(
        self,
        method: str,
        path: str,
        body: Mapping[str, Any] | None = None,
        what: str | None = None,
        tolerate: frozenset[int] = frozenset(),
    ) -> Any:
        """Make one call and return its JSON answer (``None`` for an empty one).

        Args:
            method: The HTTP method (``POST``, ``PATCH``).
            path: The path under the root, such as ``/channels/123/messages``.
            body: The JSON body.
            what: How an error names the call (default ``method path``; a followup's path
                holds the interaction's token, which is never logged).
            tolerate: Discord's error codes that are an answer here, not a failure
                (a thread that exists already).

        Returns:
            The answer's JSON; ``None`` for a refusal with a code in ``tolerate``.

        Raises:
            ChannelJobFailed: A refusal no retry changes.
            ChannelRetryLater: Rate limited for longer than :data:`MAX_WAIT_SECONDS`.
            ConnectionError: The call failed, and may succeed later.
        """
        named = what or f"{method} {path}"
        for waits in range(MAX_WAITS + 1):
            try:
                response = self._client.request(
                    method, self._root + path, json=dict(body) if body is not None else None, headers=self._headers
                )
            except httpx.HTTPError as error:
                raise ConnectionError(f"{named}: {type(error).__name__}: {error}") from error
            if response.status_code != 429:
                return _answer(named, response, tolerate)
            wait = _retry_after(response)
            if wait > MAX_WAIT_SECONDS or waits == MAX_WAITS:
                raise ChannelRetryLater(f"{named}: rate limited for {wait:g} s", wait)
            self._sleep(wait)
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    def close(self) -> None:
        """Close the HTTP client, when it is this object's own."""
        if self._owns_client:
            self._client.close()


def _retry_after(response: httpx.Response) -> float:
    """The seconds a 429 asks to wait: its JSON ``retry_after``, else ``Retry-After``, else 1."""
    try:
        value = response.json().get("retry_after")
    except (ValueError, AttributeError):
        value = None
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        try:
            value = float(response.headers.get("Retry-After", "1"))
        except ValueError:
            value = 1.0
    return max(0.0, float(value))


def _answer(named: str, response: httpx.Response, tolerate: frozenset[int]) -> Any:
    """A call's JSON answer (``None`` for a refusal ``tolerate`` names); raise its error when it is one."""
    status = response.status_code
    try:
        answer = response.json() if response.content else None
    except ValueError:
        answer = None
    if 200 <= status < 300:
        return answer
    code = answer.get("code") if isinstance(answer, dict) else None
    message = str(answer.get("message", "")) if isinstance(answer, dict) else ""
    if status in PERMANENT_STATUSES:
        if code in tolerate:
            return None
        raise ChannelJobFailed(f"Discord refused {named}: HTTP {status}, code {code}: {message or '-'}")
    raise ConnectionError(f"{named}: HTTP {status} {message}".rstrip())
