"""Every user-visible string, defined once (the kinds they are shown for live in
:mod:`parkgate.core.kinds`).

Callers branch on :class:`~parkgate.core.kinds.ReplyKind`, never on wording. Every
other module that shows text to a person imports it from here, so two writers can never drift apart on one
literal (a retry line recognised by one caller and rephrased by another).
"""

from __future__ import annotations

from parkgate.core.kinds import ReplyKind

# Control words, in the order the escalated lines name them. Matched as sets of
# normalised words; a leading "/" is stripped before lookup.
RESHOW_WORDS_IN_ORDER: tuple[str, ...] = ("menu", "options")
CANCEL_WORDS_IN_ORDER: tuple[str, ...] = ("cancel", "exit", "quit", "stop", "nevermind")
RESHOW_WORDS: frozenset[str] = frozenset(RESHOW_WORDS_IN_ORDER)
CANCEL_WORDS: frozenset[str] = frozenset(CANCEL_WORDS_IN_ORDER)
CONTROL_WORDS: frozenset[str] = RESHOW_WORDS | CANCEL_WORDS

# The words a choice menu's footer names as its exits, bare while no option label takes them.
MENU_WORD = "menu"
CANCEL_WORD = "cancel"


def _slashed(words: tuple[str, ...]) -> str:
    """``("a", "b", "c")`` -> ``"/a, /b or /c"``."""
    forms = ["/" + word for word in words]
    return forms[0] if len(forms) == 1 else ", ".join(forms[:-1]) + " or " + forms[-1]


# Every exit, named in every escalated line (choice and text). The slash forms: they work
# in every ask whatever its labels, where a bare word loses to an option with that label.
EXITS_HINT = (
    "type "
    + _slashed(RESHOW_WORDS_IN_ORDER)
    + " to see the question again, or "
    + _slashed(CANCEL_WORDS_IN_ORDER)
    + " to drop it"
)
# The short form under every text question and in its first retries.
TEXT_EXITS_HINT = "type /cancel to drop this question, /menu to see it again"

# One template per reply kind that carries text. ``{menu}`` is the rendered ask.
PHRASES: dict[ReplyKind, str] = {
    ReplyKind.PASS: "",  # the caller routes the message onward; nothing is shown
    ReplyKind.ASKED: "{menu}",
    ReplyKind.SELECTED: "Selected {index}. {answer}",
    ReplyKind.ANSWERED: "Got it.",
    ReplyKind.RETRY: "That did not match any option. Reply with a number from 1 to {n}.\n\n{menu}",
    # The escalated line names every exit; {menu} here is the question without its footer.
    ReplyKind.ESCALATED: ("Still no match ({tries}). Reply with a number from 1 to {n}, " + EXITS_HINT + ".\n\n{menu}"),
    ReplyKind.RESHOWN: "{menu}",
    ReplyKind.CANCELLED: "Dropped the menu, nothing ran.",
    # {responders} is the ask's responders joined by RESPONDERS_JOINED ("U_ALICE or U_BOB").
    ReplyKind.NOT_YOURS: "This question is for {responders}.",
    ReplyKind.VOTED: 'Vote taken: {count} of {quorum} votes for "{answer}" (option {index}).',
    # An answer that reached an ask after it closed (a button on an old post, a reply in its
    # thread, an HTTP answer naming it): {how} says how and when it closed (CHANNEL_CLOSED_*).
    ReplyKind.LATE: "This question is already closed ({how}).",
}
# Who may answer: the responders a not_yours line names, "A", "A or B", "A, B or C".
RESPONDERS_LAST_JOIN = " or "
RESPONDERS_JOIN = ", "
# A quorum ask's menu, re-shown, ends with its votes so far: "Votes so far (2 needed):
# 1. Deploy: 1; 2. Hold: 1." or "... none yet."
VOTES_SO_FAR = "Votes so far ({quorum} needed): {tally}."
VOTE_TALLY_ITEM = "{index}. {answer}: {count}"
VOTE_TALLY_JOIN = "; "
VOTES_NONE_YET = "none yet"
# A cancel of a text ask: there was a question, not a menu.
TEXT_CANCELLED = "Dropped the question, nothing ran."

# ``{tries}`` in an escalated line: "1 try", "3 tries".
TRIES_ONE = "{count} try"
TRIES_MANY = "{count} tries"

# Variants for text asks, where the retry is about an empty answer. A retry's {menu} is the
# question with its footer (the exits); an escalated line's is the question alone.
TEXT_RETRY = "Please type an answer.\n\n{menu}"
TEXT_ESCALATED = "Still no answer ({tries}). Type your answer, or " + EXITS_HINT + ".\n\n{menu}"
# Variants for a text ask that expects a form (parkgate.core.expect): the question says
# what it wants, and a miss says it again. {wanted} is EXPECT_WANTED's entry, with its bounds.
TEXT_EXPECT_RETRY = "Please type {wanted}.\n\n{menu}"
TEXT_EXPECT_ESCALATED = "Still not {wanted} ({tries}). Type {wanted}, or " + EXITS_HINT + ".\n\n{menu}"
TEXT_EXPECT_QUESTION_FOOTER = "(type {wanted}; " + TEXT_EXITS_HINT + ")"
EXPECT_WANTED: dict[str, str] = {
    "text": "an answer",
    "number": "a number",
    "integer": "a whole number",
    "email": "an email address (name@example.com)",
    "uri": "a URI (such as https://example.com/page)",
    "date": "a date (YYYY-MM-DD)",
    "date-time": "a date and time (YYYY-MM-DDTHH:MM:SSZ, or with an offset such as +02:00)",
    "several": "the numbers or names of the options you pick, separated by commas",
}
EXPECT_BETWEEN = "{wanted} from {low} to {high}"
EXPECT_AT_LEAST = "{wanted} of at least {low}"
EXPECT_AT_MOST = "{wanted} of at most {high}"
EXPECT_LENGTH_BETWEEN = "{wanted} of {low} to {high} characters"
EXPECT_LENGTH_AT_LEAST = "{wanted} of at least {low} characters"
EXPECT_LENGTH_AT_MOST = "{wanted} of at most {high} characters"
# The several-options form with bounds on how many are picked.
EXPECT_ITEMS_EXACTLY = "the numbers or names of {count} of the options, separated by commas"
EXPECT_ITEMS_BETWEEN = "the numbers or names of {low} to {high} of the options, separated by commas"
EXPECT_ITEMS_AT_LEAST = "the numbers or names of at least {low} of the options, separated by commas"
EXPECT_ITEMS_AT_MOST = "the numbers or names of at most {high} of the options, separated by commas"
# MCP elicitation (parkgate.adapters.mcp): a boolean field is a choice of these two, and
# each field of a form of several is asked with the form's message and its place in it.
BOOLEAN_YES = "Yes"
BOOLEAN_NO = "No"
FORM_FIELD_PROMPT = "{message}\n\n{label} ({position} of {count})"
# An MCP tool result whose ask closed with no answer and no reply text (the reply is a pass).
MCP_DISMISSED = "Expired: the person closed the form without answering."
MCP_EXPIRED = "Expired: nobody answered in time."
# Shown when a text answer is exactly a bare control word: taken as data, door named.
TEXT_CONTROL_WORD_TAKEN = 'Got it: took "{answer}" as your answer. (To drop a question, type /cancel.)'
# Rendering pieces.
TEXT_QUESTION_FOOTER = "(" + TEXT_EXITS_HINT + ")"
CHOICE_MENU_FOOTER = "Reply with a number, or " + MENU_WORD + " / " + CANCEL_WORD + "."
# The footer when an option label takes the bare "menu" or "cancel" (only the slash forms leave).
CHOICE_MENU_FOOTER_SLASHED = "Reply with a number, or /" + MENU_WORD + " / /" + CANCEL_WORD + "."
# Shown by surfaces when a read found an expired ask.
EXPIRED_NOTICE = "That question timed out after {hours} h idle and was closed."
# What the demo surfaces (`parkgate chat`, the web console) show for a `pass`: the
# message would go to the caller's model, and the demo has none.
STAND_IN_MODEL = "[stand-in model] I am a placeholder, not a real model. You said: {text}"
WORKFLOW_DONE = "Done."
# `parkgate chat`: what the demo's restart word says while a question is still open, and
# how a refused input is reported (the error's own message fills {error}).
CHAT_STILL_PARKED = (
    "This conversation already has an open question: answer it, type /menu to see it again, "
    "or /cancel to drop it (then {restart} runs the demo)."
)
CHAT_REFUSED = "refused: {error} (nothing was changed)"
# `parkgate chat`, once the demo's question closed (answered to the end, or dropped).
CHAT_AGAIN = "Type {restart} to run the demo again, or press Ctrl-D to leave."
# The web console: in its chat, after an operator cancelled the conversation's open ask
# from the list (the chat's own "restart" is its Start button).
OPERATOR_CANCELLED = "An operator cancelled the open question; nothing ran."
CONSOLE_RESTART = "the Start UML demo button"

# Channels (parkgate.channels): what a posted ask's message says once it closed, and what
# a click on a closed ask answers. {who} is the platform's mention of a person.
CHANNEL_ANSWERED = "Answered: {answer}, by {who}"
CHANNEL_ANSWERED_BY_NOBODY = "Answered: {answer}"
CHANNEL_DROPPED = "Dropped by {who}, nothing ran."
CHANNEL_DROPPED_BY_NOBODY = "Dropped, nothing ran."
CHANNEL_OPERATOR = "an operator"
CHANNEL_REPLACED = "Replaced by a newer question, nothing ran."
CHANNEL_EXPIRED = "Expired after {idle}, nothing ran."
CHANNEL_EXPIRED_DEFAULT = 'Expired after {idle}; the default "{answer}" stood in.'
# How a closed ask closed, in what a late answer is told (PHRASES[ReplyKind.LATE]), then
# when: "answered by @alice at 14:02 UTC on 6 Dec 2026" (parkgate.core.closed_words).
CHANNEL_CLOSED_ANSWERED = "answered by {who}"
CHANNEL_CLOSED_ANSWERED_BY_NOBODY = "answered"
CHANNEL_CLOSED_DROPPED = "dropped by {who}"
CHANNEL_CLOSED_DROPPED_BY_NOBODY = "dropped"
CHANNEL_CLOSED_EXPIRED = "it expired"
CHANNEL_CLOSED_REPLACED = "replaced by a newer question"
CHANNEL_CLOSED_AT = "{how} at {when}"
CLOSED_MOMENT = "{time} UTC on {day} {month} {year}"
MONTHS: tuple[str, ...] = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
# A typed message in a chat or thread where more than one posted ask is open, replying to
# none of their messages: it answers none of them (another's question may be waiting
# there), and its sender is told this.
CHANNEL_REPLY_TO_THE_QUESTION = (
    "More than one question is open here, so this message answered none of them: "
    "reply to the question's own message to answer it, or use its buttons."
)
# A duration in the lines above: "6 h", "90 min", "45 s".
CHANNEL_HOURS = "{count} h"
CHANNEL_MINUTES = "{count} min"
CHANNEL_SECONDS = "{count} s"
# The buttons under every posted ask besides its options.
CHANNEL_CANCEL_BUTTON = "Cancel"
CHANNEL_SHOW_OPTIONS_BUTTON = "Show options"
# A channel message longer than any answer is taken ({count} characters, {limit} at most):
# refused, with nothing changed, and the person told.
CHANNEL_MESSAGE_TOO_LONG = (
    "That message is {count} characters; an answer takes at most {limit}. Nothing changed: send a shorter one."
)

# The LangGraph adapter's questions for LangChain's HumanInTheLoopMiddleware: one choice
# per tool call the agent wants to run, then, for "Respond", the text that stands in for
# the tool's result.
HITL_APPROVE = "Approve"
HITL_REJECT = "Reject"
HITL_RESPOND = "Respond"
HITL_PROMPT = "Run {tool}{position}?\n{description}"
HITL_POSITION = " ({number} of {count})"
HITL_ARGUMENTS = "Arguments: {arguments}"
HITL_RESPOND_PROMPT = "What should {tool} answer instead of running?"
HITL_REASON_PROMPT = "Why not run {tool}? The agent is told your reason; type {none} to give none."
HITL_NO_REASON = "-"
# Who rejected a tool call, in the reason the agent's model is told.
HITL_REJECTED_BY = "rejected by {sender}"
# The reason a "reject" decision gives the agent's model when the person's side closed
# without a decision (the middleware says "User rejected the tool call ... with reason: ...").
HITL_CANCELLED = "the approval request was cancelled, so the tool was not run"
HITL_EXPIRED = "nobody answered the approval request before it expired, so the tool was not run"
HITL_UNASKABLE = "the approval request could not be put to a person ({reason}), so the tool was not run"
# The tool message parkgate writes for a tool call whose tool allows no "reject" (as a reject writes it).
HITL_NOT_RUN = "The tool call for `{tool}` was not approved: {reason}"
# What the OpenAI Agents and Pydantic AI adapters tell the agent's model about a tool
# call that was not approved: the person's Reject, a cancel (a cancel word or an
# operator's), an expiry ({duration}: the ask's TTL, "6 h", "30 min", "45 s"). After a
# Reject they ask for the reason as the LangGraph adapter does (HITL_REASON_PROMPT).
AGENT_REJECTED = "Rejected: the person chose Reject; the tool did not run"
# ... and the person's Reject with the reason they gave ({reason}, as typed).
AGENT_REJECTED_BECAUSE = "Rejected: {reason}"
AGENT_CANCELLED = "No decision: the question was cancelled; the tool did not run"
AGENT_EXPIRED = "No decision: the question expired after {duration}; the tool did not run"
# What a channel posts in an ask's thread when its reminder or its escalation fires:
# {who}, the responders ("U_ALICE or U_BOB", or CHANNEL_ANYONE), {prompt}, the question,
# {waited}, how long since it was asked, {left}, how long until it expires ("5 h", "12 min").
CHANNEL_REMINDER = "Still waiting on {who}: {prompt} (asked {waited} ago; it expires in {left})."
CHANNEL_ESCALATION = "Now also asking {who}: {prompt} (asked {waited} ago; it expires in {left})."
CHANNEL_ANYONE = "anyone here"
# What a posted ask says under its question, in one line: whom it is for ({who}: the
# responders as the platform names them, or CHANNEL_ANYONE), how many must agree (a quorum
# ask only: {quorum} of its {count} responders), and until when it stays open ({when}: its
# due time as the platform shows it; {idle}: its TTL, "6 h"), the parts joined by
# CHANNEL_ABOUT_JOIN: "For @alice, @bob or @carol · 2 of 3 must agree · open for 6 h, until
# 2026-01-05 15:00 UTC".
CHANNEL_FOR = "For {who}"
CHANNEL_QUORUM = "{quorum} of {count} must agree"
CHANNEL_OPEN_UNTIL = "open until {when}"
CHANNEL_OPEN_FOR_UNTIL = "open for {idle}, until {when}"
CHANNEL_ABOUT_JOIN = " · "
# A time as a channel line writes it where the platform shows no local time (the Slack
# post shows its readers' own): "2026-01-05 09:00 UTC".
CHANNEL_UTC_TIME = "%Y-%m-%d %H:%M UTC"
# A quorum ask's votes as a channel shows them after a vote (VOTES_SO_FAR's {tally}), each
# option's voters named as the platform names them: "1. Deploy: @alice, @bob; 2. Hold: @carol".
VOTE_VOTERS_ITEM = "{index}. {answer}: {voters}"
VOTERS_JOIN = ", "
# The MCP approval gateway (parkgate.mcp_gateway): the ask's prompt ({arguments}, one
# "name: value" line each, or MCP_GATEWAY_NO_ARGUMENTS), what a held call reports as
# progress, and the tool results an agent sees when the call did not run: still pending
# ({left}: until it expires, "9 min"), rejected or cancelled ({who}: who closed it),
# expired ({duration}: its TTL).
MCP_GATEWAY_PROMPT = "Run {tool} on {server}?\n{arguments}"
MCP_GATEWAY_NO_ARGUMENTS = "(no arguments)"
MCP_GATEWAY_REDACTED = "[redacted]"
MCP_GATEWAY_CUT = "… ({count} more characters)"
MCP_GATEWAY_WAITING = "Waiting for approval: ask {ask_id}"
MCP_GATEWAY_PENDING = (
    "Approval pending: {tool} has not run. Ask {ask_id} waits for a person (it expires in {left}). "
    "Call {tool} again with exactly the same arguments to wait for the decision; other arguments ask again."
)
MCP_GATEWAY_REJECTED = "Rejected by {who} (ask {ask_id}): {tool} did not run."
# ... and the reason the rejecter gave ({text}: MCP_GATEWAY_REJECTED's, {reason} as typed).
MCP_GATEWAY_REJECTED_BECAUSE = "{text} Reason: {reason}"
MCP_GATEWAY_CANCELLED = "Cancelled by {who} (ask {ask_id}): {tool} did not run."
MCP_GATEWAY_EXPIRED = "Expired: nobody answered ask {ask_id} within {duration}; {tool} did not run."
MCP_GATEWAY_NOBODY = "nobody"
# The form an MCP client shows its own user when a rule lets them answer (elicitation):
# its message ({prompt}: the ask's; {ask_id}), the decision's title, the reason's.
MCP_GATEWAY_FORM = "{prompt}\n\nAsk {ask_id}: the first answer decides, yours or one given where it is posted."
MCP_GATEWAY_FORM_DECISION = "Decision"
MCP_GATEWAY_FORM_REASON = "Reason (optional)"
