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
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from parkgate.core.phrases import AskKind

Answers = Mapping[str, str]


@dataclass(frozen=True)
class Phase:
    """One step. ``prompt`` may name earlier answers: ``"Describe the {diagram}."``"""

    name: str
    prompt: str
    options: tuple[str, ...] = ()
    #: Name of the next phase (or ``None`` to finish), chosen from the answers so far.
    then: Callable[[Answers], str | None] | None = None

    @property
    def kind(self) -> AskKind:
        return AskKind.CHOICE if self.options else AskKind.TEXT

    def prompt_for(self, answers: Answers) -> str:
        return self.prompt.format_map(_Missing(answers))


class _Missing(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


@dataclass(frozen=True)
class Workflow:
    name: str
    phases: Sequence[Phase]
    finish: Callable[[Answers], str]
    _by_name: dict[str, Phase] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.phases:
            raise ValueError(f"workflow {self.name!r} has no phases")
        by_name = {phase.name: phase for phase in self.phases}
        if len(by_name) != len(self.phases):
            raise ValueError(f"workflow {self.name!r} repeats a phase name")
        object.__setattr__(self, "_by_name", by_name)

    @property
    def first(self) -> Phase:
        return self.phases[0]

    def phase(self, name: str) -> Phase:
        try:
            return self._by_name[name]
        except KeyError:
            raise ValueError(f"workflow {self.name!r} has no phase {name!r}") from None

    def after(self, phase_name: str, answers: Answers) -> Phase | None:
        """The phase that follows ``phase_name`` given ``answers``; ``None`` to finish."""
        current = self.phase(phase_name)
        if current.then is not None:
            chosen = current.then(answers)
            return self.phase(chosen) if chosen is not None else None
        index = list(self.phases).index(current)
        return self.phases[index + 1] if index + 1 < len(self.phases) else None
