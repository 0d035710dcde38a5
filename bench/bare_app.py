"""The HTTP floor's baseline: a bare Starlette app under ``parkgate serve``'s uvicorn settings.

One JSON POST route on the path a message takes (``/v1/conversations/{id}/messages``): it
parses the body and answers a small JSON object, so it pays what any JSON API pays (the
server, the protocol class, routing, one body read, one decode and one encode) and
nothing of parkgate's. A ``GET /healthz`` says the server is up.

``python -m bench.bare_app --port PORT --workers N`` serves it through
:func:`parkgate.http.server.serve` itself, with only the app factory swapped: the same
uvicorn call, protocol class (the bounded httptools protocol ``serve`` passes by default),
header limit, connection limits, logging (no access log by default) and worker model.
"""

from __future__ import annotations

import argparse

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

#: What uvicorn imports in every worker process of the bare server.
FACTORY = "bench.bare_app:make_app"


async def message(request: Request) -> JSONResponse:
    """Read the JSON body and answer a ``pass`` naming the conversation and the text."""
    body = await request.json()
    return JSONResponse(
        {"kind": "pass", "conversation_id": request.path_params["conversation_id"], "text": body.get("text")}
    )


async def healthz(_request: Request) -> JSONResponse:
    """Up: nothing is checked."""
    return JSONResponse({"status": "ok"})


def make_app() -> Starlette:
    """The bare app (a factory, as ``parkgate serve``'s app is)."""
    return Starlette(
        routes=[
            Route("/v1/conversations/{conversation_id}/messages", message, methods=["POST"]),
            Route("/healthz", healthz, methods=["GET"]),
        ]
    )


def main(argv: list[str] | None = None) -> None:
    """Serve the bare app on loopback through ``parkgate serve``'s own code path."""
    parser = argparse.ArgumentParser(prog="python -m bench.bare_app", description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args(argv)
    from parkgate.http import server

    server.APP_FACTORY = FACTORY  # serve() passes this module global to uvicorn.run
    server.serve("sqlite:///bare-app-opens-no-store.db", "127.0.0.1", args.port, args.workers, None)


if __name__ == "__main__":
    main()
