"""``parkgate audit door``: the write-up's five replies to a chat endpoint, and the verdict.

Against local chat endpoints on loopback that are broken on purpose (the same scold five
times, a null reply, an exit that does not leave, an HTTP error), against a real
``parkgate serve``, and in process through ``--python``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from click.testing import CliRunner, Result

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "http"))

import door_handlers
from live_server import Server

from parkgate import AsyncGateway, Gateway
from parkgate.cli import main
from parkgate.cli.demo import WORKFLOWS
from parkgate.core.door import DOOR_EXIT, DOOR_NON_ANSWERS

SENT = [*DOOR_NON_ANSWERS, DOOR_EXIT]


def _answer(mode: str, text: str, turn: int) -> tuple[int, Any]:
    """What a chat endpoint in ``mode`` answers to its ``turn``-th message (from 1)."""
    left = text == DOOR_EXIT
    if mode == "same":  # a strict matcher with no door
        return 200, {"reply": {"text": "That did not match any option."}, "state": {"parked": True}}
    if mode == "counting":  # a counter that never says anything new
        return 200, {"reply": {"text": f"No match (try {turn})."}, "state": {"parked": True}}
    if mode == "null" and text == "help":  # the leak: null goes to a model
        return 200, {"reply": {"text": None}, "state": {"parked": True}}
    if mode == "error" and turn == 3:
        return 500, {"error": "boom"}
    reply = "Dropped it." if left else ("No match." if turn < 3 else f"Still no match ({turn}): type cancel.")
    return 200, {"reply": {"text": reply}, "state": {"parked": not left or mode == "sticky"}}


@pytest.fixture
def endpoint() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A chat endpoint on loopback, ``/MODE/CONVERSATION``, and the bodies it received."""
    received: list[dict[str, Any]] = []

    class Chat(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            received.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
            mode = self.path.split("/")[1]
            status, answer = _answer(mode, body["message"]["content"], len(received))
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Chat)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", received
    server.shutdown()
    server.server_close()


def _door(*options: str) -> tuple[Result, list[dict[str, Any]]]:
    result = CliRunner().invoke(main, ["audit", "door", *options])
    return result, [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]


def _local(base: str, mode: str, *more: str) -> tuple[Result, list[dict[str, Any]]]:
    return _door(
        *("--url", f"{base}/{mode}/{{conversation}}", "--conversation", "room 7/b"),
        *("--body", '{"message": {"content": "{text}", "room": "{conversation}"}}'),
        *("--reply-path", "reply.text", "--parked-path", "$.state.parked", *more),
    )


def test_a_working_door_passes_and_the_template_carries_text_and_conversation(endpoint: Any) -> None:
    base, received = endpoint
    result, lines = _local(base, "good", "--header", "Authorization: Bearer t0k")
    assert result.exit_code == 0, result.output
    assert [line["input"] for line in lines] == SENT
    assert [line["parked"] for line in lines] == [True, True, True, True, False]
    assert "door passed" in result.stderr
    assert [item["body"]["message"]["content"] for item in received] == SENT
    assert {item["body"]["message"]["room"] for item in received} == {"room 7/b"}
    assert {item["path"] for item in received} == {"/good/" + quote("room 7/b", safe="")}
    assert {item["auth"] for item in received} == {"Bearer t0k"}


@pytest.mark.parametrize(
    ("mode", "why"),
    [
        ("same", "never changed shape"),
        ("counting", "never changed shape"),
        ("null", "the reply to 'help' was passed on (null)"),
        ("sticky", "'cancel' did not leave"),
        ("error", "answered 'help' with HTTP 500"),
    ],
)
def test_a_broken_door_fails_and_names_why(endpoint: Any, mode: str, why: str) -> None:
    base, _ = endpoint
    result, lines = _local(base, mode)
    assert result.exit_code == 1, result.output
    assert len(lines) == len(SENT)
    assert "door FAILED" in result.stderr and why in result.stderr


def test_an_answer_without_the_parked_flag_cannot_pass(endpoint: Any) -> None:
    base, _ = endpoint
    result, lines = _local(base, "good", "--parked-path", "state.closed")
    assert result.exit_code == 1 and "carries no parked flag" in result.stderr
    assert {line["parked"] for line in lines} == {None}


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (["--url", "http://127.0.0.1:9/chat"], "did not answer"),  # nothing listens on the discard port
        (["--url", "http://127.0.0.1:9/chat", "--body", "{text}"], "not JSON"),
        (["--url", "http://127.0.0.1:9/chat", "--body", '{"t": 1}'], 'no "{text}"'),
        (["--url", "http://127.0.0.1:9/chat", "--reply-path", "a..b"], "not a path"),
        (["--python", "no_such_module:handle"], "cannot load"),
        (["--python", "door_handlers:crash"], "the handler raised KeyError on 'help'"),
    ],
)
def test_mistakes_are_one_error_line(options: list[str], said: str) -> None:
    result, _ = _door(*options)
    assert result.exit_code == 1 and result.output.startswith("Error: ") and said in result.output
    assert "Traceback" not in result.output


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """``parkgate serve`` on a SQLite file."""
    folder = tmp_path_factory.mktemp("served")
    server = Server(f"sqlite:///{folder / 'serve.db'}", folder / "serve.log", via_cli=True)
    try:
        yield server.start()
    finally:
        server.stop()


@pytest.mark.parametrize("conversation", ["door-1", "a b/c?d#e"])
def test_parkgate_serve_passes_its_own_door(served: Server, conversation: str) -> None:
    started = httpx.post(f"{served.url}/v1/workflows/uml/start", json={"conversation_id": conversation})
    assert started.status_code == 201, started.text
    url = f"{served.url}/v1/conversations/{{conversation}}/messages"
    result, lines = _door("--url", url, "--conversation", conversation)
    assert result.exit_code == 0, result.output
    assert [line["parked"] for line in lines] == [True, True, True, True, False]
    assert lines[2]["text"].startswith("Still no match") and lines[-1]["text"] == "Dropped the menu, nothing ran."
    again = httpx.post(f"{served.url}/v1/workflows/uml/start", json={"conversation_id": conversation})
    assert again.status_code == 201, again.text  # the conversation was left unparked
    httpx.post(f"{served.url}/v1/asks/{again.json()['ask_id']}/cancel")


def test_parkgate_serve_with_nothing_parked_fails_as_passed_on(served: Server) -> None:
    result, _ = _door("--url", f"{served.url}/v1/conversations/{{conversation}}/messages")
    assert result.exit_code == 1 and "passed on (empty)" in result.stderr


@pytest.fixture
def async_gateway(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Gateway]:
    """A gateway with the demo workflows, also set as ``door_handlers.gateway``."""
    with Gateway(f"sqlite:///{tmp_path / 'd.db'}", workflows=WORKFLOWS.values()) as gateway:
        monkeypatch.setattr(door_handlers, "gateway", AsyncGateway(gateway))
        yield gateway


def test_python_handlers_async_with_is_parked(async_gateway: Gateway) -> None:
    async_gateway.start("py-1", "uml")
    result, lines = _door(
        *("--python", "door_handlers:handle", "--parked-python", "door_handlers:is_parked", "--conversation", "py-1")
    )
    assert result.exit_code == 0, result.output
    assert [line["parked"] for line in lines] == [True, True, True, True, False]
    assert async_gateway.parked("py-1") is None


def test_python_handler_returning_the_reply_mapping(async_gateway: Gateway) -> None:
    async_gateway.start("py-2", "uml")
    result, _ = _door("--python", "door_handlers:handle_reply", "--conversation", "py-2")
    assert result.exit_code == 0, result.output


def test_python_handler_with_no_door_fails() -> None:
    result, lines = _door("--python", "door_handlers:scold")
    assert result.exit_code == 1 and "never changed shape" in result.stderr
    assert [line["text"] for line in lines] == ["That did not match any option."] * len(SENT)


def test_the_installed_command_imports_a_handler_from_the_current_directory(tmp_path: Path) -> None:
    (tmp_path / "my_chat_bot.py").write_text("def handle(conversation, text):\n    return 'Unknown command.'\n")
    script = Path(sys.executable).parent / "parkgate"
    done = subprocess.run(
        [str(script), "audit", "door", "--python", "my_chat_bot:handle"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1, done.stderr
    assert len(done.stdout.splitlines()) == len(SENT) and "never changed shape" in done.stderr


@pytest.fixture
def hostile() -> Iterator[str]:
    """A chat endpoint on loopback that answers ``/MODE`` the way a hostile one would:

    - ``drip-headers``: the status line, then one byte of headers every 0.1 s, for ever;
    - ``drip-body``: whole headers, then one byte of a long body every 0.1 s;
    - ``declared``: a body declared 300 MB long, then zeros as fast as they are read;
    - ``chunked``: an endless chunked body, no length declared;
    - ``nested``: JSON arrays nested 200,000 deep (400 KB).
    """
    stopping = threading.Event()

    class Hostile(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            mode = self.path.strip("/")
            try:
                if mode == "nested":
                    data = b"[" * 200_000 + b"]" * 200_000
                    self._write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")
                    self._write(b"Content-Length: %d\r\n\r\n" % len(data) + data)
                elif mode == "drip-headers":
                    self._write(b"HTTP/1.1 200 OK\r\n")
                    self._drip(b"X-Slow: " + b"a" * 100_000)
                elif mode == "drip-body":
                    self._write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100000\r\n\r\n")
                    self._drip(b"b" * 100_000)
                elif mode == "declared":
                    self._write(
                        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 300000000\r\n\r\n"
                    )
                    while not stopping.is_set():
                        self._write(b"0" * 65536)
                elif mode == "chunked":
                    self._write(
                        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                    )
                    while not stopping.is_set():
                        self._write(b"10000\r\n" + b"0" * 65536 + b"\r\n")
            except OSError:  # the audit hung up, as it should
                pass
            self.close_connection = True

        def _write(self, data: bytes) -> None:
            self.wfile.write(data)
            self.wfile.flush()

        def _drip(self, data: bytes) -> None:
            for byte in data:
                if stopping.is_set():
                    return
                self._write(bytes([byte]))
                time.sleep(0.1)  # real time is what a drip attack spends: one byte at a time

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Hostile)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    stopping.set()
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("mode", ["drip-headers", "drip-body"])
def test_a_dripping_endpoint_is_cut_off_at_the_deadline(hostile: str, mode: str) -> None:
    result, lines = _door("--url", f"{hostile}/{mode}", "--deadline", "1")
    assert result.exit_code == 1 and result.output.startswith("Error: "), result.output
    assert "had not answered 'pick the right one' when the 1 s deadline for the check passed" in result.output
    assert lines == []


@pytest.mark.parametrize("mode", ["declared", "chunked"])
def test_an_oversize_answer_is_read_no_further_than_the_cap(hostile: str, mode: str) -> None:
    result, _ = _door("--url", f"{hostile}/{mode}", "--max-body", "65536")
    assert result.exit_code == 1 and result.output.startswith("Error: "), result.output
    assert "answer to 'pick the right one' is over 65536 bytes" in result.output


def test_deeply_nested_json_is_one_error_line(hostile: str) -> None:
    result, _ = _door("--url", f"{hostile}/nested")
    assert result.exit_code == 1 and result.output.startswith("Error: "), result.output
    assert "nests JSON deeper than 100 levels" in result.output


def test_the_door_help_names_the_defaults() -> None:
    shown = CliRunner().invoke(main, ["audit", "door", "--help"]).output
    assert "--deadline" in shown and "120" in shown and "--max-body" in shown and "1048576" in shown
