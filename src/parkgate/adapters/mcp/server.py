"""An MCP server whose tool asks a person through parkgate: the ask is parked for audit
and TTL, the MCP client collects the answer, and parkgate checks it.

Both ways of eliciting are served: the 2025-11-25 back-channel (an
``elicitation/create`` request inside the tool call) and the 2026-07-28 input-required
flow (the tool call returns the elicitation, and the client calls again with the answer).
"""

# No ``from __future__ import annotations`` here: the MCP SDK reads the tool's annotations
# when it is registered.

from typing import Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ElicitRequest, ElicitResult, InputRequiredResult
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from parkgate.adapters.common import ask_call
from parkgate.adapters.effects import Steps, call, run_async
from parkgate.adapters.mcp.forms import elicit_params
from parkgate.adapters.mcp.results import ABANDONED, DISMISSED, aapply_elicit_result
from parkgate.core import stopping_point
from parkgate.core.kinds import AskKind, AskStatus
from parkgate.core.model import Ask, Reply
from parkgate.core.phrases import MCP_DISMISSED, MCP_EXPIRED
from parkgate.core.stopping_point import AskSpec
from parkgate.errors import AskAlreadyOpen, InputError, UnknownAsk
from parkgate.gateway import Gateway
from parkgate.gateway.async_gateway import AsyncGateway

#: The key of the one input request the tool's input-required round carries.
INPUT_KEY = "parkgate_answer"
#: The outcome of an ask closed because the MCP client's answer was not one the form asked for.
INVALID_ANSWER = "invalid_answer"


def spec_of(ask: Ask) -> AskSpec:
    """The question ``ask`` asks, as a spec: its kind, prompt, options and who may answer."""
    return AskSpec(ask.kind, ask.prompt, ask.options, tuple(ask.responders), ask.quorum)


def park_once(conversation_id: str, spec: AskSpec) -> Steps[Ask]:
    """Park ``spec``, or take the same question already open in the conversation.

    The input-required flow calls the tool once per round: the question is parked once
    and asked identically each time.
    """
    try:
        asked: Reply = yield ask_call(conversation_id, spec)
    except AskAlreadyOpen as error:
        open_ask: Ask = yield call("get", error.ask_id)
        if open_ask.is_open and spec_of(open_ask) == spec:
            return open_ask
        raise
    parked: Ask = yield call("get", asked.ask_id or "")
    return parked


async def _outcome(gateway: AsyncGateway, reply: Reply) -> dict[str, Any]:
    """The tool's result: the reply, and how its ask closed (``status`` and ``outcome``),
    so a model reads ``expired`` or ``cancelled`` where the reply itself is a bare ``pass``."""
    ask_id = reply.ask_id or reply.expired_ask_id
    ask = await gateway.get(ask_id) if ask_id is not None else None
    return {
        "kind": reply.kind.value,
        "status": ask.status.value if ask is not None else None,
        "outcome": ask.outcome if ask is not None else None,
        "answer": reply.answer,
        "option_index": reply.option_index,
        "ask_id": ask_id,
        "text": reply.text or _closed_line(ask),
    }


def _closed_line(ask: Ask | None) -> str:
    """What a result with no reply text says: how the ask closed without an answer."""
    if ask is None or ask.status is not AskStatus.EXPIRED:
        return ""
    return MCP_DISMISSED if ask.outcome == DISMISSED else MCP_EXPIRED


async def ask_and_apply(
    gateway: AsyncGateway, ctx: Context, conversation_id: str, spec: AskSpec
) -> dict[str, Any] | InputRequiredResult:
    """Park ``spec``, elicit its answer from the MCP client, apply it; the tool's result.

    A bounce (an empty answer, say) asks again with the retry line as the message, in
    the same call. Whatever ends the call without a result (content the form did not
    ask for, a cancelled call, a closed session) closes the ask as ``cancelled``, its
    outcome saying why: no ask is left open behind an error.
    """
    try:
        ask = await _parked(gateway, ctx, conversation_id, spec)
    except (InputError, UnknownAsk) as error:  # AskAlreadyOpen is one: another question is open there
        raise ToolError(str(error)) from None
    try:
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return await _input_required_round(gateway, ctx, ask)
        message = ask.prompt
        while True:
            result = await ctx.session.elicit_form(
                message=message, requested_schema=elicit_params(ask).requested_schema, related_request_id=ctx.request_id
            )
            reply = await aapply_elicit_result(gateway, ask.id, result)
            if not reply.parked:
                return await _outcome(gateway, reply)
            message = reply.text  # the retry line, with the question
    except InputError as error:
        with anyio.CancelScope(shield=True):
            await gateway.cancel(ask.id, outcome=INVALID_ANSWER)
        raise ToolError(f"{error}; the question was closed") from None
    except BaseException:
        with anyio.CancelScope(shield=True):
            await gateway.cancel(ask.id, outcome=ABANDONED)
        raise


async def _parked(gateway: AsyncGateway, ctx: Context, conversation_id: str, spec: AskSpec) -> Ask:
    """The ask this call is about: in a later round of the input-required flow, the one
    its first round parked (named by ``request_state``, so an answer that comes back
    after the ask closed finds it closed, never a new question); else parked now."""
    state = ctx.request_state if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS else None
    if not state:
        return await run_async(gateway, park_once(conversation_id, spec))
    ask = await gateway.get(state)
    if ask.conversation_id != conversation_id or spec_of(ask) != spec:
        raise InputError(f"request_state names ask {state}, which is not this question")
    return ask


async def _input_required_round(gateway: AsyncGateway, ctx: Context, ask: Ask) -> dict[str, Any] | InputRequiredResult:
    answer = (ctx.input_responses or {}).get(INPUT_KEY)
    if answer is None:
        return InputRequiredResult(input_requests={INPUT_KEY: _request(ask)}, request_state=ask.id)
    if not isinstance(answer, ElicitResult):
        raise InputError(f"the answer to {INPUT_KEY!r} is not an elicitation result")
    reply = await aapply_elicit_result(gateway, ask.id, answer)
    if reply.parked:  # a bounce: ask again, saying why
        return InputRequiredResult(input_requests={INPUT_KEY: _request(ask, reply.text)}, request_state=ask.id)
    return await _outcome(gateway, reply)


def _request(ask: Ask, message: str | None = None) -> ElicitRequest:
    return ElicitRequest(params=elicit_params(ask, message))


def build_example_server(gateway: Gateway | AsyncGateway, *, name: str = "parkgate") -> MCPServer:
    """An MCP server with one tool, ``ask_person``, that asks through parkgate.

    ``ask_person(conversation_id, question, options=None)`` parks the question in
    ``gateway`` (a choice with options, else a text ask), elicits the answer from the MCP
    client and applies it (:func:`~parkgate.adapters.mcp.apply_elicit_result`, which
    checks it: a value that is no option, a missing field or a wrong type is refused).
    It returns the reply's ``kind``, ``answer``, ``option_index``, ``ask_id`` and
    ``text``, with the ask's ``status`` and ``outcome``: an answer is ``answered``, a
    decline ``cancelled``, and a dismissed form (``cancel``) or a lapsed TTL
    ``expired`` (outcome ``dismissed`` or ``expired``), its ``text`` saying so where
    the reply is a bare ``pass``. Content the form did not ask for is a tool error, and
    its ask is closed (``cancelled``, outcome ``invalid_answer``). Run it on stdio with
    ``build_example_server(Gateway(url)).run()`` (``examples/mcp_ask_server.py``).

    Args:
        gateway: The gateway the questions are parked in.
        name: The server's name.

    Returns:
        The MCP server, not yet running.
    """
    waiter = gateway if isinstance(gateway, AsyncGateway) else AsyncGateway(gateway)
    server = MCPServer(name)

    @server.tool(description="Ask the person a question through parkgate and return their answer.")
    async def ask_person(
        conversation_id: str, question: str, ctx: Context, options: list[str] | None = None
    ) -> dict[str, Any] | InputRequiredResult:
        kind = AskKind.CHOICE if options else AskKind.TEXT
        try:
            spec = stopping_point.make_spec(kind, question, options)
        except InputError as error:
            raise ToolError(str(error)) from None
        return await ask_and_apply(waiter, ctx, conversation_id, spec)

    return server
