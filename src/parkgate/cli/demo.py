"""The demo workflow: which UML diagram? -> describe it -> here is the PlantUML text.

The diagram is drawn from the description, with no model: its clauses (split at
punctuation and at "then") become the steps, messages, use cases or states, and its
words that are not filler become the participants or classes. A description with
nothing usable in it gets a small example of the chosen kind.
"""

from __future__ import annotations

import itertools
import re

from parkgate.workflow import Answers, Phase, Workflow

DIAGRAMS = ("Sequence", "Class", "Activity", "Use case", "State")

#: The most steps (clauses) and names (participants, classes) one diagram takes.
MAX_STEPS = 8
MAX_NAMES = 6
MAX_STEP_CHARS = 60

_CLAUSE_BREAK = re.compile(r"[.;,:!?\n]+|\s+(?:and\s+)?then\s+", re.IGNORECASE)
#: A run of whitespace. Runs are shortened before the split: ``\s+`` tried from every
#: character of a long run would rescan the run each time (quadratic in its length).
_SPACE_RUN = re.compile(r"\s+")
_WORD = re.compile(r"[^\W\d_][\w']*")
#: Words that name nothing a diagram draws.
_FILLER = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "of",
        "to",
        "in",
        "on",
        "for",
        "with",
        "by",
        "from",
        "at",
        "as",
        "into",
        "onto",
        "over",
        "under",
        "about",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "has",
        "have",
        "had",
        "do",
        "does",
        "did",
        "can",
        "may",
        "must",
        "will",
        "should",
        "would",
        "it",
        "its",
        "they",
        "them",
        "their",
        "his",
        "her",
        "he",
        "she",
        "we",
        "our",
        "you",
        "your",
        "i",
        "my",
        "this",
        "that",
        "these",
        "those",
        "who",
        "which",
        "what",
        "when",
        "where",
        "then",
        "there",
        "here",
        "some",
        "any",
        "each",
        "every",
        "many",
        "much",
        "more",
        "most",
        "one",
        "two",
        "several",
        "all",
        "no",
        "not",
        "very",
        "just",
        "also",
        "only",
        "than",
        "so",
        "such",
    ]
)

_EXAMPLES = {
    "Sequence": "actor User\nparticipant System\nUser -> System: request\nSystem --> User: response",
    "Class": 'class Order {\n  +id: int\n  +total(): Money\n}\nclass Customer\nCustomer "1" -- "*" Order',
    "Activity": "start\n:first step;\n:second step;\nstop",
    "Use case": "actor User\nUser --> (Use the system)",
    "State": "[*] --> Idle\nIdle --> Busy : start\nBusy --> Idle : done",
}


def _short_run(run: re.Match[str]) -> str:
    """A whitespace run cut to what the clause split reads in it: a line break (a clause
    break) when it has one, then one space when it has any other whitespace (where a
    "then" break may start). The clauses and their words stay those of the full text."""
    text = run.group()
    newline = "\n" if "\n" in text else ""
    return newline + " " if text.strip("\n") else newline


def _steps(description: str) -> list[str]:
    """The description's clauses, in order: each one line, without PlantUML's delimiters."""
    steps = []
    short = _SPACE_RUN.sub(_short_run, description)
    for clause in _CLAUSE_BREAK.split(short):
        text = " ".join(re.sub(r'[()"\[\]{}<>;|]', " ", clause).split())
        if _WORD.search(text):
            steps.append(text[:MAX_STEP_CHARS])
    return steps[:MAX_STEPS]


def _names(text: str) -> list[str]:
    """The words of ``text`` that are not filler, capitalised, each once, in order."""
    names: list[str] = []
    for word in _WORD.findall(text):
        name = word[0].upper() + word[1:].replace("'", "")
        if word.casefold() not in _FILLER and name not in names:
            names.append(name)
    return names


def _sequence(steps: list[str]) -> str:
    # Each clause is a message from its subject (its first name) to the next clause's subject.
    said: list[tuple[str, str]] = []
    for step in steps:
        words = step.split()
        at = next((position for position, word in enumerate(words) if _names(word)), None)
        if at is not None:
            said.append((_names(words[at])[0], " ".join(words[at + 1 :]) or step))
    subjects = [subject for subject, _ in said]
    messages = []
    for position, (subject, message) in enumerate(said):
        receiver = subjects[position + 1] if position + 1 < len(said) else subjects[0]
        if receiver == subject:
            receiver = next((name for name in subjects if name != subject), "System")
        messages.append((subject, receiver, message))
    participants = dict.fromkeys(name for sender, receiver, _ in messages for name in (sender, receiver))
    return "\n".join(
        [f"participant {name}" for name in participants]
        + [f"{sender} -> {receiver}: {text}" for sender, receiver, text in messages]
    )


def _class(steps: list[str]) -> str:
    # Each clause relates its first name to its last, labelled with the words between
    # (its verb): "a customer places orders" is Customer -- Orders : places.
    classes: list[str] = []
    relations: list[str] = []
    for step in steps:
        names = _names(step)
        classes.extend(name for name in names[:1] + names[-1:] if name not in classes)
        if len(names) < 2:
            continue
        ends = '"1" -- "*"' if re.search(r"\b(?:has|have)\s+many\b", step, re.IGNORECASE) else "--"
        verb = " ".join(name.lower() for name in names[1:-1]) or ("has" if ends != "--" else "")
        relations.append(f"{names[0]} {ends} {names[-1]}" + (f" : {verb}" if verb else ""))
    return "\n".join([f"class {name}" for name in classes[:MAX_NAMES]] + relations)


def _activity(steps: list[str]) -> str:
    return "\n".join(["start", *(f":{step};" for step in steps), "stop"])


def _use_case(steps: list[str]) -> str:
    return "\n".join(["actor User", *(f"User --> ({step})" for step in steps)])


def _state(steps: list[str]) -> str:
    lines = [f'state "{step}" as S{number}' for number, step in enumerate(steps, start=1)]
    chain = ["[*]", *(f"S{number}" for number in range(1, len(steps) + 1)), "[*]"]
    lines.extend(f"{source} --> {target}" for source, target in itertools.pairwise(chain))
    return "\n".join(lines)


_DRAW = {"Sequence": _sequence, "Class": _class, "Activity": _activity, "Use case": _use_case, "State": _state}


def plantuml(diagram: str, description: str) -> str:
    """The PlantUML text of a ``diagram`` (one of :data:`DIAGRAMS`) drawn from ``description``."""
    folded = " ".join(description.split())
    steps = _steps(description)
    body = _DRAW[diagram](steps) if diagram in _DRAW and steps else ""
    return f"@startuml\ntitle {folded}\n{body.strip() or _EXAMPLES.get(diagram, '')}\n@enduml"


def _finish(answers: Answers) -> str:
    diagram = answers.get("diagram", "Sequence")
    return (
        f"Here is the PlantUML text for your {diagram.lower()} diagram:\n\n"
        f"{plantuml(diagram, answers.get('describe', ''))}"
    )


UML = Workflow(
    name="uml",
    phases=[
        Phase("diagram", "Which UML diagram?", options=DIAGRAMS),
        Phase("describe", "Describe the {diagram} diagram in a sentence or two."),
    ],
    finish=_finish,
)

WORKFLOWS = {UML.name: UML}
