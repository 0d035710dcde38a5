"""What a route takes from the app besides its request: the gateway, the caller the guard
identified, the settings, the open-ask cap and the long-polls, as FastAPI dependencies.

:func:`parkgate.http.app.create_app` leaves them in the app's state; a route names the
one it needs as a parameter (``gateway: GatewayDep``), so each route is a plain function
of its inputs. Each is ``async``: FastAPI runs a sync dependency on a worker thread.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from parkgate.gateway.async_gateway import AsyncGateway
from parkgate.http.guard import CALLER_STATE
from parkgate.http.longpolls import LongPolls
from parkgate.http.quota import OpenAskCap
from parkgate.http.settings import Settings
from parkgate.http.tokens import ANONYMOUS, Caller


async def gateway_of(request: Request) -> AsyncGateway:
    """The gateway the app serves."""
    gateway: AsyncGateway = request.app.state.async_gateway
    return gateway


async def caller_of(request: Request) -> Caller:
    """Who sent the request (the guard left it in the request's state)."""
    caller = getattr(request.state, CALLER_STATE, ANONYMOUS)
    return caller if isinstance(caller, Caller) else ANONYMOUS


async def settings_of(request: Request) -> Settings:
    """The settings the app was made with (its callback allow-list, for one)."""
    settings: Settings = request.app.state.settings
    return settings


async def open_ask_cap_of(request: Request) -> OpenAskCap:
    """The cap on each token's open asks."""
    cap: OpenAskCap = request.app.state.open_ask_cap
    return cap


async def long_polls_of(request: Request) -> LongPolls:
    """The count and cap of the long-polls the process holds."""
    polls: LongPolls = request.app.state.long_polls
    return polls


GatewayDep = Annotated[AsyncGateway, Depends(gateway_of)]
CallerDep = Annotated[Caller, Depends(caller_of)]
SettingsDep = Annotated[Settings, Depends(settings_of)]
OpenAskCapDep = Annotated[OpenAskCap, Depends(open_ask_cap_of)]
LongPollsDep = Annotated[LongPolls, Depends(long_polls_of)]
