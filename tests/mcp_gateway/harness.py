"""The MCP gateway tests' harness: ``parkgate mcp-gateway`` run as the command an MCP client
starts (stdio) or as a streamable HTTP server, in front of ``ops_server.py`` (a real MCP
server that records every call it gets), with a live parkgate HTTP server on the same
database to answer the asks on (``tests/http/live_server.py``); or the same gateway
server in this process, on a :class:`~parkgate.ManualClock` the test moves
(:func:`in_process`)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "http"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "channels"))

from live_server import free_port, messages_path
from mcp import Client, StdioServerParameters

from parkgate import Gateway, ManualClock
from parkgate.gateway.async_gateway import AsyncGateway
from parkgate.mcp_gateway import load_policy, start
from parkgate.store import open_store
from polling import until

OPS_SERVER = Path(__file__).with_name("ops_server.py")
TOKEN = "secret-token"
TRANSPORTS = ["stdio", "http"]


@dataclass
class Setup:
    """One test's gateway: its database, its config file, the downstream's call log, and
    the environment the gateway process gets."""

    db_url: str
    schema: str | None
    folder: Path
    env: dict[str, str] = field(default_factory=dict)

    @property
    def calls_path(self) -> Path:
        return self.folder / "ops_calls.jsonl"

    @property
    def config_path(self) -> Path:
        return self.folder / "gateway.toml"

    def configure(self, rules: str, *, servers: str | None = None) -> Path:
        """Write the gateway's TOML: the ops server on stdio (unless ``servers``), then ``rules``."""
        ops = servers or (
            "[servers.ops]\n"
            f"command = {json.dumps(sys.executable)}\n"
            f"args = [{json.dumps(str(OPS_SERVER))}]\n"
            f"env = {{ OPS_CALLS = {json.dumps(str(self.calls_path))} }}\n"
        )
        self.config_path.write_text(ops + "\n" + rules, encoding="utf-8")
        return self.config_path

    def calls(self, tool: str | None = None) -> list[dict[str, Any]]:
        """The calls the downstream server got (of ``tool``), in order."""
        if not self.calls_path.exists():
            return []
        lines = self.calls_path.read_text(encoding="utf-8").splitlines()
        return [c for c in map(json.loads, lines) if tool is None or c["tool"] == tool]

    def process_env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PARKGATE_")}
        if self.schema:
            env["PARKGATE_PG_SCHEMA"] = self.schema
        return {**env, **self.env}

    def command(self, *extra: str) -> list[str]:
        return [
            *("-m", "parkgate", "mcp-gateway"),
            *("--config", str(self.config_path), "--db", self.db_url),
            *extra,
        ]


@asynccontextmanager
async def connected(setup: Setup, transport: str, **options: Any) -> AsyncIterator[Client]:
    """The MCP SDK's client (``options`` are its own: an elicitation callback, the
    protocol's ``mode``, ...), connected to ``parkgate mcp-gateway`` over ``transport``."""
    if transport == "stdio":
        params = StdioServerParameters(command=sys.executable, args=setup.command(), env=setup.process_env())
        async with Client(params, **options) as client:
            yield client
        return
    port = free_port()
    log = open(setup.folder / "mcp-gateway.log", "ab")  # noqa: SIM115  # closed below
    process = subprocess.Popen(
        [sys.executable, *setup.command("--http", f"127.0.0.1:{port}")],
        env=setup.process_env(),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        await anyio.to_thread.run_sync(lambda: until(lambda: _listening(port, process), 60, "the gateway on HTTP"))
        async with Client(f"http://127.0.0.1:{port}/mcp", **options) as client:
            yield client
    finally:
        process.terminate()
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(20)
        log.close()


@asynccontextmanager
async def in_process(setup: Setup, clock: ManualClock, **options: Any) -> AsyncIterator[Client]:
    """The MCP SDK's client (``options`` are its own: an elicitation callback, ...) connected
    in this process to the server ``parkgate mcp-gateway`` serves, built as the command
    builds it but on ``clock``, in front of the same downstream server started on stdio."""
    policy = load_policy(setup.config_path)
    store = open_store(setup.db_url, **({"schema": setup.schema} if setup.schema else {}))
    async with AsyncGateway(Gateway(store=store, clock=clock), deliver=True) as gateway, AsyncExitStack() as stack:
        server = await start(policy, gateway, stack)
        async with Client(server, **options) as client:
            yield client


def _listening(port: int, process: subprocess.Popen[bytes]) -> bool:
    if process.poll() is not None:
        raise AssertionError(f"parkgate mcp-gateway exited with {process.returncode}")
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


async def wait_for(condition: Callable[[], Any], what: str, timeout: float = 30) -> Any:
    """:func:`polling.until` from async code (on a worker thread, so the MCP client keeps reading)."""
    return await anyio.to_thread.run_sync(lambda: until(condition, timeout, what))


def open_asks(client: httpx.Client, tool: str = "deploy") -> list[dict[str, Any]]:
    """The open asks of calls of ``tool``, as ``GET /v1/asks`` lists them."""
    asks = client.get("/v1/asks").json()["asks"]
    return [ask for ask in asks if (ask.get("context") or {}).get("tool") == tool]


async def parked(client: httpx.Client, count: int = 1, tool: str = "deploy") -> list[dict[str, Any]]:
    """Once ``count`` calls of ``tool`` are parked, their asks."""
    return await wait_for(lambda: (found := open_asks(client, tool)) and len(found) >= count and found, "the ask")  # type: ignore[no-any-return]


def say(client: httpx.Client, ask: dict[str, Any], text: str, sender: str) -> dict[str, Any]:
    """``sender`` writes ``text`` in the ask's conversation; the gateway's reply."""
    answer = client.post(messages_path(ask["conversation_id"]), json={"text": text, "sender": sender})
    assert answer.status_code == 200, answer.text
    return answer.json()  # type: ignore[no-any-return]


def text_of(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)
