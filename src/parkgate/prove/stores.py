"""The enumeration through a real :class:`~parkgate.Gateway` on a store.

Each case gets a conversation of its own: the ask is parked (with its responders and
quorum), its first responder's vote and its mismatch count are built by sending real
messages, the injected clock moves to the case's moment, and the input is sent, each
message its own transaction. The reply and the stored ask are compared field by field
with the pure machine's step from the same stored ask at the same moment, and the ask's
run with what the ask's state implies.

The cases the oracle says leave the ask in the state it was in (a message from someone
the ask is not for and input that is not text change nothing; a re-show only touches
it) run one after another in one conversation per state (:func:`units`): each is still
compared with the pure machine from the ask as stored before it, and the next one
checks that it starts from the same state.
"""

from __future__ import annotations

from parkgate.clock import ManualClock
from parkgate.core.kinds import AskKind, AskStatus, ReplyKind, RunStatus
from parkgate.core.model import Ask, Run
from parkgate.errors import InputError
from parkgate.gateway import Gateway
from parkgate.store import Store

from .cases import RESPONDER, T0, TTL, Case
from .outcome import COMPARED_FIELDS, Outcome, pure_outcome, refused_outcome, vote_pairs
from .properties import differs, oracle_for, verify

#: How many cases run at once on a PostgreSQL store (SQLite serialises writers anyway).
SERVER_WORKERS = 8
#: What a case sends to build up its mismatch count.
JUNK: dict[AskKind, str] = {AskKind.CHOICE: "not an option", AskKind.TEXT: ""}

#: One case's result: its number, the case, what it did (None: it raised), its failures.
CaseResult = tuple[int, Case, Outcome | None, list[str]]
#: Numbered cases that run one after another in one conversation.
Unit = list[tuple[int, Case]]


def units(cases: list[Case], escalate_after: int) -> list[Unit]:
    """The cases numbered, one unit each, except that the cases of one state the oracle
    says leave the ask in that state (unchanged, or re-shown) share one unit (one ask)."""
    shared: dict[tuple[object, ...], Unit] = {}
    out: list[Unit] = []
    for number, case in enumerate(cases):
        want = oracle_for(case, escalate_after)
        if not (want.unchanged or want.kind is ReplyKind.RESHOWN):
            out.append([(number, case)])
        elif case.state in shared:
            shared[case.state].append((number, case))
        else:
            shared[case.state] = [(number, case)]
            out.append(shared[case.state])
    return out


def run_share(store: Store, share: list[Unit], run_tag: str, escalate_after: int) -> list[CaseResult]:
    """Run one worker's units in order through its own gateway and clock on ``store``."""
    clock = ManualClock(T0)
    # Not closed here: the store is shared by the workers and closed once by the caller.
    gateway = Gateway(store=store, ttl=TTL, clock=clock, escalate_after=escalate_after, surface="prove")
    done: list[CaseResult] = []
    for unit in share:
        conversation_id = f"prove-{run_tag}-{unit[0][0]}"
        try:
            ask_id, found = _park_with_setup(gateway, clock, unit[0][1], conversation_id, escalate_after)
        except Exception as error:  # report the unit's cases; go on with the others
            done.extend(
                (number, case, None, [f"{case.describe()} [store]: set-up raised {error!r}"]) for number, case in unit
            )
            continue
        for position, (number, case) in enumerate(unit):
            try:
                outcome, more = run_case(gateway, clock, case, conversation_id, ask_id, escalate_after)
            except Exception as error:  # report the case; go on with the other units
                done.append(
                    (number, case, None, [f"{case.describe()} [store]: raised {type(error).__name__}: {error}"])
                )
                # The unit's conversation is in an unknown state: its later cases are not run.
                done.extend((n, c, None, [f"{c.describe()} [store]: not run"]) for n, c in unit[position + 1 :])
                break
            found += more
            found.extend(f"{failure} [store]" for failure in verify(case, outcome, escalate_after))
            done.append((number, case, outcome, found))
            found = []
        found += _leave_nothing_parked(gateway, unit[-1][1], ask_id, done[-1][2] if done else None)
        if found:
            done.append((unit[-1][0], unit[-1][1], None, found))
    return done


def _leave_nothing_parked(gateway: Gateway, case: Case, ask_id: str, last: Outcome | None) -> list[str]:
    """An ask the unit left open is cancelled by an operator: that closes it, whoever it is for."""
    if last is not None and last.status is not AskStatus.OPEN:
        return []  # the last case read it closed
    if gateway.cancel(ask_id).is_open:
        return [f"{case.describe()} [store]: an operator cancel left the ask open"]
    return []


def run_case(
    gateway: Gateway, clock: ManualClock, case: Case, conversation_id: str, ask_id: str, escalate_after: int
) -> tuple[Outcome, list[str]]:
    """Move the clock to the case's moment, send its input from its sender; compare."""
    label = case.describe() + " [store]"
    before, _ = read_stored(gateway, ask_id)
    failures = differs(label, "mismatches after set-up", case.mismatches, before.mismatches)
    failures += differs(
        label, "votes after set-up", [(v.sender, v.option_index) for v in case.votes], list(vote_pairs(before))
    )
    now = case.moment(before.last_touched)
    clock.set(now)
    pure = pure_outcome(before, case.message, now, escalate_after, case.sender.id)
    try:
        reply = gateway.handle(conversation_id, case.message, sender=case.sender.id)
    except InputError:
        after, run = read_stored(gateway, ask_id)
        outcome = refused_outcome(before, after)
    else:
        after, run = read_stored(gateway, ask_id)
        outcome = Outcome(
            kind=reply.kind,
            text=reply.text,
            parked=reply.parked,
            expired=reply.expired_ask_id == ask_id,
            answer=reply.answer,
            option_index=reply.option_index,
            status=after.status,
            mismatches=after.mismatches,
            stored_answer=after.answer,
            stored_option_index=after.option_index,
            unchanged=after == before,
            votes=vote_pairs(after),
            answered_by=after.answered_by,
            closed_by=after.closed_by,
        )
        if reply.expired_ask_id not in (None, ask_id):
            failures.append(f"{label}: expired_ask_id names another ask {reply.expired_ask_id}")
        if reply.parked != after.is_open:
            failures.append(f"{label}: the reply says parked={reply.parked} but the stored ask is {after.status.value}")
    for name in COMPARED_FIELDS:
        mine, theirs = getattr(pure, name), getattr(outcome, name)
        if mine != theirs:
            failures.append(f"{label}: store and pure machine disagree on {name}: machine {mine!r}, store {theirs!r}")
    failures += run_failures(label, after, run)
    return outcome, failures


def _park_with_setup(
    gateway: Gateway, clock: ManualClock, case: Case, conversation_id: str, escalate_after: int
) -> tuple[str, list[str]]:
    """Park the case's ask at :data:`T0` for its responders, cast its vote if it has one,
    and send it ``mismatches`` real misses (a responder's, when it names responders)."""
    label = case.describe() + " [store]"
    clock.set(T0)
    options = list(case.options) if case.ask_kind is AskKind.CHOICE else None
    responders = list(case.who.responders) or None
    quorum = case.who.quorum if responders else None
    parked = gateway.ask(
        conversation_id, case.prompt, options, kind=case.ask_kind, responders=responders, quorum=quorum
    )
    if parked.kind is not ReplyKind.ASKED or parked.ask_id is None:
        raise RuntimeError(f"{label}: parking replied {parked.kind.value}")
    failures: list[str] = []
    setup_sender = RESPONDER if responders else None
    for vote in case.votes:
        cast = gateway.handle(conversation_id, str(vote.option_index), sender=vote.sender)
        if cast.kind is not ReplyKind.VOTED:
            failures.append(f"{label}: setting up, {vote.sender}'s vote replied {cast.kind.value}, not voted")
    for miss in range(1, case.mismatches + 1):
        bounce = gateway.handle(conversation_id, JUNK[case.ask_kind], sender=setup_sender)
        right = ReplyKind.ESCALATED if miss >= escalate_after else ReplyKind.RETRY
        if bounce.kind is not right:
            failures.append(f"{label}: setting up, miss {miss} replied {bounce.kind.value}, not {right.value}")
    return parked.ask_id, failures


def read_stored(gateway: Gateway, ask_id: str) -> tuple[Ask, Run | None]:
    """The ask and its run exactly as stored (a raw read: closes nothing, even past its TTL)."""
    with gateway.store.transaction() as tx:
        ask = tx.ask(ask_id)
        run = tx.run(ask.run_id) if ask is not None else None
    if ask is None:
        raise LookupError(f"ask {ask_id} vanished from the store")
    return ask, run


def run_failures(label: str, ask: Ask, run: Run | None) -> list[str]:
    """A closed ask is no longer the run's pending ask; a cancel or expiry completes the run."""
    if run is None:
        return [f"{label}: the ask's run {ask.run_id} is missing"]
    if ask.is_open:
        return [] if run.pending_ask_id == ask.id else [f"{label}: the open ask is not its run's pending ask"]
    failures: list[str] = []
    if run.pending_ask_id == ask.id:
        failures.append(f"{label}: the run still waits on the {ask.status.value} ask")
    if ask.status in (AskStatus.CANCELLED, AskStatus.EXPIRED) and run.status != RunStatus.COMPLETE:
        failures.append(f"{label}: a {ask.status.value} ask left its run {run.status}")
    return failures
