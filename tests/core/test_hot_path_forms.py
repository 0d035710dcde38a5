"""The shortcuts of the per-message path give exactly what the plain forms gave.

Each shortcut (the stored reply's compact JSON, the id check's ASCII fast path, the
rendered question kept per menu, the options' JSON kept per menu) is checked against a
reference written the plain way, over generated inputs.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from parkgate import InputError, ReplyKind
from parkgate.core import machine
from parkgate.core.kinds import AskKind, AskStatus
from parkgate.core.model import Ask, Reply
from parkgate.gateway.checks import MAX_ID_CHARS, check_id

optional_text = st.none() | st.text(max_size=40)
replies = st.builds(
    Reply,
    kind=st.sampled_from(list(ReplyKind)),
    text=st.text(max_size=200),
    parked=st.booleans(),
    ask_id=optional_text,
    expired_ask_id=optional_text,
    answer=optional_text,
    option_index=st.none() | st.integers(min_value=1, max_value=20),
    run_id=optional_text,
)
with_followups = st.builds(
    lambda reply, next_ask: Reply(**{**{f: getattr(reply, f) for f in reply.__slots__}, "next_ask": next_ask}),
    replies,
    st.none() | replies,
)


@given(with_followups)
def test_a_stored_reply_reads_back_equal(reply: Reply) -> None:
    assert Reply.from_json(reply.to_json()) == reply


@given(with_followups)
def test_the_stored_form_leaves_out_only_empty_fields(reply: Reply) -> None:
    stored = json.loads(reply.to_json())
    full = reply.to_dict()
    assert {key: value for key, value in full.items() if value is not None} == stored


@given(with_followups)
def test_a_reply_stored_by_an_earlier_version_still_replays(reply: Reply) -> None:
    # Earlier versions stored every field, nulls included (the public to_dict shape):
    # a redelivery after an upgrade must return the same reply.
    earlier = json.dumps(reply.to_dict(), ensure_ascii=False, separators=(",", ":"))
    assert Reply.from_json(earlier) == reply


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def _id_is_good(value: str) -> bool:
    """check_id's rule, written the plain way."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return bool(value.strip()) and len(value) <= MAX_ID_CHARS and not _CONTROL.search(value)


ids = st.text(max_size=MAX_ID_CHARS + 5) | st.text(
    alphabet=st.characters(min_codepoint=0, max_codepoint=0x7F), max_size=MAX_ID_CHARS + 5
)


@given(ids)
def test_the_id_check_accepts_exactly_the_good_ids(value: str) -> None:
    if _id_is_good(value):
        assert check_id(value, "conversation_id") == value
    else:
        with pytest.raises(InputError, match="conversation_id"):
            check_id(value, "conversation_id")


@pytest.mark.parametrize(
    "value, says",
    [
        ("", "empty"),
        ("   ", "empty"),
        ("a" * (MAX_ID_CHARS + 1), "limit"),
        ("a\tb", "control"),
        ("a\x85b", "control"),
        ("a\ud800", "surrogate"),
        (42, "string"),
    ],
)
def test_a_bad_id_says_why(value: object, says: str) -> None:
    with pytest.raises(InputError, match=says):
        check_id(value, "run_id")


def test_non_ascii_ids_are_still_ids() -> None:
    assert check_id("gespräch-7 \u00a0 ✓", "conversation_id") == "gespräch-7 \u00a0 ✓"


def _ask(options: tuple[str, ...] | list[str], kind: AskKind = AskKind.CHOICE) -> Ask:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    return Ask("a", "c", "r", kind, "Pick one", options, AskStatus.OPEN, now, now, 60.0)  # type: ignore[arg-type]


def _plain_question(ask: Ask) -> str:
    if ask.kind is AskKind.TEXT:
        return f"{ask.prompt}\n{machine.P.TEXT_QUESTION_FOOTER}"
    numbered = [f"{i}. {label}" for i, label in enumerate(ask.options, start=1)]
    footer = machine.P.CHOICE_MENU_FOOTER if machine.bare_exits_work(ask) else machine.P.CHOICE_MENU_FOOTER_SLASHED
    return "\n".join([ask.prompt, "", *numbered, "", footer])


@given(st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=5, unique=True))
def test_the_question_is_rendered_the_same_every_time(labels: list[str]) -> None:
    ask = _ask(tuple(labels))
    assert machine.render_question(ask) == _plain_question(ask)
    assert machine.render_question(ask) == _plain_question(ask)  # the second time from memory


def test_an_ask_built_by_hand_with_a_list_of_options_still_renders() -> None:
    assert machine.render_question(_ask(["Yes", "No"])) == _plain_question(_ask(("Yes", "No")))
    assert machine.render_question(_ask((), AskKind.TEXT)).startswith("Pick one\n")


def test_options_are_stored_as_json_whatever_sequence_holds_them(tmp_path: object) -> None:
    from pathlib import Path

    from parkgate.core.model import Run
    from parkgate.store.sqlite import SQLiteStore

    store = SQLiteStore(f"sqlite:///{Path(str(tmp_path)) / 'o.db'}")
    now = datetime(2026, 1, 1, tzinfo=UTC)
    try:
        with store.transaction() as tx:
            for n, options in enumerate([("Ja", "Nein ✓"), ["Ja", "Nein ✓"], ("Ja", "Nein ✓")]):
                tx.save_run(Run(f"r{n}", f"c{n}", None, "running", None, {}, f"a{n}", now, now))
                ask = _ask(options)
                tx.insert_ask(Ask(f"a{n}", f"c{n}", f"r{n}", ask.kind, ask.prompt, options, ask.status, now, now, 60.0))  # type: ignore[arg-type]
        with store.transaction() as tx:
            for n in range(3):
                found = tx.ask(f"a{n}")
                assert found is not None and found.options == ("Ja", "Nein ✓")
    finally:
        store.close()


def test_the_per_menu_memos_stay_bounded_however_many_menus_pass(tmp_path: object) -> None:
    # Unique, long prompts (say, written by a model for every conversation) must not
    # grow a process's memory with each new ask: every memo keeps MENUS_REMEMBERED menus.
    from pathlib import Path

    from parkgate import Gateway
    from parkgate.core import menu, model
    from parkgate.core.model import MENUS_REMEMBERED

    gateway = Gateway(f"sqlite:///{Path(str(tmp_path)) / 'm.db'}")
    try:
        for n in range(MENUS_REMEMBERED * 3):
            conversation = f"c{n}"
            gateway.ask(conversation, f"Question {n}: " + "why? " * 100, [f"yes {n}", f"no {n}", "maybe"])
            gateway.handle(conversation, "hm")  # a miss: the question is rendered and the labels indexed
            assert gateway.get(gateway.handle(conversation, "menu").ask_id or "").is_open
    finally:
        gateway.close()
    assert machine._render_question.cache_info().currsize <= MENUS_REMEMBERED
    assert menu._label_positions.cache_info().currsize <= MENUS_REMEMBERED
    assert model._options_text.cache_info().currsize <= MENUS_REMEMBERED
    assert model._stored_texts.cache_info().currsize <= MENUS_REMEMBERED
