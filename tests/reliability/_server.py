"""A real ``parkgate`` HTTP server process on loopback, and a client that records acknowledgements.

The server is started the way a deployment starts it:
``python -m uvicorn --factory parkgate.http.app:app_from_env`` with ``PARKGATE_DB``,
``PARKGATE_TOKEN`` and ``PARKGATE_PG_SCHEMA`` in its environment. Its stdout and
stderr go to one log file, which the tests read (the token must never be in it).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from polling import until

from ._support import Message, Sent, StoreSpec

#: The app factory; ``PARKGATE_TEST_HTTP_APP`` may name another one (module:factory).
APP = os.environ.get("PARKGATE_TEST_HTTP_APP", "parkgate.http.app:app_from_env")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def server_env(spec: StoreSpec, token: str | None) -> dict[str, str]:
    """The environment of a server process on ``spec``'s database."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PARKGATE_")}
    env["PARKGATE_DB"] = spec.url
    if spec.schema:
        env["PARKGATE_PG_SCHEMA"] = spec.schema
    if token is not None:
        env["PARKGATE_TOKEN"] = token
    return env


@dataclass
class ServerProcess:
    """One uvicorn process serving the parkgate app; restartable on the same port."""

    env: dict[str, str]
    log_path: Path
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None
    starts: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> None:
        """Start the process and wait (bounded) until ``/healthz`` answers."""
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "uvicorn", "--factory", APP, "--host", "127.0.0.1", "--port", str(self.port)],
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.log_path.parent,
            )
        self.starts += 1
        try:
            until(self._answers, timeout, "the server to come up (/healthz)")
        except AssertionError as failed:
            self.kill9()
            raise AssertionError(f"{failed}:\n{self.log_tail()}") from None

    def _answers(self) -> bool:
        """Whether ``/healthz`` answers (not a 5xx); a failure if the process has exited."""
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise AssertionError(f"the server exited with {self.proc.returncode}")
        try:
            return httpx.get(self.url + "/healthz", timeout=2).status_code < 500
        except httpx.TransportError:
            return False

    def kill9(self) -> None:
        """SIGKILL: no shutdown hooks, no flush, nothing graceful."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(30)

    def stop(self) -> None:
        """A normal shutdown (SIGTERM), SIGKILL if it does not end in 20 s."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.kill9()

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])


def client(server: ServerProcess, token: str | None, timeout: float = 30.0) -> httpx.Client:
    """An HTTP client for ``server`` carrying the bearer token."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=server.url, headers=headers, timeout=timeout)


def messages_path(conversation_id: str) -> str:
    return f"/v1/conversations/{quote(conversation_id, safe='')}/messages"


class Unacknowledged(Exception):
    """The server did not acknowledge a message (connection lost, or 503)."""


def post_message(http: httpx.Client, message: Message) -> dict[str, Any]:
    """POST one message; its reply if acknowledged (200), else :class:`Unacknowledged`."""
    try:
        response = http.post(
            messages_path(message.conversation_id), json={"text": message.text, "message_id": message.message_id}
        )
    except httpx.TransportError as error:
        raise Unacknowledged(repr(error)) from None
    if response.status_code == 503:
        body = response.json()
        assert body.get("error") and body.get("detail"), f"a 503 without a clear JSON error: {response.text}"
        raise Unacknowledged(response.text)
    assert response.status_code == 200, f"{response.status_code}: {response.text}"
    reply: dict[str, Any] = response.json()
    assert reply.get("kind"), f"a reply without a kind: {reply}"
    return reply


@dataclass
class StreamResult:
    """What one client saw: acknowledged messages, the one in flight at the fault, the rest."""

    acked: list[Sent] = field(default_factory=list)
    pending: list[tuple[Message, float]] = field(default_factory=list)  # (message, first send time)
    unsent: list[Message] = field(default_factory=list)


def stream(http: httpx.Client, plan: Sequence[Message], stop_on_failure: bool, pace: float = 0.0) -> StreamResult:
    """Send ``plan`` in order. On a failure either stop (kill tests) or keep re-sending."""
    out = StreamResult()
    for position, message in enumerate(plan):
        started = time.monotonic()
        attempts = 0
        while True:
            attempts += 1
            try:
                reply = post_message(http, message)
            except Unacknowledged:
                if stop_on_failure:
                    out.pending.append((message, started))
                    out.unsent.extend(plan[position + 1 :])
                    return out
                if attempts > 600:
                    raise
                time.sleep(0.05)  # real time: the client backs off while the server is away
                continue
            out.acked.append(Sent(message.message_id, reply, started, time.monotonic(), attempts))
            break
        if pace:
            time.sleep(pace)  # real time: the sending rate is what the test sets
    return out


def stream_in_threads(
    server: ServerProcess, token: str | None, plans: Sequence[Sequence[Message]], stop_on_failure: bool, pace: float
) -> list[StreamResult]:
    """One client thread per plan; bounded by a join timeout."""
    results: list[StreamResult | None] = [None] * len(plans)
    errors: list[BaseException] = []

    def body(index: int) -> None:
        try:
            with client(server, token) as http:
                results[index] = stream(http, plans[index], stop_on_failure, pace)
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=body, args=(i,), daemon=True) for i in range(len(plans))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(180)
        assert not thread.is_alive(), "a client thread did not finish"
    if errors:
        raise errors[0]
    return [result or StreamResult() for result in results]
