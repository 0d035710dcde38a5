"""The MCP gateway's overhead: a forwarded call (no approval needed) through
``parkgate mcp-gateway`` against the same call made to the downstream server directly.

Both sides use the MCP SDK's own client over stdio on the same downstream server
(``tests/mcp_gateway/ops_server.py``, its safe ``status`` tool); the gateway runs as the
command an MCP client starts, on a SQLite file, with an ``[[approval]]`` rule that holds
``deploy*`` only, so every ``status`` call is read against the policy and forwarded. The
two clients are connected before the timed part and measured in alternating rounds
(direct, gateway, direct, ...), each call timed on its own. Goal: at most
:data:`GOAL_ADDED_P50_MS` added at p50.

    python -m bench.mcp_gateway [--calls 500] [--rounds 5] [--json PATH]

The exit status is the verdict: 0 when the goal is met.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import latency_summary, workdir

ROOT = Path(__file__).resolve().parents[1]
OPS_SERVER = ROOT / "tests" / "mcp_gateway" / "ops_server.py"
#: The goal: the gateway adds at most this many milliseconds at p50 to a forwarded call.
GOAL_ADDED_P50_MS = 2.0
#: Calls each side makes before the timed rounds (imports, first-call paths).
WARM_UP_CALLS = 50


def config(folder: Path) -> Path:
    """The gateway's TOML: the ops server on stdio, a rule that holds ``deploy*`` only."""
    path = folder / "gateway.toml"
    path.write_text(
        "[servers.ops]\n"
        f"command = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(str(OPS_SERVER))}]\n\n"
        '[[approval]]\ntools = ["deploy*"]\nresponders = ["alice"]\n',
        encoding="utf-8",
    )
    return path


async def measure(calls: int, rounds: int, folder: Path) -> dict[str, Any]:
    """``rounds`` alternating rounds of ``calls`` forwarded ``status`` calls a side."""
    from mcp import Client, StdioServerParameters

    env = {key: value for key, value in os.environ.items() if not key.startswith("PARKGATE_")}
    direct = StdioServerParameters(command=sys.executable, args=[str(OPS_SERVER)], env=env)
    command = ["-m", "parkgate", "mcp-gateway", "--config", str(config(folder))]
    through = StdioServerParameters(
        command=sys.executable, args=[*command, "--db", f"sqlite:///{folder / 'gateway.db'}"], env=env
    )
    timings: dict[str, list[int]] = {"direct": [], "gateway": []}
    per_round: list[dict[str, float]] = []
    async with Client(direct) as plain, Client(through) as gateway:
        sides = {"direct": plain, "gateway": gateway}
        for client in sides.values():
            for _ in range(WARM_UP_CALLS):
                await _call(client)
        for _ in range(rounds):
            this_round: dict[str, list[int]] = {}
            for name, client in sides.items():
                took = [await _call(client) for _ in range(calls)]
                timings[name].extend(took)
                this_round[name] = took
            p50 = {name: latency_summary(took)["p50_ms"] for name, took in this_round.items()}
            per_round.append({"direct_p50_ms": p50["direct"], "gateway_p50_ms": p50["gateway"]})
    summary = {name: latency_summary(took) for name, took in timings.items()}
    added = summary["gateway"]["p50_ms"] - summary["direct"]["p50_ms"]
    return {
        "calls_per_round": calls,
        "rounds": rounds,
        "direct": summary["direct"],
        "gateway": summary["gateway"],
        "added_p50_ms": added,
        "ratio_p50": summary["gateway"]["p50_ms"] / summary["direct"]["p50_ms"],
        "per_round": per_round,
        "goal_added_p50_ms": GOAL_ADDED_P50_MS,
        "goal_met": added <= GOAL_ADDED_P50_MS,
    }


async def _call(client: Any) -> int:
    """One forwarded call, timed in nanoseconds; a wrong answer stops the benchmark."""
    began = time.perf_counter_ns()
    result = await client.call_tool("status", {"service": "web"})
    took = time.perf_counter_ns() - began
    if result.is_error or result.content[0].text != "web: ok":
        raise AssertionError(f"the status call did not come back as the server answers it: {result}")
    return took


def render(result: dict[str, Any]) -> str:
    """The result in one line."""
    direct, gateway = result["direct"], result["gateway"]
    return (
        f"forwarded call over stdio: direct p50 {direct['p50_ms']:.3f} ms (p99 {direct['p99_ms']:.3f}), "
        f"through the gateway p50 {gateway['p50_ms']:.3f} ms (p99 {gateway['p99_ms']:.3f}); "
        f"added at p50 {result['added_p50_ms']:.3f} ms (x{result['ratio_p50']:.2f}), "
        f"goal <= {GOAL_ADDED_P50_MS} ms: {'met' if result['goal_met'] else 'MISSED'}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.mcp_gateway", description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500, help="calls a side in each round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", type=Path, default=None, help="write the result here too")
    args = parser.parse_args(argv)
    import anyio

    with workdir() as folder:
        result = anyio.run(measure, args.calls, args.rounds, folder)
    print(render(result))
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=1), encoding="utf-8")
    return 0 if result["goal_met"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
