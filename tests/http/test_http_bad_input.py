"""Bad input through a real server: always a JSON ``{error, detail}`` with the right 4xx.

A body sent as anything but ``Content-Type: application/json`` is 415; malformed JSON and
wrong types are 422, an unknown id is 404, a second open ask is 409, a malformed stopping
point is 422 naming the line, an oversize body is 413 before it is read; nothing is a 500,
and a parked ask is left exactly as it was.
"""

from __future__ import annotations

import contextlib
import json
import socket
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from live_server import Server, messages_path

BIG = 10 * 1024 * 1024
#: Raw bodies are sent as JSON: a body with another Content-Type, or none, is a 415.
JSON = {"content-type": "application/json"}


@pytest.fixture
def parked(served: Server, conv: str) -> Iterator[tuple[httpx.Client, str, dict[str, Any]]]:
    """A client, a conversation with a parked choice ask, and that ask as stored."""
    with served.client() as http:
        created = http.post("/v1/asks", json={"conversation_id": conv, "prompt": "Pick", "options": ["A", "B"]})
        assert created.status_code == 201, created.text
        before = http.get(f"/v1/asks/{created.json()['ask_id']}").json()
        yield http, conv, before
        after = http.get(f"/v1/asks/{before['ask_id']}").json()
        assert after == before, "a refused request changed the parked ask"


def assert_error(response: httpx.Response, status: int, error: str, *mentions: str) -> None:
    assert response.status_code == status, f"{response.status_code}: {response.text}"
    assert response.headers["content-type"].startswith("application/json")
    data = response.json()
    assert data["error"] == error, data
    assert isinstance(data["detail"], str) and data["detail"], data
    for word in mentions:
        assert word in data["detail"], (word, data)


MESSAGE_CASES = [
    # (request kwargs, status, error code, words the detail names)
    ({"content": b'{"text": "1"', "headers": JSON}, 422, "malformed_json", ("not valid JSON",)),
    ({"content": b"\xff\xfe{}", "headers": {"content-type": "application/json"}}, 422, "malformed_json",
     ("not valid UTF-8",)),
    ({"content": b'{"text":"\xff\xfe"}', "headers": JSON}, 422, "malformed_json", ("not valid UTF-8", "0xff")),
    ({"content": b'{"text":"\xc3"}', "headers": {"content-type": "application/json"}}, 422, "malformed_json",
     ("not valid UTF-8",)),
    ({"content": '{"text": "1"}'.encode("utf-16"), "headers": JSON}, 422, "malformed_json", ("not valid UTF-8",)),
    # Nesting the JSON decoder gives up on: malformed JSON too, not a bare 400.
    ({"content": b'{"text": "1", "message_id": ' + b"[" * 5000 + b"]" * 5000 + b"}", "headers": JSON}, 422,
     "malformed_json", ("nested too deeply",)),
    ({"content": '{"text": "1"}'.encode("utf-32"), "headers": JSON}, 422, "malformed_json", ("not valid UTF-8",)),
    ({"content": b""}, 422, "invalid_request", ("JSON object",)),
    ({"json": [1, 2]}, 422, "invalid_request", ("JSON object",)),
    ({"json": "1"}, 422, "invalid_request", ("JSON object",)),
    ({"json": {}}, 422, "invalid_request", ("text",)),
    ({"json": {"text": 1}}, 422, "invalid_request", ("text", "string")),
    ({"json": {"text": None}}, 422, "invalid_request", ("text",)),
    ({"json": {"text": ["1"]}}, 422, "invalid_request", ("text",)),
    ({"json": {"text": "1", "message_id": 7}}, 422, "invalid_request", ("message_id",)),
    # An unknown key is refused (ask_id names the ask a message answers: tests/http/test_http_late_answers.py).
    ({"json": {"text": "1", "ask": "elsewhere"}}, 422, "invalid_request", ("ask",)),
    ({"json": {"text": "1\x00"}}, 422, "invalid_request", ("NUL",)),
    ({"content": b'{"text": "\\ud800"}', "headers": JSON}, 422, "invalid_request", ("text",)),
    ({"json": {"text": "x" * 1_000_000}}, 422, "invalid_request", ("text", "16000")),
    ({"json": {"text": "1", "message_id": ""}}, 422, "invalid_request", ("message_id",)),
    # A body that is not sent as JSON, as a cross-site form or fetch sends it: 415, before it is read.
    ({"content": b"text=1", "headers": {"content-type": "application/x-www-form-urlencoded"}}, 415,
     "unsupported_media_type", ("application/json",)),
    ({"content": b'{"text": "1"}', "headers": {"content-type": "text/plain"}}, 415, "unsupported_media_type",
     ("application/json", "text/plain")),
    ({"content": b'{"text": "1"}'}, 415, "unsupported_media_type", ("application/json",)),
]  # fmt: skip


@pytest.mark.parametrize(("kwargs", "status", "error", "mentions"), MESSAGE_CASES)
def test_a_bad_message_body_is_refused_and_changes_nothing(
    parked: Any, kwargs: dict[str, Any], status: int, error: str, mentions: tuple[str, ...]
) -> None:
    http, conv, _ = parked
    assert_error(http.post(messages_path(conv), **kwargs), status, error, *mentions)


ASK_CASES = [
    ({"prompt": "Q?", "options": []}, 422, "malformed_stopping_point", ("at least one option",)),
    ({"prompt": "Q?", "options": [f"o{i}" for i in range(1000)]}, 422, "invalid_request", ("options", "50")),
    ({"prompt": "Q?", "options": ["Same", "same"]}, 422, "malformed_stopping_point", ("repeats",)),
    ({"prompt": "Q?", "options": ["A", ""]}, 422, "invalid_request", ("options",)),
    ({"prompt": "Q?", "options": "A,B"}, 422, "invalid_request", ("options",)),
    ({"prompt": "Q?", "kind": "menu"}, 422, "invalid_request", ("kind",)),
    ({"prompt": "Q?", "kind": "text", "options": ["A"]}, 422, "malformed_stopping_point", ("no options",)),
    ({"prompt": ""}, 422, "invalid_request", ("prompt",)),
    ({}, 422, "invalid_request", ("prompt", "skill_output")),
    ({"prompt": "Q?", "skill_output": "x"}, 422, "invalid_request", ("not both",)),
    ({"prompt": "Q?", "ttl_seconds": -5}, 422, "invalid_request", ("ttl_seconds",)),
    ({"prompt": "Q?", "ttl_seconds": 1e300}, 422, "invalid_request", ("ttl_seconds",)),
    ({"prompt": "Q?", "ttl_seconds": "60"}, 422, "invalid_request", ("ttl_seconds",)),
    ({"prompt": "Q?", "replace": "yes"}, 422, "invalid_request", ("replace",)),
    ({"prompt": "Q?", "callback_url": "file:///etc/passwd"}, 422, "invalid_input", ("callback_url",)),
    ({"prompt": "Q?", "options": ["A"], "default": "Z"}, 422, "invalid_input", ("default",)),
    ({"prompt": "Q?\x00"}, 422, "invalid_request", ("prompt", "NUL")),
    ({"prompt": "Q?", "options": ["A", "B\x00"]}, 422, "invalid_request", ("options item 2", "NUL")),
    ({"skill_output": "[[ask]]\nQ?\n1. A\n3. B\n[[/ask]]"}, 422, "malformed_stopping_point", ("line 4", "gap")),
    ({"skill_output": "[[ask]]\nQ?\n1. A\n1. B\n[[/ask]]"}, 422, "malformed_stopping_point", ("line 4",)),
    ({"skill_output": "[[ask]]\nQ?\n1. A\n2.\n[[/ask]]"}, 422, "malformed_stopping_point", ("line 4",)),
    ({"skill_output": "[[ask]]\nQ?\n1. A\n"}, 422, "malformed_stopping_point", ("never closed",)),
]


@pytest.mark.parametrize(("fields", "status", "error", "mentions"), ASK_CASES)
def test_a_bad_ask_is_refused_with_what_is_wrong(
    served: Server, conv: str, fields: dict[str, Any], status: int, error: str, mentions: tuple[str, ...]
) -> None:
    with served.client() as http:
        assert_error(http.post("/v1/asks", json={"conversation_id": conv, **fields}), status, error, *mentions)
        # nothing was parked
        assert http.post(messages_path(conv), json={"text": "1"}).json()["kind"] == "pass"


def test_replace_null_means_the_default_like_every_optional_field(parked: Any) -> None:
    http, conv, before = parked
    response = http.post("/v1/asks", json={"conversation_id": conv, "prompt": "Again?", "replace": None})
    assert_error(response, 409, "ask_already_open", before["ask_id"])  # null: not replacing
    started = http.post("/v1/workflows/uml/start", json={"conversation_id": conv, "replace": None})
    assert_error(started, 409, "ask_already_open", before["ask_id"])


def test_a_second_open_ask_is_a_409_naming_the_open_one(parked: Any) -> None:
    http, conv, before = parked
    response = http.post("/v1/asks", json={"conversation_id": conv, "prompt": "Again?", "options": ["X"]})
    assert_error(response, 409, "ask_already_open", before["ask_id"])
    assert response.json()["open_ask_id"] == before["ask_id"]
    started = http.post("/v1/workflows/uml/start", json={"conversation_id": conv})
    assert_error(started, 409, "ask_already_open", before["ask_id"])


def test_a_workflow_started_under_an_existing_run_is_a_422_that_changes_nothing(parked: Any) -> None:
    http, conv, before = parked
    other = conv + "-2"
    started = http.post("/v1/workflows/uml/start", json={"conversation_id": other, "run_id": before["run_id"]})
    assert_error(started, 422, "invalid_input", before["run_id"], "already exists")
    assert http.post(messages_path(other), json={"text": "1"}).json()["kind"] == "pass"  # nothing was parked


def test_bad_ids_are_refused_clearly(served: Server, conv: str) -> None:
    with served.client() as http:
        assert_error(http.get("/v1/asks/no-such-ask"), 404, "unknown_ask", "no-such-ask")
        assert_error(http.get("/v1/asks/no-such-ask?wait=5"), 404, "unknown_ask")
        assert_error(http.post("/v1/asks/no-such-ask/cancel"), 404, "unknown_ask")
        assert_error(http.post("/v1/workflows/nope/start", json={"conversation_id": conv}), 404, "unknown_workflow")
        assert_error(http.post("/v1/asks", json={"conversation_id": "", "prompt": "Q?"}), 422, "invalid_request")
        assert_error(http.post("/v1/asks", json={"conversation_id": "a\tb", "prompt": "Q?"}), 422, "invalid_input")
        assert_error(http.post("/v1/asks", json={"conversation_id": "x" * 201, "prompt": "Q?"}), 422, "invalid_request")
        assert_error(http.post("/v1/conversations//messages", json={"text": "1"}), 422, "invalid_input", "empty")
        assert_error(http.post("/v1/conversations/a%00b/messages", json={"text": "1"}), 422, "invalid_input")
        assert_error(http.get("/v1/nothing"), 404, "not_found")
        assert_error(http.delete("/v1/asks"), 405, "method_not_allowed", "GET", "POST")


def test_a_body_that_is_not_utf8_is_refused_on_every_route_and_parks_nothing(served: Server, conv: str) -> None:
    bad = b'{"conversation_id": "%s", "prompt": "Pick \xff", "options": ["A"]}' % conv.encode()
    with served.client() as http:
        assert_error(http.post("/v1/asks", content=bad, headers=JSON), 422, "malformed_json", "not valid UTF-8")
        start = b'{"conversation_id": "%s\xfe"}' % conv.encode()
        started = http.post("/v1/workflows/uml/start", content=start, headers=JSON)
        assert_error(started, 422, "malformed_json", "not valid UTF-8")
        # nothing was parked
        assert http.post(messages_path(conv), json={"text": "1"}).json()["kind"] == "pass"


@pytest.mark.parametrize("escape", ["%FE", "%C3", "%ED%A0%80", "%C0%AF", "%FF%FE"])
def test_a_path_that_is_not_utf8_once_decoded_is_a_400_and_reaches_no_conversation(
    served: Server, conv: str, escape: str
) -> None:
    """``x%FE`` is not ``x`` + U+FFFD: the ask parked there is left exactly as it was."""
    lookalike = conv + "\ufffd"
    with served.client() as http:
        created = http.post("/v1/asks", json={"conversation_id": lookalike, "prompt": "Pick", "options": ["A", "B"]})
        assert created.status_code == 201, created.text
        before = http.get(f"/v1/asks/{created.json()['ask_id']}").json()
        path = f"/v1/conversations/{conv}{escape}/messages"
        for text in ("1", "nope", "cancel"):
            response = http.post(path, json={"text": text})
            assert response.request.url.raw_path.decode() == path  # sent as written
            assert_error(response, 400, "bad_request", "UTF-8", "path")
        assert_error(http.get(f"/v1/asks/{created.json()['ask_id']}{escape}"), 400, "bad_request", "UTF-8")
        assert_error(http.post(f"/v1/asks/x{escape}/cancel"), 400, "bad_request", "UTF-8")
        assert http.get(f"/v1/asks/{before['ask_id']}").json() == before
        # the same conversation written as UTF-8 is reached as usual
        reached = http.post(messages_path(lookalike), json={"text": "2"}).json()
        assert (reached["kind"], reached["answer"]) == ("selected", "B")


def test_bad_query_parameters_are_refused(parked: Any) -> None:
    http, _, before = parked
    for wait in ("61", "-1", "soon", "nan", "inf"):
        assert_error(http.get(f"/v1/asks/{before['ask_id']}", params={"wait": wait}), 422, "invalid_request", "wait")
    assert_error(http.get("/v1/asks", params={"status": "lost"}), 422, "invalid_request", "status")
    assert_error(http.get("/v1/asks", params={"since": "yesterday"}), 422, "invalid_request", "since")
    assert_error(http.get("/v1/asks", params={"limit": "0"}), 422, "invalid_request", "limit")


def raw_post(port: int, head: bytes, chunks: Iterator[bytes]) -> tuple[bytes, int]:
    """Send a request head, then body chunks until the server answers; (answer, bytes sent)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=15)
    sent, answer = 0, b""
    try:
        sock.sendall(head)
        for chunk in chunks:
            sock.settimeout(0.02)
            with contextlib.suppress(TimeoutError, BlockingIOError):
                answer += sock.recv(65536)
            if answer:
                break
            sock.settimeout(5)
            try:
                sock.sendall(chunk)
            except (BrokenPipeError, ConnectionResetError, TimeoutError):
                break
            sent += len(chunk)
        sock.settimeout(15)
        with contextlib.suppress(TimeoutError, ConnectionResetError):
            while b"\r\n\r\n" not in answer and (data := sock.recv(65536)):
                answer += data
    finally:
        sock.close()
    return answer, sent


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
def test_a_10_mb_body_is_a_413_before_it_is_read(served: Server, conv: str, framing: str) -> None:
    path = messages_path(conv).encode()
    head = b"POST " + path + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    if framing == "content-length":
        head += b"Content-Length: " + str(BIG).encode() + b"\r\n\r\n"
        chunks = (b"x" * 65_536 for _ in range(BIG // 65_536))
    else:
        head += b"Transfer-Encoding: chunked\r\n\r\n"
        chunks = (b"10000\r\n" + b"x" * 65_536 + b"\r\n" for _ in range(BIG // 65_536))
    answer, sent = raw_post(served.port, head, chunks)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:300]
    assert b'"error":' in answer or answer.endswith(b"\r\n\r\n")
    assert sent < BIG // 2, f"the server read {sent} of {BIG} bytes before refusing"
    with served.client() as http:  # and it still serves
        assert http.post(messages_path(conv), json={"text": "hi"}).json()["kind"] == "pass"


def test_a_413_is_json_through_a_normal_client(served: Server, conv: str) -> None:
    with served.client() as http:
        response = http.post(messages_path(conv), content=b'{"text": "' + b"x" * BIG + b'"}', headers=JSON)
    assert_error(response, 413, "body_too_large", "limit")


def test_skill_output_takes_what_the_library_takes_even_with_every_character_escaped(served: Server, conv: str) -> None:
    """256,000 characters, as ``Gateway.ask_from_text`` allows; 256,001 is a 422, not a 413."""
    from parkgate.gateway.checks import MAX_SKILL_OUTPUT_CHARS

    marker = "\n[[ask]]\nWhich one?\n1. A\n2. B\n[[/ask]]"
    filler = "\U0001f600" * (MAX_SKILL_OUTPUT_CHARS - len(marker))  # 12 bytes each as JSON \\u escapes
    with served.client() as http:
        body = json.dumps({"conversation_id": conv, "skill_output": filler + marker}, ensure_ascii=True).encode()
        assert len(body) > 3_000_000
        created = http.post("/v1/asks", content=body, headers=JSON)
        assert created.status_code == 201, created.text[:300]
        assert created.json()["kind"] == "asked"
        too_long = json.dumps({"conversation_id": conv + "-2", "skill_output": "x" + filler + marker})
        refused = http.post("/v1/asks", content=too_long.encode(), headers=JSON)
        assert_error(refused, 422, "invalid_request", "skill_output", str(MAX_SKILL_OUTPUT_CHARS))
        # a message keeps its own, smaller limit
        assert_error(http.post(messages_path(conv), content=body, headers=JSON), 413, "body_too_large", "limit")


@pytest.mark.parametrize("control", ["\u0085", "\u009b", "\u0080", "\u009f"])
def test_an_id_with_a_c1_control_character_is_refused(served: Server, control: str) -> None:
    with served.client() as http:
        body = {"conversation_id": f"a{control}b", "prompt": "Pick", "options": ["A", "B"]}
        assert_error(http.post("/v1/asks", json=body), 422, "invalid_input", "control character")
        assert_error(http.post(messages_path(f"a{control}b"), json={"text": "1"}), 422, "invalid_input")


@pytest.mark.parametrize("conversation", ["\nab", "a\nb", "ab\n"])
def test_a_conversation_id_with_a_line_break_is_refused_not_unrouted(served: Server, conversation: str) -> None:
    with served.client() as http:
        assert_error(http.post(messages_path(conversation), json={"text": "1"}), 422, "invalid_input", "control")
        assert_error(http.get(messages_path(conversation).removesuffix("/messages")), 422, "invalid_input")


def test_a_ttl_below_one_microsecond_names_the_smallest(served: Server, conv: str) -> None:
    with served.client() as http:
        body = {"conversation_id": conv, "prompt": "Pick", "options": ["A", "B"], "ttl_seconds": 1e-9}
        assert_error(http.post("/v1/asks", json=body), 422, "invalid_input", "one microsecond")


@pytest.mark.parametrize(("method", "path"), [("GET", "/v1/asks/"), ("POST", "/v1/asks/"), ("GET", "/healthz/")])
def test_a_trailing_slash_is_a_json_404_not_a_bare_redirect(served: Server, method: str, path: str) -> None:
    with served.client() as http:
        assert_error(http.request(method, path, json={}), 404, "not_found")
