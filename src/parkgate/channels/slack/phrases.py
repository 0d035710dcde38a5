"""What Slack shows that no other channel does: its exits, and what a person is told
privately when parkgate does not take what they sent. Every other line a channel shows
is :mod:`parkgate.core.phrases`' (the close lines, :mod:`parkgate.channels.lines`)."""

from __future__ import annotations

from parkgate.core import phrases as P

# Slack's composer swallows unknown slash commands (/cancel never reaches a bot), so on
# Slack the exits are the buttons: every line naming the slash forms names them instead.
# Each key is a line of parkgate.core.phrases, replaced wherever it appears in a Slack reply.
EXITS: dict[str, str] = {
    P.EXITS_HINT: "press Show options to see the question again, or Cancel to drop it",
    P.TEXT_EXITS_HINT: "press Cancel to drop this question, Show options to see it again",
    P.CHOICE_MENU_FOOTER: "Press an option or reply with its number; Show options or Cancel.",
    P.CHOICE_MENU_FOOTER_SLASHED: "Press an option or reply with its number; Show options or Cancel.",
}
# What a person is told privately when parkgate does not take what they sent in an ask's
# thread: a file with no text (only typed text answers), or a click on a button that is
# not on the message of the question it names (nothing changes).
FILE_NOT_READ = "Only typed text answers this question; files are not read. Type your answer in this thread."
NOT_THIS_MESSAGE = "That button is not on the message of the question it names, so it changed nothing."
