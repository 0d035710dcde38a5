"""Named, scoped tokens from a tokens file, against ``parkgate serve`` on SQLite and PostgreSQL.

Each token does what its scopes say and nothing else (a 403 names the missing scope);
a ``park`` token reads the asks it parked and no other (another's reads as unknown); a token's cap on open asks and
its rate limit answer 429 with ``Retry-After``; nothing a refused request touched
changes. ``--token-file`` keeps the token out of the process list.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from attack import NamedTokens, clean_env, serve_command, snapshot
from live_server import messages_path

from parkgate.http.guard import MISSING_TOKEN, WRONG_TOKEN
from parkgate.http.tokens import digest


def client(server: Any, token: str) -> httpx.Client:
    return server.client(token=token)


def test_each_scope_does_its_part_and_nothing_else(launch: Any, database: Any, tokens_file: NamedTokens) -> None:
    server = launch(database, extra_env=tokens_file.env())
    tokens = tokens_file.tokens
    with (
        client(server, tokens["agent"]) as agent,
        client(server, tokens["chat-surface"]) as chat,
        client(server, tokens["auditor"]) as auditor,
        client(server, tokens["operator"]) as operator,
        client(server, tokens["other-agent"]) as other,
    ):
        parked = agent.post("/v1/asks", json={"conversation_id": "t-1", "prompt": "Go?", "options": ["Go", "Stop"]})
        assert parked.status_code == 201, parked.text
        ask_id = parked.json()["ask_id"]
        theirs = other.post("/v1/asks", json={"conversation_id": "t-2", "prompt": "Theirs?"}).json()["ask_id"]
        before = snapshot(database)

        def refused(response: httpx.Response, scope: str) -> None:
            assert response.status_code == 403, response.text
            body = response.json()
            assert body["error"] == "missing_scope" and f"'{scope}'" in body["detail"], body

        # park: parks and reads its own asks; nothing else.
        assert agent.get(f"/v1/asks/{ask_id}").json()["status"] == "open"
        assert agent.get(f"/v1/asks/{theirs}").json()["error"] == "unknown_ask"  # as if there were none
        refused(agent.get("/v1/asks"), "read")
        refused(agent.post(messages_path("t-1"), json={"text": "1"}), "answer")
        refused(agent.post(f"/v1/asks/{ask_id}/cancel"), "operate")
        # answer: posts messages only.
        refused(chat.post("/v1/asks", json={"conversation_id": "t-3", "prompt": "Q?"}), "park")
        refused(chat.get("/v1/asks"), "read")
        refused(chat.post(f"/v1/asks/{ask_id}/cancel"), "operate")
        refused(chat.post("/v1/workflows/uml/start", json={"conversation_id": "t-4"}), "park")
        # read: lists and reads, changes nothing.
        listed = auditor.get("/v1/asks").json()["asks"]
        assert {ask["ask_id"] for ask in listed} == {ask_id, theirs}
        refused(auditor.post(f"/v1/asks/{ask_id}/cancel"), "operate")
        refused(auditor.post(messages_path("t-1"), json={"text": "1"}), "answer")
        refused(auditor.post(f"/v1/runs/{parked.json()['run_id']}/finish"), "operate")
        assert snapshot(database) == before  # every refused call changed nothing

        # And what each may do, it does.
        assert chat.post(messages_path("t-1"), json={"text": "Go"}).json()["answer"] == "Go"
        finished = operator.post(f"/v1/runs/{parked.json()['run_id']}/finish", json={"outcome": "shipped"})
        assert finished.status_code == 200 and finished.json()["status"] == "complete"
        assert operator.post(f"/v1/asks/{theirs}/cancel").json()["status"] == "cancelled"
        assert agent.get(f"/v1/asks/{ask_id}").json()["answer"] == "Go"
    # The ask remembers who parked it.
    owners = {row[0]: row[-1] for row in snapshot(database)[0]}
    assert owners == {ask_id: "agent", theirs: "other-agent"}


def test_a_token_at_its_cap_gets_429_and_parks_nothing(launch: Any, database: Any, tokens_file: NamedTokens) -> None:
    server = launch(database, extra_env=tokens_file.env())
    with (
        client(server, tokens_file.tokens["agent"]) as agent,
        client(server, tokens_file.tokens["other-agent"]) as other,
        client(server, tokens_file.tokens["chat-surface"]) as chat,
    ):
        for n in range(3):  # the agent's max_open_asks
            assert agent.post("/v1/asks", json={"conversation_id": f"cap-{n}", "prompt": "Q?"}).status_code == 201
        before = snapshot(database)
        for body_path, body in (
            ("/v1/asks", {"conversation_id": "cap-3", "prompt": "Q?"}),
            ("/v1/workflows/uml/start", {"conversation_id": "cap-4"}),
        ):
            over = agent.post(body_path, json=body)
            assert over.status_code == 429, over.text
            assert over.json()["error"] == "too_many_open_asks" and int(over.headers["retry-after"]) > 0
        assert snapshot(database) == before
        # Another token is not held to this one's cap.
        assert other.post("/v1/asks", json={"conversation_id": "cap-other", "prompt": "Q?"}).status_code == 201
        # Once one of its asks closes, the agent may park again.
        assert chat.post(messages_path("cap-0"), json={"text": "done"}).json()["kind"] == "answered"
        assert agent.post("/v1/asks", json={"conversation_id": "cap-3", "prompt": "Q?"}).status_code == 201


def test_a_rate_limited_token_gets_429_with_retry_after(launch: Any, database: Any, tokens_file: NamedTokens) -> None:
    server = launch(database, extra_env=tokens_file.env())
    with (
        client(server, tokens_file.tokens["chatty"]) as chatty,
        client(server, tokens_file.tokens["auditor"]) as auditor,
    ):
        began = time.monotonic()
        statuses = [chatty.get("/v1/workflows") for _ in range(40)]
        elapsed = time.monotonic() - began
        ok = sum(1 for response in statuses if response.status_code == 200)
        limited = [response for response in statuses if response.status_code == 429]
        assert ok + len(limited) == 40
        # 5 a second, one second's worth at once: never more than that in the time taken.
        assert ok <= 5 + 5 * elapsed + 1, (ok, elapsed)
        assert limited and all(int(r.headers["retry-after"]) >= 1 for r in limited)
        assert limited[0].json()["error"] == "rate_limited"
        # Another token is not limited by this one's rate.
        assert all(auditor.get("/v1/workflows").status_code == 200 for _ in range(10))


def test_a_wrong_or_missing_token_is_401_and_ops_routes_stay_open(
    launch: Any, database: Any, tokens_file: NamedTokens
) -> None:
    server = launch(database, extra_env=tokens_file.env())
    with httpx.Client(base_url=server.url, timeout=30) as anonymous:
        missing = anonymous.get("/v1/asks")
        wrong = anonymous.get("/v1/asks", headers={"Authorization": f"Bearer {digest('x')}"})
        assert missing.status_code == wrong.status_code == 401
        # Each says what to fix: send a token, or check the one sent.
        assert (missing.json()["detail"], wrong.json()["detail"]) == (MISSING_TOKEN, WRONG_TOKEN)
        bare = anonymous.get("/v1/asks", headers={"Authorization": "Bearer"})
        assert bare.json()["detail"] == MISSING_TOKEN
        # The file holds hashes: the hash itself is not a token.
        hashed = digest(tokens_file.tokens["auditor"])
        assert anonymous.get("/v1/asks", headers={"Authorization": f"Bearer {hashed}"}).status_code == 401
        assert anonymous.get("/healthz").status_code == 200
    for token in tokens_file.tokens.values():
        assert token not in server.log_text()


def test_a_tokens_file_with_a_raw_token_or_a_bad_scope_stops_the_start(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'p.db'}"
    for body, says in (
        ('[[token]]\nname = "a"\ntoken = "secret"\nscopes = ["read"]\n', "never the token itself"),
        (f'[[token]]\nname = "a"\nsha256 = "{digest("x")}"\nscopes = ["admin"]\n', "unknown scope"),
        ('[[token]]\nname = "a"\nsha256 = "abc"\nscopes = ["read"]\n', "64 hex"),
        ("[[token]\n", "not valid TOML"),
    ):
        path = tmp_path / "tokens.toml"
        path.write_text(body)
        done = serve_command("--db", db, env=clean_env(PARKGATE_TOKENS_FILE=str(path)))
        assert done.returncode == 1, done.stderr
        assert says in done.stderr and "Traceback" not in done.stderr
        assert "secret" not in done.stderr


def test_token_file_keeps_the_token_out_of_the_process_list(launch: Any, database: Any, tmp_path: Path) -> None:
    secret = "tf-" + digest("seed")[:32]
    path = tmp_path / "token"
    path.write_text(secret + "\n")
    server = launch(database, extra_args=["--token-file", str(path)])
    assert server.proc is not None
    cmdlines = [server.proc.pid, *child_pids(server.proc.pid)]
    for pid in cmdlines:
        assert secret.encode() not in Path(f"/proc/{pid}/cmdline").read_bytes()
    with server.client(token=secret) as http:
        assert http.get("/v1/asks").status_code == 200
    with server.client(token="wrong") as http:
        assert http.get("/v1/asks").status_code == 401


def test_a_token_on_the_command_line_is_warned_about(tmp_path: Path) -> None:
    done = serve_command(
        "--db", f"sqlite:///{tmp_path / 'p.db'}", "--token", "abc", "--host", "no-such-host.invalid",
        env=clean_env(),
    )  # fmt: skip
    assert "shows in ps" in done.stderr


def child_pids(pid: int) -> list[int]:
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


@pytest.fixture(autouse=True)
def _no_leftover_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("PARKGATE_TOKEN", "PARKGATE_TOKENS_FILE", "PARKGATE_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
