"""The Bot API client: one method call is one POST to ``{root}/bot{token}/{method}``.

The root is ``https://api.telegram.org`` or a self-hosted Bot API server's (a local
stand-in in tests). Calls are made by parkgate's channel jobs (in the deliverer's worker
thread, so the client is a blocking one), never while a reply is being decided, so a
slow or failing Bot API delays no person and loses no update: a failed call raises
:class:`BotApiError`, and the job is retried with backoff.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

#: The public Bot API's root.
DEFAULT_ROOT = "https://api.telegram.org"
#: One call's deadline, in seconds (connect, send, response).
CALL_TIMEOUT = 10.0
#: A long poll's wait on ``getUpdates``, in seconds; its call's deadline is this plus :data:`CALL_TIMEOUT`.
POLL_SECONDS = 30
#: What the Bot API answers when an edit would change nothing: the message is already as wanted.
NOT_MODIFIED = "message is not modified"


class BotApiError(Exception):
    """A Bot API call that did not succeed.

    Args:
        method: The method called.
        description: What went wrong (the Bot API's description, or the transport error).
        permanent: Whether calling again cannot help (a 400 or 403: a chat that is gone,
            a bot that was blocked); a 429, a 5xx or a transport error is worth a retry.
        retry_after: The seconds a 429 asks to wait, when it says.
    """

    def __init__(self, method: str, description: str, *, permanent: bool, retry_after: float | None = None) -> None:
        super().__init__(f"{method}: {description}")
        self.method = method
        self.description = description
        self.permanent = permanent
        self.retry_after = retry_after


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
            BotApiError: The call failed; ``permanent`` says whether a retry can help.
        """
        try:
            response = self._client.post(self._base + method, json=dict(params), timeout=timeout)
            answer = response.json()
        except (httpx.HTTPError, ValueError) as error:
            raise BotApiError(method, f"{type(error).__name__}: {error}", permanent=False) from error
        if not isinstance(answer, dict):
            raise BotApiError(method, f"HTTP {response.status_code}, not a Bot API answer", permanent=False)
        if answer.get("ok") is True:
            return answer.get("result")
        return _failed(method, response.status_code, answer)

    def close(self) -> None:
        """Close the HTTP client, when it is this object's own."""
        if self._owns_client:
            self._client.close()


def _failed(method: str, status: int, answer: dict[str, Any]) -> Any:
    """``True`` for an edit that changes nothing; otherwise raise the call's :class:`BotApiError`."""
    description = str(answer.get("description") or f"HTTP {status}")
    if NOT_MODIFIED in description:
        return True
    code = answer.get("error_code", status)
    parameters = answer.get("parameters") or {}
    retry_after = parameters.get("retry_after") if isinstance(parameters, dict) else None
    permanent = isinstance(code, int) and code in (400, 401, 403, 404)
    raise BotApiError(method, description, permanent=permanent, retry_after=float(retry_after) if retry_after else None)
