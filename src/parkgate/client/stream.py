"""The clients' reading of the event log's streams, without I/O: server-sent events
(``GET /v1/events/stream``) and JSON Lines (``GET /v1/export?what=events``) into
:class:`~parkgate.core.events.LoggedEvent`\\ s, and when a follower reconnects.

:class:`~parkgate.client.Client` and :class:`~parkgate.client.AsyncClient` feed the lines
they read here; each resumes after the last id seen (an event's, or the stream's opening
``id`` frame), so a reconnect neither repeats nor skips an event.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from parkgate.core.events import LoggedEvent
from parkgate.errors import RateLimited, StoreUnavailable, UnexpectedResponse

#: Tries in a row a follower makes to reconnect before it raises what stopped it.
RECONNECT_TRIES = 5
#: The longest a follower waits before it tries again, in seconds.
RECONNECT_MAX_SECONDS = 10.0
#: The errors a follower reconnects after (a server restarting, busy, or its store out of
#: reach a moment); any other is raised at once.
RECONNECTABLE: tuple[type[Exception], ...] = (RateLimited, StoreUnavailable)


def read_event(text: str) -> LoggedEvent:
    """The event one JSON text holds (a stream's ``data`` or an export's line).

    Raises:
        UnexpectedResponse: The text is not an event's JSON.
    """
    try:
        return LoggedEvent.from_json(json.loads(text))
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise UnexpectedResponse(200, None, f"not an event's JSON ({type(error).__name__}: {error})") from None


@dataclass
class EventParser:
    """Reads a server-sent event stream line by line (without its line endings).

    Attributes:
        last_id: The id of the last frame that named one (where to resume).
        retry_seconds: How soon the server asked to be reconnected to.
    """

    last_id: int | None = None
    retry_seconds: float = 1.0
    _data: list[str] = field(default_factory=list)
    _id: str | None = None

    def feed(self, line: str) -> LoggedEvent | None:
        """Take one line; the event a blank line completes, else ``None``."""
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None  # a comment: the heartbeat
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            self._data.append(value)
        elif name == "id":
            self._id = value
        elif name == "retry" and value.isdigit():
            self.retry_seconds = int(value) / 1000
        return None

    def restart(self) -> None:
        """Forget a frame left incomplete when a stream broke off (a new stream begins)."""
        self._data, self._id = [], None

    def _dispatch(self) -> LoggedEvent | None:
        data, ident = self._data, self._id
        self._data, self._id = [], None
        if ident is not None and ident.strip().isdigit():
            self.last_id = int(ident)
        return read_event("\n".join(data)) if data else None


def pause_before_retry(tries: int, retry_seconds: float, retry_after: float | None = None) -> float:
    """How long a follower waits before its ``tries``-th try to reconnect, in seconds: what
    the server said (``Retry-After``, else its ``retry``), doubled each try, bounded."""
    base = retry_after if retry_after is not None else retry_seconds
    return float(min(RECONNECT_MAX_SECONDS, base * 2 ** max(0, tries - 1)))
