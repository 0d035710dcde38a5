"""The email channel's settings, read from the environment and checked at start, so a
half configuration stops ``parkgate serve`` (and ``parkgate deliver``) with the name of
what is missing, never a send that fails later.

``PARKGATE_SMTP_URL`` is ``smtp://[user[:password]@]host[:port]`` (port 587; the
connection is upgraded with STARTTLS, and a server that does not offer it is refused) or
``smtps://...`` (port 465; TLS from the first byte). ``?starttls=off`` on an ``smtp://``
URL sends in the clear, for a relay on the same host. The user and password may instead
be ``PARKGATE_SMTP_USER`` and ``PARKGATE_SMTP_PASSWORD`` (percent-escapes in the URL are
decoded). ``PARKGATE_EMAIL_FROM`` is the sender, ``PARKGATE_EMAIL_SECRET`` the key the
links are signed with (``whsec_`` + base64, as strong as a webhook secret), and
``PARKGATE_PUBLIC_URL`` the base the links point at.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass
from email.headerregistry import Address
from email.utils import parseaddr
from urllib.parse import parse_qs, unquote, urlsplit

from parkgate.channels.email.spec import (
    ENV_FROM,
    ENV_PUBLIC_URL,
    ENV_SECRET,
    ENV_SMTP_PASSWORD,
    ENV_SMTP_URL,
    ENV_SMTP_USER,
)
from parkgate.delivery.signing import check_secret
from parkgate.errors import SettingsError

#: Each scheme's default port.
PORTS = {"smtp": 587, "smtps": 465}


@dataclass(frozen=True)
class SmtpServer:
    """Where and how the emails are sent."""

    host: str
    port: int
    #: TLS from the first byte (``smtps://``).
    tls: bool
    #: Upgrade a plain connection with STARTTLS, refusing a server that does not offer it.
    starttls: bool
    user: str | None = None
    password: str | None = None


@dataclass(frozen=True)
class EmailSettings:
    """Everything the channel needs: its server, its sender, its key and its links' base."""

    smtp: SmtpServer
    sender: str
    #: The link-signing key (the secret's decoded bytes).
    key: bytes
    #: The base the links point at, without a trailing slash.
    public_url: str

    @property
    def domain(self) -> str:
        """The sender's domain: the right-hand side of each Message-ID."""
        return parseaddr(self.sender)[1].rpartition("@")[2]


def smtp_server(environ: Mapping[str, str]) -> SmtpServer:
    """The SMTP server ``PARKGATE_SMTP_URL`` (and its user and password variables) names.

    Raises:
        SettingsError: The URL is not an ``smtp://`` or ``smtps://`` URL with a host, or
            names a user without a password.
    """
    raw = environ.get(ENV_SMTP_URL, "").strip()
    try:
        parts = urlsplit(raw)
        port = parts.port
    except ValueError as error:
        raise SettingsError(f"{ENV_SMTP_URL} is not a URL: {error}") from None
    if parts.scheme not in PORTS or not parts.hostname:
        raise SettingsError(f"{ENV_SMTP_URL} must be smtp://host[:port] (STARTTLS) or smtps://host[:port] (TLS)")
    query = parse_qs(parts.query)
    starttls = query.get("starttls", ["required"])[-1]
    if starttls not in ("required", "off") or (parts.scheme == "smtps" and starttls == "off"):
        raise SettingsError(f"{ENV_SMTP_URL}: starttls is required (the default) or off, on smtp:// only")
    user = unquote(parts.username) if parts.username else environ.get(ENV_SMTP_USER, "").strip() or None
    password = unquote(parts.password) if parts.password is not None else environ.get(ENV_SMTP_PASSWORD) or None
    if user is not None and password is None:
        raise SettingsError(f"the SMTP user {user!r} has no password: put it in {ENV_SMTP_URL} or {ENV_SMTP_PASSWORD}")
    if password is not None and user is None:
        raise SettingsError(f"{ENV_SMTP_PASSWORD} is set without a user: put it in {ENV_SMTP_URL} or {ENV_SMTP_USER}")
    return SmtpServer(
        host=parts.hostname,
        port=port or PORTS[parts.scheme],
        tls=parts.scheme == "smtps",
        starttls=parts.scheme == "smtp" and starttls == "required",
        user=user,
        password=password,
    )


def _sender(environ: Mapping[str, str]) -> str:
    raw = environ.get(ENV_FROM, "").strip()
    if not raw:
        raise SettingsError(f"email needs {ENV_FROM}: the address the asks come from")
    name, address = parseaddr(raw)
    if "@" not in address or any(char in raw for char in "\r\n"):
        raise SettingsError(f"{ENV_FROM} must be an address, such as 'Ask Bot <asks@example.com>', not {raw!r}")
    local, _, domain = address.rpartition("@")
    return str(Address(display_name=name, username=local, domain=domain))


def _key(environ: Mapping[str, str]) -> bytes:
    raw = environ.get(ENV_SECRET, "").strip()
    if not raw:
        raise SettingsError(f"email needs {ENV_SECRET}: the secret its links are signed with")
    try:
        check_secret(raw, ENV_SECRET)
    except ValueError as error:
        raise SettingsError(str(error)) from None
    return base64.b64decode(raw.removeprefix("whsec_"))


def _public_url(environ: Mapping[str, str]) -> str:
    raw = environ.get(ENV_PUBLIC_URL, "").strip()
    if not raw:
        raise SettingsError(f"email needs {ENV_PUBLIC_URL}: the base URL its links point at")
    parts = urlsplit(raw)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
        example = "https://parkgate.example.com"
        raise SettingsError(f"{ENV_PUBLIC_URL} must be an http(s) URL such as {example}, not {raw!r}")
    return raw.rstrip("/")


def email_settings(environ: Mapping[str, str]) -> EmailSettings:
    """The channel's settings from ``environ``, each checked.

    Raises:
        SettingsError: One is missing or bad; the message names it.
    """
    return EmailSettings(smtp_server(environ), _sender(environ), _key(environ), _public_url(environ))
