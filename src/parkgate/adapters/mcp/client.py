"""An MCP client whose elicitations a person answers through parkgate.

:class:`ParkgateElicitation` is a client ``elicitation_callback``: the server's form is
parked as asks in a parkgate conversation (a chat tab, Slack, the console), the person
answers there as on any other surface, and the callback returns the answer to the
server once every field is answered. Bounces, ``menu`` and the escalated line stay
between the person and parkgate; the server sees one result.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

import anyio
from mcp.client.session import ClientRequestContext
from mcp_types import INVALID_PARAMS, ElicitRequestFormParams, ElicitRequestParams, ElicitResult, ErrorData

from parkgate.adapters.common import ask_call
from parkgate.adapters.effects import run_async, single
from parkgate.adapters.mcp.forms import FormField, read_form
from parkgate.adapters.mcp.results import ABANDONED, ACCEPT, CANCEL, DONE, ElicitContent, to_elicit_result
from parkgate.core.kinds import AskStatus
from parkgate.core.model import Ask, Reply
from parkgate.errors import AskAlreadyOpen, InputError
from parkgate.gateway import Gateway
from parkgate.gateway.async_gateway import AsyncGateway

#: How long one :meth:`AsyncGateway.wait` may last while no ``timeout`` is set; the ask's
#: TTL still bounds the whole wait (the wait's reads close an ask past it).
WAIT_SECONDS = 3600.0

Notify = Callable[[Reply], Awaitable[None] | None]


class ParkgateElicitation:
    """An MCP client ``elicitation_callback`` that asks the person through parkgate.

    Each form-mode elicitation is read with :func:`~parkgate.adapters.mcp.read_form`
    and its fields are parked one after the other in ``conversation_id``, in one run;
    ``on_asked`` gets each ``asked`` reply so the surface can show the question. The
    person's messages go to :meth:`Gateway.handle` as usual. The callback returns:

    - ``accept`` with every field once the last one is answered, and finishes the run
      (``done``);
    - ``decline`` as soon as the person drops a field (a cancel word), ``cancel`` when
      one expires (its TTL, or ``timeout`` seconds for the whole form: an ask still
      open then is expired on the spot, as its TTL would);
    - an ``INVALID_PARAMS`` error, parking nothing, for a form parkgate cannot ask (URL
      mode, a shape outside the spec), naming the field, or when the conversation
      already has an open ask (unless ``replace``).

    With ``responders``, only their messages answer the form's questions (anyone
    else's is ``not_yours``); with ``quorum`` too, a choice field is selected once that
    many of them agree (a form with a text field takes quorum 1 only: refused as above).

    When the MCP side abandons the elicitation (the callback is cancelled: the server
    cancelled its request, the session closed, the server process died), the open ask
    is closed at once as ``cancelled`` with outcome :data:`ABANDONED`, and its run with
    it, so the person's next message is ``pass``, never a selection nobody receives::

        client = Client(server, elicitation_callback=ParkgateElicitation(gateway, "chat-1"))

    Args:
        gateway: A :class:`Gateway` or an :class:`AsyncGateway`.
        conversation_id: Where the form's questions are parked.
        ttl: Each question's TTL; the gateway's by default.
        replace: Cancel an ask already open in the conversation instead of refusing.
        timeout: Seconds for the whole form, after which an open question expires.
        on_asked: Called with each ``asked`` reply, so the surface shows the question.
        responders: Who may answer the form's questions (distinct senders); anyone by default.
        quorum: How many responders must pick the same option (1 by default).
    """

    def __init__(
        self,
        gateway: Gateway | AsyncGateway,
        conversation_id: str,
        *,
        ttl: timedelta | None = None,
        replace: bool = False,
        timeout: float | None = None,
        on_asked: Notify | None = None,
        responders: list[str] | None = None,
        quorum: int | None = None,
    ) -> None:
        self.gateway = gateway if isinstance(gateway, AsyncGateway) else AsyncGateway(gateway)
        self.conversation_id = conversation_id
        self.ttl = ttl
        self.replace = replace
        self.timeout = timeout
        self.on_asked = on_asked
        self.responders = responders
        self.quorum = quorum

    async def __call__(self, context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult | ErrorData:
        """Park the form's fields one by one, wait for the person, and answer the server."""
        if not isinstance(params, ElicitRequestFormParams):
            return ErrorData(code=INVALID_PARAMS, message="parkgate answers form-mode elicitations only")
        try:
            form = read_form(params)
        except InputError as error:
            return ErrorData(code=INVALID_PARAMS, message=str(error))
        deadline = None if self.timeout is None else anyio.current_time() + max(0.0, self.timeout)
        run_id = uuid.uuid4().hex
        open_ask: str | None = None
        parked = False
        try:
            content: ElicitContent = {}
            for position, field in enumerate(form.fields):
                try:
                    # Shielded: a cancel arriving while the ask is being parked lands once
                    # its id is known, so the handler below can close it.
                    with anyio.CancelScope(shield=True):
                        asked = await self._park(field, run_id, replace=self.replace and position == 0)
                        open_ask, parked = asked.ask_id, True
                except (InputError, AskAlreadyOpen) as error:
                    if parked:  # the run has answered fields: it ends here
                        await self.gateway.finish_run(run_id, ABANDONED)
                    return ErrorData(code=INVALID_PARAMS, message=str(error))
                assert open_ask is not None
                await self._show(asked)
                ask = await self._wait(open_ask, deadline)
                open_ask = None
                if ask.status is not AskStatus.ANSWERED:
                    return to_elicit_result(ask) or ElicitResult(action=CANCEL)  # the run closed with the ask
                content[field.name] = field.value(ask.answer, ask.option_index)
            await self.gateway.finish_run(run_id, DONE)
            return ElicitResult(action=ACCEPT, content=content)
        except BaseException:
            # Cancelled (or failed) while the person's side may still answer: nobody would
            # receive that answer, so the open ask closes now, whatever stops this call.
            if parked:
                with anyio.CancelScope(shield=True):
                    await self._abandon(run_id, open_ask)
            raise

    async def _abandon(self, run_id: str, open_ask: str | None) -> None:
        """Close ``open_ask`` as :data:`ABANDONED`, and the run with it if it is still running
        (the ask may have been answered a moment before: that answer reaches nobody)."""
        if open_ask is not None:
            await self.gateway.cancel(open_ask, outcome=ABANDONED)
        run = await self.gateway.run(run_id)
        if run is not None and run.status == "running":
            await self.gateway.finish_run(run_id, ABANDONED)

    async def _park(self, field: FormField, run_id: str, *, replace: bool) -> Reply:
        options: dict[str, Any] = {"run_id": run_id, "ttl": self.ttl, "replace": replace, "default": field.default}
        if self.responders is not None:
            options.update(responders=self.responders, quorum=self.quorum)
        asking = ask_call(self.conversation_id, field.spec, expect=field.expect, **options)
        reply: Reply = await run_async(self.gateway, single(asking))
        return reply

    async def _show(self, asked: Reply) -> None:
        if self.on_asked is not None:
            shown = self.on_asked(asked)
            if shown is not None:
                await shown

    async def _wait(self, ask_id: str, deadline: float | None) -> Ask:
        """The ask once closed; at ``deadline``, an ask still open is expired now."""
        while True:
            remaining = WAIT_SECONDS if deadline is None else deadline - anyio.current_time()
            ask = await self.gateway.wait(ask_id, max(0.0, remaining))
            if not ask.is_open:
                return ask
            if deadline is not None and anyio.current_time() >= deadline:
                return await self.gateway.expire(ask_id)


__all__ = ["ParkgateElicitation"]
