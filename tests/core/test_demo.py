"""The demo's diagram is drawn from the description the person gave, for every kind."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from parkgate.cli.demo import DIAGRAMS, plantuml

LOGIN = "A user logs in, the server checks the password, then the server answers the user"
SHOP = "An order has many lines; a customer places orders"


def body(text: str) -> list[str]:
    """The diagram's lines between its title and ``@enduml``."""
    lines = text.split("\n")
    assert lines[0] == "@startuml" and lines[1].startswith("title ") and lines[-1] == "@enduml"
    return lines[2:-1]


@pytest.mark.parametrize("diagram", DIAGRAMS)
def test_two_descriptions_give_two_diagrams_of_every_kind(diagram: str) -> None:
    assert body(plantuml(diagram, LOGIN)) != body(plantuml(diagram, SHOP))


def test_a_sequence_diagram_has_the_descriptions_actors_and_messages() -> None:
    assert body(plantuml("Sequence", LOGIN)) == [
        "participant User",
        "participant Server",
        "User -> Server: logs in",
        "Server -> User: checks the password",
        "Server -> User: answers the user",
    ]


def test_a_class_diagram_relates_the_descriptions_nouns() -> None:
    lines = body(plantuml("Class", SHOP))
    assert {"class Order", "class Lines", "class Customer", "class Orders"} <= set(lines)
    assert 'Order "1" -- "*" Lines : has' in lines and "Customer -- Orders : places" in lines


def test_activity_use_case_and_state_diagrams_take_the_clauses_as_their_steps() -> None:
    clauses = ["A user logs in", "the server checks the password", "the server answers the user"]
    assert body(plantuml("Activity", LOGIN)) == ["start", *(f":{c};" for c in clauses), "stop"]
    assert body(plantuml("Use case", LOGIN)) == ["actor User", *(f"User --> ({c})" for c in clauses)]
    states = body(plantuml("State", LOGIN))
    assert [f'state "{c}" as S{i}' for i, c in enumerate(clauses, start=1)] == states[:3]
    assert states[3:] == ["[*] --> S1", "S1 --> S2", "S2 --> S3", "S3 --> [*]"]


@pytest.mark.parametrize("diagram", DIAGRAMS)
def test_a_description_with_nothing_to_draw_gets_an_example(diagram: str) -> None:
    assert body(plantuml(diagram, "???")), "an empty diagram"


@given(st.sampled_from(DIAGRAMS), st.text(min_size=1, max_size=300))
def test_any_description_gives_one_well_formed_diagram(diagram: str, description: str) -> None:
    text = plantuml(diagram, description)
    lines = body(text)
    assert lines and "@enduml" not in [line.strip() for line in lines]
    assert text.count("\n@startuml") == 0  # no second diagram begins inside it
