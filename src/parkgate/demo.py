"""The demo workflow: which UML diagram? -> describe it -> here is the PlantUML text."""

from __future__ import annotations

from parkgate.workflow import Answers, Phase, Workflow

DIAGRAMS = ("Sequence", "Class", "Activity", "Use case", "State")

_SKELETONS = {
    "Sequence": "actor User\nparticipant System\nUser -> System: request\nSystem --> User: response",
    "Class": 'class Order {\n  +id: int\n  +total(): Money\n}\nclass Customer\nCustomer "1" -- "*" Order',
    "Activity": "start\n:first step;\n:second step;\nstop",
    "Use case": "actor User\nUser --> (Use the system)",
    "State": "[*] --> Idle\nIdle --> Busy : start\nBusy --> Idle : done",
}


def _plantuml(answers: Answers) -> str:
    diagram = answers.get("diagram", "Sequence")
    description = " ".join(answers.get("describe", "").split())
    return (
        f"Here is the PlantUML text for your {diagram.lower()} diagram:\n\n"
        f"@startuml\ntitle {description}\n{_SKELETONS.get(diagram, '')}\n@enduml"
    )


UML = Workflow(
    name="uml",
    phases=[
        Phase("diagram", "Which UML diagram?", options=DIAGRAMS),
        Phase("describe", "Describe the {diagram} diagram in a sentence or two."),
    ],
    finish=_plantuml,
)

WORKFLOWS = {UML.name: UML}
