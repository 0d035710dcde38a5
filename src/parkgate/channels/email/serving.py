"""The pages of the email channel in ``parkgate serve``: ``GET /email/l/{token}`` (what a
link opens) and ``POST /email/confirm`` (the page's button), and the channel itself.

**A GET never records anything.** Mail scanners (Safe Links, Mimecast, Proofpoint), chat
link previews and browsers' prefetch fetch every URL in a message; a link's page only
reads the ask and shows the question, the choice and a button. The button POSTs the
link's token with a CSRF token bound to it (:meth:`~parkgate.channels.email.links.LinkSigner.csrf`),
and only that POST hands the choice to the gateway, with the link's address as the sender
and a message id of the link's own (the same confirmation twice counts once).

A link that is not one this server signed as it is (another option, ask, address or
expiry written into it) is a 403 page; one used after the expiry it binds is a 410 page;
the link of a closed ask says how and when it closed. Nothing is recorded by any of them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlsplit

import anyio
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from parkgate.channels.email import phrases as E
from parkgate.channels.email.channel import EmailChannel
from parkgate.channels.email.links import ANSWER, CANCEL, Link, event_id
from parkgate.channels.email.messages import when
from parkgate.channels.email.pages import (
    CONFIRM_PATH,
    HEADERS,
    LINK_PATH,
    STYLE,
    STYLE_PATH,
    answer_page,
    confirm_page,
    outcome_page,
)
from parkgate.channels.email.settings import email_settings
from parkgate.channels.lines import already_closed_line, votes_line
from parkgate.channels.serving import ServedChannel
from parkgate.core.kinds import AskKind, ReplyKind
from parkgate.core.model import Ask
from parkgate.core.phrases import CANCEL_WORD
from parkgate.errors import InputError, UnknownAsk

if TYPE_CHECKING:
    from parkgate.gateway import Gateway


def sending(environ: Mapping[str, str]) -> EmailChannel:
    """The channel alone, for sending (``parkgate deliver``): its links are signed and
    point at the pages, so it needs every setting the pages need.

    Raises:
        SettingsError: A setting is missing or bad; the message names it.
    """
    return EmailChannel(email_settings(environ))


@dataclass(frozen=True)
class Shown:
    """A page and its status."""

    status: int
    html: str


class EmailPages:
    """The link's page and the confirm button's POST, for one gateway and one channel."""

    def __init__(self, gateway: Gateway, channel: EmailChannel) -> None:
        self.gateway = gateway
        self.signer = channel.signer
        self.root = urlsplit(channel.settings.public_url).path.rstrip("/")

    async def link(self, request: Request) -> Response:
        """``GET /email/l/{token}``: the link's page; it records nothing."""
        return _html(await anyio.to_thread.run_sync(self.show, request.path_params["token"]))

    async def confirm(self, request: Request) -> Response:
        """``POST /email/confirm``: the confirmed choice, handed to the gateway."""
        form = parse_qs((await request.body()).decode("utf-8", "replace"), max_num_fields=8)
        token, csrf, text = (form.get(name, [""])[0] for name in ("t", "csrf", "text"))
        return _html(await anyio.to_thread.run_sync(self.record, token, csrf, text))

    async def style(self, _: Request) -> Response:
        """``GET /email/email.css``: the pages' own rules."""
        return Response(STYLE, media_type="text/css", headers={"Cache-Control": "max-age=3600"})

    def _open(self, token: str, answer: str | None = None) -> tuple[Link, Ask] | Shown:
        """The link and its open ask, or the page that says why it answers nothing. With
        ``answer`` (the confirmation's POST), a closed ask's is logged as a late answer."""
        try:
            link = self.signer.read(token)
        except InputError as error:
            return Shown(403, outcome_page(None, E.BAD_LINK.format(why=error), refused=True, root=self.root))
        try:
            ask = self.gateway.get(link.ask_id)
        except (UnknownAsk, InputError):
            return Shown(404, outcome_page(None, E.NO_ASK, refused=True, root=self.root))
        if not ask.is_open:
            if answer is not None:  # a confirmation of a closed ask's choice: late, and logged so
                ask = self._late(ask, link, token, answer)
            return Shown(
                409, outcome_page(ask.prompt, already_closed_line(ask, mention=str), refused=True, root=self.root)
            )
        if self.gateway.clock.now() >= link.expires_at:
            line = E.EXPIRED_LINK.format(when=when(link.expires_at))
            return Shown(410, outcome_page(ask.prompt, line, refused=True, root=self.root))
        if _label(ask, link) is None:
            why = "it names a choice the question does not have"
            return Shown(403, outcome_page(None, E.BAD_LINK.format(why=why), refused=True, root=self.root))
        return link, ask

    def show(self, token: str) -> Shown:
        """The page a link opens: the question, the choice and its button (a GET: nothing is written)."""
        opened = self._open(token)
        if isinstance(opened, Shown):
            return opened
        link, ask = opened
        csrf = self.signer.csrf(token)
        if link.choice == ANSWER:
            return Shown(200, answer_page(ask.prompt, link, token, csrf, root=self.root))
        return Shown(200, confirm_page(ask.prompt, link, _label(ask, link) or "", token, csrf, root=self.root))

    def record(self, token: str, csrf: str, text: str) -> Shown:
        """The confirm button's POST: the choice handed to the gateway, as the link's address."""
        # A closed ask's confirmation is logged as late only from the link's own page (its form's check).
        opened = self._open(token, text if self.signer.check_csrf(token, csrf) else None)
        if isinstance(opened, Shown):
            return opened
        link, ask = opened
        if not self.signer.check_csrf(token, csrf):
            return Shown(403, outcome_page(ask.prompt, E.BAD_FORM, refused=True, root=self.root))
        said = _said(link, text)
        if not said.strip():
            return Shown(200, answer_page(ask.prompt, link, token, self.signer.csrf(token), root=self.root))
        try:
            reply = self.gateway.handle_in_channel(
                ask.conversation_id, said, event_id(token, said), link.address, ask_id=ask.id
            )
        except InputError as error:
            return Shown(422, outcome_page(ask.prompt, str(error), refused=True, root=self.root))
        if reply.kind in (ReplyKind.LATE, ReplyKind.PASS):  # closed between the read and the confirmation
            line = already_closed_line(self.gateway.get(ask.id), mention=str)
            return Shown(409, outcome_page(ask.prompt, line, refused=True, root=self.root))
        if reply.kind in (ReplyKind.RETRY, ReplyKind.ESCALATED) and link.choice == ANSWER:
            csrf = self.signer.csrf(token)
            return Shown(200, answer_page(ask.prompt, link, token, csrf, said=reply.text, root=self.root))
        refused = reply.kind is ReplyKind.NOT_YOURS
        note = f"{E.YOUR_ANSWER}: {said}" if reply.kind is ReplyKind.ANSWERED else None
        if reply.kind is ReplyKind.VOTED:  # the votes so far, each option's voters named
            note = votes_line(self.gateway.get(ask.id), mention=str)
        page = outcome_page(ask.prompt, reply.text, refused=refused, note=note, root=self.root)
        return Shown(403 if refused else 200, page)

    def _late(self, ask: Ask, link: Link, token: str, text: str) -> Ask:
        """Hand the link's confirmed choice to closed ``ask`` (the gateway logs it as a late
        answer; a resubmitted form's is its first reply again); the ask as it closed."""
        said = _said(link, text)
        if said.strip():
            with contextlib.suppress(InputError):  # text no ask takes: nothing to log
                self.gateway.handle_in_channel(
                    ask.conversation_id, said, event_id(token, said), link.address, ask_id=ask.id
                )
        return self.gateway.get(ask.id)


def _label(ask: Ask, link: Link) -> str | None:
    """What ``link`` chooses on ``ask`` (``None``: nothing it has)."""
    if link.choice == CANCEL:
        return CANCEL
    if link.choice == ANSWER:
        return ANSWER if ask.kind is AskKind.TEXT else None
    number = link.option_number
    if ask.kind is AskKind.TEXT or number is None or not 1 <= number <= len(ask.options):
        return None
    return ask.options[number - 1]


def _said(link: Link, text: str) -> str:
    """What the confirmation says to the gateway: the option's number, ``/cancel``, or the typed answer."""
    if link.choice == CANCEL:
        return "/" + CANCEL_WORD
    if link.choice == ANSWER:
        return text
    return link.choice


def _html(shown: Shown) -> Response:
    return HTMLResponse(shown.html, status_code=shown.status, headers=HEADERS)


def serve(gateway: Gateway, environ: Mapping[str, str]) -> ServedChannel:
    """The email channel and its pages, from ``PARKGATE_SMTP_URL``, ``PARKGATE_EMAIL_*``
    and ``PARKGATE_PUBLIC_URL``.

    Args:
        gateway: The gateway the asks are parked in.
        environ: The environment.

    Returns:
        The channel, ``GET /email/l/{token}``, ``POST /email/confirm`` and ``GET /email/email.css``.

    Raises:
        SettingsError: A setting is missing or bad; the message names it.
    """
    channel = sending(environ)
    pages = EmailPages(gateway, channel)
    routes = [
        Route(LINK_PATH + "{token}", pages.link, methods=["GET"]),
        Route(CONFIRM_PATH, pages.confirm, methods=["POST"]),
        Route(STYLE_PATH, pages.style, methods=["GET"]),
    ]
    return ServedChannel(channel, routes, frozenset({CONFIRM_PATH}))
