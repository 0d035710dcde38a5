"""The gateway's stdio transport (:mod:`parkgate.mcp_gateway.stdio`): the MCP SDK's client
talks to a server on it in both protocol eras, lines far over asyncio's default 64 KiB
limit included, many calls at once; and whatever else in the process writes to stdout
lands on stderr, never in the MCP stream."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import pytest
from harness import text_of
from mcp import Client, StdioServerParameters

NOISY_SERVER = Path(__file__).with_name("noisy_server.py")


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_calls_of_any_size_come_back_whole_and_stray_output_goes_to_stderr(tmp_path: Path, mode: str) -> None:
    errors = tmp_path / "stderr.txt"
    params = StdioServerParameters(command=sys.executable, args=[str(NOISY_SERVER), str(errors)], env=dict(os.environ))
    big = "é" * 1_000_000  # 2 MB of UTF-8 on one line
    async with Client(params, mode=mode) as client:
        assert [tool.name for tool in (await client.list_tools()).tools] == ["echo"]
        assert text_of(await client.call_tool("echo", {"text": big})) == big
        results: dict[int, str] = {}

        async def echo(number: int) -> None:
            results[number] = text_of(await client.call_tool("echo", {"text": f"call {number}"}))

        async with anyio.create_task_group() as group:
            for number in range(20):
                group.start_soon(echo, number)
    assert results == {number: f"call {number}" for number in range(20)}
    noise = errors.read_text(encoding="utf-8")
    assert noise.count("noise from print\n") == 21 and noise.count("noise from fd 1\n") == 21
