"""The HTTP service: the gateway as a small JSON API, a web console, metrics and health.

Routes (the public contract; paths and field names are kept stable):

- ``POST /v1/asks``: park a question (``prompt`` + ``kind``/``options``, or a skill's
  ``skill_output`` holding a ``[[ask]]`` marker); 201 with the ``asked`` reply.
- ``POST /v1/conversations/{conversation_id}/messages``: one inbound message; the reply
  always carries a ``kind``.
- ``GET /v1/asks/{ask_id}`` (``?wait=S`` long-polls up to 60 s until it closes),
  ``GET /v1/asks?status=open`` (oldest first, with ``hours_open``, a page at a time:
  ``limit`` and ``cursor``, answered as ``{asks, next}``), ``POST /v1/asks/{ask_id}/cancel``.
- ``GET /v1/asks/{ask_id}/events`` (an ask's timeline) and ``GET /v1/events/stream`` (new
  events as server-sent events, resumable with ``Last-Event-ID``).
- ``POST /v1/workflows/{name}/start``: start a registered workflow (the demo ``uml``).
- ``/healthz``, ``/metrics`` (Prometheus), ``/openapi.json``, and the console at ``/``.
- ``POST /slack/events`` when Slack is served (:mod:`parkgate.channels.slack`), signed by Slack;
  ``POST /telegram/webhook`` when Telegram is (:mod:`parkgate.channels.telegram`), with the webhook's secret.

The guard (:mod:`parkgate.http.guard`) runs first: a foreign ``Host``, a cross-site
request and a write that is not JSON are refused, and when tokens are configured
(:mod:`parkgate.http.settings`) every ``/v1`` route needs ``Authorization: Bearer <token>``
of a token with the route's scope (:mod:`parkgate.http.tokens`). Every error is JSON
``{"error": code, "detail": message}`` with a 4xx (or 503 while the store is out of
reach; :mod:`parkgate.http.errors`); bodies over :data:`MAX_BODY_BYTES`
(:data:`MAX_ASK_BODY_BYTES` for ``POST /v1/asks``) are refused with 413 before they are
read. A body that is not UTF-8 is a 422 and a path whose ``%``-escapes are not UTF-8 a
400, both before anything is read or written. Every GET route answers HEAD too.

The parts: the routes (:mod:`parkgate.http.routes`, one router per resource), the models
(:mod:`parkgate.http.models`), the error mapping (:mod:`parkgate.http.errors`), the
settings (:mod:`parkgate.http.settings`) and the OpenAPI schema
(:mod:`parkgate.http.openapi`). :func:`create_app` puts them together.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
from collections.abc import AsyncIterator, Sequence

from fastapi import FastAPI

from parkgate.channels.serving import ServedChannel, served_channels
from parkgate.cli.demo import WORKFLOWS
from parkgate.clock import Clock
from parkgate.delivery import Deliverer
from parkgate.gateway import Gateway
from parkgate.gateway.async_gateway import AsyncGateway
from parkgate.gateway.checks import MAX_WAIT_SECONDS
from parkgate.gateway.delivering import deliverer_for
from parkgate.http.errors import add_error_handlers
from parkgate.http.event_stream import EventTail
from parkgate.http.guard import MAX_BODY_BYTES, GuardMiddleware
from parkgate.http.logs import ensure_stderr_logging
from parkgate.http.longpolls import DEFAULT_MAX_LONG_POLLS, LongPolls, max_long_polls_from_env
from parkgate.http.models import MAX_ASK_BODY_BYTES, AskIn, MessageIn, StartIn
from parkgate.http.openapi import openapi_of
from parkgate.http.quota import OpenAskCap
from parkgate.http.routes import add_routes
from parkgate.http.settings import (
    ENV_DB,
    ENV_PG_SCHEMA,
    ENV_PG_TIMEOUT,
    SERVER_PG_TIMEOUT_SECONDS,
    Settings,
    open_server_store,
    parse_pg_timeout,
    settings_from_env,
    store_from_env,
    with_token,
)
from parkgate.http.stopping import Stopping


@contextlib.asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    """While the app is up, its deliverer (if any) runs as a task; on shutdown the task
    stops, and a gateway the app owns is closed."""
    deliverer: Deliverer | None = app.state.deliverer
    task = asyncio.create_task(deliverer.run(), name="parkgate-deliver") if deliverer else None
    # Everything loaded to start (the framework, the libraries, the app) stays for the
    # process's life: frozen, the cyclic collector's full passes skip it, so a request
    # never waits for one to walk every module's objects.
    gc.collect()
    gc.freeze()
    stopping: Stopping = app.state.stopping
    stopping.hear()  # a stop signal ends the event streams, which would hold the shutdown
    try:
        yield
    finally:
        stopping.forget()
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if app.state.owns_gateway:
            await app.state.async_gateway.close()


def create_app(
    gateway: Gateway | None = None,
    *,
    db_url: str | None = None,
    token: str | None = None,
    settings: Settings | None = None,
    deliver_callbacks: bool = True,
    max_long_polls: int = DEFAULT_MAX_LONG_POLLS,
    channels: Sequence[ServedChannel] = (),
) -> FastAPI:
    """The ASGI app serving ``gateway`` (or a new one on ``db_url`` with the demo workflow).

    ``settings`` are the tokens, allowed hosts and callback allow-list the guard and the
    routes enforce (default: none of them); ``token`` is a shorthand for one token with
    every scope (a blank one is a :class:`~parkgate.http.settings.SettingsError`).
    ``deliver_callbacks`` runs a :class:`~parkgate.delivery.Deliverer` (due reads and
    callbacks, under the same callback allow-list) as a background task while the app is
    up (in its lifespan). At most ``max_long_polls`` long-polls wait at once
    (:mod:`parkgate.http.longpolls`); request heads over 64 KiB get 431
    (the guard's first check, :func:`parkgate.http.guard.check_head`). A gateway made here is closed on shutdown; one
    passed in belongs to the caller and is served as it was given (its workflows are
    its own: the demo workflow is added only to a gateway made here). ``channels`` are
    mounted (their routes, verified by their own signatures: :mod:`parkgate.channels.serving`).
    """
    settings = with_token(settings or Settings(), token)
    owned = gateway is None
    if gateway is None:
        gateway = Gateway(store=open_server_store(db_url), workflows=WORKFLOWS.values(), surface="http")
    app = FastAPI(
        title="parkgate",
        summary="Parked human-in-the-loop asks that always close.",
        version="1",
        lifespan=lifespan,
        docs_url=None,  # /docs is served from the Swagger UI copy that ships in a package
        redoc_url=None,
        # "/v1/asks/" is not a route: a JSON 404, not a bare 307 a POST client may not follow.
        redirect_slashes=False,
    )
    app.state.gateway = gateway
    app.state.async_gateway = AsyncGateway(gateway)
    app.state.owns_gateway = owned
    app.state.deliverer = deliverer_for(gateway, allow=settings.callback_allow) if deliver_callbacks else None
    app.state.settings = settings
    app.state.open_ask_cap = OpenAskCap(app.state.async_gateway)
    app.state.long_polls = LongPolls(max_long_polls)
    app.state.event_tail = EventTail(app.state.async_gateway)
    app.state.stopping = Stopping()
    signed = frozenset(path for served in channels for path in served.signed_paths)
    app.add_middleware(
        GuardMiddleware,
        settings=settings,
        routes=app.router.routes,
        limits={("POST", "/v1/asks"): MAX_ASK_BODY_BYTES},
        signed_paths=signed,
    )
    for served in channels:
        app.router.routes.extend(served.routes)
    add_error_handlers(app)
    add_routes(app)
    app.openapi = openapi_of(app)  # type: ignore[method-assign]
    return app


def app_from_env(*, clock: Clock | None = None) -> FastAPI:
    """The app factory for ``uvicorn --factory parkgate.http.app:app_from_env``.

    Reads ``PARKGATE_DB``, ``PARKGATE_PG_SCHEMA`` and ``PARKGATE_PG_TIMEOUT`` (see
    :func:`~parkgate.http.settings.store_from_env`), and the tokens, allowed hosts and
    callback allow-list (:func:`parkgate.http.settings.settings_from_env`:
    ``PARKGATE_TOKEN``, ``PARKGATE_TOKEN_FILE`` or ``PARKGATE_TOKENS_FILE``,
    ``PARKGATE_ALLOWED_HOSTS``, ``PARKGATE_CALLBACK_ALLOW``), and the cap on long-polls
    (``PARKGATE_MAX_LONG_POLLS``), and the channels to serve (``PARKGATE_SLACK_BOT_TOKEN``
    and ``PARKGATE_SLACK_SIGNING_SECRET``: ``POST /slack/events``; ``PARKGATE_TELEGRAM_BOT_TOKEN``
    and ``PARKGATE_TELEGRAM_WEBHOOK_SECRET``: ``POST /telegram/webhook``); a bad one stops the start.
    When nothing in the process has configured logging, the ``parkgate`` records (each
    expiry's ``ask_expired`` line) go to stderr as JSON lines
    (:func:`parkgate.http.logs.ensure_stderr_logging`).

    Args:
        clock: The gateway's clock (default the real one); a test serving the app from a
            thread passes a :class:`~parkgate.ManualClock` it moves.
    """
    ensure_stderr_logging()
    settings = settings_from_env()
    max_long_polls = max_long_polls_from_env()
    gateway = Gateway(store=store_from_env(), workflows=WORKFLOWS.values(), surface="http", clock=clock)
    try:
        channels = served_channels(gateway, os.environ)
        app = create_app(gateway, settings=settings, max_long_polls=max_long_polls, channels=channels)
    except BaseException:
        gateway.close()
        raise
    app.state.owns_gateway = True
    return app


__all__ = [
    "ENV_DB",
    "ENV_PG_SCHEMA",
    "ENV_PG_TIMEOUT",
    "MAX_ASK_BODY_BYTES",
    "MAX_BODY_BYTES",
    "MAX_WAIT_SECONDS",
    "SERVER_PG_TIMEOUT_SECONDS",
    "AskIn",
    "MessageIn",
    "StartIn",
    "app_from_env",
    "create_app",
    "open_server_store",
    "parse_pg_timeout",
    "store_from_env",
]
