"""The emails: an ask (its prompt, whom it is for, how many must agree and until when),
with one signed link per option, a Cancel link and, for a text ask, a link to its answer
form; a follow-up in its thread (a reminder, the escalation, the close). Each is
multipart, plain text and HTML, to one address, and everything quoted from the ask is
escaped in the HTML."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from email.message import EmailMessage
from email.utils import format_datetime
from html import escape

from parkgate.channels.email import phrases as E
from parkgate.channels.email.links import ANSWER, CANCEL, Link, LinkSigner
from parkgate.channels.email.pages import LINK_PATH
from parkgate.channels.lines import about_line, utc_time
from parkgate.core.kinds import AskKind
from parkgate.core.model import Ask

#: The longest subject, in characters (the prompt's first line is cut to it).
MAX_SUBJECT_CHARS = 120


def when(moment: datetime) -> str:
    """A time as the emails and the pages say it: ``2026-01-05 09:00 UTC`` (as every
    channel writes one, :func:`~parkgate.channels.lines.utc_time`)."""
    return utc_time(moment)


def subject_of(ask: Ask) -> str:
    """The subject of ``ask``'s email: its prompt's first line, cut to :data:`MAX_SUBJECT_CHARS`."""
    first = ask.prompt.strip().splitlines()[0] if ask.prompt.strip() else ask.prompt
    return first if len(first) <= MAX_SUBJECT_CHARS else first[: MAX_SUBJECT_CHARS - 1] + "…"


def message_id(ask_id: str, address: str, domain: str, part: str = "") -> str:
    """The Message-ID of ``ask_id``'s email to ``address`` (``part`` names a follow-up):
    the same for every send of it, so a retried send is one message to a mail client."""
    digest = hashlib.sha256(f"{ask_id}\x00{address}\x00{part}".encode()).hexdigest()[:32]
    return f"<parkgate.{digest}@{domain}>"


@dataclass(frozen=True)
class LinkLine:
    """One link of an email: what it says and where it goes."""

    label: str
    url: str
    cancel: bool = False


def links_of(ask: Ask, address: str, signer: LinkSigner, public_url: str) -> list[LinkLine]:
    """``ask``'s links for ``address``: an option's each (a text ask's answer form), then Cancel."""

    def url(choice: str) -> str:
        return public_url + LINK_PATH + signer.sign(Link(ask.id, choice, address, ask.due_at))

    if ask.kind is AskKind.TEXT:
        lines = [LinkLine(E.ANSWER_LINK, url(ANSWER))]
    else:
        lines = [LinkLine(f"{number}. {label}", url(str(number))) for number, label in enumerate(ask.options, 1)]
    return [*lines, LinkLine(E.CANCEL_LINK, url(CANCEL), cancel=True)]


def _text(ask: Ask, address: str, links: Sequence[LinkLine], lead: str | None) -> str:
    head = [lead, "", E.STILL_OPEN, ""] if lead else []
    how = E.ANSWER if ask.kind is AskKind.TEXT else E.CHOOSE
    choices = [f"  {line.label}: {line.url}" for line in links if not line.cancel]
    cancel = [f"  {line.label}: {line.url}" for line in links if line.cancel]
    body = [*head, ask.prompt, "", about_line(ask, str), "", how, "", *choices, "", E.CANCEL_HINT, *cancel, ""]
    body.append(E.AS_WHO.format(address=address))
    return "\n".join(body) + "\n"


#: The HTML email's styles: inline, as mail clients keep no style sheet.
_BUTTON = (
    "display:inline-block;margin:.2rem 0;padding:.45rem .9rem;border-radius:6px;text-decoration:none;"
    "font-family:system-ui,sans-serif;border:1px solid #2f5bd3;"
)
_CHOICE = _BUTTON + "background:#2f5bd3;color:#fff;"
_CANCEL = _BUTTON + "background:#fff;color:#b4431e;border-color:#b4431e;"
_BODY = "font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:#1d2330;max-width:40rem;"
_MUTED = "color:#687086;font-size:.9rem;"


def _html(ask: Ask, address: str, links: Sequence[LinkLine], lead: str | None) -> str:
    parts = [f'<div style="{_BODY}">']
    if lead:
        parts.append(f"<p><strong>{escape(lead)}</strong></p><p>{escape(E.STILL_OPEN)}</p>")
    prompt = escape(ask.prompt).replace("\n", "<br>")
    how = E.ANSWER if ask.kind is AskKind.TEXT else E.CHOOSE
    parts.append(f'<p style="font-size:1.1rem">{prompt}</p>')
    parts.append(f"<p>{escape(about_line(ask, str))}</p>")
    parts.append(f'<p style="{_MUTED}">{escape(how)}</p>')
    for line in links:
        if line.cancel:
            parts.append(f'<p style="{_MUTED}">{escape(E.CANCEL_HINT)}</p>')
        style = _CANCEL if line.cancel else _CHOICE
        parts.append(f'<p><a href="{escape(line.url)}" style="{style}">{escape(line.label)}</a></p>')
    footer = E.AS_WHO.format(address=address)
    parts.append(f'<p style="{_MUTED}">{escape(footer)}</p></div>')
    return "\n".join(parts)


def note_html(text: str) -> str:
    """The HTML of a follow-up that is a line alone (the close)."""
    return f'<div style="{_BODY}"><p>{escape(text)}</p></div>'


def compose(
    *,
    sender: str,
    to: str,
    subject: str,
    msg_id: str,
    text: str,
    html: str,
    thread: str | None = None,
) -> EmailMessage:
    """One message: ``text`` and ``html`` as alternatives, ``thread`` the Message-ID it follows."""
    message = EmailMessage()
    message["From"] = sender
    message["To"] = to
    message["Subject"] = subject
    message["Message-ID"] = msg_id
    message["Date"] = format_datetime(datetime.now().astimezone())
    message["Auto-Submitted"] = "auto-generated"  # no auto-replies (RFC 3834)
    if thread is not None:
        message["In-Reply-To"] = thread
        message["References"] = thread
    message.set_content(text)
    message.add_alternative(html, subtype="html")
    return message


def ask_email(
    ask: Ask,
    address: str,
    *,
    sender: str,
    signer: LinkSigner,
    public_url: str,
    msg_id: str,
    thread: str | None = None,
    lead: str | None = None,
) -> EmailMessage:
    """The email of open ``ask`` to ``address``, with its links; a follow-up in the thread
    of ``thread`` when given (``lead``, the reminder's or the escalation's line, first)."""
    links = links_of(ask, address, signer, public_url)
    subject = subject_of(ask)
    return compose(
        sender=sender,
        to=address,
        subject=E.SUBJECT_REPLY.format(subject=subject) if thread else subject,
        msg_id=msg_id,
        text=_text(ask, address, links, lead),
        html=_html(ask, address, links, lead),
        thread=thread,
    )
