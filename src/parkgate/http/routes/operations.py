"""``/healthz`` and ``/metrics``: what a load balancer and Prometheus read."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST

from parkgate.async_gateway import offload
from parkgate.gateway import Gateway
from parkgate.http.dependencies import GatewayDep
from parkgate.http.errors import documented
from parkgate.http.models import HealthOut
from parkgate.http.responses import SafeJSONResponse
from parkgate.store import StoreError, StoreUnavailable, is_postgres_url

router = APIRouter(tags=["operations"])

#: ``/healthz`` answers 503 when the store has not answered a read within this many seconds.
HEALTH_TIMEOUT_SECONDS = 3.0


def store_check(gateway: Gateway) -> int:
    """Read one open ask and the schema version: the store answers reads. Returns the version."""
    gateway.audit(limit=1)
    return gateway.store.schema_version()


@router.get("/healthz", response_model=HealthOut, responses=documented(503))
async def healthz(gateway: GatewayDep) -> Response:
    """200 when the store answers a read in time; 503 (JSON) when it is out of reach."""
    try:
        async with asyncio.timeout(HEALTH_TIMEOUT_SECONDS):
            version = await offload(store_check, gateway.sync)
    except TimeoutError:
        raise StoreUnavailable(f"the store did not answer within {HEALTH_TIMEOUT_SECONDS:g} s") from None
    except StoreError:
        raise
    except Exception as error:  # any failure to read the store is an unhealthy store
        raise StoreUnavailable(f"the store check failed: {error}") from None
    engine = "postgresql" if is_postgres_url(gateway.sync.store.url) else "sqlite"
    return SafeJSONResponse({"status": "ok", "store": engine, "schema_version": version})


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
