"""What a LangGraph ``interrupt()`` asks and what resumes it, under a second import path.

The definitions live in :mod:`parkgate.adapters.langgraph` (``questions``, ``review``,
``interrupts``); code that imports them from here keeps working.
"""

from parkgate.adapters.langgraph.interrupts import check_askable, closed_values, next_question, resume_values
from parkgate.adapters.langgraph.questions import (
    CONTEXT_KEY,
    UNASKABLE,
    Answer,
    Closed,
    Payload,
    Question,
    answer_of,
    parse_payload,
)
from parkgate.adapters.langgraph.review import is_review_request

__all__ = [
    "CONTEXT_KEY",
    "UNASKABLE",
    "Answer",
    "Closed",
    "Payload",
    "Question",
    "answer_of",
    "check_askable",
    "closed_values",
    "is_review_request",
    "next_question",
    "parse_payload",
    "resume_values",
]
