"""Check the two properties over every state of the parked-ask machine, not a sample.

The machine is small enough to enumerate (:mod:`parkgate.prove.cases`). A *state* is
an open ask described by:

- its kind (``choice`` or ``text``);
- whether a label collides with a control word (a ``choice`` menu whose options are
  ``Red / Cancel / Menu``; a ``text`` ask has no labels, so there "collision" means the
  answer typed is itself a control word);
- its mismatch count, every value from 0 to N+2 (N = ``escalate_after``);
- who may answer it (:class:`Who`): anyone; two responders, quorum 1; three
  responders, quorum 2, with no vote yet or with the first responder's vote cast (a
  text ask: anyone or quorum 1 only);
- expired or not (``now`` is exactly the TTL after ``last_touched``, the last moment an
  ask is still alive, or one microsecond later).

Every state receives every input class from every sender class (:class:`Sender`: no
sender, a responder, a non-responder, a second responder): an exact digit in range, a digit out of range
(0 and n+1), an exact label, a label that is also a control word, each control word
bare and with one leading slash, free text (including a sentence that contains a
control word), empty or whitespace-only input, and non-text (bytes that are not UTF-8,
a string with NUL). One (state, sender, input) triple is a :class:`Case`, i.e. one
transition.

Every case's result is compared with what the behaviour contract (docs/contract.md)
and docs/who-may-answer.md say it must be, as written out by
:mod:`parkgate.prove.oracle` from the rules, not from the matcher, and the properties
of :mod:`parkgate.prove.properties` are asserted on it.

:func:`check` runs the pure machine; :func:`check_store` drives the same enumeration
through a real :class:`~parkgate.Gateway` on a store (:mod:`parkgate.prove.stores`)
and also compares every step with the pure machine's result for the same stored ask
and time. :func:`check` also fires every reminder and escalation schedule in every
state (:mod:`parkgate.prove.schedule`). ``parkgate prove`` (or ``python -m
parkgate.prove``) prints the table.
"""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor

from parkgate.core import machine
from parkgate.core.model import Ask
from parkgate.store import open_store
from parkgate.store.sqlite import SQLiteStore

from .cases import COLLIDING_OPTIONS, PLAIN_OPTIONS, Case, InputClass, Sender, Who, enumerate_cases, store_cases
from .outcome import REFUSED, Outcome, pure_outcome
from .properties import quorum_closes, verify
from .report import Report, build_report
from .schedule import schedule_failures
from .stores import SERVER_WORKERS, CaseResult, run_share, units


def check(escalate_after: int = machine.DEFAULT_ESCALATE_AFTER) -> Report:
    """Run the pure machine over every case of :func:`enumerate_cases` and verify each."""
    results: list[tuple[Case, Outcome]] = []
    failures: list[str] = []
    asks: dict[tuple[object, ...], Ask] = {}  # one open ask per state: the cases of a state share it
    schedules: dict[object, list[str]] = {}  # one schedule check per state and input, whoever sends it
    for case in enumerate_cases(escalate_after):
        ask = asks.get(case.state) or asks.setdefault(case.state, case.open_ask())
        try:
            outcome = pure_outcome(ask, case.message, case.moment(ask.last_touched), escalate_after, case.sender.id)
        except Exception as error:  # a crash is a failure of this case, not of the checker
            failures.append(f"{case.describe()}: the machine raised {type(error).__name__}: {error}")
            continue
        results.append((case, outcome))
        failures.extend(verify(case, outcome, escalate_after))
        failures.extend(schedule_failures(case, escalate_after, schedules))
    failures.extend(quorum_closes(results))
    return build_report(results, failures)


def check_store(
    store_url: str, escalate_after: int = machine.DEFAULT_ESCALATE_AFTER, *, schema: str | None = None
) -> Report:
    """Run every case through a real :class:`~parkgate.Gateway` on ``store_url``.

    Each case gets its own conversation: the ask is parked, its vote and mismatch count
    are built by sending real messages, the injected clock is moved to the case's moment,
    and the input is sent, each message its own transaction. (The cases the oracle says
    leave the ask exactly as it was, a non-responder's message and input that is not
    text, share one conversation per state: each one shows it changed nothing.) The reply and the stored ask are
    verified like :func:`check`'s, and compared field by field with the pure machine's
    step from the same stored ask at the same moment. ``schema`` selects a PostgreSQL
    schema. The store must be writable. The asks made (conversations ``prove-...``) stay
    in it closed, like every closed ask; one that a case leaves open is cancelled after
    it, so no parked ask is left behind.
    """
    cases = store_cases(escalate_after)
    store = open_store(store_url, schema=schema) if schema is not None else open_store(store_url)
    # Cases are independent (one conversation each), so a server store runs them on a few
    # workers at once, as several gateway processes would; each worker has its own clock.
    workers = 1 if isinstance(store, SQLiteStore) else SERVER_WORKERS
    run_tag = uuid.uuid4().hex[:12]  # a rerun on the same store uses new conversations
    numbered = units(cases, escalate_after)
    shares = [numbered[start::workers] for start in range(workers)]
    try:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="prove") as pool:
            done: list[list[CaseResult]] = list(
                pool.map(lambda share: run_share(store, share, run_tag, escalate_after), shares)
            )
    finally:
        store.close()
    results: list[tuple[Case, Outcome]] = []
    failures: list[str] = []
    for _number, case, outcome, found in sorted((item for share in done for item in share), key=lambda i: i[0]):
        if outcome is not None:
            results.append((case, outcome))
        failures.extend(found)
    failures.extend(f"{failure} [store]" for failure in quorum_closes(results))
    return build_report(results, failures)


__all__ = [
    "COLLIDING_OPTIONS",
    "PLAIN_OPTIONS",
    "REFUSED",
    "Case",
    "InputClass",
    "Outcome",
    "Report",
    "Sender",
    "Who",
    "check",
    "check_store",
    "enumerate_cases",
    "store_cases",
]
