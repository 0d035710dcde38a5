"""The API says what it sends: every JSON body a ``/v1`` route answers with matches the
schema ``/openapi.json`` gives for that route and status, exactly. Every key sent is a
declared property (each response model forbids others: ``additionalProperties: false``)
and every required property is sent.

One in-process app on SQLite (the JSON does not depend on the engine) is driven through
every ``/v1`` route: each answers at least once with success, and the errors a client
meets (unknown ids, a busy conversation, a run still asking, a callback not failed, a
refused body, a missing token) are checked the same way.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest

from parkgate import Gateway, ManualClock
from parkgate.cli.demo import UML
from parkgate.delivery.outbox import OutboxDeliverer
from parkgate.http.app import create_app

TOKEN = "bodies-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


class Checked:
    """The app's schema, and every (method, route) a check answered with success."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self.answered: set[tuple[str, str]] = set()
        self.statuses: set[tuple[str, str, int]] = set()

    def routes(self) -> set[tuple[str, str]]:
        """Every ``/v1`` operation the schema lists."""
        return {
            (method.upper(), path)
            for path, operations in self.spec["paths"].items()
            if path.startswith("/v1/")
            for method in operations
        }

    def schema_of(self, method: str, route: str, status: int) -> dict[str, Any]:
        """The documented JSON schema of ``route``'s ``status`` answer, with the components it refers to."""
        responses = self.spec["paths"][route][method.lower()]["responses"]
        assert str(status) in responses, f"{method} {route} answered {status}, which its schema does not document"
        content = responses[str(status)].get("content", {})
        assert "application/json" in content, f"{method} {route} {status} documents no JSON body"
        return {**content["application/json"]["schema"], "components": self.spec["components"]}

    def check(self, method: str, route: str, response: httpx.Response) -> Any:
        """``response``'s body, validated against the schema of ``route`` for its status."""
        body = response.json()
        schema = self.schema_of(method, route, response.status_code)
        errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(body), key=str)
        assert not errors, f"{method} {route} {response.status_code}: {errors[0].message} in {body}"
        self.statuses.add((method, route, response.status_code))
        if response.is_success:
            self.answered.add((method, route))
        return body


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def gateway(tmp_path: Path, clock: ManualClock) -> Iterator[Gateway]:
    gw = Gateway(f"sqlite:///{tmp_path / 'parkgate.db'}", clock=clock, workflows=[UML], surface="http")
    yield gw
    gw.close()


@pytest.fixture
async def http(gateway: Gateway) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(gateway, token=TOKEN, deliver_callbacks=False)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://parkgate", headers=AUTH) as client:
        yield client


@pytest.fixture
async def checked(http: httpx.AsyncClient) -> Checked:
    return Checked((await http.get("/openapi.json")).json())


class Api:
    """Calls by route template, each answer checked against the schema."""

    def __init__(self, http: httpx.AsyncClient, checked: Checked) -> None:
        self.http = http
        self.checked = checked

    async def __call__(self, method: str, route: str, *, status: int, **request: Any) -> Any:
        path_params = request.pop("path", {})
        response = await self.http.request(method, route.format(**path_params), **request)
        assert response.status_code == status, f"{method} {route}: {response.status_code} {response.text}"
        return self.checked.check(method, route, response)


async def test_every_v1_route_sends_only_what_its_schema_declares(
    http: httpx.AsyncClient, checked: Checked, gateway: Gateway, clock: ManualClock
) -> None:
    api = Api(http, checked)
    asks, ask = "/v1/asks", "/v1/asks/{ask_id}"
    messages, conversation = "/v1/conversations/{conversation_id}/messages", "/v1/conversations/{conversation_id}"

    # A choice ask with everything an ask can carry: responders, votes, a schedule, a callback.
    parked = await api(
        "POST",
        asks,
        status=201,
        json={
            "conversation_id": "c-full",
            "prompt": "Ship 1.4?",
            "options": ["Ship", "Hold"],
            "run_id": "run-full",
            "ttl_seconds": 600,
            "responders": ["U_A", "U_B"],
            "quorum": 2,
            "remind_after": [60, 120],
            "escalate_after": 300,
            "escalate_to": ["U_C"],
            "callback_url": "http://hooks.test/full",
            "context": {"ticket": 7},
            "follow_up": True,
        },
    )
    full = parked["ask_id"]
    await api("POST", messages, status=200, path={"conversation_id": "c-full"}, json={"text": "1", "sender": "U_A"})
    clock.advance(61)
    await http.get(f"/v1/asks/{full}")  # a read after the first reminder's due time
    shown = await api("GET", ask, status=200, path={"ask_id": full})
    assert shown["votes"] and shown["callback"]["status"] == "pending" and shown["remind_after"] == [60, 120]
    assert "next_due_at" in shown and "escalate_to" in shown
    await api("GET", ask, status=200, path={"ask_id": full}, params={"wait": 0.01})
    page = await api("GET", asks, status=200, params={"status": "open", "limit": 1})
    assert page["asks"][0]["hours_open"] is not None
    await api("GET", conversation, status=200, path={"conversation_id": "c-full"})
    await api("GET", conversation, status=200, path={"conversation_id": "c-empty"})
    busy = await api("POST", asks, status=409, json={"conversation_id": "c-full", "prompt": "Again?"})
    assert busy["open_ask_id"] == full

    # Closing it: the second vote selects; its follow-up is listed, claimed and done.
    closed = await api(
        "POST", messages, status=200, path={"conversation_id": "c-full"}, json={"text": "1", "sender": "U_B"}
    )
    assert closed["kind"] == "selected"
    follow_ups = await api("GET", "/v1/follow-ups", status=200)
    assert [item["ask_id"] for item in follow_ups["asks"]] == [full]
    claim = "/v1/asks/{ask_id}/follow-up/claim"
    assert (await api("POST", claim, status=200, path={"ask_id": full}, json={"lease_seconds": 30}))["claimed"]
    await api("POST", "/v1/asks/{ask_id}/follow-up/done", status=200, path={"ask_id": full})
    timeline = await api("GET", "/v1/asks/{ask_id}/events", status=200, path={"ask_id": full})
    assert [event["type"] for event in timeline["events"]][-3:] == ["voted", "voted", "closed"]

    # The event stream: text/event-stream, each frame's data an event's JSON with its id.
    stream = await http.get("/v1/events/stream", params={"after": 0, "wait": 0.05})
    assert stream.status_code == 200 and stream.headers["content-type"].startswith("text/event-stream")
    documented = checked.spec["paths"]["/v1/events/stream"]["get"]["responses"]["200"]["content"]
    assert list(documented) == ["text/event-stream"]
    frames = [json.loads(line.removeprefix("data: ")) for line in stream.text.splitlines() if line.startswith("data:")]
    assert frames and all(set(frame) == {"id", "seq", "at", "type", "ask_id", "sender", "data"} for frame in frames)
    checked.answered.add(("GET", "/v1/events/stream"))

    # The figures, by group, and an export: CSV and JSON Lines, as documented.
    figures = await api("GET", "/v1/stats", status=200, params={"by": "responder"})
    assert figures["total"]["answered"] >= 1 and figures["groups"]
    for form, media in (("csv", "text/csv"), ("jsonl", "application/x-ndjson")):
        exported = await http.get("/v1/export", params={"what": "asks", "format": form})
        assert exported.status_code == 200 and exported.headers["content-type"].startswith(media)
        assert media in checked.spec["paths"]["/v1/export"]["get"]["responses"]["200"]["content"]
    checked.answered.add(("GET", "/v1/export"))

    # Its callback fails for good: listed among the failed, re-armed, then refused a second re-arm.
    failing = httpx.AsyncClient(transport=httpx.MockTransport(lambda request: httpx.Response(500)))
    async with failing:
        await OutboxDeliverer(gateway.store, clock, client=failing, max_attempts=1, signer=False).deliver_due()
    failed = await api("GET", "/v1/callbacks/failed", status=200)
    assert failed["asks"][0]["callback"]["status"] == "failed"
    retry = "/v1/asks/{ask_id}/callback/retry"
    await api("POST", retry, status=200, path={"ask_id": full})
    refused = await api("POST", retry, status=409, path={"ask_id": full})
    assert refused["callback_status"] == "pending"

    # A text ask with an answer form, cancelled by an operator.
    text = await api(
        "POST",
        asks,
        status=201,
        json={"conversation_id": "c-text", "prompt": "How many?", "expect": {"form": "integer"}},
    )
    cancel = "/v1/asks/{ask_id}/cancel"
    cancelled = await api("POST", cancel, status=200, path={"ask_id": text["ask_id"]}, json={"outcome": "abandoned"})
    assert cancelled["expect"] == {"form": "integer"} and cancelled["status"] == "cancelled"
    await api("POST", asks, status=200, json={"conversation_id": "c-plain", "skill_output": "no marker here"})

    # Workflows and runs: a workflow's answer carries its next ask; a run still asking refuses a finish.
    assert (await api("GET", "/v1/workflows", status=200))["workflows"] == ["uml"]
    started = await api(
        "POST", "/v1/workflows/{name}/start", status=201, path={"name": "uml"}, json={"conversation_id": "c-flow"}
    )
    answered = await api("POST", messages, status=200, path={"conversation_id": "c-flow"}, json={"text": "1"})
    assert answered["next_ask"]["kind"] == "asked"
    run = "/v1/runs/{run_id}"
    flow_run = {"run_id": started["run_id"]}
    assert (await api("GET", run, status=200, path=flow_run))["answers"]
    still = await api("POST", "/v1/runs/{run_id}/finish", status=409, path=flow_run, json={"outcome": "done"})
    assert still["open_ask_id"] == answered["next_ask"]["ask_id"]
    recorded = {"run_id": "run-rec", "conversation_id": "c-rec", "outcome": "done"}
    await api("POST", "/v1/runs", status=201, json=recorded)
    finish, output = "/v1/runs/{run_id}/finish", {"summary": "shipped"}
    finished = await api(
        "POST", finish, status=200, path={"run_id": "run-full"}, json={"outcome": "done", "output": output}
    )
    assert finished["output"] == output
    await api("GET", "/v1/channels/failed", status=200)
    assert (await api("GET", "/v1/directory", status=200))["names"] == {}
    agent_state, agent_run = "/v1/runs/{run_id}/agent-state", {"run_id": "run-agent"}
    assert (await api("PUT", agent_state, status=200, path=agent_run, json={"state": "{}"}))["kept"]
    assert (await api("GET", agent_state, status=200, path=agent_run))["state"] == "{}"
    assert not (await api("DELETE", agent_state, status=200, path=agent_run))["kept"]

    # Errors: unknown ids, an unknown workflow, a refused body, a body of another type, no token.
    for route, path in ((ask, {"ask_id": "nope"}), (run, {"run_id": "nope"})):
        await api("GET", route, status=404, path=path)
    await api("POST", "/v1/workflows/{name}/start", status=404, path={"name": "nope"}, json={"conversation_id": "c"})
    await api("POST", asks, status=422, json={"conversation_id": "c-bad", "prompt": "Q?", "ttl_seconds": -1})
    await api("POST", asks, status=415, content=b"{}", headers={"Content-Type": "text/plain"})
    await api("GET", asks, status=401, headers={"Authorization": "Bearer wrong"})

    assert checked.routes() - checked.answered == set(), "a /v1 route no check answered with success"


async def test_every_response_model_forbids_keys_it_does_not_declare(checked: Checked) -> None:
    def objects(schema: Any) -> Iterator[tuple[str, dict[str, Any]]]:
        if isinstance(schema, dict):
            if "$ref" in schema:
                name = schema["$ref"].rsplit("/", 1)[1]
                yield name, checked.spec["components"]["schemas"][name]
            for value in schema.values():
                yield from objects(value)
        elif isinstance(schema, list):
            for value in schema:
                yield from objects(value)

    seen: dict[str, dict[str, Any]] = {}
    pending = [
        response["content"]["application/json"]["schema"]
        for path, operations in checked.spec["paths"].items()
        if path.startswith("/v1/")
        for operation in operations.values()
        for response in operation["responses"].values()
        if "application/json" in response.get("content", {})
    ]
    while pending:
        for name, model in objects(pending.pop()):
            if name not in seen:
                seen[name] = model
                pending.append(model)
    assert {"AskOut", "ReplyOut", "RunOut", "ErrorOut", "CallbackOut", "VoteOut"} <= set(seen)
    assert {name for name, model in seen.items() if model.get("additionalProperties") is not False} == set()
