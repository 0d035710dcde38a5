"""What Discord shows that no other channel does: its exits, its Reply button and modal,
and what a person is told privately when a press changes nothing. Every other line is
:mod:`parkgate.core.phrases`' (the close lines, :mod:`parkgate.channels.lines`)."""

from __future__ import annotations

from parkgate.core import phrases as P

# Discord's client turns a typed /cancel into its slash-command picker, and parkgate reads
# no typed messages there (interactions only): the exits are buttons, and typed text goes
# through the Reply button's form. Each key is a line of parkgate.core.phrases, replaced
# wherever it appears in what Discord shows.
EXITS: dict[str, str] = {
    P.EXITS_HINT: "press Show options to see the question again, or Cancel to drop it",
    P.TEXT_EXITS_HINT: "press Reply to answer, Cancel to drop this question, Show options to see it again",
    P.CHOICE_MENU_FOOTER: "Press an option; Show options or Cancel.",
    P.CHOICE_MENU_FOOTER_SLASHED: "Press an option; Show options or Cancel.",
}
#: The footer of a choice ask with more options than Discord has buttons for.
TYPE_A_NUMBER_FOOTER = "Press an option, or Reply with its number; Show options or Cancel."
#: The button that opens the answer form (a text ask's, or a number past the buttons).
REPLY_BUTTON = "Reply"
#: The answer form's title and its one field's label (Discord shows at most 45 characters of each).
MODAL_TITLE = "Answer the question"
ANSWER_LABEL = "Your answer"
#: What a press on a button that is not on its ask's own message answers (nothing changed).
NOT_THIS_MESSAGE = "That button is not on the message of the question it names, so it changed nothing."
#: What a slash command answers: parkgate registers none.
NO_COMMANDS = "parkgate has no commands here: answer a question with its buttons."
#: The name of the thread an ask's replies, reminders and escalations go in, when its prompt is blank.
THREAD_NAME = "parkgate"
