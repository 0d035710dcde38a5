"""What ``create_app`` does with a gateway it is given: serves it as it is. The demo
workflow comes only with a gateway the app makes itself."""

from __future__ import annotations

from pathlib import Path

import httpx

from parkgate import Gateway, ManualClock
from parkgate.http.app import create_app


async def test_a_callers_gateway_keeps_its_own_workflows(tmp_path: Path) -> None:
    with Gateway(f"sqlite:///{tmp_path / 'mine.db'}", clock=ManualClock()) as gateway:
        app = create_app(gateway, deliver_callbacks=False)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
            assert (await http.get("/v1/workflows")).json() == {"workflows": []}
            started = await http.post("/v1/workflows/uml/start", json={"conversation_id": "c"})
        assert (started.status_code, started.json()["error"]) == (404, "unknown_workflow")
        assert gateway.workflows == {}


async def test_a_gateway_the_app_makes_has_the_demo_workflow(tmp_path: Path) -> None:
    app = create_app(db_url=f"sqlite:///{tmp_path / 'own.db'}", deliver_callbacks=False)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        assert (await http.get("/v1/workflows")).json() == {"workflows": ["uml"]}
    app.state.gateway.close()
