"""The service's routes, one router per resource: :func:`add_routes` puts them on an app.

- :mod:`~parkgate.http.routes.asks`: ``/v1/asks`` and the callbacks of asks;
- :mod:`~parkgate.http.routes.events`: ``/v1/asks/{id}/events``, the event log;
- :mod:`~parkgate.http.routes.history`: ``/v1/stats`` and ``/v1/export``;
- :mod:`~parkgate.http.routes.follow_ups`: claiming an ask's follow-up and marking it done;
- :mod:`~parkgate.http.routes.conversations`: ``/v1/conversations/{id}/messages``;
- :mod:`~parkgate.http.routes.runs`: ``/v1/runs``;
- :mod:`~parkgate.http.routes.workflows`: ``/v1/workflows``;
- :mod:`~parkgate.http.routes.channels`: ``/v1/channels/failed``;
- :mod:`~parkgate.http.routes.directory`: ``/v1/directory``, the display names the console shows;
- :mod:`~parkgate.http.routes.operations`: ``/healthz``, ``/metrics``;
- :mod:`~parkgate.http.routes.console`: the console at ``/`` and Swagger UI at ``/docs``.

Every route is ``async`` and awaits the :class:`~parkgate.AsyncGateway`; each ``/v1``
route names the token scope it needs (:func:`parkgate.http.guard.needs`).
"""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.routing import APIRoute

from parkgate.http.routes import (
    asks,
    channels,
    console,
    conversations,
    directory,
    events,
    follow_ups,
    history,
    operations,
    runs,
    workflows,
)

ROUTERS = (
    asks.router,
    events.router,
    history.router,
    follow_ups.router,
    conversations.router,
    runs.router,
    workflows.router,
    channels.router,
    directory.router,
    operations.router,
    console.router,
)


def add_routes(app: FastAPI) -> None:
    """Every router's routes, the static files, and a HEAD twin for each GET route.

    The routes join the app's own route list, each as it is, so that the guard and the
    405 handler find every route in ``app.router.routes`` (``include_router`` in recent
    FastAPI keeps an included router's routes behind one entry there).
    """
    for router in ROUTERS:
        app.router.routes.extend(router.routes)
    console.mount_static_files(app)
    answer_head(app)


def answer_head(app: FastAPI) -> None:
    """Every GET route answers HEAD as well (Starlette's plain routes do; FastAPI's do not).

    Each gets a twin route for HEAD, left out of the OpenAPI schema: the same handler,
    so the same status and headers (the guard drops the body).
    """
    for route in list(app.router.routes):
        if isinstance(route, APIRoute) and {"GET"} <= (methods := route.methods or set()) and "HEAD" not in methods:
            app.router.add_api_route(
                route.path,
                route.endpoint,
                methods=["HEAD"],
                name=f"{route.name}_head",
                include_in_schema=False,
                response_model=route.response_model,
                status_code=route.status_code,
                response_class=route.response_class,
                dependencies=route.dependencies,
            )
