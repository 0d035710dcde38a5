"""MCP elicitation through parkgate: accept / decline / cancel mapped exactly onto
selected-or-answered / cancelled / expired, both ways. Needs ``mcp`` 2.x
(``pip install parkgate[adapters]``).

Two directions:

**A client answers through parkgate**: an MCP server elicits a form, and a person
answers it in a parkgate conversation. :class:`ParkgateElicitation` is the client's
``elicitation_callback``; :func:`read_form` reads a form's fields as asks (booleans and
enums as choices, numbers and formatted strings as text asks that take only that form).

**A server asks through parkgate**: the ask is parked for audit and TTL, and the MCP
client collects the answer. :func:`requested_schema` / :func:`elicit_params` describe a
parked ask as a form, :func:`apply_elicit_result` applies the client's result, and
:func:`build_example_server` is a complete server whose tool asks this way.

:func:`to_elicit_result` reads a parkgate reply or closed ask as the ``ElicitResult``
it stands for.
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
        DONE,
        ElicitAction,
        ElicitContent,
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
    "DONE",
    "INVALID_ANSWER",
    "ElicitAction",
    "ElicitContent",
    "ElicitationForm",
    "FormField",
    "ParkgateElicitation",
    "apply_elicit_result",
    "build_example_server",
    "elicit_params",
    "field_for",
    "read_form",
    "reply_text",
    "requested_schema",
    "to_elicit_result",
]
