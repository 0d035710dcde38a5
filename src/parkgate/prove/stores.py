"""The enumeration through a real :class:`~parkgate.Gateway` on a store.

Each case gets a conversation of its own: the ask is parked, its mismatch count is
built by sending real misses, the injected clock moves to the case's moment, and the
input is sent, each message its own transaction. The reply and the stored ask are
compared field by field with the pure machine's step from the same stored ask at the
same moment, and the ask's run with what the ask's state implies.
"""

from __future__ import annotations

from parkgate.clock import ManualClock
from parkgate.core.kinds import AskKind, AskStatus, ReplyKind, RunStatus
from parkgate.core.model import Ask, Run
from parkgate.errors import InputError
from parkgate.gateway import Gateway
from parkgate.store import Store

from .cases import T0, TTL, Case
from .outcome import COMPARED_FIELDS, Outcome, pure_outcome, refused_outcome
from .properties import differs, verify

#: How many cases run at once on a PostgreSQL store (SQLite serialises writers anyway).
SERVER_WORKERS = 4
#: What a case sends to build up its mismatch count.
JUNK: dict[AskKind, str] = {AskKind.CHOICE: "not an option", AskKind.TEXT: ""}

#: One case's result: its number, the case, what it did (None: it raised), its failures.
CaseResult = tuple[int, Case, Outcome | None, list[str]]


def run_share(store: Store, share: list[tuple[int, Case]], run_tag: str, escalate_after: int) -> list[CaseResult]:
    """Run one worker's cases in order through its own gateway and clock on ``store``."""
    clock = ManualClock(T0)
    # Not closed here: the store is shared by the workers and closed once by the caller.
    gateway = Gateway(store=store, ttl=TTL, clock=clock, escalate_after=escalate_after, surface="prove")
    done: list[CaseResult] = []
    for number, case in share:
        conversation_id = f"prove-{run_tag}-{number}"
        try:
            outcome, found = run_case(gateway, clock, case, conversation_id, escalate_after)
        except Exception as error:  # report the case; go on with the others
            done.append((number, case, None, [f"{case.describe()} [store]: raised {type(error).__name__}: {error}"]))
            continue
        found.extend(f"{failure} [store]" for failure in verify(case, outcome, escalate_after))
        done.append((number, case, outcome, found))
    return done


def run_case(
    gateway: Gateway, clock: ManualClock, case: Case, conversation_id: str, escalate_after: int
) -> tuple[Outcome, list[str]]:
    """Park, send ``mismatches`` real misses, move the clock, send the input; compare."""
    label = case.describe() + " [store]"
    ask_id, failures = _park_with_misses(gateway, clock, case, conversation_id, escalate_after)
    before, _ = read_stored(gateway, ask_id)
    failures += differs(label, "mismatches after set-up", case.mismatches, before.mismatches)
    now = case.moment(before.last_touched)
    clock.set(now)
    pure = pure_outcome(before, case.message, now, escalate_after)
    try:
        reply = gateway.handle(conversation_id, case.message)
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
    # Leave no parked ask behind in the caller's store.
    if after.is_open and gateway.cancel(ask_id).is_open:
        failures.append(f"{label}: an operator cancel left the ask open")
    return outcome, failures


def _park_with_misses(
    gateway: Gateway, clock: ManualClock, case: Case, conversation_id: str, escalate_after: int
) -> tuple[str, list[str]]:
    """Park the case's ask at :data:`T0` and send it ``mismatches`` real misses."""
    label = case.describe() + " [store]"
    clock.set(T0)
    options = list(case.options) if case.ask_kind is AskKind.CHOICE else None
    parked = gateway.ask(conversation_id, case.prompt, options, kind=case.ask_kind)
    if parked.kind is not ReplyKind.ASKED or parked.ask_id is None:
        raise RuntimeError(f"{label}: parking replied {parked.kind.value}")
    failures: list[str] = []
    for miss in range(1, case.mismatches + 1):
        bounce = gateway.handle(conversation_id, JUNK[case.ask_kind])
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
