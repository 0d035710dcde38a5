"""The JSON the API takes, as pydantic models: what the OpenAPI schema shows and what a
request body is checked against before a route runs; and how a response's JSON is encoded
(:class:`SafeJSONResponse`), a reply's first of all (:func:`reply_response`). The JSON it
gives about asks, runs and the server is :mod:`parkgate.http.outputs`.

Bodies are strict (no coercion, no unknown fields) and hold only text a store can keep.
Every field that names one of parkgate's enums takes its values from that enum
(:func:`one_of`), so the schema lists exactly what the code answers with.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from enum import Enum
from typing import TYPE_CHECKING, Annotated, Any, Literal, Optional

from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, create_model, model_validator

from parkgate.core.expect import FORMS as EXPECT_FORMS
from parkgate.core.history import HistoryStatus
from parkgate.core.kinds import AskKind, AskStatus, ReplyKind, RunStatus
from parkgate.core.model import CallbackStatus, Reply
from parkgate.core.shape import Form, declared_options
from parkgate.core.stopping_point import MAX_LABEL_CHARS, MAX_OPTIONS, MAX_PROMPT_CHARS
from parkgate.gateway.checks import (
    MAX_ID_CHARS,
    MAX_MESSAGE_CHARS,
    MAX_REASON_CHARS,
    MAX_REMINDERS,
    MAX_RESPONDERS,
    MAX_SKILL_OUTPUT_CHARS,
)
from parkgate.gateway.options import MAX_CALLBACK_URL_CHARS, PromptFields, RunFields
from parkgate.http.channel_targets import CHANNEL_FIELDS, ChannelFieldsIn

#: Largest body ``POST /v1/asks`` accepts: room for a ``skill_output`` of the library's
#: :data:`~parkgate.gateway.checks.MAX_SKILL_OUTPUT_CHARS` (256,000) characters even when a
#: client escapes every one of them as a JSON surrogate pair (12 bytes a character).
MAX_ASK_BODY_BYTES = 4 * 1024 * 1024
#: Longest TTL an ask may be parked with over HTTP (ten years), in seconds.
MAX_TTL_SECONDS = 10 * 365 * 24 * 3600.0


def one_of(values: Iterable[Enum | str]) -> Any:
    """``Literal`` of these values (an enum's members, or strings): a field that takes
    exactly them, listed as its ``enum`` in the schema."""
    return Literal[tuple(value.value if isinstance(value, Enum) else value for value in values)]


# A type checker sees each of these as ``str``; pydantic sees the Literal of the values.
if TYPE_CHECKING:
    ReplyKindName = str
    AskKindName = str
    AskStatusName = str
    RunStatusName = str
    CallbackStatusName = str
    ExpectForm = str
    HistoryStatusName = str
else:
    ReplyKindName = one_of(ReplyKind)
    AskKindName = one_of(AskKind)
    AskStatusName = one_of(AskStatus)
    RunStatusName = one_of(RunStatus)
    CallbackStatusName = one_of(CallbackStatus)
    ExpectForm = one_of(EXPECT_FORMS)
    #: ``GET /v1/asks?status=``: one status, every closed one, or all.
    HistoryStatusName = one_of(HistoryStatus)


def _text_problem(value: str) -> str | None:
    if "\x00" in value:
        return "contains a NUL character"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "is not valid Unicode (it holds a lone surrogate)"
    return None


class _Body(BaseModel):
    """A JSON body: strict types, no unknown fields, and only text that can be stored."""

    model_config = ConfigDict(strict=True, extra="forbid")

    @model_validator(mode="after")
    def _storable_text(self) -> _Body:
        for name in type(self).model_fields:
            value = getattr(self, name)
            values = value if isinstance(value, list) else [value]
            for position, item in enumerate(values, start=1):
                if isinstance(item, str) and (problem := _text_problem(item)):
                    where = f"{name} item {position}" if isinstance(value, list) else name
                    raise ValueError(f"{where} {problem}")
        return self


Id = Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS)]
Label = Annotated[str, Field(min_length=1, max_length=MAX_LABEL_CHARS)]
#: A yes/no field that defaults to no; ``null`` means the default, as for every optional field.
Flag = Annotated[bool, BeforeValidator(lambda value: False if value is None else value)]


#: A positive number of seconds of at most the longest TTL.
Seconds = Annotated[float, Field(gt=0, le=MAX_TTL_SECONDS, allow_inf_nan=False)]


class ExpectJSON(_Body):
    """The form a text ask's answer must take (``parkgate.core.expect``): any other answer is a miss."""

    form: ExpectForm
    minimum: int | Annotated[float, Field(allow_inf_nan=False)] | None = Field(
        default=None, description="Inclusive lower bound (number and integer forms)."
    )
    maximum: int | Annotated[float, Field(allow_inf_nan=False)] | None = Field(
        default=None, description="Inclusive upper bound (number and integer forms)."
    )
    min_length: Annotated[int, Field(ge=0)] | None = Field(default=None, description="Fewest characters (text forms).")
    max_length: Annotated[int, Field(ge=0)] | None = Field(default=None, description="Most characters (text forms).")
    options: list[Label] | None = Field(default=None, description="The labels to pick from (several form).")
    min_items: Annotated[int, Field(ge=0)] | None = Field(default=None, description="Fewest picked (several form).")
    max_items: Annotated[int, Field(ge=1)] | None = Field(default=None, description="Most picked (several form).")


#: The JSON each form of option takes (:class:`~parkgate.core.shape.Form`); the gateway
#: checks the rest (distinct senders, a quorum that fits, a known form).
JSON_FORMS: dict[Form, Any] = {
    Form.TEXT: str,
    Form.ID: Id,
    Form.FLAG: Flag,
    Form.FLAG_OR_ID: Flag | Id,
    Form.COUNT: int,
    Form.URL: Annotated[str, Field(min_length=1, max_length=MAX_CALLBACK_URL_CHARS)],
    Form.SECONDS: Seconds,
    Form.OFFSETS: Seconds | Annotated[list[Seconds], Field(min_length=1, max_length=MAX_REMINDERS)],
    Form.SENDERS: Annotated[list[Id], Field(max_length=MAX_RESPONDERS)],
    Form.EXPECT: ExpectJSON,
    Form.OBJECT: dict[str, Any],
}
#: The forms whose option defaults to false, not null.
FLAGS = (Form.FLAG, Form.FLAG_OR_ID)


def options_model(name: str, options: type) -> type[_Body]:
    """A body model of the options an options ``TypedDict`` declares (:mod:`parkgate.gateway.options`):
    one optional field an option that travels in JSON, under its JSON name, of its form's JSON."""
    fields: dict[str, Any] = {}
    for option in declared_options(options).values():
        json_type = JSON_FORMS[option.form]
        default = False if option.form in FLAGS else None
        fields[option.wire] = (
            json_type if option.form in FLAGS else Optional[json_type],  # noqa: UP045  # an Annotated alias
            Field(default=default, description=option.doc or None),
        )
    model: type[_Body] = create_model(name, __base__=_Body, __module__=__name__, **fields)
    return model


# A type checker sees the options' models as plain bodies (their fields are read by name,
# with options_of); pydantic sees one field an option.
if TYPE_CHECKING:
    _PromptOptionsIn = _Body
    _RunOptionsIn = _Body
else:
    _PromptOptionsIn = options_model("PromptOptionsIn", PromptFields)
    _RunOptionsIn = options_model("RunOptionsIn", RunFields)


class AskIn(_PromptOptionsIn, ChannelFieldsIn):
    """Park a question: ``prompt`` (+ ``kind``/``options``), or ``skill_output`` with a marker.

    ``kind`` defaults to ``choice`` when ``options`` are given, else ``text``. The channel
    to post on is one key per registered channel
    (:class:`~parkgate.http.channel_targets.ChannelFieldsIn`). The other fields are the
    ask's options, :class:`~parkgate.gateway.options.PromptFields` by their JSON names,
    derived from their declaration (:func:`options_model`; :func:`options_of` reads them).
    """

    conversation_id: Id
    kind: AskKindName | None = None
    prompt: Annotated[str, Field(min_length=1, max_length=MAX_PROMPT_CHARS)] | None = None
    options: Annotated[list[Label], Field(max_length=MAX_OPTIONS)] | None = None
    skill_output: Annotated[str, Field(max_length=MAX_SKILL_OUTPUT_CHARS)] | None = Field(
        default=None, description="Free text holding one [[ask]] ... [[/ask]] marker."
    )

    @model_validator(mode="after")
    def _one_form(self) -> AskIn:
        if self.skill_output is not None:
            fields = ("prompt", "kind", "options", "default", "expect", "context", "phase", *CHANNEL_FIELDS)
            given = [name for name in fields if getattr(self, name) is not None]
            if given:
                raise ValueError(f"give either skill_output or prompt/kind/options, not both (also got {given})")
        elif self.prompt is None:
            raise ValueError("give a prompt (with kind and options) or a skill_output holding a stopping point")
        return self


def options_of(body: BaseModel, fields: type) -> dict[str, Any]:
    """The ask options ``fields`` names (:mod:`parkgate.gateway.options`) that ``body`` holds, as
    the gateway's keyword arguments: each read from its JSON name (``ttl`` from
    ``ttl_seconds``), a nested model as its dict, those left out or null left out."""
    found: dict[str, Any] = {}
    for name, option in declared_options(fields).items():
        value = getattr(body, option.wire)
        if isinstance(value, BaseModel):
            value = value.model_dump(exclude_none=True)
        if value is not None:
            found[name] = value
    return found


class MessageIn(_Body):
    """One inbound message for a conversation."""

    text: Annotated[str, Field(max_length=MAX_MESSAGE_CHARS)]
    message_id: Id | None = Field(default=None, description="Redelivering the same id returns the first reply.")
    sender: Id | None = Field(
        default=None,
        description="Who wrote it (a user id, an email). On an ask with responders only theirs count; "
        "a token bound to a sender posts as that sender.",
    )
    ask_id: Id | None = Field(
        default=None,
        description="The ask this message answers: it goes to that ask only, and once that ask has closed the "
        "reply is `late`, saying how and when it closed (the ask stays as it closed).",
    )


class StartIn(_RunOptionsIn):
    """Start a workflow in a conversation (with :class:`~parkgate.gateway.options.RunFields`)."""

    conversation_id: Id


class CancelIn(_Body):
    """An operator's cancel: the outcome recorded on the ask and its run (``cancelled``
    when left out), such as ``abandoned`` when whoever waited for the answer is gone."""

    outcome: Id = "cancelled"
    reason: str | None = Field(
        default=None,
        max_length=MAX_REASON_CHARS,
        description="Why, in words: kept with the close in the ask's event log (its closed event's data.reason).",
    )


class FinishIn(_Body):
    """Finish a run: the outcome recorded on it, and what it gave (any JSON value)."""

    outcome: Id = "done"
    output: Any = Field(default=None, description="What the run gave (an agent's final output): any JSON value.")


class SafeJSONResponse(JSONResponse):
    """JSON that always encodes: text a client sent with lone surrogates is escaped, not a 500."""

    def render(self, content: Any) -> bytes:
        text = json.dumps(content, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        try:
            return text.encode("utf-8")
        except UnicodeEncodeError:
            return json.dumps(content, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode("ascii")


def reply_response(reply: Reply, status: int = 200) -> Response:
    """A :class:`~parkgate.Reply` in its public JSON shape (:class:`~parkgate.http.outputs.ReplyOut`).

    Args:
        reply: What the gateway answered.
        status: The response's status (201 for a park).

    Returns:
        The response to send.
    """
    return SafeJSONResponse(reply.to_dict(), status_code=status)


__all__ = [
    "MAX_ASK_BODY_BYTES",
    "MAX_TTL_SECONDS",
    "AskIn",
    "ExpectJSON",
    "FinishIn",
    "MessageIn",
    "SafeJSONResponse",
    "StartIn",
    "one_of",
    "options_of",
    "reply_response",
]
