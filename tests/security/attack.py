"""What the security suite's tests share: the state an attack must leave alone, named
tokens, and ``parkgate serve`` run as a one-off command."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The name a DNS-rebinding page is served under; the suite's Chromium resolves it to 127.0.0.1.
ATTACKER_HOST = "attacker.example"


def snapshot(location: Any) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """Every ask (status, answer, counters, stamps) and outbox row, as the database holds them."""
    asks = location.raw_query(
        "SELECT id, conversation_id, status, outcome, answer, option_index, mismatches, last_touched, answered_at, "
        "closed_at, callback_url, owner FROM asks ORDER BY id"
    )
    outbox = location.raw_query("SELECT ask_id, url, attempts, delivered_at FROM outbox ORDER BY id")
    return [tuple(map(str, row)) for row in asks], [tuple(map(str, row)) for row in outbox]


@dataclass(frozen=True)
class NamedTokens:
    """A tokens file and the tokens it holds the hashes of, by name."""

    path: Path
    tokens: dict[str, str]

    def env(self) -> dict[str, str]:
        return {"PARKGATE_TOKENS_FILE": str(self.path)}


#: name -> (scopes, extra TOML lines)
TOKEN_TABLE: dict[str, tuple[list[str], str]] = {
    "agent": (["park"], "max_open_asks = 3\n"),
    "chat-surface": (["answer"], ""),
    "auditor": (["read"], ""),
    "operator": (["read", "operate"], ""),
    "other-agent": (["park"], ""),
    "chatty": (["read"], "rate_per_second = 5\n"),
}


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without any PARKGATE_ setting, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PARKGATE_")}
    env.update(extra)
    return env


def serve_command(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``parkgate serve ARGS`` to its end (for start-ups that must be refused), bounded in time."""
    return subprocess.run(
        [sys.executable, "-m", "parkgate", "serve", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
