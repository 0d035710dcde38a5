"""The interfaces of the store's side tables that a transaction hands out beside the asks:
an agent SDK's kept run state and the idempotency keys of parks."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol


class AgentStates(Protocol):
    """An agent SDK's serialised run state, kept with its run until the agent finishes."""

    def keep(self, run_id: str, state: str, now: datetime) -> None:
        """Keep ``state`` for ``run_id``, replacing what was kept."""
        ...

    def kept(self, run_id: str) -> str | None:
        """The state kept for ``run_id`` (``None``: none)."""
        ...

    def forget(self, run_id: str) -> None:
        """Remove the state kept for ``run_id``, if any."""
        ...


class AskKeys(Protocol):
    """The idempotency keys of parks: which ask an owner's key parked."""

    def ask_for_key(self, owner: str | None, key: str) -> str | None:
        """The id of the ask ``owner`` parked with ``key`` (``None``: none yet)."""
        ...

    def record_key(self, owner: str | None, key: str, ask_id: str) -> None:
        """Record that ``owner``'s ``key`` parked ``ask_id``; the same key twice is a
        :class:`StoreConflict` at the latest on commit (the unit is retried and finds it)."""
        ...
