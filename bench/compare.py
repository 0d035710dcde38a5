"""``python -m bench.compare BEFORE.json [AFTER.json ...]``: hot-path figures side by side.

Reads the JSON files ``python -m bench --hot`` writes and prints, one column per file,
the figures that are ratios against a baseline measured in the same run (so runs on a
busy machine compare): benchmark 1's gateway/raw, benchmark 4's messages against
``/healthz`` and against the in-process gateway, the floor's and the worker table's cells
against the bare app, benchmark 5's wake-ups against their
floor, callbacks after the commit, and the due reads' lateness.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

Row = tuple[str, Callable[[dict[str, Any]], float | None]]


def _get(path: Callable[[dict[str, Any]], Any]) -> Callable[[dict[str, Any]], float | None]:
    def read(results: dict[str, Any]) -> float | None:
        try:
            value = path(results)
        except (KeyError, IndexError, StopIteration, TypeError):
            return None
        return None if value is None else float(value)

    return read


def _find(items: list[dict[str, Any]], **match: Any) -> dict[str, Any]:
    return next(item for item in items if all(item.get(key) == value for key, value in match.items()))


def rows(sample: dict[str, Any]) -> Iterator[Row]:
    """The compared figures, named, with how to read each from a results dict."""
    for cell in sample.get("reply_path", {}).get("cells", []):
        store, label = cell["store"], cell["label"]
        yield (
            f"1. {store}, {label}: gateway/raw",
            _get(lambda r, s=store, m=label: _find(r["reply_path"]["cells"], store=s, label=m)["ratio"]),
        )
    for config in sample.get("http", {}).get("configs", []):
        workers = config["workers"]
        for key in ("messages_vs_healthz", "messages_vs_in_process"):
            yield (
                f"4. HTTP {workers} worker(s): {key.replace('_', ' ')}",
                _get(lambda r, w=workers, k=key: _find(r["http"]["configs"], workers=w)[k]),
            )
    for cell in sample.get("http_floor", {}).get("cells", []):
        store, name = cell["store"], cell["cell"]
        yield (
            f"4a. floor {store}, {name}: vs the bare app",
            _get(lambda r, s=store, c=name: _find(r["http_floor"]["cells"], store=s, cell=c)["ratio"]),
        )
    for row in sample.get("http_workers", {}).get("rows", []):
        for key in row["cells"]:
            if not key.startswith("bare "):
                workers = row["workers"]
                yield (
                    f"4b. {workers} worker(s), {key}: vs the bare app",
                    _get(
                        lambda r, w=workers, k=key: _find(r["http_workers"]["rows"], workers=w)["cells"][k]["vs_bare"]
                    ),
                )
    waiting = sample.get("waiting", {})
    for cell in waiting.get("wake", []):
        store, topology = cell["store"], cell["topology"]
        for key in ("wake_over_floor_p50", "wake_over_floor_p99"):
            yield (
                f"5. wake {store}, {topology}: {key.replace('_', ' ')}",
                _get(lambda r, s=store, t=topology, k=key: _find(r["waiting"]["wake"], store=s, topology=t)[k]),
            )
    for cell in waiting.get("callback", []):
        store = cell["store"]
        yield (
            f"5. callback {store}: p99 ms after the POST returned",
            _get(lambda r, s=store: _find(r["waiting"]["callback"], store=s)["after_post_returned"]["p99_ms"]),
        )
    for row in waiting.get("due", []):
        store, servers = row["store"], row["servers"]
        for number, due_round in enumerate(row["rounds"]):
            parking = due_round["parking"]
            where = dict(store=store, servers=servers)

            def due(r: dict[str, Any], w: dict[str, Any] = where, p: str = parking, n: int = number) -> Any:
                rounds = [x for x in r["waiting"]["due"] if all(x[k] == v for k, v in w.items())]
                return [x for row_ in rounds for x in row_["rounds"] if x["parking"] == p][n]

            name = f"5. due {store}, {parking}, {servers} server(s)"
            yield f"{name}: lateness p99 s", _get(lambda r, d=due: d(r)["lateness"]["p99_s"])
            yield f"{name}: callbacks/s", _get(lambda r, d=due: d(r)["callbacks_per_s"])
            yield f"{name}: server CPU ms a callback", _get(lambda r, d=due: d(r).get("server_cpu_ms_per_callback"))
    for row in waiting.get("due_cost", []):
        store = row["store"]
        for variant in row["variants"]:
            yield (
                f"5. due-time cost {store}, {variant}: gateway/raw",
                _get(lambda r, s=store, v=variant: _find(r["waiting"]["due_cost"], store=s)["variants"][v]["ratio"]),
            )


def render(runs: list[tuple[str, dict[str, Any]]]) -> str:
    """One line per figure, one column per run."""
    names = [name for name, _ in runs]
    width = max(10, *(len(name) for name in names))
    seen: dict[str, Callable[[dict[str, Any]], float | None]] = {}
    for _, results in runs:
        for label, read in rows(results):
            seen.setdefault(label, read)
    label_width = max((len(label) for label in seen), default=10)
    lines = [f"{'':{label_width}}  " + "  ".join(f"{name:>{width}}" for name in names)]
    for label, read in seen.items():
        values = [read(results) for _, results in runs]
        cells = ["-" if value is None else f"{value:.3f}" for value in values]
        lines.append(f"{label:{label_width}}  " + "  ".join(f"{cell:>{width}}" for cell in cells))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point of ``python -m bench.compare``."""
    parser = argparse.ArgumentParser(prog="python -m bench.compare", description=__doc__)
    parser.add_argument("results", nargs="+", type=Path, help="JSON files written by python -m bench")
    args = parser.parse_args(argv)
    runs = [(path.stem, json.loads(path.read_text())) for path in args.results]
    print(render(runs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
