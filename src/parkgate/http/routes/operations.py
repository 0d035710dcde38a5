"""``/healthz`` and ``/metrics``: what a load balancer and Prometheus read."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Request
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST

from parkgate.delivery import Deliverer
from parkgate.delivery.health import DelivererHealth, DelivererState
from parkgate.errors import ServerError
from parkgate.gateway import Gateway
from parkgate.gateway.async_gateway import offload
from parkgate.http.dependencies import GatewayDep
from parkgate.http.errors import documented
from parkgate.http.models import SafeJSONResponse
from parkgate.http.outputs import ErrorOut, HealthOut
from parkgate.http.responses import error_response
from parkgate.store import StoreError, StoreUnavailable, is_postgres_url

router = APIRouter(tags=["operations"])

#: ``/healthz`` answers 503 when the store has not answered its check within this many seconds.
HEALTH_TIMEOUT_SECONDS = 3.0


#: Where the app keeps the schema version its first health check read.
SCHEMA_VERSION_STATE = "schema_version"


def store_check(gateway: Gateway, known_version: int | None) -> int:
    """Prove the store answers with its connection check (``SELECT 1``) and return the
    schema version: ``known_version`` when the process has read it already, else read
    once here. A health check reads no table, so it costs the same with a million asks
    parked and never competes with messages for their rows.

    Args:
        gateway: the gateway whose store is checked.
        known_version: the version an earlier check read (``None``: none has).

    Returns:
        The schema version to report.
    """
    gateway.store.ping()
    return gateway.store.schema_version() if known_version is None else known_version


#: What ``/healthz`` answers while the deliverer fails: the error body, with its state.
HEALTH_RESPONSES = {
    **documented(),
    503: {
        "model": ErrorOut,
        "description": "The store is out of reach, or this process's deliverer is failing or restarting",
    },
}


@router.get("/healthz", response_model=HealthOut, responses=HEALTH_RESPONSES)
async def healthz(gateway: GatewayDep, request: Request) -> Response:
    """200 when the store answers its connection check in time and the deliverer is not
    failing (the schema version is the one this process read at its first check); 503 (JSON)
    when the store is out of reach, or while this process's deliverer fails its passes or
    waits to be restarted (``deliverer_failing``, naming its state; the cause is in the log)."""
    try:
        async with asyncio.timeout(HEALTH_TIMEOUT_SECONDS):
            version = await offload(store_check, gateway.sync, getattr(request.app.state, SCHEMA_VERSION_STATE, None))
    except TimeoutError:
        raise StoreUnavailable(f"the store did not answer within {HEALTH_TIMEOUT_SECONDS:g} s") from None
    except StoreError:
        raise
    except Exception as error:  # any failure to read the store is an unhealthy store
        raise StoreUnavailable(f"the store check failed: {error}") from None
    setattr(request.app.state, SCHEMA_VERSION_STATE, version)
    deliverer: Deliverer | None = request.app.state.deliverer
    if deliverer is not None and not deliverer.health.healthy:
        return failing_deliverer(deliverer.health)
    engine = "postgresql" if is_postgres_url(gateway.sync.store.url) else "sqlite"
    return SafeJSONResponse(
        {"status": "ok", "store": engine, "schema_version": version, "deliverer": deliverer_state(deliverer)}
    )


def deliverer_state(deliverer: Deliverer | None) -> str:
    """The healthy state ``/healthz`` names: ``starting``, ``running``, or ``off`` (none runs, or it stopped)."""
    if deliverer is None or deliverer.health.state is DelivererState.STOPPED:
        return "off"
    return deliverer.health.state.value


def failing_deliverer(health: DelivererHealth) -> Response:
    """The 503 for a deliverer whose passes fail or that waits to be restarted."""
    since = health.failing_since.isoformat() if health.failing_since else "now"
    last = health.last_pass.isoformat() if health.last_pass else None
    detail = (
        f"the deliverer is {health.state.value} since {since}: due reads and callbacks wait until it "
        "recovers (the cause is in the server's log)"
    )
    return error_response(
        503, ServerError.DELIVERER_FAILING, detail, deliverer=health.state.value, failing_since=since, last_pass=last
    )


@router.get(
    "/metrics",
    response_class=Response,
    responses=documented(503, extra={200: {"content": {"text/plain": {}}, "description": "Prometheus text"}}),
)
async def metrics(gateway: GatewayDep) -> Response:
    """Prometheus metrics: replies by kind, asks closed by outcome, time to answer, open asks."""
    try:
        payload = await offload(gateway.sync.metrics.exposition)  # every worker's counters, with several
    except StoreError:
        raise
    except Exception as error:  # the open-asks gauge reads the store when scraped
        raise StoreUnavailable(f"the metrics could not be read from the store: {error}") from None
    return Response(payload, media_type=CONTENT_TYPE_LATEST)
