"""The Bot API client: one method call is one POST to ``{root}/bot{token}/{method}``.

The root is ``https://api.telegram.org`` or a self-hosted Bot API server's (a local
stand-in in tests). Calls are made by parkgate's channel jobs (in the deliverer's worker
thread, so the client is a blocking one), never while a reply is being decided, so a
slow or failing Bot API delays no person and loses no update. A call that may succeed
later (the Bot API away, a 429, a 5xx) raises :class:`ConnectionError`, and the job is
retried with backoff; a refusal no retry can change (a 400, 401, 403 or 404: a chat that is
gone, a bot that was removed) raises :class:`~parkgate.errors.ChannelJobFailed`, and the
job is given up at once, kept with the Bot API's description.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from parkgate.errors import ChannelJobFailed

#: The public Bot API's root.
DEFAULT_ROOT = "https://api.telegram.org"
#: One call's deadline, in seconds (connect, send, response).
CALL_TIMEOUT = 10.0
#: A long poll's wait on ``getUpdates``, in seconds; its call's deadline is this plus :data:`CALL_TIMEOUT`.
POLL_SECONDS = 30
#: The Bot API's error codes that no retry changes (a bad request, a bad token, a chat gone or forbidden).
PERMANENT_CODES = frozenset({400, 401, 403, 404})
#: What the Bot API answers when an edit would change nothing: the message is already as wanted.
NOT_MODIFIED = "message is not modified"


class BotApi:
    """Calls one bot's Bot API methods.

    Args:
        token: The bot's token from BotFather.
        root: The Bot API server's root URL, without ``/bot``.
        client: The HTTP client to use; one of its own (closed by :meth:`close`) by default.
    """

    def __init__(self, token: str, root: str = DEFAULT_ROOT, client: httpx.Client | None = None) -> None:
        self._base = f"{root.rstrip('/')}/bot{token}/"
        self._client = client or httpx.Client(timeout=CALL_TIMEOUT, follow_redirects=False)
        self._owns_client = client is None

    def call(self, method: str, params: Mapping[str, Any], timeout: float = CALL_TIMEOUT) -> Any:
        """Call ``method`` with ``params`` (sent as JSON) and return its ``result``.

        Args:
            method: The Bot API method, such as ``sendMessage``.
            params: Its parameters.
            timeout: The call's deadline, in seconds.

        Returns:
            The ``result`` of the answer (a message, ``True``, a list of updates, ...).

        Raises:
            ConnectionError: The call failed, and may succeed later.
            ChannelJobFailed: The Bot API refused it, for good.
        """
        try:
            response = self._client.post(self._base + method, json=dict(params), timeout=timeout)
            answer = response.json()
        except (httpx.HTTPError, ValueError) as error:
            raise ConnectionError(f"{method}: {type(error).__name__}: {error}") from error
        if not isinstance(answer, dict):
            raise ConnectionError(f"{method}: HTTP {response.status_code}, not a Bot API answer")
        if answer.get("ok") is True:
            return answer.get("result")
        return _failed(method, response.status_code, answer)

    def close(self) -> None:
        """Close the HTTP client, when it is this object's own."""
        if self._owns_client:
            self._client.close()


def _failed(method: str, status: int, answer: dict[str, Any]) -> Any:
    """``True`` for an edit that changes nothing; otherwise raise the call's error."""
    description = str(answer.get("description") or f"HTTP {status}")
    if NOT_MODIFIED in description:
        return True
    code = answer.get("error_code", status)
    if isinstance(code, int) and code in PERMANENT_CODES:
        raise ChannelJobFailed(f"{method}: {description}")
    raise ConnectionError(f"{method}: {description}")
