"""Live parkgate servers on loopback, a callback receiver and a cuttable TCP proxy.

The suite's one live-server harness. A :class:`Server` is configured the way a deployment
configures one: ``PARKGATE_DB``, ``PARKGATE_TOKEN``, ``PARKGATE_PG_SCHEMA`` and
``extra_env`` (``PARKGATE_CALLBACK_ALLOW`` for a test whose callbacks go to a receiver on
loopback, say), read by ``parkgate.http.app:app_from_env``. It runs in one of two ways:

- **in a thread** (``in_thread=True``): the app is built by ``app_from_env`` in this
  process and served by uvicorn on a free port from a thread of its own. Starting it costs
  milliseconds, and it can take a :class:`~parkgate.ManualClock` (``clock``) that the test
  moves. Its ``parkgate`` log lines go to ``log_path`` as the process's would. For any
  HTTP behaviour: the process is not the point.
- **as a process** (the default): ``python -m uvicorn --factory ...app_from_env`` (or
  ``parkgate.http.server.serve`` for several workers, or ``parkgate serve`` itself with
  ``via_cli``), its output in ``log_path`` (stderr in ``stderr_path`` when given). For
  what only a process shows: kill -9, a restart, several workers, signals, the CLI's start-up.
  A stopped or killed server starts again on the same port and database (``starts``
  counts its starts).

``PARKGATE_TEST_HTTP_APP=module:factory`` serves another app factory (default
``parkgate.http.app:app_from_env``); the reliability suite's ack-recording client
(``tests/reliability/_server.py``) drives these servers too.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from polling import until

#: The app factory; ``PARKGATE_TEST_HTTP_APP`` may name another one (module:factory).
APP_FACTORY = os.environ.get("PARKGATE_TEST_HTTP_APP", "parkgate.http.app:app_from_env")
START_TIMEOUT = 60.0


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def messages_path(conversation_id: str) -> str:
    """The messages route of a conversation, with the id percent-encoded."""
    return f"/v1/conversations/{quote(conversation_id, safe='')}/messages"


#: Poll until something is true, bounded (the suite's one poll loop, :func:`polling.until`).
wait_until = until


@dataclass
class Server:
    """One parkgate server (a process, or a thread of this one); restartable on the same port and database."""

    db_url: str
    log_path: Path
    token: str | None = None
    schema: str | None = None
    workers: int = 1
    via_cli: bool = False
    stderr_path: Path | None = None
    extra_env: dict[str, str] = field(default_factory=dict)
    #: More options for ``parkgate serve`` (with ``via_cli``).
    extra_args: list[str] = field(default_factory=list)
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None
    #: Serve from a thread of this process instead of a process of its own.
    in_thread: bool = False
    #: The in-thread server's clock (a ManualClock the test moves); a process reads the real one.
    clock: Any = None
    #: How many times it has been started (a restart counts).
    starts: int = 0
    _threaded: Any = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PARKGATE_")}
        env["PARKGATE_DB"] = self.db_url
        if self.token:
            env["PARKGATE_TOKEN"] = self.token
        if self.schema:
            env["PARKGATE_PG_SCHEMA"] = self.schema
        env.update(self.extra_env)
        return env

    def command(self) -> list[str]:
        if self.via_cli:  # the command an operator runs: the store and token come from the environment
            return [
                sys.executable,
                *("-m", "parkgate", "serve", "--host", "127.0.0.1"),
                *("--port", str(self.port), "--workers", str(self.workers)),
                *self.extra_args,
            ]
        if self.workers > 1:
            code = (
                "import os, sys; from parkgate.http.server import serve; "
                "serve(os.environ['PARKGATE_DB'], '127.0.0.1', int(sys.argv[1]), int(sys.argv[2]), "
                "os.environ.get('PARKGATE_TOKEN'))"
            )
            return [sys.executable, "-c", code, str(self.port), str(self.workers)]
        return [
            sys.executable,
            *("-m", "uvicorn", "--factory", APP_FACTORY),
            *("--host", "127.0.0.1", "--port", str(self.port)),
        ]

    def start(self) -> Server:
        """Start the server and wait (bounded) until ``/healthz`` says 200."""
        self.starts += 1
        if self.in_thread:
            assert self.workers == 1 and not self.via_cli, "several workers and the CLI need a process"
            self._threaded = ThreadedServer(self.env(), self.port, self.log_path, self.clock).start()
            return self
        assert self.clock is None, "a server process reads the real clock: pass in_thread=True"
        with contextlib.ExitStack() as files:
            log = files.enter_context(open(self.log_path, "ab"))
            errors = files.enter_context(open(self.stderr_path, "ab")) if self.stderr_path else None
            self.proc = subprocess.Popen(
                self.command(),
                env=self.env(),
                stdout=log,
                stderr=errors or subprocess.STDOUT,
                cwd=self.log_path.parent,
                start_new_session=True,  # its own process group: workers die with it
            )
        try:
            return until(self._healthy, START_TIMEOUT, "the server to come up (/healthz)")
        except AssertionError as failed:
            self.kill()
            raise AssertionError(f"{failed}:\n{self.log_tail()}") from None

    @property
    def gateway(self) -> Any:
        """The in-thread server's :class:`~parkgate.Gateway` (to order a test's threads by its signal)."""
        assert self._threaded is not None, "only an in-thread server's gateway is in this process"
        return self._threaded.app.state.gateway

    def _healthy(self) -> Server | None:
        """This server once ``/healthz`` says 200; a failure if the process has exited."""
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise AssertionError(f"the server exited with {self.proc.returncode}")
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(self.url + "/healthz", timeout=5).status_code == 200:
                return self
        return None

    def kill(self) -> None:
        """SIGKILL: no shutdown hooks run (for workers, the whole process group)."""
        assert self._threaded is None, "an in-thread server cannot be killed: start it as a process"
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(30)

    def stop(self) -> None:
        """A normal shutdown (SIGTERM); SIGKILL if it does not end in 20 s."""
        if self._threaded is not None:
            threaded, self._threaded = self._threaded, None
            threaded.stop()
            return
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(20)
        self.kill()  # and any worker left behind

    def client(self, token: str | None = None, timeout: float = 30.0) -> httpx.Client:
        """An HTTP client for this server, with the bearer token (its own unless given)."""
        chosen = token if token is not None else self.token
        headers = {"Authorization": f"Bearer {chosen}"} if chosen else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=timeout)

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stderr_text(self) -> str:
        return self.stderr_path.read_text(errors="replace") if self.stderr_path and self.stderr_path.exists() else ""

    def log_tail(self, lines: int = 60) -> str:
        return "\n".join((self.log_text() + self.stderr_text()).splitlines()[-lines:])


#: Held while the process environment is swapped to build an in-thread server's app.
_ENVIRON_LOCK = threading.Lock()


@contextlib.contextmanager
def _environment(env: dict[str, str]) -> Iterator[None]:
    """``os.environ`` replaced by ``env`` for the block (for ``app_from_env`` to read)."""
    with _ENVIRON_LOCK:
        saved = dict(os.environ)
        os.environ.clear()
        os.environ.update(env)
        try:
            yield
        finally:
            os.environ.clear()
            os.environ.update(saved)


class ThreadedServer:
    """uvicorn serving ``app_from_env``'s app from a thread of this process."""

    def __init__(self, env: dict[str, str], port: int, log_path: Path, clock: Any) -> None:
        import importlib

        import uvicorn

        from parkgate.http.logs import JsonLineFormatter

        module, name = APP_FACTORY.split(":")
        factory = getattr(importlib.import_module(module), name)
        with _environment(env):
            self.app = factory(clock=clock) if clock is not None else factory()
        self.server = uvicorn.Server(
            uvicorn.Config(self.app, host="127.0.0.1", port=port, log_config=None, access_log=False, lifespan="on")
        )
        self._log = logging.getLogger("parkgate")
        self._handler = logging.FileHandler(log_path, encoding="utf-8")
        self._handler.setFormatter(JsonLineFormatter())
        self._level = self._log.level
        self._thread = threading.Thread(target=self.server.run, name=f"parkgate-serve-{port}", daemon=True)

    def start(self) -> ThreadedServer:
        """Serve, and return once uvicorn listens (bounded)."""
        self._log.addHandler(self._handler)
        self._log.setLevel(logging.INFO)
        self._thread.start()
        try:
            until(lambda: self.server.started or not self._thread.is_alive(), START_TIMEOUT, "uvicorn to listen")
            if not self.server.started:
                raise AssertionError("the in-thread server stopped before it listened")
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """A normal shutdown: the lifespan ends (the deliverer stops, the gateway closes)."""
        self.server.should_exit = True
        self._thread.join(30)
        self._log.removeHandler(self._handler)
        self._log.setLevel(self._level)
        self._handler.close()


@dataclass
class Received:
    """One request the callback receiver got."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    #: The body's bytes exactly as received (what a signature covers).
    raw_body: bytes = b""
    #: When it arrived (``time.time()``).
    at: float = 0.0

    @property
    def type(self) -> str:
        """The event's type (``ask.closed``, ``ask.reminder``, ...)."""
        return str(self.body["type"])

    @property
    def data(self) -> dict[str, Any]:
        """The event's ask (its JSON object)."""
        data: dict[str, Any] = self.body["data"]
        return data


class Receiver:
    """A tiny HTTP server on loopback that records callback POSTs; start and stop at will."""

    def __init__(self, port: int | None = None, status: int = 200) -> None:
        self.port = port or free_port()
        self.status = status
        self.received: list[Received] = []
        self._server: ThreadingHTTPServer | None = None
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def start(self) -> Receiver:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length)
                with owner._lock:
                    owner.received.append(
                        Received(
                            self.path,
                            {k.lower(): v for k, v in self.headers.items()},
                            json.loads(raw),
                            raw,
                            time.time(),
                        )
                    )
                self.send_response(owner.status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def got(self) -> list[Received]:
        with self._lock:
            return list(self.received)


class TcpProxy:
    """A loopback TCP forwarder that can be cut (listener and live connections) and resumed."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.port = free_port()
        self._listener: socket.socket | None = None
        self._conns: list[socket.socket] = []
        self._lock = threading.Lock()

    def start(self) -> TcpProxy:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()
        return self

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self._lock:
                self._conns += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        """Stop listening and drop every connection: the database is 'gone'."""
        if self._listener is not None:
            with contextlib.suppress(OSError):  # wakes the thread blocked in accept()
                self._listener.shutdown(socket.SHUT_RDWR)
            self._listener.close()
            self._listener = None
        with self._lock:
            conns, self._conns = self._conns, []
        for sock in conns:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def resume(self) -> None:
        self.start()


@contextlib.contextmanager
def running(*servers: Server) -> Iterator[None]:
    """Stop every server on the way out, whatever happened."""
    try:
        yield
    finally:
        for server in servers:
            server.stop()


#: The system Chromium the browser tests drive (``PARKGATE_TEST_CHROMIUM`` overrides it).
CHROMIUM = os.environ.get("PARKGATE_TEST_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)


@contextlib.contextmanager
def chromium(*extra_args: str) -> Iterator[Any]:
    """The system Chromium, headless, under Playwright; a clear failure when it is missing."""
    import pytest
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail(
            f"Chromium not found at {CHROMIUM}: install Debian's chromium (./dev test does, as root) "
            "or set PARKGATE_TEST_CHROMIUM",
            pytrace=False,
        )
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, *extra_args])
        try:
            yield browser
        finally:
            browser.close()


@contextlib.contextmanager
def browser_page(browser: Any, width: int = 1400, height: int = 900) -> Iterator[Any]:
    """A fresh page in a context of its own (no token left over from another page)."""
    context = browser.new_context(viewport={"width": width, "height": height})
    context.set_default_timeout(20_000)
    try:
        yield context.new_page()
    finally:
        context.close()
