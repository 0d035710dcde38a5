"""Check the two properties over every state of the parked-ask machine, not a sample.

The machine is small enough to enumerate (:mod:`parkgate.prove.cases`). A *state* is
an open ask described by:

- its kind (``choice`` or ``text``);
- whether a label collides with a control word (a ``choice`` menu whose options are
  ``Red / Cancel / Menu``; a ``text`` ask has no labels, so there "collision" means the
  answer typed is itself a control word);
- its mismatch count, every value from 0 to N+2 (N = ``escalate_after``);
- expired or not (``now`` is exactly the TTL after ``last_touched``, the last moment an
  ask is still alive, or one microsecond later).

Every state receives every input class: an exact digit in range, a digit out of range
(0 and n+1), an exact label, a label that is also a control word, each control word
bare and with one leading slash, free text (including a sentence that contains a
control word), empty or whitespace-only input, and non-text (bytes that are not UTF-8,
a string with NUL). One (state, input) pair is a :class:`Case`, i.e. one transition.

Every case's result is compared with what the behaviour contract (docs/contract.md)
says it must be, as written out by :mod:`parkgate.prove.oracle` from the rules, not
from the matcher, and the six properties of :mod:`parkgate.prove.properties` are
asserted on it.

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
from parkgate.store import open_store
from parkgate.store.sqlite import SQLiteStore

from .cases import COLLIDING_OPTIONS, PLAIN_OPTIONS, Case, InputClass, enumerate_cases
from .outcome import REFUSED, Outcome, pure_outcome
from .properties import verify
from .report import Report, build_report
from .schedule import schedule_failures
from .stores import SERVER_WORKERS, CaseResult, run_share


def check(escalate_after: int = machine.DEFAULT_ESCALATE_AFTER) -> Report:
    """Run the pure machine over every case of :func:`enumerate_cases` and verify each."""
    results: list[tuple[Case, Outcome]] = []
    failures: list[str] = []
    for case in enumerate_cases(escalate_after):
        ask = case.open_ask()
        try:
            outcome = pure_outcome(ask, case.message, case.moment(ask.last_touched), escalate_after)
        except Exception as error:  # a crash is a failure of this case, not of the checker
            failures.append(f"{case.describe()}: the machine raised {type(error).__name__}: {error}")
            continue
        results.append((case, outcome))
        failures.extend(verify(case, outcome, escalate_after))
        failures.extend(schedule_failures(case, escalate_after))
    return build_report(results, failures)


def check_store(
    store_url: str, escalate_after: int = machine.DEFAULT_ESCALATE_AFTER, *, schema: str | None = None
) -> Report:
    """Run every case through a real :class:`~parkgate.Gateway` on ``store_url``.

    Each case gets its own conversation: the ask is parked, its mismatch count is built
    by sending real misses, the injected clock is moved to the case's moment, and the
    input is sent, each message its own transaction. The reply and the stored ask are
    verified like :func:`check`'s, and compared field by field with the pure machine's
    step from the same stored ask at the same moment. ``schema`` selects a PostgreSQL
    schema. The store must be writable. The asks made (conversations ``prove-...``) stay
    in it closed, like every closed ask; one that a case leaves open is cancelled after
    it, so no parked ask is left behind.
    """
    cases = enumerate_cases(escalate_after)
    store = open_store(store_url, schema=schema) if schema is not None else open_store(store_url)
    # Cases are independent (one conversation each), so a server store runs them on a few
    # workers at once, as several gateway processes would; each worker has its own clock.
    workers = 1 if isinstance(store, SQLiteStore) else SERVER_WORKERS
    run_tag = uuid.uuid4().hex[:12]  # a rerun on the same store uses new conversations
    numbered = list(enumerate(cases))
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
    return build_report(results, failures)


__all__ = [
    "COLLIDING_OPTIONS",
    "PLAIN_OPTIONS",
    "REFUSED",
    "Case",
    "InputClass",
    "Outcome",
    "Report",
    "check",
    "check_store",
    "enumerate_cases",
]
