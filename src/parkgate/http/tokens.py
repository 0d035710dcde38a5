"""Who may call ``/v1``: bearer tokens, each with a name, scopes and optional limits.

Scopes (a route names the one it needs with :func:`needs`):

- ``park``: park asks (``POST /v1/asks``, start a workflow) and read the asks it parked;
- ``answer``: post messages to conversations;
- ``read``: list and read asks, runs and workflows;
- ``operate``: cancel asks and finish runs (what the console's Cancel buttons need).

A server has no token (every caller may do everything; only on loopback, or with
``--insecure-no-token``), one token with every scope (``PARKGATE_TOKEN``, or a file
named by ``PARKGATE_TOKEN_FILE``), or named tokens from a TOML file
(``PARKGATE_TOKENS_FILE``) that holds only their SHA-256 hashes::

    [[token]]
    name = "chat-surface"
    sha256 = "<hex SHA-256 of the token>"
    scopes = ["answer"]
    max_open_asks = 1000   # optional: a cap on this token's open asks
    rate_per_second = 50   # optional: requests a second, per server process
    sender = "U_ALICE"     # optional: every message this token posts is from this sender
    channels = ["slack:C0OPS", "telegram:-100777"]  # optional: where its asks may be posted

``channels`` holds glob patterns (:func:`fnmatch.fnmatchcase`) over ``<channel>:<target>``:
a Slack channel id (``slack:C0OPS``, ``slack:*``), a Telegram chat id
(``telegram:-100777``). A named token without the key posts to no channel; the single
token (``PARKGATE_TOKEN``, no owner) and a server without tokens post anywhere.

A presented token is hashed and looked up; the token itself is never stored or logged.
The server re-reads a tokens file when it changes (:mod:`parkgate.http.token_watch`):
removing a token from it revokes that token within about a second.
"""

from __future__ import annotations

import fnmatch
import hashlib
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from parkgate.core.model import Ask
from parkgate.errors import InputError
from parkgate.errors import Scope as Scope  # a 403 names the one it lacked: defined with the errors
from parkgate.errors import TokenFileError as TokenFileError
from parkgate.gateway.checks import check_id

ALL_SCOPES: frozenset[Scope] = frozenset(Scope)

_HEX_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_TOKEN_KEYS = {"name", "sha256", "scopes", "max_open_asks", "rate_per_second", "sender", "channels"}
#: The longest ``channels`` pattern a tokens file may hold.
MAX_CHANNEL_PATTERN_CHARS = 200


@dataclass(frozen=True)
class Caller:
    """Who a request comes from: a token's name, its scopes and limits.

    ``owner`` is the name recorded on the asks this caller parks (``None`` when asks
    need no owner: no token, or the single all-scopes token). ``sender``: the one sender
    this token speaks for (every message it posts is from them); ``None`` lets a surface
    that relays many people name each message's sender. ``channels``: the patterns of the
    channel targets its asks may be posted to (:meth:`may_post_to`); ``None`` for anywhere.
    """

    name: str
    scopes: frozenset[Scope]
    owner: str | None = None
    max_open_asks: int | None = None
    rate_per_second: float | None = None
    sender: str | None = None
    channels: tuple[str, ...] | None = None

    def may(self, scope: Scope) -> bool:
        return scope in self.scopes

    @property
    def tenant(self) -> str | None:
        """The owner whose asks alone this caller reads in the history, the event log, the
        stats and the export: a tenant (a named token with the ``park`` scope and not
        ``operate``) reads its own asks; an operator, a read-only auditor, the single
        token and a server without tokens read every owner's (``None``)."""
        parks = self.owner is not None and Scope.PARK in self.scopes and Scope.OPERATE not in self.scopes
        return self.owner if parks else None

    def sees(self, ask: Ask) -> bool:
        """Whether this caller may read ``ask``'s history and events (:attr:`tenant`)."""
        tenant = self.tenant
        return tenant is None or ask.owner == tenant

    def may_post_to(self, target: str) -> bool:
        """Whether this caller's asks may be posted to ``target`` (``"slack:C0OPS"``): one of
        its ``channels`` patterns matches it, or it has none to keep to (``None``)."""
        if self.channels is None:
            return True
        return any(fnmatch.fnmatchcase(target, pattern) for pattern in self.channels)


#: Every request on a server without a token.
ANONYMOUS = Caller("anonymous", ALL_SCOPES)

#: The attribute :func:`needs` sets on a route's endpoint, where the guard reads it.
NEED_ATTRIBUTE = "__parkgate_need__"
Endpoint = TypeVar("Endpoint", bound=Callable[..., Any])


@dataclass(frozen=True)
class Need:
    """The scope a route needs; ``or_owner``: a ``park`` caller may also use it on the
    asks it parked (the route checks which ask)."""

    scope: Scope
    or_owner: bool = False


def needs(scope: Scope, *, or_owner: bool = False) -> Callable[[Endpoint], Endpoint]:
    """Mark a route's endpoint with the scope it needs; the guard enforces it before the body is read.

    Args:
        scope: the scope a caller must hold.
        or_owner: a ``park`` caller may also use the route (on the asks it parked).

    Returns:
        The decorator, which returns the endpoint unchanged but for the mark.
    """

    def mark(endpoint: Endpoint) -> Endpoint:
        setattr(endpoint, NEED_ATTRIBUTE, Need(scope, or_owner))
        return endpoint

    return mark


def digest(token: str | bytes) -> str:
    """The hex SHA-256 of a token (what a tokens file holds): ``printf %s "$TOKEN" | sha256sum``."""
    raw = token.encode("utf-8") if isinstance(token, str) else token
    return hashlib.sha256(raw).hexdigest()


class Tokens:
    """The tokens a server accepts, looked up by the SHA-256 of what a request presents."""

    def __init__(self, callers: Mapping[str, Caller]) -> None:
        if not callers:
            raise ValueError("a token set needs at least one token")
        self._by_digest = dict(callers)

    @classmethod
    def single(cls, token: str) -> Tokens:
        """One token with every scope and no limits (``PARKGATE_TOKEN``)."""
        checked = check_token(token, "the token")
        return cls({digest(checked): Caller("token", ALL_SCOPES)})

    @classmethod
    def from_file(cls, path: str | Path) -> Tokens:
        """Named tokens from a TOML file of ``[[token]]`` tables (see the module docstring)."""
        where = Path(path)
        try:
            data = tomllib.loads(where.read_text(encoding="utf-8"))
        except OSError as error:
            raise TokenFileError(f"the tokens file {where} cannot be read: {error.strerror or error}") from None
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
            raise TokenFileError(f"the tokens file {where} is not valid TOML: {error}") from None
        try:
            return cls.from_tables(data)
        except ValueError as error:
            raise TokenFileError(f"the tokens file {where}: {error}") from None

    @classmethod
    def from_tables(cls, data: Mapping[str, Any]) -> Tokens:
        """Named tokens from a parsed tokens file (``{"token": [{...}, ...]}``)."""
        extra = set(data) - {"token"}
        if extra:
            raise ValueError(f"unknown top-level key(s) {sorted(extra)}: only [[token]] tables belong here")
        tables = data.get("token")
        if not isinstance(tables, list) or not tables:
            raise ValueError("it holds no [[token]] table")
        callers: dict[str, Caller] = {}
        names: set[str] = set()
        for number, table in enumerate(tables, start=1):
            caller, hashed = _caller(table, number)
            if caller.name in names:
                raise ValueError(f"token {number}: the name {caller.name!r} is used twice")
            if hashed in callers:
                raise ValueError(f"token {number} ({caller.name}): the same sha256 as {callers[hashed].name!r}")
            names.add(caller.name)
            callers[hashed] = caller
        return cls(callers)

    def identify(self, presented: bytes) -> Caller | None:
        """The caller whose token is ``presented``, or ``None``."""
        return self._by_digest.get(digest(presented))

    @property
    def callers(self) -> Iterable[Caller]:
        return self._by_digest.values()

    @property
    def by_digest(self) -> Mapping[str, Caller]:
        """Each caller by the hex SHA-256 of its token (what the tokens file holds)."""
        return self._by_digest


def check_token(token: str, what: str) -> str:
    """``token`` as a header carries it: printable ASCII without spaces, not blank.

    Surrounding whitespace (a file's trailing newline) is dropped first.
    """
    stripped = token.strip()
    if not stripped:
        raise ValueError(f"{what} is blank: give a real token, or none to serve without one")
    if not (stripped.isascii() and stripped.isprintable()) or any(c.isspace() for c in stripped):
        raise ValueError(f"{what} must be printable ASCII without spaces (it travels in an HTTP header)")
    return stripped


def _caller(table: object, number: int) -> tuple[Caller, str]:
    if not isinstance(table, dict):
        raise ValueError(f"token {number} is not a table")
    unknown = set(table) - _TOKEN_KEYS
    if unknown:
        raise ValueError(
            f"token {number}: unknown key(s) {sorted(unknown)} (the file holds only name, sha256, scopes, "
            "max_open_asks, rate_per_second, sender and channels: never the token itself)"
        )
    name = table.get("name")
    if not isinstance(name, str) or not name.strip() or not name.isprintable():
        raise ValueError(f"token {number}: name must be a non-empty string")
    hashed = table.get("sha256")
    if not isinstance(hashed, str) or not _HEX_SHA256.match(hashed.lower()):
        raise ValueError(f"token {number} ({name}): sha256 must be 64 hex digits (printf %s TOKEN | sha256sum)")
    scopes = table.get("scopes")
    if not isinstance(scopes, list) or not scopes:
        raise ValueError(f"token {number} ({name}): scopes must be a non-empty list of {_scope_names()}")
    bad = [scope for scope in scopes if scope not in {s.value for s in Scope}]
    if bad:
        raise ValueError(f"token {number} ({name}): unknown scope(s) {bad}; the scopes are {_scope_names()}")
    cap = table.get("max_open_asks")
    if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 1):
        raise ValueError(f"token {number} ({name}): max_open_asks must be a whole number of at least 1")
    rate = table.get("rate_per_second")
    if rate is not None and (isinstance(rate, bool) or not isinstance(rate, (int, float)) or not rate > 0):
        raise ValueError(f"token {number} ({name}): rate_per_second must be a number above 0")
    sender = table.get("sender")
    if sender is not None:
        try:
            check_id(sender, "sender")
        except InputError as error:
            raise ValueError(f"token {number} ({name}): {error}") from None
    channels = _channels(table.get("channels", []), f"token {number} ({name})")
    caller = Caller(
        name=name,
        scopes=frozenset(Scope(scope) for scope in scopes),
        owner=name,
        max_open_asks=cap,
        rate_per_second=None if rate is None else float(rate),
        sender=sender,
        channels=channels,
    )
    return caller, hashed.lower()


def _channels(value: object, which: str) -> tuple[str, ...]:
    """A table's ``channels``: a list of ``<channel>:<target>`` glob patterns (empty: no channel)."""
    if not isinstance(value, list):
        raise ValueError(f'{which}: channels must be a list of patterns, such as ["slack:C0OPS", "telegram:-100777"]')
    for pattern in value:
        if (
            not isinstance(pattern, str)
            or ":" not in pattern
            or len(pattern) > MAX_CHANNEL_PATTERN_CHARS
            or not pattern.isprintable()
            or any(c.isspace() for c in pattern)
        ):
            raise ValueError(
                f"{which}: each of channels must be '<channel>:<target>' (globs allowed, at most "
                f"{MAX_CHANNEL_PATTERN_CHARS} characters, no spaces), such as 'slack:C0OPS' or 'telegram:*'; "
                f"not {pattern!r}"
            )
    return tuple(value)


def _scope_names() -> str:
    return ", ".join(scope.value for scope in Scope)


__all__ = [
    "ALL_SCOPES",
    "ANONYMOUS",
    "NEED_ATTRIBUTE",
    "Caller",
    "Need",
    "Scope",
    "TokenFileError",
    "Tokens",
    "check_token",
    "digest",
    "needs",
]
