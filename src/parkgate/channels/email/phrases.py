"""What the email channel says that no other channel does: its messages' and its pages'
words. The close lines and the replies are every channel's (:mod:`parkgate.channels.lines`,
:mod:`parkgate.core.phrases`)."""

from __future__ import annotations

from parkgate.core import phrases as P

# The email of an ask: its subject is the prompt's first line; the body says (under the
# prompt, every channel's line) whom it is for, how many must agree and until when, how
# the links work (a link opens a page; only the page's button answers), and whom they answer as.
SUBJECT_REPLY = "Re: {subject}"
CHOOSE = "Choose an option: each link opens a page where you confirm it (opening a link changes nothing)."
ANSWER = "Open the answer form to type your answer (opening it changes nothing)."
ANSWER_LINK = "Answer"
CANCEL_LINK = P.CHANNEL_CANCEL_BUTTON
CANCEL_HINT = "or drop the question, so nothing runs:"
AS_WHO = "The links answer as {address}."
# A follow-up in the thread: a reminder or the escalation (the line is every channel's),
# then the links again.
STILL_OPEN = "The question is still open:"
# The pages a link opens.
PAGE_TITLE = "parkgate"
PAGE_SUB = "email"
YOU_CHOSE = "You chose"
CONFIRM = "Confirm: {label}"
CONFIRM_CANCEL = "Drop the question"
CANCEL_CHOSEN = "Drop this question: nothing runs."
CONFIRM_HINT = "Nothing is recorded until you press the button. You answer as {address}."
SEND_ANSWER = "Send the answer"
YOUR_ANSWER = "Your answer"
CLOSED_AT = "Closed {when}."
EXPIRED_LINK = (
    "This link expired at {when}, so it answers nothing. A newer email about this question has a link that works."
)
BAD_LINK = "This link is not one parkgate made as it is, so it answers nothing: {why}."
NO_ASK = "This link's question is gone, so it answers nothing."
BAD_FORM = "The form was not sent from this link's page, so nothing was recorded. Open the link again."
DONE = "Done"
