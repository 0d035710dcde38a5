"""MCP elicitation adapter: accept / decline / cancel mapped onto parkgate's outcomes.

MCP's ``elicitation/create`` ends in one of three actions; a parkgate ask ends in one
of three closed statuses. The mapping is exact, the same in both directions:

- ``accept`` <-> ``selected`` / ``answered`` (status ``answered``): the person gave the
  answer. ``content`` is ``{"choice": label}`` for a choice ask and ``{"answer": text}``
  for a text ask.
- ``decline`` <-> ``cancelled``: the person dropped it (a cancel word, or an operator's
  cancel).
- ``cancel`` <-> ``expired``: nobody answered (the form was dismissed, or the ask
  outlived its TTL; an expired ask's default answer does not make it an ``accept``).

Two directions, two sets of entry points:

**A server asks through parkgate** (the ask is parked for audit and TTL, the MCP client
collects the answer): :func:`requested_schema` / :func:`elicit_params` /
:func:`form_model` describe a parked ask as an elicitation form, and
:func:`apply_elicit_result` applies the client's result to the gateway. ``accept`` goes
through :meth:`Gateway.handle` like any other reply, so every matching rule holds (an
empty text answer is a mismatch, ``/cancel`` typed into a text field still cancels).
``decline`` closes the ask as ``cancelled`` (the run is marked complete). ``cancel``
closes it as ``expired`` *now* (:meth:`Gateway.expire`, the same closing its TTL would
do: a dismissed form can no longer be answered on that surface, so leaving it open
would only park the conversation until the TTL ran out). Read back with
:func:`to_elicit_result`, each closed ask gives the action that closed it.
:func:`build_example_server` is a complete MCP server whose tool asks this way, over
both the 2025-11-25 back-channel and the 2026-07-28 input-required protocol.

**A client answers through parkgate** (an MCP server elicits, the person answers in a
parkgate conversation: a chat tab, Slack, the console): :class:`ParkgateElicitation` is
an MCP client ``elicitation_callback`` that parks the form as an ask, waits for it to
close, and returns :func:`to_elicit_result` of the closed ask. The person's messages
reach the gateway through the surface as usual; bounces, ``menu`` and the escalated
line never reach the MCP server.
"""

# No ``from __future__ import annotations`` here: the MCP SDK reads the annotations of
# the example server's resolvers at registration, and they refer to local functions.

import dataclasses
from collections.abc import Awaitable, Callable, Mapping
from datetime import timedelta
from typing import Annotated, Any, Literal

import anyio
import anyio.to_thread
from mcp.client.session import ClientRequestContext
from mcp.server.mcpserver import (
    AcceptedElicitation,
    CancelledElicitation,
    DeclinedElicitation,
    Elicit,
    ElicitationResult,
    MCPServer,
    Resolve,
)
from mcp_types import INVALID_PARAMS, ElicitRequestFormParams, ElicitRequestParams, ElicitResult, ErrorData
from pydantic import BaseModel, Field, create_model

from parkgate.core import stopping_point
from parkgate.core.matcher import normalise
from parkgate.core.model import Ask
from parkgate.core.phrases import PHRASES, AskKind, AskStatus, ReplyKind
from parkgate.core.stopping_point import AskSpec, StoppingPointError
from parkgate.errors import AskAlreadyOpen, InputError
from parkgate.gateway import Gateway
from parkgate.reply import Reply

ElicitAction = Literal["accept", "decline", "cancel"]
#: The content type of an MCP ``ElicitResult``.
ElicitContent = dict[str, str | int | float | bool | list[str] | None]

ACCEPT: ElicitAction = "accept"
DECLINE: ElicitAction = "decline"
CANCEL: ElicitAction = "cancel"
#: The form field a choice ask is answered in: ``{"choice": label}``.
CHOICE_FIELD = "choice"
#: The form field a text ask is answered in: ``{"answer": text}``.
ANSWER_FIELD = "answer"

#: What the SDK's ``ctx.elicit()`` / ``Resolve`` flow hands a tool.
SdkElicitation = AcceptedElicitation[Any] | DeclinedElicitation | CancelledElicitation


# -- describing an ask as a form ------------------------------------------------------
def _spec(ask: Ask | AskSpec) -> AskSpec:
    return ask if isinstance(ask, AskSpec) else AskSpec(ask.kind, ask.prompt, ask.options)


def field_for(ask: Ask | AskSpec) -> str:
    """The form field an ask is answered in: ``choice`` or ``answer``."""
    return CHOICE_FIELD if _spec(ask).kind is AskKind.CHOICE else ANSWER_FIELD


def requested_schema(ask: Ask | AskSpec) -> dict[str, Any]:
    """The elicitation ``requestedSchema`` for ``ask``: one required string field.

    A choice ask is a single-select enum of its labels (``{"choice": label}``); a text
    ask is a free string (``{"answer": text}``).
    """
    spec = _spec(ask)
    if spec.kind is AskKind.CHOICE:
        prop: dict[str, Any] = {"type": "string", "enum": list(spec.options)}
    else:
        prop = {"type": "string", "minLength": 1}
    name = field_for(spec)
    return {"type": "object", "properties": {name: prop}, "required": [name]}


def elicit_params(ask: Ask | AskSpec) -> ElicitRequestFormParams:
    """The form-mode ``elicitation/create`` parameters that ask ``ask``."""
    spec = _spec(ask)
    return ElicitRequestFormParams(message=spec.prompt, requested_schema=requested_schema(spec))


def form_model(ask: Ask | AskSpec) -> type[BaseModel]:
    """A pydantic model of the form, for the SDK's ``ctx.elicit()`` and ``Elicit(...)``.

    It renders to the same one-field schema as :func:`requested_schema`. Values are
    checked against the options by :func:`apply_elicit_result`, not by the model, so a
    client that sends something else gets a clear error rather than a validation trace.
    """
    spec = _spec(ask)
    if spec.kind is AskKind.CHOICE:
        field: Any = Field(json_schema_extra={"enum": list(spec.options)})
        return create_model("ParkgateChoice", choice=(str, field))
    return create_model("ParkgateAnswer", answer=(str, Field(json_schema_extra={"minLength": 1})))


# -- parkgate -> MCP --------------------------------------------------------------------
@dataclasses.dataclass(frozen=True, slots=True)
class ElicitationForm:
    """An MCP form read as a parkgate ask: the ask, the field it answers, the wire values.

    ``values[i]`` is what goes back in ``content`` for option ``i + 1`` (an enum's
    ``const`` may differ from the title the person is shown).
    """

    spec: AskSpec
    field: str
    values: tuple[str, ...] = ()

    @property
    def kind(self) -> AskKind:
        """The ask's kind: ``choice`` for an enum field, ``text`` for a string field."""
        return self.spec.kind


def spec_from_elicitation(params: ElicitRequestFormParams) -> ElicitationForm:
    """Read a form-mode elicitation as one parkgate ask.

    parkgate parks one question, so the form must have exactly one field: a string
    enum (``enum``, titled ``oneOf``, or legacy ``enumNames``) becomes a choice ask, a
    plain string a text ask. Anything else raises :class:`~parkgate.StoppingPointError`
    naming the field.
    """
    schema = params.requested_schema
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(properties, Mapping) or len(properties) != 1:
        count = len(properties) if isinstance(properties, Mapping) else 0
        raise StoppingPointError(f"parkgate asks one question at a time; this form has {count} fields")
    [(name, prop)] = properties.items()
    if not isinstance(prop, Mapping):
        raise StoppingPointError(f"field {name!r} has no schema")
    prompt = params.message.strip() or str(prop.get("description") or prop.get("title") or "")
    one_of = prop.get("oneOf")
    enum = prop.get("enum")
    if isinstance(one_of, list):
        items = [item for item in one_of if isinstance(item, Mapping)]
        if len(items) != len(one_of) or not items:
            raise StoppingPointError(f"field {name!r}: oneOf must list {{const, title}} options")
        values = [str(item.get("const", "")) for item in items]
        labels = [str(item.get("title") or item.get("const") or "") for item in items]
        return ElicitationForm(stopping_point.make_spec(AskKind.CHOICE, prompt, labels), name, tuple(values))
    if isinstance(enum, list):
        values = [str(value) for value in enum]
        names = prop.get("enumNames")
        labels = [str(n) for n in names] if isinstance(names, list) and len(names) == len(values) else values
        return ElicitationForm(stopping_point.make_spec(AskKind.CHOICE, prompt, labels), name, tuple(values))
    if prop.get("type") == "string":
        return ElicitationForm(stopping_point.make_spec(AskKind.TEXT, prompt), name)
    raise StoppingPointError(
        f"field {name!r} is {prop.get('type')!r}; parkgate asks a single-choice or free-text string"
    )


def _accepted(ask_kind: AskKind, answer: str | None, index: int | None, form: ElicitationForm | None) -> ElicitResult:
    if ask_kind is AskKind.CHOICE and index is not None:
        field = form.field if form else CHOICE_FIELD
        value = form.values[index - 1] if form and form.values else answer
        content: ElicitContent = {field: value}
        return ElicitResult(action=ACCEPT, content=content)
    field = form.field if form else ANSWER_FIELD
    text: ElicitContent = {field: answer}
    return ElicitResult(action=ACCEPT, content=text)


def to_elicit_result(outcome: Reply | Ask, form: ElicitationForm | None = None) -> ElicitResult | None:
    """The MCP ``ElicitResult`` a parkgate outcome stands for; ``None`` while still parked.

    ``outcome`` is the gateway's reply to the person's message, or the ask itself (say,
    after :meth:`Gateway.wait`). ``selected``/``answered`` give ``accept``,
    ``cancelled`` gives ``decline``, an expiry (``pass`` with ``expired_ask_id``, or an
    ask closed as ``expired``, default answer or not) gives ``cancel``. A reply that
    leaves the ask open (``asked``, ``retry``, ``escalated``, ``reshown``) and an open
    ask give ``None``: show the person ``reply.text`` and wait for their next message.
    A plain ``pass`` (nothing was parked) raises :class:`~parkgate.InputError`: it is
    not the outcome of any ask. Pass the ``form`` from :func:`spec_from_elicitation`
    to answer in that form's field with its wire values.
    """
    if isinstance(outcome, Ask):
        if outcome.status is AskStatus.OPEN:
            return None
        if outcome.status is AskStatus.ANSWERED:
            return _accepted(outcome.kind, outcome.answer, outcome.option_index, form)
        if outcome.status is AskStatus.CANCELLED:
            return ElicitResult(action=DECLINE)
        return ElicitResult(action=CANCEL)
    kind = outcome.kind
    if kind is ReplyKind.SELECTED:
        return _accepted(AskKind.CHOICE, outcome.answer, outcome.option_index, form)
    if kind is ReplyKind.ANSWERED:
        return _accepted(AskKind.TEXT, outcome.answer, None, form)
    if kind is ReplyKind.CANCELLED:
        return ElicitResult(action=DECLINE)
    if kind is ReplyKind.PASS:
        if outcome.expired_ask_id is not None:
            return ElicitResult(action=CANCEL)
        raise InputError("a pass reply with nothing expired is not the outcome of an ask")
    return None


# -- MCP -> parkgate --------------------------------------------------------------------
def _action_and_content(result: ElicitResult | SdkElicitation) -> tuple[ElicitAction, Mapping[str, Any] | None]:
    if isinstance(result, AcceptedElicitation):
        data = result.data
        return ACCEPT, data.model_dump() if isinstance(data, BaseModel) else data
    if isinstance(result, DeclinedElicitation):
        return DECLINE, None
    if isinstance(result, CancelledElicitation):
        return CANCEL, None
    return result.action, result.content


def _reply_text(ask: Ask, content: Mapping[str, Any] | None, field: str | None) -> str:
    """The message that gives ``ask`` the accepted ``content``, as a person would type it."""
    name = field or field_for(ask)
    if not isinstance(content, Mapping) or name not in content:
        raise InputError(f'the accepted elicitation has no "{name}" field for ask {ask.id}')
    value = content[name]
    if not isinstance(value, str):
        raise InputError(f'"{name}" must be a string, not {type(value).__name__}')
    if ask.kind is AskKind.TEXT:
        return value
    if value in ask.options:
        return str(ask.options.index(value) + 1)
    wanted = normalise(value)
    for position, label in enumerate(ask.options, start=1):
        if normalise(label) == wanted:
            return str(position)  # a number always selects its own position
    raise InputError(f"{value!r} is not one of the options of ask {ask.id}: {', '.join(ask.options)}")


def _earlier_reply(gateway: Gateway, ask: Ask, message_id: str | None) -> Reply | None:
    if message_id is None:
        return None
    with gateway.store.transaction() as tx:
        raw = tx.reply_for(ask.conversation_id, message_id)
    earlier = Reply.from_json(raw) if raw is not None else None
    return earlier if earlier is not None and earlier.ask_id == ask.id else None


def _closed_reply(ask: Ask) -> Reply:
    if ask.status is AskStatus.EXPIRED:
        return Reply(ReplyKind.PASS, PHRASES[ReplyKind.PASS], parked=False, expired_ask_id=ask.id, run_id=ask.run_id)
    return Reply(ReplyKind.CANCELLED, PHRASES[ReplyKind.CANCELLED], parked=False, ask_id=ask.id, run_id=ask.run_id)


def apply_elicit_result(
    gateway: Gateway,
    ask_id: str,
    result: ElicitResult | SdkElicitation,
    *,
    field: str | None = None,
    message_id: str | None = None,
) -> Reply:
    """Apply an MCP client's answer for a parked ask; the reply says what it did.

    ``result`` is a raw ``ElicitResult`` or what the SDK's ``ctx.elicit()`` returns.

    - ``accept``: the field's value goes through :meth:`Gateway.handle` as the person's
      message (a choice by its position, so a label that looks like a number cannot
      pick another option): ``selected``/``answered``, or a bounce (``retry``...) that
      leaves the ask open, exactly as on any other surface. A value that is not one of
      the options, or a missing field, raises :class:`~parkgate.InputError` and leaves
      the ask as it was.
    - ``decline``: the ask is closed as ``cancelled`` and its run marked complete; the
      reply is ``cancelled``.
    - ``cancel``: the ask is closed as ``expired`` now, exactly as its TTL would close
      it (:meth:`Gateway.expire`: its default, if any, recorded as the answer, the run
      closed as an expiry closes it, one ``ask_expired`` log line); the reply is
      ``pass`` with ``expired_ask_id``, as for an expiry found on read.

    An ask past its TTL is closed as ``expired`` by this read and the reply is ``pass``
    with ``expired_ask_id``; so is any result for an ask already expired. A
    ``decline`` for an ask already cancelled answers ``cancelled`` again and changes
    nothing. Applying to an ask closed otherwise (``cancel`` to a cancelled ask,
    anything to an answered one, ``accept`` to a cancelled one) raises
    :class:`~parkgate.InputError`, unless the same ``message_id`` was applied before:
    then the first reply comes back and nothing changes. ``field`` names the form field
    when it is not the default ``choice``/``answer``.
    """
    action, content = _action_and_content(result)
    ask = gateway.get(ask_id)
    if not ask.is_open:
        earlier = _earlier_reply(gateway, ask, message_id)
        if earlier is not None:
            return earlier
        if ask.status is AskStatus.EXPIRED:
            return _closed_reply(ask)  # an expired ask passes, a second cancel included
        if ask.status is AskStatus.CANCELLED and action == DECLINE:
            return _closed_reply(ask)  # dropping a dropped ask again changes nothing
        raise InputError(f"ask {ask_id} is already {ask.status.value}")
    if action == ACCEPT:
        return gateway.handle(ask.conversation_id, _reply_text(ask, content, field), message_id)
    if action == DECLINE:
        return _closed_reply(gateway.cancel(ask_id))
    if action == CANCEL:
        return _closed_reply(gateway.expire(ask_id))
    raise InputError(f"unknown elicitation action {action!r}")


# -- an MCP client that answers through parkgate ------------------------------------------
Notify = Callable[[Reply], Awaitable[None] | None]


class ParkgateElicitation:
    """An MCP client ``elicitation_callback`` that asks the person through parkgate.

    Each form-mode elicitation is parked in ``conversation_id`` as one ask (see
    :func:`spec_from_elicitation`); ``on_asked`` gets the ``asked`` reply so the surface
    can show the menu. The person's messages go to :meth:`Gateway.handle` as usual; the
    callback returns once the ask closes: ``accept`` with the form's field, ``decline``
    when they cancelled, ``cancel`` when it expired. With ``timeout`` (seconds), an ask
    still open then is expired on the spot (:meth:`Gateway.expire`, as its TTL would)
    and the server gets ``cancel``; without it, the ask's TTL bounds the wait. Forms
    parkgate cannot ask (URL mode, several fields) get an ``INVALID_PARAMS`` error and
    park nothing::

        client = Client(server, elicitation_callback=ParkgateElicitation(gateway, "chat-1"))
    """

    def __init__(
        self,
        gateway: Gateway,
        conversation_id: str,
        *,
        ttl: timedelta | None = None,
        replace: bool = False,
        timeout: float | None = None,
        poll_seconds: float = 0.2,
        on_asked: Notify | None = None,
    ) -> None:
        if poll_seconds <= 0:
            raise ValueError("poll_seconds must be positive")
        self.gateway = gateway
        self.conversation_id = conversation_id
        self.ttl = ttl
        self.replace = replace
        self.timeout = timeout
        self.poll_seconds = poll_seconds
        self.on_asked = on_asked

    async def __call__(self, context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult | ErrorData:
        """Park the form, wait for the person, and answer the MCP server."""
        if not isinstance(params, ElicitRequestFormParams):
            return ErrorData(code=INVALID_PARAMS, message="parkgate answers form-mode elicitations only")
        try:
            form = spec_from_elicitation(params)
            asked = await anyio.to_thread.run_sync(self._park, form.spec)
        except (StoppingPointError, InputError, AskAlreadyOpen) as error:
            return ErrorData(code=INVALID_PARAMS, message=str(error))
        assert asked.ask_id is not None
        if self.on_asked is not None:
            shown = self.on_asked(asked)
            if shown is not None:
                await shown
        ask = await self._wait(asked.ask_id)
        if ask.is_open:  # timed out: nobody answered, so it expires now
            ask = await anyio.to_thread.run_sync(self.gateway.expire, asked.ask_id)
        result = to_elicit_result(ask, form)
        return result if result is not None else ElicitResult(action=CANCEL)

    def _park(self, spec: AskSpec) -> Reply:
        return self.gateway.ask(
            self.conversation_id,
            spec.prompt,
            list(spec.options) or None,
            kind=spec.kind,
            ttl=self.ttl,
            replace=self.replace,
        )

    async def _wait(self, ask_id: str) -> Ask:
        deadline = None if self.timeout is None else anyio.current_time() + max(0.0, self.timeout)
        while True:
            ask = await anyio.to_thread.run_sync(self.gateway.get, ask_id)
            if not ask.is_open:
                return ask
            if deadline is not None and anyio.current_time() >= deadline:
                return ask
            await anyio.sleep(self.poll_seconds)


# -- an MCP server whose tool asks through parkgate ----------------------------------------
def _park_once(gateway: Gateway, conversation_id: str, spec: AskSpec) -> str:
    """Park ``spec``, or reuse the same question already open in the conversation.

    The SDK re-runs resolvers on every round of the 2026-07-28 input-required flow; the
    question must be parked once and rendered identically each time.
    """
    try:
        asked = gateway.ask(conversation_id, spec.prompt, list(spec.options) or None, kind=spec.kind)
    except AskAlreadyOpen as error:
        open_ask = gateway.get(error.ask_id)
        if open_ask.is_open and _spec(open_ask) == spec:
            return open_ask.id
        raise
    assert asked.ask_id is not None
    return asked.ask_id


def build_example_server(gateway: Gateway, *, name: str = "parkgate") -> MCPServer:
    """An MCP server with one tool, ``ask_person``, that asks through parkgate.

    ``ask_person(conversation_id, question, options=None)`` parks the question in the
    gateway (choice with options, else text), elicits the answer from the MCP client
    with :func:`form_model`, and applies the result with :func:`apply_elicit_result`.
    It returns the reply's ``kind``, ``answer``, ``option_index``, ``ask_id`` and
    ``text``. Built on the SDK's ``Resolve``/``Elicit`` flow, so it works on both the
    2025-11-25 back-channel and the 2026-07-28 input-required protocol. Run it with
    ``build_example_server(Gateway()).run()`` (stdio).
    """
    server = MCPServer(name)

    def park(conversation_id: str, question: str, options: list[str] | None = None) -> str:
        kind = AskKind.CHOICE if options else AskKind.TEXT
        return _park_once(gateway, conversation_id, stopping_point.make_spec(kind, question, options))

    def question_for(ask_id: Annotated[str, Resolve(park)]) -> Elicit[BaseModel]:
        ask = gateway.get(ask_id)
        return Elicit(ask.prompt, form_model(ask))

    @server.tool(description="Ask the person a question through parkgate and return their answer.")
    def ask_person(
        conversation_id: str,
        question: str,
        ask_id: Annotated[str, Resolve(park)],
        outcome: Annotated[ElicitationResult[BaseModel], Resolve(question_for)],
        options: list[str] | None = None,
    ) -> dict[str, Any]:
        reply = apply_elicit_result(gateway, ask_id, outcome)
        return {
            "kind": reply.kind.value,
            "answer": reply.answer,
            "option_index": reply.option_index,
            "ask_id": reply.ask_id or reply.expired_ask_id,
            "text": reply.text,
        }

    return server


__all__ = [
    "ACCEPT",
    "ANSWER_FIELD",
    "CANCEL",
    "CHOICE_FIELD",
    "DECLINE",
    "ElicitAction",
    "ElicitContent",
    "ElicitationForm",
    "ParkgateElicitation",
    "SdkElicitation",
    "apply_elicit_result",
    "build_example_server",
    "elicit_params",
    "field_for",
    "form_model",
    "requested_schema",
    "spec_from_elicitation",
    "to_elicit_result",
]
