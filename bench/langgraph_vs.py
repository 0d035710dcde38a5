"""Benchmark 2: the same human-in-the-loop script on LangGraph 1.x and on parkgate.

The script, per conversation: park a 3-option question, two non-answers, a selection
(4 round trips). LangGraph: a graph whose ``ask`` node calls ``interrupt()`` with the
question and, on a resume value that is not an option, routes back to itself so it
interrupts again; each round trip is one ``invoke`` (the first starts the thread, the
rest resume it with ``Command(resume=...)``), checkpointed by ``SqliteSaver`` on a file.
parkgate: ``Gateway.ask`` then three ``Gateway.handle`` calls on a SQLite file. Both
files sit in the same folder, both connections use WAL with the same ``synchronous``
setting (``full``, parkgate's default, and again with ``normal``), and both sides run
in alternating rounds in the same process.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypedDict

from bench.common import latency_summary, ratio, sync_cost_ms, until_wal_settles

OPTIONS = ("Sequence diagram", "Class diagram", "Activity diagram")
PROMPT = "Which UML diagram should I draw?"
SCRIPT = ("what do you mean?", "the second one I guess", "2")
GOAL = 10.0


class HitlState(TypedDict, total=False):
    """LangGraph state: the question, the last reply, the selection once made."""

    prompt: str
    options: list[str]
    reply: str
    selected: str
    misses: int


def build_graph(checkpointer: Any) -> Any:
    """A one-node graph: interrupt with the menu, select on an exact number or label, else ask again."""
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import interrupt

    def ask(state: HitlState) -> HitlState:
        reply = interrupt({"prompt": state["prompt"], "options": state["options"], "misses": state.get("misses", 0)})
        text = str(reply).strip().casefold()
        options = state["options"]
        if text.isdigit() and 1 <= int(text) <= len(options):
            return {"reply": str(reply), "selected": options[int(text) - 1]}
        for label in options:
            if label.casefold() == text:
                return {"reply": str(reply), "selected": label}
        return {"reply": str(reply), "misses": state.get("misses", 0) + 1}

    def route(state: HitlState) -> str:
        return END if state.get("selected") else "ask"

    graph = StateGraph(HitlState)
    graph.add_node("ask", ask)
    graph.add_edge(START, "ask")
    graph.add_conditional_edges("ask", route, {"ask": "ask", END: END})
    return graph.compile(checkpointer=checkpointer)


def _langgraph_side(path: Path, synchronous: str) -> tuple[Callable[[str], list[int]], Callable[[], None]]:
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.types import Command

    conn = sqlite3.connect(path, check_same_thread=False)
    saver = SqliteSaver(conn)
    saver.setup()  # WAL
    conn.execute(f"PRAGMA synchronous = {synchronous.upper()}")  # parkgate's setting: like for like
    graph = build_graph(saver)

    def conversation(thread_id: str) -> list[int]:
        config = {"configurable": {"thread_id": thread_id}}
        clock = time.perf_counter_ns
        out = []
        began = clock()
        first = graph.invoke({"prompt": PROMPT, "options": list(OPTIONS), "misses": 0}, config)
        out.append(clock() - began)
        if "__interrupt__" not in first:
            raise RuntimeError("LangGraph did not interrupt on the question")
        for n, text in enumerate(SCRIPT):
            began = clock()
            result = graph.invoke(Command(resume=text), config)
            out.append(clock() - began)
            last = n == len(SCRIPT) - 1
            if last != ("__interrupt__" not in result):
                raise RuntimeError(f"LangGraph round trip {n + 2} ended wrongly: {sorted(result)}")
        if result.get("selected") != OPTIONS[1]:
            raise RuntimeError(f"LangGraph selected {result.get('selected')!r}")
        return out

    return conversation, conn.close


def _parkgate_side(path: Path, synchronous: str) -> tuple[Callable[[str], list[int]], Callable[[], None]]:
    from parkgate import Gateway, ReplyKind

    gateway = Gateway(f"sqlite:///{path}?synchronous={synchronous}")
    expected = (ReplyKind.RETRY, ReplyKind.RETRY, ReplyKind.SELECTED)

    def conversation(thread_id: str) -> list[int]:
        clock = time.perf_counter_ns
        out = []
        began = clock()
        gateway.ask(thread_id, PROMPT, OPTIONS)
        out.append(clock() - began)
        for text, kind in zip(SCRIPT, expected, strict=True):
            began = clock()
            reply = gateway.handle(thread_id, text)
            out.append(clock() - began)
            if reply.kind is not kind:
                raise RuntimeError(f"parkgate replied {reply.kind} to {text!r}, expected {kind}")
        return out

    return conversation, gateway.close


def run(
    scale: Any, work: Path, log: Callable[[str], None] = print, rounds: int = 4, synchronous: str = "full"
) -> dict[str, Any]:
    """Round trips per second for each side (alternating rounds) and parkgate/LangGraph."""
    import langgraph

    files = {name: work / f"{name}-{synchronous}.db" for name in ("langgraph", "parkgate")}
    sides = {
        "langgraph": _langgraph_side(files["langgraph"], synchronous),
        "parkgate": _parkgate_side(files["parkgate"], synchronous),
    }
    per_round = max(1, scale.langgraph_conversations // rounds)
    log(
        f"  vs LangGraph (synchronous={synchronous}): {per_round * rounds} conversations per side, "
        "4 round trips each ..."
    )
    totals = {name: [0, 0.0] for name in sides}
    latencies: dict[str, list[int]] = {name: [] for name in sides}
    round_ratios = []
    syncs = [sync_cost_ms(work)]
    try:
        # Warm up each side until it is in the state a long-running process is in: imports,
        # compiled graphs and prepared statements ready, and its SQLite WAL grown to the size
        # it is reused at. While a WAL file still grows, every synced commit also syncs the
        # file's new length and blocks (measured here: ~1.5x the cost of a round trip at its
        # reused size), a cost a process pays once after it starts.
        warm_up = {
            name: _warm_up(conversation, files[name], per_round, name) for name, (conversation, _) in sides.items()
        }
        for number in range(rounds):
            rates = {}
            for name, (conversation, _) in sides.items():
                started = time.perf_counter()
                for i in range(per_round):
                    latencies[name].extend(conversation(f"r{number}-c{i}"))
                wall = time.perf_counter() - started
                totals[name][0] += per_round * 4
                totals[name][1] += wall
                rates[name] = ratio(per_round * 4, wall)
            round_ratios.append(ratio(rates["parkgate"], rates["langgraph"]))
        syncs.append(sync_cost_ms(work))
    finally:
        for _, close in sides.values():
            close()
    rates = {name: ratio(count, wall) for name, (count, wall) in totals.items()}
    result = {
        "synchronous": synchronous,
        "conversations_per_side": per_round * rounds,
        "round_trips_per_conversation": 4,
        "langgraph_version": getattr(langgraph, "__version__", _dist_version("langgraph")),
        "checkpointer": f"langgraph-checkpoint-sqlite {_dist_version('langgraph-checkpoint-sqlite')}",
        "langgraph_round_trips_per_s": rates["langgraph"],
        "parkgate_round_trips_per_s": rates["parkgate"],
        "ratio": ratio(rates["parkgate"], rates["langgraph"]),
        "ratio_per_round": round_ratios,
        "goal": GOAL,
        # A 4 KiB write + fdatasync in the same folder, before and after the rounds: with
        # synchronous=full a parkgate round trip is one such sync plus its work, and a
        # LangGraph one several (strace counted ~3.8), so a slower disk narrows the ratio.
        "disk_sync_ms": sorted(syncs)[len(syncs) // 2],
        # Warm-up conversations per side, and its WAL's size (bytes) when it stopped growing.
        "warm_up": warm_up,
        "langgraph_latency": latency_summary(latencies["langgraph"]),
        "parkgate_latency": latency_summary(latencies["parkgate"]),
    }
    log(
        f"    parkgate {result['parkgate_round_trips_per_s']:.0f}/s, LangGraph "
        f"{result['langgraph_round_trips_per_s']:.0f}/s, ratio {result['ratio']:.1f}x"
    )
    return result


def _warm_up(conversation: Callable[[str], list[int]], database: Path, batch: int, name: str) -> dict[str, int]:
    """Run unmeasured batches of ``batch`` conversations until ``database``'s WAL stops growing."""

    def run_batch(number: int) -> None:
        for i in range(batch):
            conversation(f"warm-{name}-{number}-{i}")

    settled = until_wal_settles(run_batch, database)
    return {"conversations": settled["batches"] * batch, "wal_bytes": settled["wal_bytes"]}


def _dist_version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return "unknown"
