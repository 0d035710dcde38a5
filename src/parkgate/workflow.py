"""Multi-step workflows: phases that ask, and a finish that turns answers into output.

A workflow is data plus two small functions, so its progress can live in the store
(the run's ``context`` and the ask's ``phase``) and survive a restart::

    uml = Workflow(
        name="uml",
        phases=[
            Phase("diagram", "Which UML diagram?", options=("Sequence", "Class")),
            Phase("describe", "Describe the {diagram} diagram."),
        ],
        finish=lambda answers: f"@startuml\\n' {answers['describe']}\\n@enduml",
    )

Phases run in order unless a phase's ``then`` picks the next one by name.

Who answers a workflow's phases is said in one place. Either the start names it
(``start(..., responders=[...], quorum=k)``): every phase is for those responders; or
the phases do (``Phase(..., responders=("U_LEAD",), quorum=1)``): a phase that names
responders is for them, with its own quorum, and a phase that names none is anyone's.
A start that names responders for a workflow whose phases name them is refused. A workflow
defined wrong (no phases, a name twice), or a ``then`` that names a phase the workflow
does not have, raises :class:`~parkgate.errors.InputError`: the message that reached it
is refused, and nothing is written.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Unpack

from parkgate.core.kinds import AskKind
from parkgate.core.option_lines import option_line
from parkgate.core.schedule import SCHEDULE_KEYS, ScheduleFields
from parkgate.core.stopping_point import MAX_PROMPT_CHARS, is_marker_line, make_spec
from parkgate.errors import InputError

Answers = Mapping[str, str]


#: ``{name}`` in a phase's prompt: an earlier phase's answer. Nothing else in a prompt is
#: special (no ``str.format``): braces, ``{0}``, ``{a.b}`` or JSON stay as written.
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
#: The most of one answer a later prompt quotes; the rest is cut with an ellipsis.
MAX_QUOTED_ANSWER_CHARS = 1000
_ELLIPSIS = "\u2026"


@dataclass(frozen=True, init=False)
class Phase:
    """One step. ``prompt`` may name earlier answers: ``"Describe the {diagram}."``

    The prompt and options are checked when the phase is defined, not when a person
    reaches it.

    Args:
        name: The phase's name: its answer is kept under it, and ``{name}`` in a later
            prompt stands for that answer.
        prompt: The question, which may name earlier answers.
        options: The choices of a choice phase; none makes it a text phase.
        then: Picks the next phase by name (or ``None`` to finish) from the answers so
            far; without it the next phase in order follows.
        responders: Who may answer this phase (distinct senders, as a stopping point
            names them); none leaves it to the start's responders, or to anyone when
            another phase names responders.
        quorum: How many of this phase's responders must agree on one option (1 by
            default; above 1 only for a choice phase, and only with ``responders``).
        **schedule: The phase's reminders and escalation, as every park takes them
            (:class:`~parkgate.core.schedule.ScheduleFields`; checked when the workflow
            is registered, and each against the TTL when the phase is parked).

    Raises:
        StoppingPointError: The prompt, options, responders or quorum cannot be parked.
    """

    name: str
    prompt: str
    options: tuple[str, ...] = ()
    #: Name of the next phase (or ``None`` to finish), chosen from the answers so far.
    then: Callable[[Answers], str | None] | None = None
    responders: tuple[str, ...] = ()
    quorum: int = 1
    #: The phase's reminders and escalation (empty: none).
    schedule: ScheduleFields = field(default_factory=lambda: ScheduleFields(), hash=False)

    def __init__(
        self,
        name: str,
        prompt: str,
        options: tuple[str, ...] = (),
        then: Callable[[Answers], str | None] | None = None,
        responders: tuple[str, ...] = (),
        quorum: int = 1,
        **schedule: Unpack[ScheduleFields],
    ) -> None:
        unknown = sorted(set(schedule) - set(SCHEDULE_KEYS))
        if unknown:
            raise TypeError(f"Phase() got an unexpected keyword argument {unknown[0]!r}")
        given = {"name": name, "prompt": prompt, "options": options, "then": then, "quorum": quorum}
        for key, value in {**given, "schedule": schedule}.items():
            object.__setattr__(self, key, value)
        named = None if not responders and quorum == 1 else quorum  # the default: not named
        spec = make_spec(self.kind, prompt, options, responders or None, named)
        object.__setattr__(self, "responders", spec.responders)

    @property
    def kind(self) -> AskKind:
        """A choice when the phase has options, else text."""
        return AskKind.CHOICE if self.options else AskKind.TEXT

    def prompt_for(self, answers: Answers) -> str:
        """The prompt with each ``{name}`` replaced by that phase's answer.

        Whatever a person answered, the result is a prompt that can be parked: a quoted
        answer is cut to :data:`MAX_QUOTED_ANSWER_CHARS`, a line of it that reads as a
        stopping-point marker is quoted with ``> ``, and the whole is cut to the prompt
        limit. A name with no answer yet stays as written.

        Args:
            answers: The run's answers so far, by phase name.

        Returns:
            The prompt to park.
        """

        def quoted(found: re.Match[str]) -> str:
            """The answer a placeholder names, made safe to park; an unanswered name as written."""
            answer = answers.get(found.group(1))
            return found.group(0) if answer is None else _quotable(answer)

        filled = _PLACEHOLDER.sub(quoted, self.prompt)
        if len(filled) > MAX_PROMPT_CHARS:
            filled = filled[: MAX_PROMPT_CHARS - 1] + _ELLIPSIS
        return filled


def _quotable(answer: str) -> str:
    """``answer`` as a prompt may quote it: cut to :data:`MAX_QUOTED_ANSWER_CHARS`, its
    line breaks made ``\n`` (a ``\r`` is one to the prompt's check), and each line that
    reads as a stopping-point marker or a numbered option (``2) b``) quoted with ``> ``, so
    no answer can end the prompt with what looks like an option or a marker."""
    if len(answer) > MAX_QUOTED_ANSWER_CHARS:
        answer = answer[: MAX_QUOTED_ANSWER_CHARS - 1] + _ELLIPSIS
    lines = answer.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return "\n".join("> " + line if is_marker_line(line) or option_line(line) else line for line in lines)


@dataclass(frozen=True)
class Workflow:
    """Phases asked in order (or as each ``then`` picks), and a ``finish`` for the answers.

    Args:
        name: The name :meth:`Gateway.start <parkgate.Gateway.start>` runs it by.
        phases: The phases; the first one is asked when a run starts.
        finish: Turns the answers, by phase name, into the text shown after the last
            phase.

    Raises:
        InputError: The workflow has no phases, or a phase name twice.
    """

    name: str
    phases: Sequence[Phase]
    finish: Callable[[Answers], str]
    _by_name: dict[str, Phase] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.phases:
            raise InputError(f"workflow {self.name!r} has no phases")
        by_name = {phase.name: phase for phase in self.phases}
        if len(by_name) != len(self.phases):
            raise InputError(f"workflow {self.name!r} repeats a phase name")
        object.__setattr__(self, "_by_name", by_name)

    @property
    def names_responders(self) -> bool:
        """Whether the phases say who answers them (so the start may not)."""
        return any(phase.responders for phase in self.phases)

    @property
    def first(self) -> Phase:
        """The phase a run of this workflow starts with."""
        return self.phases[0]

    def phase(self, name: str) -> Phase:
        """The phase called ``name``.

        Args:
            name: A phase's name.

        Returns:
            That phase.

        Raises:
            InputError: The workflow has no phase of that name.
        """
        try:
            return self._by_name[name]
        except KeyError:
            raise InputError(f"workflow {self.name!r} has no phase {name!r}") from None

    def after(self, phase_name: str, answers: Answers) -> Phase | None:
        """The phase that follows ``phase_name`` given ``answers``.

        Args:
            phase_name: The phase just answered.
            answers: The run's answers so far, by phase name.

        Returns:
            The next phase, or ``None`` when the workflow finishes.

        Raises:
            InputError: A ``then`` names a phase the workflow does not have.
        """
        current = self.phase(phase_name)
        if current.then is not None:
            chosen = current.then(answers)
            return self.phase(chosen) if chosen is not None else None
        index = list(self.phases).index(current)
        return self.phases[index + 1] if index + 1 < len(self.phases) else None
