"""Schema-driven fuzzing of the API (schemathesis against ``/openapi.json``, auth on).

Every operation gets generated requests, valid and invalid; the checks are named here,
not left to schemathesis' defaults: no response may be a 5xx, and every response must
match the documented status codes, content types, headers and schemas (a body holds no
key its schema does not declare, and every key it requires; errors are always the
``{error, detail, ...}`` JSON). ``ignored_auth`` checks that a request without the token
is refused. Not run: ``positive_data_acceptance`` (a schema-valid body can still be
refused on meaning: an unknown id is 404, an empty id 422, a second ask 409) and
``negative_data_rejection`` (unknown query parameters are ignored, as HTTP APIs usually do).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    ignored_auth,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from parkgate import Gateway
from parkgate.cli.demo import UML
from parkgate.http.app import create_app

TOKEN = "schemathesis-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
#: What every response is checked for: the response-conformance checks, by name.
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    ignored_auth,
]


_folder = tempfile.TemporaryDirectory(prefix="parkgate-schemathesis-")
_gateway = Gateway(f"sqlite:///{Path(_folder.name) / 'parkgate.db'}", workflows=[UML], surface="http")
# Callbacks are not delivered: generated callback URLs would go nowhere.
schema = schemathesis.openapi.from_asgi("/openapi.json", create_app(_gateway, token=TOKEN, deliver_callbacks=False))


@pytest.fixture(scope="module", autouse=True)
def _cleanup() -> Iterator[None]:
    yield
    _gateway.close()
    _folder.cleanup()


@schema.parametrize()
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
def test_no_generated_request_gets_a_5xx_or_an_undocumented_answer(case: schemathesis.Case) -> None:
    if case.query and _seconds(case.query.get("wait")) > 0.5:
        # A long-poll on an open ask, or on a conversation with nothing parked, would
        # hold the test for up to 60 s.
        case.query["wait"] = 0.5
    if case.path == "/v1/events/stream":
        # The event stream holds its request for its whole wait (60 s unless told less).
        case.query = {**(case.query or {}), "wait": 0.5}
    case.call_and_validate(headers=AUTH, checks=CHECKS)


def _seconds(wait: object) -> float:
    """A generated ``wait`` as seconds (it may come as a number or as text); 0 if it is neither."""
    try:
        return float(wait)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return 0.0
