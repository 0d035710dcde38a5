"""SQL metacharacters through every string field, on both stores: stored and read back verbatim.

Conversation ids, run ids, message ids, prompts, option labels, defaults, callback
URLs, text answers and skill output all travel as parameters; none of them can change
a statement. The tables are all still there afterwards, with exactly the rows made.
"""

from __future__ import annotations

import json

from parkgate.core.kinds import AskStatus, ReplyKind

from ._support import StoreSpec

META = (
    "'",
    "''",
    '"',
    "'; DROP TABLE asks; --",
    "Robert'); DROP TABLE runs;--",
    "' OR '1'='1",
    '" OR "1"="1',
    "%s",
    "%(name)s",
    "%%",
    "%",
    "_",
    "?",
    "?1",
    ":name",
    "$1",
    "\\",
    "\\'",
    "`",
    "a /* comment */ b",
    "--",
    ";",
    "NULL",
    "E'\\x41'",
    "$$ dollar $$",
    "[a]",
    "{0}",
    "ä'ö\"ü’",
    "x' UNION SELECT id, reply FROM inbound_messages --",
)
TABLES = ("runs", "asks", "inbound_messages", "outbox", "schema_migrations")


def test_sql_metacharacters_in_every_string_field_are_stored_verbatim(spec: StoreSpec) -> None:
    gateway = spec.gateway()
    try:
        made = 0
        for n, meta in enumerate(META):
            conversation, run_id, message_id = f"conv {meta} {n}", f"run {meta} {n}", f"msg {meta}"
            prompt, options = f"Prompt {meta}?", [meta, f"{meta} two"]
            url = f"http://127.0.0.1:9/callback?x={meta}"
            asked = gateway.ask(conversation, prompt, options, run_id=run_id, default=meta, callback_url=url)
            assert asked.kind is ReplyKind.ASKED and asked.ask_id and prompt in asked.text
            parked = gateway.get(asked.ask_id)
            assert (parked.conversation_id, parked.run_id, parked.prompt) == (conversation, run_id, prompt)
            assert parked.options == tuple(options) and parked.default == meta and parked.callback_url == url
            row = spec.query(
                "SELECT conversation_id, run_id, prompt, options, default_answer, callback_url FROM asks WHERE id = ?",
                (asked.ask_id,),
            )
            assert row == [(conversation, run_id, prompt, json.dumps(options, ensure_ascii=False), meta, url)]
            assert [a.id for a in gateway.open_asks() if a.conversation_id == conversation] == [asked.ask_id]

            # The label typed exactly selects it; the same message id again returns the same reply.
            selected = gateway.handle(conversation, meta, message_id=message_id)
            assert selected.kind is ReplyKind.SELECTED and selected.answer == meta and selected.option_index == 1
            assert gateway.handle(conversation, "2", message_id=message_id) == selected
            rows = spec.query("SELECT message_id FROM inbound_messages WHERE conversation_id = ?", (conversation,))
            assert rows == [(message_id,)]

            # A text ask takes the metacharacters as its answer, verbatim.
            text_conversation = f"text {meta} {n}"
            text_ask = gateway.ask(text_conversation, f"Describe {meta}.", kind="text", run_id=f"t{run_id}")
            answer = f"  it is {meta} -- really; {meta}  "
            answered = gateway.handle(text_conversation, answer, message_id=message_id)
            assert answered.kind is ReplyKind.ANSWERED and answered.answer == answer
            assert text_ask.ask_id
            stored = gateway.get(text_ask.ask_id)
            assert (stored.status, stored.answer) == (AskStatus.ANSWERED, answer)
            assert spec.query("SELECT answer FROM asks WHERE id = ?", (text_ask.ask_id,)) == [(answer,)]

            # Skill output with a marker: prompt and labels come back as written.
            skill_conversation = f"skill {meta} {n}"
            output = f"Some text {meta}\n\n[[ask]]\nPick one {meta}?\n\n1. {meta}\n2. Other {meta}\n[[/ask]]\n"
            from_text = gateway.ask_from_text(skill_conversation, output, run_id=f"s{run_id}")
            assert from_text.ask_id
            skill_ask = gateway.get(from_text.ask_id)
            assert skill_ask.prompt == f"Pick one {meta}?" and skill_ask.options == (meta, f"Other {meta}")
            assert gateway.cancel(from_text.ask_id).status is AskStatus.CANCELLED
            made += 3

        # Nothing was dropped or rewritten: every table is there with exactly the rows made.
        assert {table: spec.count(table) > -1 for table in TABLES} == dict.fromkeys(TABLES, True)
        assert spec.count("asks") == made and spec.count("runs") == made
        assert spec.count("inbound_messages") == 2 * len(META)
        statuses = dict(spec.query("SELECT status, count(*) FROM asks GROUP BY status"))
        assert statuses == {"answered": 2 * len(META), "cancelled": len(META)}
    finally:
        gateway.close()
