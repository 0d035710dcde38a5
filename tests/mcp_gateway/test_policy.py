"""The gateway's TOML file: what a rule holds, and every mistake refused before anything
starts, naming the file and the line; and what a person and an agent are shown of a call
(its hash, secrets redacted, long values cut)."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from mcp_types import ToolAnnotations

from parkgate.channels.base import ChannelTarget
from parkgate.core.kinds import AskKind, AskStatus
from parkgate.core.model import Ask
from parkgate.errors import ConfigurationError
from parkgate.mcp_gateway import DEFAULT_HOLD, load_policy, parse_policy, render

SERVERS = '[servers.ops]\ncommand = "python"\nargs = ["ops_server.py"]\n\n'
DESTRUCTIVE = ToolAnnotations(destructive_hint=True)
T0 = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)


def test_the_issues_example_loads_and_holds_deploy_calls_only(tmp_path: Path) -> None:
    path = tmp_path / "gateway.toml"
    path.write_text(
        SERVERS + '[[approval]]\ntools = ["deploy*"]\nresponders = ["alice", "bob", "carol"]\n'
        'quorum = 2\nttl = "10m"\nhold = "50s"\n',
        encoding="utf-8",
    )
    policy = load_policy(path)
    ops = policy.servers["ops"]
    assert (ops.command, ops.args, ops.cwd) == ("python", ("ops_server.py",), str(tmp_path.resolve()))
    (rule,) = policy.rules
    assert rule.hold == timedelta(seconds=50) and rule.options == ("Approve", "Reject")
    assert rule.valid_for is None  # an approval forwards one call
    assert rule.ask_client is None  # only people on parkgate's surfaces answer
    assert rule.ask_fields["ttl"] == timedelta(minutes=10)
    assert (rule.ask_fields["responders"], rule.ask_fields["quorum"]) == (["alice", "bob", "carol"], 2)
    assert policy.rule_for("ops", "deploy", None, {}) is rule
    assert policy.rule_for("ops", "deploy_canary", None, {}) is rule
    assert policy.rule_for("ops", "status", None, {}) is None


def test_the_first_rule_that_matches_applies_by_name_annotation_and_argument() -> None:
    policy = parse_policy(
        SERVERS + "[[approval]]\n"
        'tools = ["ops.deploy"]\narguments = { env = "prod*" }\nhold = "1h30m"\nvalid_for = "10m"\n\n'
        "[[approval]]\nannotations = { destructiveHint = true }\nask_client = true\n\n"
        '[[approval]]\ntools = ["*"]\narguments = { replicas = "1?" }\noptions = ["Ship it", "Hold", "Later"]\n'
        'responders = ["alice", "bob"]\nask_client = "alice"\n'
        'post_to = { channel = "slack", where = { channel = "C0OPS" } }\n'
    )
    prod, destructive, many = policy.rules
    assert policy.rule_for("ops", "deploy", None, {"env": "production"}) is prod
    assert policy.rule_for("other", "deploy", None, {"env": "production"}) is None  # ops.deploy only
    assert policy.rule_for("ops", "deploy", None, {"env": "staging"}) is None
    assert policy.rule_for("ops", "drop", DESTRUCTIVE, {}) is destructive
    assert policy.rule_for("ops", "drop", ToolAnnotations(destructive_hint=False), {}) is None
    assert policy.rule_for("ops", "scale", None, {"replicas": 12}) is many  # a number's JSON
    assert prod.hold == timedelta(hours=1, minutes=30) and destructive.hold == DEFAULT_HOLD
    assert prod.valid_for == timedelta(minutes=10) and destructive.valid_for is None
    assert (prod.ask_client, destructive.ask_client, many.ask_client) == (None, "mcp-client", "alice")
    assert many.options == ("Ship it", "Hold", "Later")
    assert many.ask_fields["post_to"] == ChannelTarget("slack", {"channel": "C0OPS"})


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ('[servers.ops]\ncommand = "python"\nargs = "ops.py"\n', 3, "args must be a list of strings"),
        ('[servers.ops]\ncommand = "python"\nurl = "http://x/mcp"\n', 1, "needs command"),
        ('[servers.ops]\nurl = "ftp://x"\n', 2, "http:// or https://"),
        ('[servers."o ps"]\ncommand = "python"\n', 1, "letters, digits"),
        ("[[approval]]\ntools = []\n", 1, "no [servers.NAME] table"),
        (SERVERS + '[[approval]]\ntools = ["a"]\n\n[[approval]]\ntools = ["b"]\nttl = "10x"\n', 10, "'10x' is not a"),
        (SERVERS + '[[approval]]\ntools = ["a"]\nquorum = 2\n', 7, "quorum needs responders"),
        (SERVERS + '[[approval]]\ntools = ["a"]\nresponders = ["a"]\nquorum = 3\n', 8, "more than the 1 responders"),
        (SERVERS + '[[approval]]\ntools = ["a"]\nhold = 0\n', 7, "hold"),
        (SERVERS + '[[approval]]\ntools = ["a"]\nvalid_for = "forever"\n', 7, "valid_for 'forever' is not a"),
        (SERVERS + '[[approval]]\ntools = ["a"]\nvalid_for = -5\n', 7, "valid_for"),
        (SERVERS + '[[approval]]\ntools = ["a"]\nask_client = 3\n', 7, "ask_client is true, false, or"),
        (SERVERS + '[[approval]]\ntools = ["a"]\nask_client = ""\n', 7, "ask_client"),
        (
            SERVERS + '[[approval]]\ntools = ["a"]\nresponders = ["alice"]\nask_client = true\n',
            8,
            "would answer as 'mcp-client', who is not among the responders",
        ),
        (SERVERS + '[[approval]]\nask_client = "dave"\ntools = ["a"]\nresponders = ["alice"]\n', 6, "'dave'"),
        (SERVERS + '[[approval]]\ntools = ["a"]\ncolour = "red"\n', 7, "unknown key 'colour'"),
        (SERVERS + "[[approval]]\nresponders = []\n", 5, "names no tools"),
        (SERVERS + "[[approval]]\nannotations = { dangerous = true }\n", 6, "'dangerous' is not one of"),
        (SERVERS + '[[approval]]\ntools = ["a"]\noptions = ["Go", "go"]\n', 7, "options"),
        (SERVERS + '[[approval]]\ntools = ["a"]\npost_to = "slack"\n', 7, "post_to is"),
        (SERVERS + "[[approval]]\ntools = [\n", 6, "not TOML"),
    ],
)
def test_a_mistake_is_refused_naming_the_line(text: str, line: int, message: str) -> None:
    with pytest.raises(ConfigurationError) as refused:
        parse_policy(text, "gateway.toml")
    assert str(refused.value).startswith(f"gateway.toml, line {line}: ")
    assert message in str(refused.value)


def test_the_command_refuses_a_bad_file_in_one_line_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "gateway.toml"
    path.write_text(SERVERS + '[[approval]]\ntools = ["deploy"]\nttl = "soon"\n', encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "parkgate", "mcp-gateway", "--config", str(path), "--db", str(tmp_path / "p.db")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1 and done.stdout == ""
    assert (
        done.stderr.strip()
        == "Error: gateway.toml, line 7: [[approval]] 1: ttl 'soon' is not a duration like 90s, 10m or 6h"
    )
    assert not (tmp_path / "p.db").exists()  # refused before the store was opened


def test_an_approval_is_bound_to_the_server_the_tool_and_every_argument() -> None:
    digest = render.call_hash("ops", "deploy", {"env": "prod", "version": "1"})
    assert digest == render.call_hash("ops", "deploy", {"version": "1", "env": "prod"})  # key order is no difference
    for other in (
        render.call_hash("ops", "deploy", {"env": "prod", "version": "2"}),
        render.call_hash("ops", "deploy", {"env": "prod", "version": 1}),
        render.call_hash("ops", "deploy", {"env": "prod", "version": "1", "force": False}),
        render.call_hash("ops2", "deploy", {"env": "prod", "version": "1"}),
        render.call_hash("ops", "deploy2", {"env": "prod", "version": "1"}),
    ):
        assert other != digest
    assert render.conversation_of(digest) == f"mcp-{digest}"


def test_secrets_are_redacted_at_any_depth_and_long_values_are_cut() -> None:
    arguments = {
        "env": "prod",
        "DB_Password": "hunter2",
        "options": {"api_token": "t-1", "notes": "x" * 30},
        "hosts": ["a", "b"],
        "payload": {"blob": "y" * 5},
    }
    shown = render.shown_arguments(arguments, ("*password*", "*token*"), 20)
    assert shown == {
        "env": "prod",
        "DB_Password": "[redacted]",
        "options": {"api_token": "[redacted]", "notes": "x" * 20 + "… (10 more characters)"},
        "hosts": ["a", "b"],
        "payload": {"blob": "yyyyy"},
    }
    text = render.prompt("ops", "deploy", shown)
    assert text.splitlines()[0] == "Run deploy on ops?"
    assert 'DB_Password: "[redacted]"' in text and "hunter2" not in text and "t-1" not in text
    assert render.prompt("ops", "status", {}) == "Run status on ops?\n(no arguments)"
    huge = render.prompt("ops", "deploy", {f"k{i}": "v" * 200 for i in range(40)})
    assert len(huge) == 4000 and huge.endswith("more characters)")
    many = render.shown_arguments({"hosts": [f"host-{i}" for i in range(2000)], "env": "prod"}, (), 200)
    assert len(json.dumps(many)) <= render.MAX_SHOWN_JSON and many["env"] == "prod"  # fits the ask's context
    assert many["hosts"].startswith('["host-0", "host-1"') and many["hosts"].endswith("more characters)")
    hidden = render.prompt("ops", "deploy", {"note": "a\u202eb"})
    assert "\\u202e" in hidden and "\u202e" not in hidden


def test_the_client_s_form_offers_the_ask_s_options_and_reads_only_one_of_them() -> None:
    ask = Ask(
        "a1", "mcp-x", "r1", AskKind.CHOICE, "Run scale on ops?\nreplicas: 120", ("Scale it", "Leave it"),
        AskStatus.OPEN, T0, T0, 600.0,
    )  # fmt: skip
    message, schema = render.approval_form(ask)
    assert message.startswith("Run scale on ops?\nreplicas: 120\n\nAsk a1: ")
    assert schema["properties"]["decision"]["enum"] == ["Scale it", "Leave it"] and schema["required"] == ["decision"]
    assert render.form_answer(ask, "accept", {"decision": "Leave it", "reason": "  too many  "}) == (
        "Leave it",
        "too many",
    )
    assert render.form_answer(ask, "accept", {"decision": "Scale it", "reason": "   "}) == ("Scale it", None)
    assert render.form_answer(ask, "accept", {"decision": "Approve"}) is None  # none of the ask's options
    assert render.form_answer(ask, "accept", {"reason": "why"}) is None
    assert render.form_answer(ask, "decline", None) is None and render.form_answer(ask, "cancel", None) is None
    rejected = replace(ask, status=AskStatus.ANSWERED, answer="Leave it", option_index=2, answered_by="bob")
    assert render.not_run(rejected, "scale", {"bob": "too many"}) == (
        "Rejected by bob (ask a1): scale did not run. Reason: too many"
    )
    assert (
        render.not_run(rejected, "scale", {"alice": "not hers to give"})
        == "Rejected by bob (ask a1): scale did not run."
    )
