"""The client's own user as an approver: where a rule allows it (``ask_client``) and the
client declares form elicitation, a held call's ask is also put to the client's user on
an MCP form (:func:`~parkgate.mcp_gateway.render.approval_form`: the ask's options and an
optional reason). Their answer goes through parkgate's door as a message from the rule's
sender, so the ask's record, its TTL and every other surface hold: whichever answer
comes first decides, and the other finds the ask closed.

The form travels as the connection's protocol era allows:

- handshake era (``initialize``; 2025-11-25 and before): an ``elicitation/create``
  request sent while the call is held, withdrawn (the request cancelled) when the ask
  closes another way or the hold ends;
- 2026-07-28 (no server-to-client requests): the call's first round returns an
  ``InputRequiredResult`` carrying the form, with the ask's id as its request state; the
  client's retry of the same call carries the answer.
"""

from __future__ import annotations

import logging
from typing import Any

from mcp.server import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import (
    CallToolRequestParams,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    InputRequiredResult,
)
from pydantic import ValidationError

from parkgate.core.model import Ask
from parkgate.mcp_gateway import render
from parkgate.mcp_gateway.policy import Rule

log = logging.getLogger("parkgate.mcp_gateway")

#: The key of the form among a 2026-07-28 round's input requests (and of its answer).
FORM_KEY = "parkgate/approval"

#: What the client's user answered: the option chosen and their reason, if any.
Answer = tuple[str, str | None]


class ClientApprover:
    """The client's own user, as an approver of the ask one ``tools/call`` request waits on.

    Args:
        sender: Who their answer is sent as (the rule's ``ask_client``).
        ctx: The request's context (its session sends the form, or says it cannot).
        params: The request's parameters (a 2026-07-28 retry carries the form's answer).
    """

    def __init__(self, sender: str, ctx: ServerRequestContext[Any], params: CallToolRequestParams) -> None:
        self.sender = sender
        self.ctx = ctx
        self.params = params

    @classmethod
    def of(cls, ctx: ServerRequestContext[Any], params: CallToolRequestParams, rule: Rule) -> ClientApprover | None:
        """The client's user as an approver of this call, or ``None``: the rule does not
        allow it, or the client declares no form elicitation."""
        if rule.ask_client is None:
            return None
        capabilities = ctx.session.client_capabilities
        elicitation = capabilities.elicitation if capabilities is not None else None
        # An empty elicitation capability is form mode (the spec's reading for older clients).
        if elicitation is None or (elicitation.form is None and elicitation.url is not None):
            return None
        return cls(rule.ask_client, ctx, params)

    @property
    def inline(self) -> bool:
        """Whether the form goes as a request while the call is held (handshake era); else
        it goes back as an ``InputRequiredResult`` and the answer comes with the retry."""
        return self.ctx.session.can_send_request

    def carries_answer(self, ask: Ask) -> bool:
        """Whether this request is the retry that answers the form for ``ask``."""
        responses = self.params.input_responses or {}
        return FORM_KEY in responses and self.params.request_state == ask.id

    def answer(self, ask: Ask) -> Answer | None:
        """The answer this retry carries for ``ask`` (:meth:`carries_answer`), or ``None``:
        the form was declined, dismissed, or answered with no option of the ask."""
        response = (self.params.input_responses or {}).get(FORM_KEY)
        if not isinstance(response, ElicitResult):
            return None
        return render.form_answer(ask, response.action, response.content)

    def form(self, ask: Ask) -> InputRequiredResult:
        """The round that puts ``ask`` to the client's user (2026-07-28)."""
        message, schema = render.approval_form(ask)
        request = ElicitRequest(params=ElicitRequestFormParams(message=message, requested_schema=schema))
        return InputRequiredResult(input_requests={FORM_KEY: request}, request_state=ask.id)

    async def elicit(self, ask: Ask) -> Answer | None:
        """Put ``ask`` to the client's user now (handshake era); their answer, or ``None``
        when they gave none or the client failed to show the form (logged: the ask stays
        open for the people on parkgate's surfaces)."""
        message, schema = render.approval_form(ask)
        try:
            result = await self.ctx.session.elicit_form(message, schema, related_request_id=self.ctx.request_id)
        except (MCPError, ValidationError) as error:  # NoBackChannelError is an MCPError
            log.warning("ask %s: the client did not show the approval form (%s)", ask.id, error)
            return None
        return render.form_answer(ask, result.action, result.content)
