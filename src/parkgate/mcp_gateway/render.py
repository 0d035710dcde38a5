"""What a held tool call is to a person and to the agent: the hash its approval is bound
to, its arguments as shown (secrets redacted, long values cut), the ask's prompt and
context, the form a client's own user answers it on, and the text of a call that did not
run. Pure: no gateway, no MCP SDK."""

from __future__ import annotations

import fnmatch
import hashlib
import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from parkgate.adapters.approvals.records import duration_text
from parkgate.core import phrases as P
from parkgate.core.display import json_line
from parkgate.core.kinds import AskStatus
from parkgate.core.model import Ask
from parkgate.core.stopping_point import MAX_PROMPT_CHARS

#: The prefix of the conversation a call's asks are parked in (then the call's hash).
CONVERSATION_PREFIX = "mcp-"
#: At most this many arguments are shown; the rest are counted.
MAX_SHOWN_ARGUMENTS = 40
#: The most characters of JSON the shown arguments take (the ask's context holds 16 KiB).
MAX_SHOWN_JSON = 8000
#: The fields of the form a client's own user answers on (:func:`approval_form`).
FORM_DECISION = "decision"
FORM_REASON = "reason"
#: The most characters of a reason given on that form that are kept.
MAX_REASON_CHARS = 500


def call_hash(server: str, tool: str, arguments: Mapping[str, Any]) -> str:
    """The SHA-256 an approval is bound to: the server, the tool and the arguments, as
    canonical JSON (keys sorted), so an identical call has the same hash and any other
    argument makes another."""
    canonical = json.dumps(
        {"server": server, "tool": tool, "arguments": arguments},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def conversation_of(digest: str) -> str:
    """The conversation a call with this hash parks in: its identical calls attach there."""
    return CONVERSATION_PREFIX + digest


def shown_arguments(arguments: Mapping[str, Any], redact: Sequence[str], max_chars: int) -> dict[str, Any]:
    """``arguments`` as a person is shown them: a value whose name matches a ``redact`` glob
    (any case, at any depth) is :data:`~parkgate.core.phrases.MCP_GATEWAY_REDACTED`, and a
    value longer than ``max_chars`` (a string, or a number's or other value's JSON) is cut,
    saying how much was left out. Objects and lists keep their shape, each value in them
    cut alike; when that is still over :data:`MAX_SHOWN_JSON` characters of JSON (the ask's
    context has a limit), each argument is cut as a whole, to its share of it."""
    names = list(arguments)[:MAX_SHOWN_ARGUMENTS]
    shown = {name: _shown(name, arguments[name], redact, max_chars) for name in names}
    if len(json.dumps(shown, ensure_ascii=False)) > MAX_SHOWN_JSON:
        share = max(10, min(max_chars, MAX_SHOWN_JSON // max(1, len(names)) - 50))
        shown = {name: _cut(_shown(name, arguments[name], redact, share), share) for name in names}
    if len(arguments) > len(names):
        shown["…"] = P.MCP_GATEWAY_CUT.format(count=len(arguments) - len(names))
    return shown


def _shown(name: str, value: Any, redact: Sequence[str], max_chars: int) -> Any:
    if _secret(name, redact):
        return P.MCP_GATEWAY_REDACTED
    if isinstance(value, Mapping):
        return {str(key): _shown(str(key), item, redact, max_chars) for key, item in value.items()}
    if isinstance(value, list):
        return [_shown(name, item, (), max_chars) for item in value]
    return _cut(value, max_chars)


def _cut(value: Any, max_chars: int) -> Any:
    """``value`` as it is, or its text (JSON for a value that is not a string) cut at ``max_chars``."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if len(text) <= max_chars:
        return value
    return text[:max_chars] + P.MCP_GATEWAY_CUT.format(count=len(text) - max_chars)


def _secret(name: str, redact: Sequence[str]) -> bool:
    folded = name.casefold()
    return any(fnmatch.fnmatchcase(folded, glob.casefold()) for glob in redact)


def prompt(server: str, tool: str, shown: Mapping[str, Any]) -> str:
    """The ask's prompt: the tool, the server, and one ``name: value`` line per argument
    (values as JSON, hidden characters escaped), within the prompt's limit."""
    lines = [f"{name}: {json_line(value)}" for name, value in shown.items()] or [P.MCP_GATEWAY_NO_ARGUMENTS]
    text = P.MCP_GATEWAY_PROMPT.format(tool=json_line(tool)[1:-1], server=server, arguments="\n".join(lines))
    if len(text) <= MAX_PROMPT_CHARS:
        return text
    cut = P.MCP_GATEWAY_CUT.format(count=len(text) - MAX_PROMPT_CHARS)
    return text[: MAX_PROMPT_CHARS - len(cut)] + cut


def context(server: str, tool: str, shown: Mapping[str, Any], digest: str) -> dict[str, Any]:
    """The ask's ``context``: ``server``, ``tool``, ``arguments`` as shown, and the
    ``call_hash`` the approval is bound to."""
    return {"server": server, "tool": tool, "arguments": dict(shown), "call_hash": digest}


def approved(ask: Ask) -> bool:
    """Whether ``ask`` closed with its first option (Approve): the only close that runs the call."""
    return ask.status is AskStatus.ANSWERED and ask.option_index == 1


def not_run(ask: Ask, tool: str, reasons: Mapping[str, str] | None = None) -> str:
    """Why the call ``ask`` held did not run: rejected (by whom, and why where ``reasons``
    holds a rejecter's reason, by sender), cancelled (by whom), or expired (after its TTL)."""
    if ask.status is AskStatus.EXPIRED:
        return P.MCP_GATEWAY_EXPIRED.format(ask_id=ask.id, duration=duration_text(ask.ttl_seconds), tool=tool)
    if ask.status is AskStatus.ANSWERED:
        who = rejecters(ask)
        text = P.MCP_GATEWAY_REJECTED.format(who=", ".join(who) or P.MCP_GATEWAY_NOBODY, ask_id=ask.id, tool=tool)
        given = [(reasons or {})[sender] for sender in who if (reasons or {}).get(sender)]
        return P.MCP_GATEWAY_REJECTED_BECAUSE.format(text=text, reason="; ".join(given)) if given else text
    return P.MCP_GATEWAY_CANCELLED.format(who=ask.closed_by or P.MCP_GATEWAY_NOBODY, ask_id=ask.id, tool=tool)


def rejecters(ask: Ask) -> list[str]:
    """Who rejected ``ask``: every responder whose vote is the closing option, else the sender who answered."""
    voters = [vote.sender for vote in ask.votes if vote.option_index == ask.option_index]
    return voters or ([ask.answered_by] if ask.answered_by else [])


def approval_form(ask: Ask) -> tuple[str, dict[str, Any]]:
    """The form (MCP elicitation, form mode) on which a client's own user decides ``ask``:
    its message (the ask's prompt and id) and its requested schema: one of the ask's
    options (``decision``, required) and a ``reason`` (optional)."""
    schema = {
        "type": "object",
        "properties": {
            FORM_DECISION: {"type": "string", "title": P.MCP_GATEWAY_FORM_DECISION, "enum": list(ask.options)},
            FORM_REASON: {"type": "string", "title": P.MCP_GATEWAY_FORM_REASON, "maxLength": MAX_REASON_CHARS},
        },
        "required": [FORM_DECISION],
    }
    return P.MCP_GATEWAY_FORM.format(prompt=ask.prompt, ask_id=ask.id), schema


def form_answer(ask: Ask, action: str, content: Mapping[str, Any] | None) -> tuple[str, str | None] | None:
    """What a client's user answered on :func:`approval_form`: the option they chose and
    their reason (``None`` when none, or blank), or ``None`` when they gave no decision
    (the form declined or dismissed, or a decision that is none of the ask's options)."""
    if action != "accept" or content is None:
        return None
    decision = content.get(FORM_DECISION)
    if not isinstance(decision, str) or decision not in ask.options:
        return None
    reason = content.get(FORM_REASON)
    text = reason.strip()[:MAX_REASON_CHARS] if isinstance(reason, str) else ""
    return decision, text or None


def pending(ask: Ask, tool: str, now: datetime) -> str:
    """What a call held past its hold bound returns: the ask is open, its id, and how to retry."""
    left = max(0.0, (ask.due_at - now).total_seconds())
    return P.MCP_GATEWAY_PENDING.format(tool=tool, ask_id=ask.id, left=duration_text(left))


def waiting(ask_id: str) -> str:
    """The progress message of a held call."""
    return P.MCP_GATEWAY_WAITING.format(ask_id=ask_id)
