"""A stateful property test: random asks, inputs, clock moves and restarts against a real
:class:`parkgate.Gateway` on a temporary SQLite file, checked against a small model; and
the same through two gateways taking turns on one SQLite file and on one PostgreSQL schema.

Asks are anyone's, two responders' (quorum 1) or three responders' with a quorum of 2,
and every message comes from one of the sender classes: no sender, a responder, a
non-responder, a second responder.

Invariants, after every step:
- every reply has a :class:`ReplyKind`, and it is the kind the matching rules predict
  for its sender (``not_yours`` for anyone an ask is not for, ``voted`` short of a quorum);
- after a cancel word (only the slash form in a text ask) the conversation is unparked:
  the next message is ``pass``;
- once ``now`` passes an ask's TTL, the next read returns ``pass`` with
  ``expired_ask_id`` and the stored ask is ``expired`` (never ``cancelled``);
- no input that is not an exact selection ever selects;
- a model spy, fed every ``pass`` the way a caller would route it, is never called
  while an ask is open and unexpired;
- the open asks in the file are exactly the model's (so a restart loses nothing), with
  the model's mismatch count, ``last_touched`` and votes: a ``not_yours`` message
  touches nothing.
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule, run_state_machine_as_test

from parkgate import AskAlreadyOpen, AskKind, AskStatus, Gateway, InputError, ManualClock, Reply, ReplyKind
from parkgate.core.phrases import CONTROL_WORDS
from parkgate.prove import oracle
from parkgate.prove.oracle import Expected
from parkgate.store import Store
from parkgate.store.postgres import PostgresStore, create_schema, drop_schema
from parkgate.store.sql import DEFAULT_SIZE
from parkgate.store.sqlite import SQLiteStore

GATEWAY_TTL = timedelta(minutes=10)
SHORT_TTL = timedelta(minutes=1)
ESCALATE_AFTER = 3
CONVERSATIONS = ("conv-a", "conv-b")
LABEL_POOL = (
    "Yes",
    "No",
    "Stop",
    "Cancel",
    "Menu",
    "options",
    "Sequence",
    "Class",
    "Use case",
    "Deploy now",
    "2",
    "Nevermind",
    "Exit",
    "quit it",
)
#: The sender classes: no sender, a responder, a non-responder, a second responder.
RESPONDER, SECOND, THIRD, OTHER = "U_ALICE", "U_BOB", "U_CAROL", "U_MALLORY"
SENDERS = st.sampled_from([None, RESPONDER, OTHER, SECOND])
#: Who may answer: anyone, two responders (quorum 1), three responders with a quorum of 2.
WHO: tuple[tuple[tuple[str, ...], int], ...] = (((), 1), ((RESPONDER, SECOND), 1), ((RESPONDER, SECOND, THIRD), 2))
NEAR_MISSES = ("0", "01", "1.0", "-1", "+1", "1e0", "01x", "02", "２", "٢", "1 2", "//cancel", "/ cancel", "/ menu")
SAFE_TEXT = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=20)


@dataclass(frozen=True)
class ModelAsk:
    """What the test believes about one open ask."""

    ask_id: str
    kind: AskKind
    options: tuple[str, ...]
    last_touched: datetime
    ttl: timedelta
    mismatches: int
    default: str | None
    responders: tuple[str, ...] = ()
    quorum: int = 1
    votes: tuple[tuple[str, int], ...] = ()

    def expired(self, now: datetime) -> bool:
        return oracle.is_expired(self.last_touched, self.ttl, now)


def predict(ask: ModelAsk, text: str, sender: str | None) -> Expected:
    """What the matching rules say ``text`` from ``sender`` does to ``ask``: the shared oracle's verdict."""
    return oracle.expected(
        ask.options,
        text,
        mismatches=ask.mismatches,
        escalate_after=ESCALATE_AFTER,
        responders=ask.responders,
        quorum=ask.quorum,
        votes=ask.votes,
        sender=sender,
    )


def _label_variant(label: str, how: int) -> str:
    return [label, label.upper(), f"  {label.lower()} ", label.replace(" ", "   "), f"\t{label.title()}\n"][how]


class GatewayMachine(RuleBasedStateMachine):
    """Drives one Gateway (restarted at random) on one SQLite file per example."""

    def __init__(self) -> None:
        super().__init__()
        self.folder = tempfile.mkdtemp(prefix="parkgate-stateful-")
        self.url = f"sqlite:///{self.folder}/parkgate.db"
        self.clock = ManualClock()
        self.gateway = self._open()
        self.model: dict[str, ModelAsk] = {}
        #: Every ``pass`` a caller would hand to a model: (conversation, text, ask open and unexpired?).
        self.model_spy: list[tuple[str, str, bool]] = []
        self.delivered: list[tuple[str, str, str, str | None, Reply]] = []

    def _open(self) -> Gateway:
        return Gateway(self.url, ttl=GATEWAY_TTL, clock=self.clock, escalate_after=ESCALATE_AFTER)

    def teardown(self) -> None:
        self.gateway.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    @property
    def now(self) -> datetime:
        return self.clock.now()

    def _route(self, conversation: str, text: str, reply: Reply) -> None:
        """What a caller does with a reply: only ``pass`` goes to the (spied) model."""
        assert isinstance(reply.kind, ReplyKind), f"reply without a kind: {reply!r}"
        if reply.routes_onward:
            ask = self.model.get(conversation)
            self.model_spy.append((conversation, text, ask is not None and not ask.expired(self.now)))

    def _check_expired(self, gone: ModelAsk) -> None:
        stored = self.gateway.get(gone.ask_id)
        assert stored.status is AskStatus.EXPIRED, f"an ask past its TTL closed as {stored.status}"
        assert stored.outcome == AskStatus.EXPIRED.value
        assert stored.answer == gone.default

    # -- rules -------------------------------------------------------------------------------
    @initialize(
        conversation=st.sampled_from(CONVERSATIONS),
        labels=st.lists(st.sampled_from(LABEL_POOL), min_size=2, max_size=4, unique_by=oracle.normalise),
    )
    def first_ask(self, conversation: str, labels: list[str]) -> None:
        self.park_choice(conversation, labels, None, False, False, 0)

    @rule(
        conversation=st.sampled_from(CONVERSATIONS),
        labels=st.lists(st.sampled_from(LABEL_POOL), min_size=1, max_size=5, unique_by=oracle.normalise),
        default_at=st.none() | st.integers(0, 4),
        short_ttl=st.booleans(),
        replace_open=st.booleans(),
        who=st.integers(0, len(WHO) - 1),
    )
    def park_choice(
        self,
        conversation: str,
        labels: list[str],
        default_at: int | None,
        short_ttl: bool,
        replace_open: bool,
        who: int,
    ) -> None:
        default = labels[default_at % len(labels)] if default_at is not None else None
        self._park(conversation, AskKind.CHOICE, tuple(labels), default, short_ttl, replace_open, WHO[who])

    @rule(
        conversation=st.sampled_from(CONVERSATIONS),
        default=st.none() | st.sampled_from(["no answer given", "cancel"]),
        short_ttl=st.booleans(),
        replace_open=st.booleans(),
        who=st.integers(0, 1),  # a text ask takes quorum 1 only
    )
    def park_text(self, conversation: str, default: str | None, short_ttl: bool, replace_open: bool, who: int) -> None:
        self._park(conversation, AskKind.TEXT, (), default, short_ttl, replace_open, WHO[who])

    def _park(
        self,
        conversation: str,
        kind: AskKind,
        options: tuple[str, ...],
        default: str | None,
        short_ttl: bool,
        replace_open: bool,
        who: tuple[tuple[str, ...], int],
    ) -> None:
        ttl = SHORT_TTL if short_ttl else None
        prompt = "Which one?" if kind is AskKind.CHOICE else "Describe the change."
        existing = self.model.get(conversation)
        live = existing is not None and not existing.expired(self.now)
        responders, quorum = who
        listed, needed = (list(responders), quorum) if responders else (None, None)
        if live and not replace_open:
            with pytest.raises(AskAlreadyOpen):
                self.gateway.ask(
                    conversation,
                    prompt,
                    list(options) or None,
                    kind=kind,
                    ttl=ttl,
                    default=default,
                    responders=listed,
                    quorum=needed,
                )
            return
        reply = self.gateway.ask(
            conversation,
            prompt,
            list(options) or None,
            kind=kind,
            ttl=ttl,
            default=default,
            replace=replace_open,
            responders=listed,
            quorum=needed,
        )
        self._route(conversation, prompt, reply)
        assert reply.kind is ReplyKind.ASKED and reply.parked and reply.ask_id
        if kind is AskKind.TEXT:
            assert "/cancel" in reply.text, "a text question must name /cancel"
        else:
            for number, label in enumerate(options, start=1):
                assert f"{number}. {label}" in reply.text
        if existing is not None:
            old = self.gateway.get(existing.ask_id)
            if live:
                assert old.status is AskStatus.CANCELLED and old.outcome == "replaced"
            else:
                self._check_expired(existing)
        self.model[conversation] = ModelAsk(
            reply.ask_id, kind, options, self.now, ttl or GATEWAY_TTL, 0, default, responders, quorum
        )

    # Sending is split by what is sent, so that runs of misses (escalation), menus between
    # misses and cancel words reach every ask often enough within 30 steps.
    @rule(conversation=st.sampled_from(CONVERSATIONS), data=st.data(), with_id=st.booleans(), sender=SENDERS)
    def send_anything(self, conversation: str, data: st.DataObject, with_id: bool, sender: str | None) -> None:
        text = data.draw(self._inputs(self.model.get(conversation)), label="input")
        self._send(conversation, text, with_id, sender)

    @rule(conversation=st.sampled_from(CONVERSATIONS), data=st.data(), sender=SENDERS)
    def send_non_answer(self, conversation: str, data: st.DataObject, sender: str | None) -> None:
        text = data.draw(st.one_of(st.sampled_from(NEAR_MISSES), SAFE_TEXT, st.sampled_from(["", " ", "huh"])))
        self._send(conversation, text, False, sender)

    @rule(
        conversation=st.sampled_from(CONVERSATIONS),
        prefix=st.sampled_from(["", "", "/", "/", "//", "/ "]),
        word=st.sampled_from(sorted(CONTROL_WORDS)),
        shout=st.booleans(),
        sender=SENDERS,
    )
    def send_control_word(self, conversation: str, prefix: str, word: str, shout: bool, sender: str | None) -> None:
        self._send(conversation, prefix + (word.upper() if shout else word), False, sender)

    @rule(conversation=st.sampled_from(CONVERSATIONS), data=st.data(), sender=SENDERS)
    def send_selection(self, conversation: str, data: st.DataObject, sender: str | None) -> None:
        ask = self.model.get(conversation)
        if ask is None or not ask.options:
            text = data.draw(st.sampled_from(["1", "A description of the change.", "Yes"]))
        else:
            exact = st.integers(1, len(ask.options)).map(str)
            label = st.tuples(st.sampled_from(ask.options), st.integers(0, 4)).map(lambda t: _label_variant(*t))
            text = data.draw(st.one_of(exact, label))
        self._send(conversation, text, False, sender)

    def _send(self, conversation: str, text: str, with_id: bool, sender: str | None = None) -> None:
        ask = self.model.get(conversation)
        message_id = uuid.uuid4().hex if with_id else None
        reply = self.gateway.handle(conversation, text, message_id=message_id, sender=sender)
        self._route(conversation, text, reply)
        if message_id is not None:
            self.delivered.append((conversation, message_id, text, sender, reply))
        self._check_reply(conversation, ask, text, sender, reply)

    def _inputs(self, ask: ModelAsk | None) -> st.SearchStrategy[str]:
        words = sorted(CONTROL_WORDS)
        control = st.tuples(st.sampled_from(["", "/", "//", "/ ", " /"]), st.sampled_from(words), st.booleans()).map(
            lambda t: t[0] + (t[1].upper() if t[2] else t[1])
        )
        common = [control, st.sampled_from(NEAR_MISSES), SAFE_TEXT, st.sampled_from(["", "   ", "\n"])]
        if ask is None or not ask.options:
            return st.one_of(*common, st.sampled_from(LABEL_POOL))
        n = len(ask.options)
        exact = st.integers(1, n).map(str)
        out_of_range = st.sampled_from([str(n + 1), str(n + 7), "0", f"0{n}"])
        label = st.tuples(st.sampled_from(ask.options), st.integers(0, 4)).map(lambda t: _label_variant(*t))
        partial = st.sampled_from(ask.options).map(lambda s: s[:-1] if len(s) > 1 else s + "s")
        return st.one_of(exact, label, out_of_range, partial, *common)

    def _check_reply(
        self, conversation: str, ask: ModelAsk | None, text: str, sender: str | None, reply: Reply
    ) -> None:
        if ask is None:
            assert reply.kind is ReplyKind.PASS and not reply.parked and reply.expired_ask_id is None
            return
        if ask.expired(self.now):
            assert reply.kind is ReplyKind.PASS, f"an ask past its TTL answered {reply.kind}"
            assert reply.expired_ask_id == ask.ask_id and not reply.parked
            del self.model[conversation]
            self._check_expired(ask)
            return
        expected = predict(ask, text, sender)
        if reply.kind is ReplyKind.SELECTED:
            assert expected.kind is ReplyKind.SELECTED, f"{text!r} is not an exact selection of {ask.options}"
        got = f"{text!r} from {sender} to {ask.kind} {ask.options} for {ask.responders}: {reply.kind}"
        assert reply.kind is expected.kind, f"{got}, not {expected.kind}"
        assert reply.ask_id == ask.ask_id
        if expected.kind in (ReplyKind.SELECTED, ReplyKind.ANSWERED, ReplyKind.CANCELLED):
            assert not reply.parked
            assert (reply.option_index, reply.answer) == (expected.option_index, expected.answer)
            del self.model[conversation]
            stored = self.gateway.get(ask.ask_id)
            assert stored.status is (
                AskStatus.CANCELLED if expected.kind is ReplyKind.CANCELLED else AskStatus.ANSWERED
            )
            assert (stored.answered_by, stored.closed_by) == (expected.answered_by, expected.closed_by)
            assert [(vote.sender, vote.option_index) for vote in stored.votes] == list(expected.votes)
            if expected.kind is ReplyKind.CANCELLED:
                after = self.gateway.handle(conversation, "anything else?", sender=sender)
                self._route(conversation, "anything else?", after)
                assert after.kind is ReplyKind.PASS and not after.parked and after.expired_ask_id is None
        elif expected.kind is ReplyKind.NOT_YOURS:
            assert reply.parked and all(responder in reply.text for responder in ask.responders)
        else:  # a miss, a re-show or a vote: the ask stays open, touched
            assert reply.parked
            self.model[conversation] = replace(
                ask, last_touched=self.now, mismatches=expected.mismatches, votes=expected.votes
            )

    @rule(conversation=st.sampled_from(CONVERSATIONS), text=SAFE_TEXT)
    def send_nul(self, conversation: str, text: str) -> None:
        """Input that is not text is refused before anything is read or written."""
        with pytest.raises(InputError):
            self.gateway.handle(conversation, text + "\x00")

    @rule(pick=st.integers(0, 1000))
    def redeliver(self, pick: int) -> None:
        """The same message id again returns the first reply and changes nothing."""
        if not self.delivered:
            return
        conversation, message_id, text, sender, first = self.delivered[pick % len(self.delivered)]
        again = self.gateway.handle(conversation, text, message_id=message_id, sender=sender)
        assert again == first

    @rule(seconds=st.one_of(st.sampled_from([1, 30, 59, 60, 61, 599, 600, 601]), st.integers(0, 1200)))
    def advance_clock(self, seconds: int) -> None:
        self.clock.advance(timedelta(seconds=seconds))

    @rule(conversation=st.sampled_from(CONVERSATIONS), offset=st.sampled_from([-1, 0, 0, 1]))
    def advance_to_the_ttl_boundary(self, conversation: str, offset: int) -> None:
        """Move the clock to exactly an ask's expiry (or a second either side)."""
        ask = self.model.get(conversation)
        if ask is not None:
            target = ask.last_touched + ask.ttl + timedelta(seconds=offset)
            if target > self.now:
                self.clock.set(target)

    @rule()
    def restart(self) -> None:
        """A new Gateway on the same file: the parked asks are still there."""
        self.gateway.close()
        self.gateway = self._open()

    # -- invariants --------------------------------------------------------------------------
    @invariant()
    def model_is_never_called_while_an_ask_is_open(self) -> None:
        swallowed = [(conv, text) for conv, text, open_ask in self.model_spy if open_ask]
        assert not swallowed, f"messages for an open, unexpired ask reached the model: {swallowed}"

    @invariant()
    def stored_open_asks_are_the_models(self) -> None:
        stored = {ask.conversation_id: ask for ask in self.gateway.audit()}
        assert set(stored) == set(self.model), f"open in the file: {sorted(stored)}, model: {sorted(self.model)}"
        for conversation, expected in self.model.items():
            ask = stored[conversation]
            assert ask.id == expected.ask_id and ask.status is AskStatus.OPEN
            assert ask.mismatches == expected.mismatches, f"stored {ask.mismatches} misses, expected {expected}"
            assert ask.last_touched == expected.last_touched, f"stored last_touched {ask.last_touched}, {expected}"
            assert ask.kind is expected.kind and ask.options == expected.options
            assert (ask.responders, ask.quorum) == (expected.responders, expected.quorum)
            assert [(vote.sender, vote.option_index) for vote in ask.votes] == list(expected.votes)


GatewayMachine.TestCase.settings = settings(
    max_examples=60,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
test_gateway_stateful = GatewayMachine.TestCase


#: Opens one of the pair's stores: (the machine's SQLite URL, how many conversations it remembers).
OpenStore = Callable[[str, int], Store]


class TwoProcesses(GatewayMachine):
    """The same rules through two gateways with stores of their own, as two processes on
    one database, switching between them at random.

    Each decides a message from what it last committed (the second remembers a single
    conversation, so it also forgets), so every switch leaves the other's memory stale:
    a wrong guess must cost a retry and never a wrong reply or a wrong stored ask.
    """

    def __init__(self, open_store: OpenStore) -> None:
        self.open_store = open_store
        self.pair: list[Gateway] = []
        super().__init__()

    def _open(self) -> Gateway:
        self.pair = [
            Gateway(
                store=self.open_store(self.url, remember),
                ttl=GATEWAY_TTL,
                clock=self.clock,
                escalate_after=ESCALATE_AFTER,
            )
            for remember in (DEFAULT_SIZE, 1)
        ]
        return self.pair[0]

    @rule(which=st.integers(0, 1))
    def switch_process(self, which: int) -> None:
        self.gateway = self.pair[which]

    @rule(conversation=st.sampled_from(CONVERSATIONS), data=st.data(), with_id=st.booleans(), sender=SENDERS)
    def send_through_the_other_process(
        self, conversation: str, data: st.DataObject, with_id: bool, sender: str | None
    ) -> None:
        """One message through the other gateway: this one's memory of the conversation goes stale."""
        here = self.gateway
        self.gateway = self.pair[1] if here is self.pair[0] else self.pair[0]
        try:
            self.send_anything(conversation, data, with_id, sender)
        finally:
            self.gateway = here

    @rule()
    def restart(self) -> None:
        for gateway in self.pair:
            gateway.close()
        self.gateway = self._open()

    def teardown(self) -> None:
        for gateway in self.pair:
            gateway.close()
        shutil.rmtree(self.folder, ignore_errors=True)


TWO_PROCESS_SETTINGS = settings(
    max_examples=40,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


def test_two_processes_on_sqlite() -> None:
    """Two stores on one SQLite file."""
    run_state_machine_as_test(
        lambda: TwoProcesses(lambda url, remember: SQLiteStore(url, remember=remember)),
        settings=TWO_PROCESS_SETTINGS,
    )


@pytest.mark.postgres
def test_two_processes_on_postgres(pg_url: str) -> None:
    """Two stores on one PostgreSQL schema (a new one per example, dropped afterwards)."""
    schemas: list[str] = []

    def on_postgres() -> TwoProcesses:
        schema = create_schema(pg_url, "parkgate_stateful")
        schemas.append(schema)
        return TwoProcesses(lambda _url, remember: PostgresStore(pg_url, schema=schema, remember=remember, max_size=2))

    try:
        run_state_machine_as_test(on_postgres, settings=TWO_PROCESS_SETTINGS)
    finally:
        for schema in schemas:
            drop_schema(pg_url, schema)
