"""A channel that records what it is asked to do: the interface's own test double, a real
:class:`~parkgate.channels.Channel` with no platform behind it (what a third channel's
module starts as)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from parkgate.channels import ChannelReply, Posted
from parkgate.core.model import Ask


@dataclass
class RecordingChannel:
    """Posts to nowhere: each call is appended to :attr:`calls`; :attr:`failures` calls raise first."""

    name: str = "recorder"
    calls: list[tuple[str, Any, ...]] = field(default_factory=list)
    failures: int = 0

    def _maybe_fail(self) -> None:
        if self.failures > 0:
            self.failures -= 1
            raise ConnectionError("the platform is away")

    def post(self, ask: Ask, target: Mapping[str, Any]) -> Posted:
        self._maybe_fail()
        self.calls.append(("post", ask.id, dict(target)))
        return Posted({"room": target["room"], "message": f"m-{ask.id[:6]}"}, thread_key=f"{target['room']}/{ask.id}")

    def closed(self, ask: Ask, location: Mapping[str, Any]) -> None:
        self._maybe_fail()
        self.calls.append(("closed", ask.id, ask.status.value, ask.answer, ask.answered_by or ask.closed_by))

    def reply(self, ask: Ask, location: Mapping[str, Any], reply: ChannelReply) -> None:
        self._maybe_fail()
        self.calls.append(("reply", ask.id, reply.kind.value, reply.to, location["message"]))
