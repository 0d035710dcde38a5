"""A channel that lives only in the tests (:mod:`pager_channel`), registered by naming its
module in ``PARKGATE_CHANNELS``, through a real ``parkgate serve``: an ask is posted on it,
a reply typed to its message answers it through the channel's own inbound route (a miss
first, replied to in its thread), and its message is edited when it closes. ``POST
/v1/asks`` takes its key, the ask's JSON and ``/openapi.json`` show where it is posted, and
the HTTP client sends and reads it: all read from the registry, none naming the channel.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from live_server import Server
from pager_platform import PagerPlatform

from polling import until

TOKEN = "pager-token"
SECRET = "pager-secret"
#: Where the test channel's module is, for the server's and the client's imports.
HERE = Path(__file__).resolve().parent


def channel_env(platform: PagerPlatform) -> dict[str, str]:
    """What registers and switches on the test channel in another process."""
    path = os.pathsep.join(part for part in (str(HERE), os.environ.get("PYTHONPATH", "")) if part)
    return {
        "PARKGATE_CHANNELS": "pager_channel",
        "PARKGATE_PAGER_URL": platform.url,
        "PARKGATE_PAGER_SECRET": SECRET,
        "PYTHONPATH": path,
    }


@pytest.fixture
def platform() -> Iterator[PagerPlatform]:
    running = PagerPlatform().start()
    yield running
    running.stop()


@pytest.fixture
def server(store_url_factory: Any, tmp_path: Path, platform: PagerPlatform) -> Iterator[Server]:
    location = store_url_factory("sqlite")
    log = tmp_path / "serve.log"
    env = channel_env(platform)
    running = Server(location.url, log, token=TOKEN, schema=location.schema, extra_env=env, via_cli=True).start()
    yield running
    running.stop()


def with_client(server: Server, platform: PagerPlatform, code: str) -> Any:
    """Run ``code`` with ``client``, parkgate's HTTP client, in a process where the test
    channel is registered; what it prints, as JSON."""
    script = f"import json\nfrom parkgate.client import Client\nclient = Client({server.url!r}, {TOKEN!r})\n{code}"
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PARKGATE_")}, **channel_env(platform)}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def inbound(server: Server, text: str, event: str, secret: str = SECRET) -> httpx.Response:
    body = {"room": "ops", "message": "m-1", "event": event, "sender": "alice", "text": text}
    return httpx.post(f"{server.url}/pager/inbound", json=body, headers={"X-Pager-Secret": secret}, timeout=30)


def test_a_channel_registered_by_the_test_posts_takes_a_reply_and_edits_its_post_on_close(
    server: Server, platform: PagerPlatform
) -> None:
    code = 'print(json.dumps(client.ask("page-1", "Deploy?", ["Deploy", "Hold"], pager={"room": "ops"}).ask_id))'
    ask_id = with_client(server, platform, code)
    (post,) = until(lambda: platform.of("post"), 30, "the ask posted on the pager")
    assert post.body["room"] == "ops" and "Deploy?" in post.body["text"] and "1. Deploy" in post.body["text"]
    with server.client() as http:
        where = until(lambda: http.get(f"/v1/asks/{ask_id}").json().get("pager"), 30, "the post's location")
        assert where == {"room": "ops", "message": "m-1"}

        # Its inbound route is the channel's own, checked by its own secret: a wrong one changes nothing.
        assert inbound(server, "1", "e-0", secret="not-it").status_code == 401
        missed = inbound(server, "maybe", "e-1")
        assert missed.status_code == 200 and missed.json() == {"kind": "retry"}
        (retry,) = until(lambda: platform.of("reply"), 30, "the retry replied to the post")
        assert retry.message == "m-1" and "did not match" in retry.body["text"]
        assert http.get(f"/v1/asks/{ask_id}").json()["status"] == "open"

        assert inbound(server, "1", "e-2").json() == {"kind": "selected"}
        (edit,) = until(lambda: platform.of("edit"), 30, "the post edited on close")
        assert edit.message == "m-1" and edit.body["text"] == "Answered: Deploy, by @alice"
        ask = http.get(f"/v1/asks/{ask_id}").json()
        assert (ask["status"], ask["answer"], ask["answered_by"]) == ("answered", "Deploy", "alice")

        schema = http.get("/openapi.json").json()["components"]["schemas"]
        assert schema["AskIn"]["properties"]["pager"]["anyOf"][0] == {"$ref": "#/components/schemas/PagerTargetIn"}
        assert schema["AskOut"]["properties"]["pager"]["anyOf"][0] == {"$ref": "#/components/schemas/PagerPost"}
        stray = http.post("/v1/asks", json={"conversation_id": "page-2", "prompt": "Why?", "pager": {"floor": 3}})
        assert stray.status_code == 422

    read = with_client(server, platform, f"print(json.dumps(dict(client.get({ask_id!r}).pager)))")
    assert read == where
