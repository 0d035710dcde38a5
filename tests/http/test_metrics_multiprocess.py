"""Several processes count into one folder; any one of them answers a scrape for all."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

COUNT_IN_A_PROCESS = """
import sys
from parkgate.core.kinds import ReplyKind
from parkgate.metrics import Metrics
metrics = Metrics("http")
for _ in range(int(sys.argv[1])):
    metrics.reply(ReplyKind.RETRY)
metrics.close("selected", 12.0)
"""

SCRAPE = """
from parkgate.metrics import Metrics
metrics = Metrics("http")
from parkgate.store.base import AskGauges
metrics.read_gauges_with(lambda: AskGauges(open=7, overdue=2, oldest_unread_due_seconds=1.5))
print(metrics.exposition().decode())
"""


def samples(text: str) -> dict[str, float]:
    found = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            found[name] = float(value)
    return found


def test_counters_of_several_processes_add_up_and_the_gauge_is_read_once(tmp_path: Path) -> None:
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    for misses in (3, 4):
        subprocess.run([sys.executable, "-c", COUNT_IN_A_PROCESS, str(misses)], env=env, check=True)
    scraped = subprocess.run([sys.executable, "-c", SCRAPE], env=env, check=True, capture_output=True, text=True)
    found = samples(scraped.stdout)
    assert found['parkgate_replies_total{kind="retry",surface="http"}'] == 7
    assert found['parkgate_asks_closed_total{outcome="selected",surface="http"}'] == 2
    assert found['parkgate_time_to_answer_seconds_count{channel="none",surface="http"}'] == 2
    # The store's count, once: not a per-process value added up, and no pid label.
    assert [name for name in found if name.startswith("parkgate_open_asks")] == ["parkgate_open_asks"]
    assert found["parkgate_open_asks"] == 7
    assert found["parkgate_asks_overdue"] == 2


def test_one_process_exposes_its_own_registry(tmp_path: Path) -> None:
    env = {key: value for key, value in os.environ.items() if key != "PROMETHEUS_MULTIPROC_DIR"}
    scraped = subprocess.run([sys.executable, "-c", SCRAPE], env=env, check=True, capture_output=True, text=True)
    found = samples(scraped.stdout)
    assert found["parkgate_open_asks"] == 7
    assert found['parkgate_replies_total{kind="retry",surface="http"}'] == 0
    assert list(tmp_path.iterdir()) == []
