"""MCP elicitation through parkgate (needs ``mcp`` 2.x: ``pip install 'parkgate[adapters]'``).

accept / decline / cancel map onto selected-or-answered / cancelled / expired, both ways
(a dismissed form's ask closes as ``expired`` with outcome ``dismissed``):
:class:`ParkgateElicitation` lets a person answer a server's form in a parkgate
conversation; :func:`requested_schema`, :func:`apply_elicit_result` and
:func:`build_example_server` let a server park its question and the client answer it.
How each schema shape is asked, and why: docs/adapters/mcp.md.
"""

from parkgate.errors import MissingExtra

try:
    from parkgate.adapters.mcp.client import ParkgateElicitation
    from parkgate.adapters.mcp.forms import (
        ANSWER_FIELD,
        CHOICE_FIELD,
        ElicitationForm,
        FormField,
        elicit_params,
        field_for,
        read_form,
        requested_schema,
    )
    from parkgate.adapters.mcp.results import (
        ABANDONED,
        ACCEPT,
        CANCEL,
        DECLINE,
        DISMISSED,
        DONE,
        ElicitAction,
        ElicitContent,
        aapply_elicit_result,
        apply_elicit_result,
        reply_text,
        to_elicit_result,
    )
    from parkgate.adapters.mcp.server import INVALID_ANSWER, build_example_server
except ModuleNotFoundError as missing:  # the one line that says what to install
    raise MissingExtra(__name__, missing) from None

__all__ = [
    "ABANDONED",
    "ACCEPT",
    "ANSWER_FIELD",
    "CANCEL",
    "CHOICE_FIELD",
    "DECLINE",
    "DISMISSED",
    "DONE",
    "INVALID_ANSWER",
    "ElicitAction",
    "ElicitContent",
    "ElicitationForm",
    "FormField",
    "ParkgateElicitation",
    "aapply_elicit_result",
    "apply_elicit_result",
    "build_example_server",
    "elicit_params",
    "field_for",
    "read_form",
    "reply_text",
    "requested_schema",
    "to_elicit_result",
]
