"""Who may answer, from the terminal: ``parkgate chat --as NAME`` sends as NAME, and
``parkgate asks`` shows each open ask's responders and votes (in the table and in ``--json``)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from parkgate import Gateway, ManualClock
from parkgate.cli import main
from parkgate.core.kinds import AskStatus

RESPONDERS = ["U_ALICE", "U_BOB", "U_CAROL"]


@pytest.fixture
def db(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'who.db'}"


def _park_for(db: str, conversation: str, quorum: int = 1) -> str:
    with Gateway(db) as gateway:
        reply = gateway.ask(conversation, "Deploy build 42?", ["Deploy", "Hold"], responders=RESPONDERS, quorum=quorum)
    assert reply.ask_id is not None
    return reply.ask_id


def test_chat_as_a_non_responder_is_not_yours_and_changes_nothing(db: str) -> None:
    ask_id = _park_for(db, "c-who")
    args = ["chat", "--db", db, "--conversation", "c-who", "--as", "U_MALLORY"]
    result = CliRunner().invoke(main, args, input=b"1\n")
    assert result.exit_code == 0, result.output
    said = " ".join(result.stdout.split())
    assert "[not_yours]" in said and "This question is for U_ALICE, U_BOB or U_CAROL." in said
    with Gateway(db) as gateway:
        ask = gateway.get(ask_id)
    assert (ask.status, ask.mismatches, ask.votes) == (AskStatus.OPEN, 0, ())


def test_chat_as_a_responder_selects_and_is_kept_as_who_answered(db: str) -> None:
    ask_id = _park_for(db, "c-mine")
    result = CliRunner().invoke(main, ["chat", "--db", db, "--conversation", "c-mine", "--as", "U_BOB"], input=b"2\n")
    assert result.exit_code == 0, result.output
    assert "[selected]" in result.stdout
    with Gateway(db) as gateway:
        ask = gateway.get(ask_id)
    assert (ask.status, ask.answer, ask.answered_by) == (AskStatus.ANSWERED, "Hold", "U_BOB")


def test_chat_without_as_sends_no_sender(db: str) -> None:
    _park_for(db, "c-nobody")
    result = CliRunner().invoke(main, ["chat", "--db", db, "--conversation", "c-nobody"], input=b"1\n")
    assert result.exit_code == 0, result.output
    assert "[not_yours]" in result.stdout


def test_chat_as_a_quorum_vote_says_how_many_more_it_needs(db: str) -> None:
    ask_id = _park_for(db, "c-vote", quorum=2)
    result = CliRunner().invoke(main, ["chat", "--db", db, "--conversation", "c-vote", "--as", "U_ALICE"], input=b"1\n")
    assert result.exit_code == 0, result.output
    said = " ".join(result.stdout.split())
    assert "[voted]" in said and 'Vote taken: 1 of 2 votes for "Deploy" (option 1).' in said
    with Gateway(db) as gateway:
        assert [vote.sender for vote in gateway.get(ask_id).votes] == ["U_ALICE"]


@pytest.mark.parametrize("bad", ["", "U\x00A", "a" * 201])
def test_chat_refuses_a_bad_sender_before_reading_anything(db: str, bad: str) -> None:
    result = CliRunner().invoke(main, ["chat", "--db", db, "--conversation", "c-bad", "--as", bad], input=b"1\n")
    assert result.exit_code == 2
    assert "--as" in result.output and "Traceback" not in result.output
    with Gateway(db) as gateway:
        assert gateway.open_asks() == []  # the demo was never started


def test_asks_shows_responders_quorum_and_votes(db: str) -> None:
    ask_id = _park_for(db, "ops-vote", quorum=2)
    with Gateway(db) as gateway:
        gateway.handle("ops-vote", "2", sender="U_CAROL")
        gateway.ask("ops-anyone", "Coffee?", ["Yes", "No"])
    result = CliRunner().invoke(main, ["asks", "--db", db], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    flat = " ".join(result.stdout.split())
    assert "who may answer" in flat
    line = next(line for line in result.stdout.splitlines() if ask_id[:12] in line and "U_ALICE" in line)
    assert "U_ALICE, U_BOB, U_CAROL" in line and "2 of 3" in line and "U_CAROL: 2. Hold" in line
    assert flat.count("Coffee?") == 1  # the ask anyone may answer is listed once, above

    listed = CliRunner().invoke(main, ["asks", "--db", db, "--json"]).stdout.splitlines()
    row = {item["ask_id"]: item for item in map(json.loads, listed)}[ask_id]
    assert (row["responders"], row["quorum"]) == (RESPONDERS, 2)
    assert [(vote["sender"], vote["option_index"], vote["answer"]) for vote in row["votes"]] == [("U_CAROL", 2, "Hold")]


def test_asks_without_responders_prints_no_who_table(db: str) -> None:
    with Gateway(db, clock=ManualClock(datetime.now(UTC))) as gateway:
        gateway.ask("plain", "Deploy?", ["Yes", "No"])
    result = CliRunner().invoke(main, ["asks", "--db", db], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert "who may answer" not in result.stdout
    assert max(len(line) for line in result.stdout.splitlines()) <= 80


@pytest.mark.parametrize(
    ("file_name", "text"),
    [
        ("people.json", '{"U_ALICE": "Alice Ng", "U_CAROL": "Carol Díaz"}'),
        ("people.toml", 'U_ALICE = "Alice Ng"\nU_CAROL = "Carol Díaz"\n'),
    ],
)
def test_asks_and_show_name_people_from_the_directory_and_json_keeps_ids(
    db: str, tmp_path: Path, file_name: str, text: str
) -> None:
    ask_id = _park_for(db, "ops-names", quorum=2)
    with Gateway(db) as gateway:
        gateway.handle("ops-names", "2", sender="U_CAROL")
    people = tmp_path / file_name
    people.write_text(text, encoding="utf-8")
    env = {"COLUMNS": "200", "PARKGATE_DIRECTORY": str(people)}

    listed = CliRunner().invoke(main, ["asks", "--db", db], env=env)
    assert listed.exit_code == 0, listed.output
    line = next(line for line in listed.stdout.splitlines() if ask_id[:12] in line and "2 of 3" in line)
    assert "Alice Ng, U_BOB, Carol Díaz" in line and "Carol Díaz: 2. Hold" in line
    assert "U_ALICE" not in listed.stdout and "U_CAROL" not in listed.stdout  # no id where a name exists

    shown = CliRunner().invoke(main, ["show", "--db", db, ask_id], env=env)
    assert shown.exit_code == 0, shown.output
    assert "Alice Ng, U_BOB, Carol Díaz" in shown.stdout and "Carol Díaz: 2. Hold" in shown.stdout
    assert "U_ALICE" not in shown.stdout and "U_CAROL" not in shown.stdout

    as_json = json.loads(CliRunner().invoke(main, ["show", "--db", db, ask_id, "--json"], env=env).stdout)
    assert as_json["responders"] == RESPONDERS and as_json["votes"][0]["sender"] == "U_CAROL"


@pytest.mark.parametrize(
    ("text", "why"),
    [("[1, 2]", "must be an object"), ('{"U_ALICE": 7}', "the name of 'U_ALICE'"), ("{", "is not JSON")],
)
def test_a_bad_directory_file_is_refused_naming_the_variable(db: str, tmp_path: Path, text: str, why: str) -> None:
    _park_for(db, "ops-bad-names")
    people = tmp_path / "people.json"
    people.write_text(text, encoding="utf-8")
    for command in (["asks", "--db", db], ["show", "--db", db, "nope"]):
        result = CliRunner().invoke(main, command, env={"PARKGATE_DIRECTORY": str(people)})
        assert result.exit_code == 1 and "Traceback" not in result.output
        assert "PARKGATE_DIRECTORY" in result.output and str(people) in result.output and why in result.output
    missing = CliRunner().invoke(main, ["asks", "--db", db], env={"PARKGATE_DIRECTORY": str(tmp_path / "gone.json")})
    assert missing.exit_code == 1 and "PARKGATE_DIRECTORY" in missing.output and "cannot be read" in missing.output
