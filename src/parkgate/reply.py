"""What :meth:`Gateway.handle` and :meth:`Gateway.ask` return."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from parkgate.core.kinds import ReplyKind

#: One encoder for every stored reply (json.dumps with options builds a new one per call).
_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class Reply:
    """One outcome, always with a kind. Branch on ``kind``, never on ``text``.

    Attributes:
        kind: What was done with the message; only ``pass`` may go to a model.
        text: The line to show the person.
        parked: Whether the conversation has an open ask after this reply.
        ask_id: The ask this reply is about (the one parked, matched or bounced).
        expired_ask_id: On ``pass``, the ask this read found past its TTL and closed.
        answer: The answer taken: a selected option's label, or the text given.
        option_index: The selected option's 1-based position.
        run_id: The run the ask belongs to.
        next_ask: The ``asked`` reply of the ask the run parked next, when a workflow
            asked again after a selection or answer.
    """

    kind: ReplyKind
    text: str
    parked: bool
    ask_id: str | None = None
    expired_ask_id: str | None = None
    answer: str | None = None
    option_index: int | None = None
    run_id: str | None = None
    next_ask: Reply | None = None

    @property
    def routes_onward(self) -> bool:
        """True only for ``pass``: the one kind a caller may hand to a model."""
        return self.kind is ReplyKind.PASS

    def to_dict(self) -> dict[str, Any]:
        """The reply as JSON-ready values, one key a field, in field order.

        Built field by field rather than with ``dataclasses.asdict``, which deep-copies
        every field: this runs for every reply the gateway answers.

        Returns:
            The reply's JSON object, ``next_ask`` nested as one.
        """
        return {
            "kind": self.kind.value,
            "text": self.text,
            "parked": self.parked,
            "ask_id": self.ask_id,
            "expired_ask_id": self.expired_ask_id,
            "answer": self.answer,
            "option_index": self.option_index,
            "run_id": self.run_id,
            "next_ask": self.next_ask.to_dict() if self.next_ask else None,
        }

    def to_json(self) -> str:
        """The compact form a redelivery is answered from: :meth:`from_json` reads it back.

        Fields that are ``None`` are left out (:meth:`from_dict` reads a missing one as
        ``None``): this text is stored once per inbound message, and smaller rows mean
        fewer pages written per message.
        """
        data = {key: value for key, value in self.to_dict().items() if value is not None}
        return _COMPACT.encode(data)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Reply:
        """The reply :meth:`to_dict` (or :meth:`to_json`, parsed) describes.

        Args:
            data: A reply's JSON object; a missing field is ``None``.

        Returns:
            The reply.
        """
        follow = data.get("next_ask")
        return cls(
            kind=ReplyKind(data["kind"]),
            text=data["text"],
            parked=bool(data["parked"]),
            ask_id=data.get("ask_id"),
            expired_ask_id=data.get("expired_ask_id"),
            answer=data.get("answer"),
            option_index=data.get("option_index"),
            run_id=data.get("run_id"),
            next_ask=cls.from_dict(follow) if follow else None,
        )

    @classmethod
    def from_json(cls, raw: str) -> Reply:
        """The reply :meth:`to_json` wrote.

        A reply stored before ``followup`` was renamed ``next_ask`` reads the same, so a
        redelivery after an upgrade returns the reply first given.
        """
        return cls.from_dict(json.loads(raw, object_hook=_renamed))


#: The key earlier versions stored a reply's next ask under.
_OLD_NEXT_ASK = "followup"


def _renamed(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with the stored key ``followup`` read as ``next_ask``."""
    if _OLD_NEXT_ASK in data:
        data["next_ask"] = data.pop(_OLD_NEXT_ASK)
    return data
