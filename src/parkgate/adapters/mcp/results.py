"""accept / decline / cancel, mapped exactly onto parkgate's outcomes, both ways.

- ``accept`` <-> ``selected`` / ``answered`` (status ``answered``);
- ``decline`` <-> ``cancelled`` (a cancel word, an operator's cancel);
- ``cancel`` <-> ``expired`` (nobody answered: the form was dismissed, or the ask
  outlived its TTL; an expired ask's default answer does not make it an ``accept``).
  A dismissed form closes its ask as ``expired`` with outcome :data:`DISMISSED`, so the
  logs and metrics never count it as a TTL that ran out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from mcp_types import ElicitResult

from parkgate.adapters.common import closed_reply, option_position
from parkgate.adapters.effects import Steps, call, run_async, run_sync
from parkgate.adapters.mcp.forms import FormField, ask_field
from parkgate.core.expect import NUMBER_FORMS, SEVERAL
from parkgate.core.kinds import AskKind, AskStatus, ReplyKind
from parkgate.core.model import Ask, Reply
from parkgate.errors import InputError
from parkgate.gateway import Gateway
from parkgate.gateway.async_gateway import AsyncGateway

ElicitAction = Literal["accept", "decline", "cancel"]
ACCEPT: ElicitAction = "accept"
DECLINE: ElicitAction = "decline"
CANCEL: ElicitAction = "cancel"
#: The content type of an MCP ``ElicitResult``.
ElicitContent = dict[str, str | int | float | bool | list[str] | None]
#: The outcome of a run whose answer reached the MCP side.
DONE = "done"
#: The outcome of an ask (and its run) whose elicitation the MCP side gave up on: the
#: request was cancelled (a timeout, say), the session closed, or the other process is
#: gone. Nobody would receive an answer, so the ask closes at once.
ABANDONED = "abandoned"
#: The outcome of an ask whose form the MCP client dismissed (``cancel``): status
#: ``expired`` (nobody answered), but no TTL ran out.
DISMISSED = "dismissed"


def to_elicit_result(outcome: Reply | Ask, field: FormField | None = None) -> ElicitResult | None:
    """The MCP ``ElicitResult`` a parkgate outcome stands for; ``None`` while still parked.

    ``outcome`` is the gateway's reply to the person's message, or the ask itself (say,
    after :meth:`Gateway.wait`). ``selected``/``answered`` give ``accept``,
    ``cancelled`` gives ``decline``, an expiry (``pass`` with ``expired_ask_id``, or an
    ask closed as ``expired``, default answer or not) gives ``cancel``. A reply that
    leaves the ask open (``asked``, ``retry``, ``escalated``, ``reshown``) and an open
    ask give ``None``. A plain ``pass`` (nothing was parked) raises
    :class:`~parkgate.InputError`: it is not the outcome of any ask. ``field`` (from
    :func:`~parkgate.adapters.mcp.read_form`) answers in that field with its wire
    value (an enum's ``const``, a boolean, a number); without it an ask answers as its
    own form (``{"choice": label}``, ``{"answer": text}``, a number for a number ask).

    Args:
        outcome: The gateway's reply, or the ask.
        field: The form field to answer in.

    Returns:
        The result to send the MCP server, or ``None`` while the ask is open.

    Raises:
        InputError: ``outcome`` is a plain ``pass``.
    """
    if isinstance(outcome, Ask):
        if outcome.status is AskStatus.OPEN:
            return None
        if outcome.status is AskStatus.ANSWERED:
            return _accepted(field or ask_field(outcome), outcome.answer, outcome.option_index)
        return ElicitResult(action=DECLINE if outcome.status is AskStatus.CANCELLED else CANCEL)
    kind = outcome.kind
    if kind in (ReplyKind.SELECTED, ReplyKind.ANSWERED):
        if field is None:
            raise InputError("pass the form field to read a reply as an accept (or read the ask itself)")
        return _accepted(field, outcome.answer, outcome.option_index)
    if kind is ReplyKind.CANCELLED:
        return ElicitResult(action=DECLINE)
    if kind is ReplyKind.PASS:
        if outcome.expired_ask_id is not None:
            return ElicitResult(action=CANCEL)
        raise InputError("a pass reply with nothing expired is not the outcome of an ask")
    return None


def _accepted(field: FormField, answer: str | None, option_index: int | None) -> ElicitResult:
    content: ElicitContent = {field.name: field.value(answer, option_index)}
    return ElicitResult(action=ACCEPT, content=content)


def reply_text(ask: Ask, content: Mapping[str, Any] | None, field: str | None = None) -> str:
    """The message that gives ``ask`` the accepted ``content``, as a person would type it.

    A choice is given by its position (so a label that looks like a number cannot pick
    another option), a multi-select's list by its positions (``1, 3``), a number ask's
    number as its digits, a text ask's string as it is.
    Content the form did not ask for (no such field, a value of the wrong type, a label
    that is no option) raises :class:`~parkgate.InputError`.
    """
    name = field or ask_field(ask).name
    if not isinstance(content, Mapping) or name not in content:
        raise InputError(f'the accepted elicitation has no "{name}" field for ask {ask.id}')
    value = content[name]
    if ask.expect is not None and ask.expect.form == SEVERAL:
        if not isinstance(value, list) or not value:
            raise InputError(f'"{name}" must be a non-empty list of options')
        return ", ".join(str(_position(ask.expect.options or (), item, ask.id)) for item in value)
    if ask.kind is AskKind.TEXT and ask.expect is not None and ask.expect.form in NUMBER_FORMS:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InputError(f'"{name}" must be a number, not {type(value).__name__}')
        return repr(value) if isinstance(value, float) else str(value)
    if not isinstance(value, str):
        raise InputError(f'"{name}" must be a string, not {type(value).__name__}')
    if ask.kind is AskKind.TEXT:
        return value
    return str(_position(ask.options, value, ask.id))


def _position(options: tuple[str, ...], value: object, ask_id: str) -> int:
    """The 1-based position of the option ``value`` names (its label, as the matcher reads one)."""
    found = option_position(options, value) if isinstance(value, str) else None
    if found is None:
        raise InputError(f"{value!r} is not one of the options of ask {ask_id}: {', '.join(options)}")
    return found


def _earlier_reply(gateway: Gateway, ask: Ask, message_id: str | None) -> Reply | None:
    if message_id is None:
        return None
    with gateway.store.transaction() as tx:
        raw = tx.reply_for(ask.conversation_id, message_id)
    earlier = Reply.from_json(raw) if raw is not None else None
    return earlier if earlier is not None and earlier.ask_id == ask.id else None


def _closed_ask_reply(ask: Ask, action: str) -> Reply:
    """A result for an ask closed already: an expired ask passes (a second cancel
    included), a decline of a dropped ask changes nothing; anything else is refused."""
    if ask.status is AskStatus.EXPIRED or (ask.status is AskStatus.CANCELLED and action == DECLINE):
        return closed_reply(ask)
    raise InputError(f"ask {ask.id} is already {ask.status.value}")


def _apply_open(
    ask: Ask, result: ElicitResult, field: str | None, message_id: str | None, sender: str | None
) -> Steps[Reply]:
    """Apply a client's result to the open ``ask`` (see :func:`apply_elicit_result`)."""
    action = result.action
    if action == ACCEPT:
        text = reply_text(ask, result.content, field)
        reply: Reply = yield call("handle", ask.conversation_id, text, message_id, sender=sender)
        if reply.kind in (ReplyKind.SELECTED, ReplyKind.ANSWERED) and reply.next_ask is None and reply.run_id:
            yield call("finish_run", reply.run_id, DONE)
        return reply
    if action == DECLINE:
        return closed_reply((yield call("cancel", ask.id)))
    if action == CANCEL:
        return closed_reply((yield call("expire", ask.id, outcome=DISMISSED)))
    raise InputError(f"unknown elicitation action {action!r}")


def apply_elicit_result(
    gateway: Gateway,
    ask_id: str,
    result: ElicitResult,
    *,
    field: str | None = None,
    message_id: str | None = None,
    sender: str | None = None,
) -> Reply:
    """Apply an MCP client's answer to a parked ask; the reply says what it did.

    - ``accept``: the field's value goes through :meth:`Gateway.handle` as the person's
      message (:func:`reply_text`): ``selected``/``answered``, or a bounce (``retry``,
      ``escalated``) that leaves the ask open, exactly as on any other surface (an
      empty text, a number out of range). Once answered, the ask's run is finished
      (``done``): the answer has reached whoever asked. Content the form did not ask
      for raises :class:`~parkgate.InputError` and leaves the ask as it was.
    - ``decline``: the ask is closed as ``cancelled`` and its run completed; the reply
      is ``cancelled``.
    - ``cancel``: the ask is closed as ``expired`` now, as its TTL would close it, with
      outcome :data:`DISMISSED` (:meth:`Gateway.expire`; counted as ``dismissed`` in the
      metrics, no ``ask_expired`` log line); the reply is ``pass`` with ``expired_ask_id``.

    An ask past its TTL is closed as ``expired`` by this read and the reply is ``pass``
    with ``expired_ask_id``; so is any result for an ask already expired. A
    ``decline`` for an ask already cancelled answers ``cancelled`` again and changes
    nothing. Applying to an ask closed otherwise raises :class:`~parkgate.InputError`,
    unless the same ``message_id`` was applied before: then the first reply comes back
    and nothing changes.

    Args:
        gateway: The gateway the ask is parked in.
        ask_id: The parked ask.
        result: The MCP client's ``ElicitResult``.
        field: The form field, when it is not the default ``choice``/``answer``.
        message_id: The result's id: applied again, the first reply comes back.
        sender: Who answered (an ``accept`` is their message): on an ask with
            responders, anyone else's answer is ``not_yours`` and leaves it open.

    Returns:
        What the gateway did, by kind.

    Raises:
        InputError: The content holds a field the form did not ask for, or the ask was
            closed otherwise.
    """
    ask = gateway.get(ask_id)
    if not ask.is_open:
        return _earlier_reply(gateway, ask, message_id) or _closed_ask_reply(ask, result.action)
    return run_sync(gateway, _apply_open(ask, result, field, message_id, sender))


async def aapply_elicit_result(
    gateway: AsyncGateway, ask_id: str, result: ElicitResult, *, field: str | None = None, sender: str | None = None
) -> Reply:
    """:func:`apply_elicit_result` for asyncio code, on an :class:`AsyncGateway` (no
    ``message_id``: a result applied twice is refused as for an ask closed otherwise)."""
    ask = await gateway.get(ask_id)
    if not ask.is_open:
        return _closed_ask_reply(ask, result.action)
    return await run_async(gateway, _apply_open(ask, result, field, None, sender))
