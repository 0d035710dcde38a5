"""The HTTP service's security settings, read once from the environment at start.

- ``PARKGATE_TOKEN``: one bearer token with every scope; ``PARKGATE_TOKEN_FILE``: a file
  holding it (kept out of argv and of the environment of other tools); or
  ``PARKGATE_TOKENS_FILE``: named, scoped tokens (:mod:`parkgate.http.tokens`), re-read
  when the file changes (:mod:`parkgate.http.token_watch`). At most one of the three. A
  token that is set but blank is an error, never "no auth".
- ``PARKGATE_ALLOWED_HOSTS``: more ``Host`` names the server answers to (comma-separated),
  besides ``localhost``, loopback addresses and the address a connection arrived at.
- ``PARKGATE_CALLBACK_ALLOW``: internal callback receivers allowed on purpose
  (:func:`parkgate.core.fence.parse_allow_list`).
- ``PARKGATE_DIRECTORY``: a JSON or TOML file of sender id to display name, which the
  console shows in place of ids (:func:`load_directory`, :mod:`parkgate.core.directory`).
- ``PARKGATE_DB``, ``PARKGATE_PG_SCHEMA``, ``PARKGATE_PG_TIMEOUT``: the store the server
  runs on (:func:`store_from_env`).
"""

from __future__ import annotations

import dataclasses
import ipaddress
import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from parkgate.core.directory import ENV_DIRECTORY, Directory, parse_directory
from parkgate.core.fence import ENV_CALLBACK_ALLOW, AllowList, parse_allow_list
from parkgate.errors import SettingsError as SettingsError
from parkgate.http.guard import host_of
from parkgate.http.token_watch import WatchedTokens
from parkgate.http.tokens import Tokens, check_token
from parkgate.store import DEFAULT_URL, ENV_PG_SCHEMA, Store, is_postgres_url, open_store

ENV_TOKEN = "PARKGATE_TOKEN"
ENV_TOKEN_FILE = "PARKGATE_TOKEN_FILE"
ENV_TOKENS_FILE = "PARKGATE_TOKENS_FILE"
ENV_ALLOWED_HOSTS = "PARKGATE_ALLOWED_HOSTS"
ENV_DB = "PARKGATE_DB"
ENV_PG_TIMEOUT = "PARKGATE_PG_TIMEOUT"
#: How long the server waits for a PostgreSQL connection, in seconds, before a request gets
#: its 503 (the library's :class:`~parkgate.store.postgres.PostgresStore` waits 10 s).
SERVER_PG_TIMEOUT_SECONDS = 3.0
#: The longest acquisition timeout the server accepts, in seconds.
MAX_PG_TIMEOUT_SECONDS = 600.0

#: The warning ``serve`` prints when it serves a non-loopback address without a token.
NO_TOKEN_WARNING = (
    "WARNING: parkgate is serving {host} WITHOUT A TOKEN (--insecure-no-token): anyone who can reach "
    "this address can park, answer, read and cancel every ask. Set PARKGATE_TOKEN, --token-file or "
    "PARKGATE_TOKENS_FILE unless another layer guards it."
)


@dataclass(frozen=True)
class Settings:
    """What the guard and the routes enforce.

    ``tokens`` ``None`` means no auth: every request may do everything.
    """

    tokens: Tokens | None = None
    allowed_hosts: frozenset[str] = field(default_factory=frozenset)
    callback_allow: AllowList = field(default_factory=AllowList)
    #: The display names the console shows for sender ids (``GET /v1/directory``).
    directory: Directory = field(default_factory=Directory)


def settings_from_env(environ: Mapping[str, str] | None = None) -> Settings:
    """The settings the environment names (see the module docstring); :class:`SettingsError`
    for one the server must not start with."""
    env = os.environ if environ is None else environ
    token = env.get(ENV_TOKEN)
    token_file = env.get(ENV_TOKEN_FILE, "").strip() or None
    tokens_file = env.get(ENV_TOKENS_FILE, "").strip() or None
    given = [
        name
        for name, value in ((ENV_TOKEN, token), (ENV_TOKEN_FILE, token_file), (ENV_TOKENS_FILE, tokens_file))
        if value
    ]
    if len(given) > 1:
        raise SettingsError(f"give one of {', '.join(given)}, not several")
    try:
        tokens: Tokens | None = None
        if token:
            tokens = Tokens.single(check_token(token, ENV_TOKEN))
        elif token_file:
            tokens = Tokens.single(read_token_file(token_file))
        elif tokens_file:
            tokens = WatchedTokens(tokens_file)
        allowed = parse_hosts(env.get(ENV_ALLOWED_HOSTS, ""))
        callback_allow = parse_allow_list(env.get(ENV_CALLBACK_ALLOW))
        directory = directory_from_env(env)
    except SettingsError:
        raise
    except ValueError as error:
        raise SettingsError(str(error)) from None
    return Settings(tokens=tokens, allowed_hosts=allowed, callback_allow=callback_allow, directory=directory)


def directory_from_env(environ: Mapping[str, str] | None = None) -> Directory:
    """The directory ``PARKGATE_DIRECTORY`` names (:func:`load_directory`); empty when unset."""
    env = os.environ if environ is None else environ
    path = env.get(ENV_DIRECTORY, "").strip()
    return load_directory(path) if path else Directory()


def load_directory(path: str | Path) -> Directory:
    """The directory file at ``path``: JSON, or TOML when its name ends ``.toml``
    (:func:`parkgate.core.directory.parse_directory`).

    Raises:
        SettingsError: It cannot be read or is not a directory; the message names
            ``PARKGATE_DIRECTORY``, the file and what is wrong.
    """
    where = Path(path)
    try:
        text = where.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reason = getattr(error, "strerror", None) or error
        raise SettingsError(f"{ENV_DIRECTORY}: the file {where} cannot be read: {reason}") from None
    try:
        return parse_directory(text, toml=where.suffix.lower() == ".toml")
    except ValueError as error:
        raise SettingsError(f"{ENV_DIRECTORY}: {where} is not a directory of sender id to name: {error}") from None


def with_token(settings: Settings, token: str | None) -> Settings:
    """``settings`` plus ``token`` as one token with every scope (``None`` or ``""``: unchanged).

    :class:`SettingsError` when ``settings`` already has tokens, or for a blank token.
    """
    if token is None or token == "":
        return settings
    if settings.tokens is not None:
        raise SettingsError("give token or settings with tokens, not both")
    try:
        return dataclasses.replace(settings, tokens=Tokens.single(token))
    except ValueError as error:
        raise SettingsError(str(error)) from None


def read_token_file(path: str | Path) -> str:
    """The token a file holds (surrounding whitespace dropped); blank is an error."""
    where = Path(path)
    try:
        text = where.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reason = getattr(error, "strerror", None) or error
        raise SettingsError(f"the token file {where} cannot be read: {reason}") from None
    try:
        return check_token(text, f"the token in {where}")
    except ValueError as error:
        raise SettingsError(str(error)) from None


def parse_hosts(text: str) -> frozenset[str]:
    """``Host`` names from a comma-separated list, compared without port, case or brackets."""
    hosts: set[str] = set()
    for raw in text.split(","):
        entry = raw.strip()
        if not entry:
            continue
        host = host_of(entry)
        if not host or any(c.isspace() or c in "/@?#" for c in host):
            raise SettingsError(f"{ENV_ALLOWED_HOSTS}: {entry!r} is not a host name or address")
        hosts.add(host)
    return frozenset(hosts)


def is_loopback_host(host: str) -> bool:
    """Whether every address ``host`` names is loopback (``localhost``, ``127.0.0.1``, ``::1``)."""
    bare = host_of(host) if host else ""
    if not bare:
        return False
    try:
        return ipaddress.ip_address(bare).is_loopback
    except ValueError:
        pass
    try:
        found = socket.getaddrinfo(bare, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return False
    return bool(found) and all(ipaddress.ip_address(str(entry[4][0]).split("%")[0]).is_loopback for entry in found)


def check_exposure(host: str, settings: Settings, insecure_no_token: bool) -> str | None:
    """Refuse to serve a non-loopback ``host`` without a token.

    Returns the loud warning to print when ``insecure_no_token`` allows it anyway,
    ``None`` when there is nothing to warn about; raises :class:`SettingsError` otherwise.
    """
    if settings.tokens is not None or is_loopback_host(host):
        return None
    if not insecure_no_token:
        raise SettingsError(
            f"refusing to serve {host or 'every address'} without a token: anyone who can reach it could act on "
            "every ask. Set PARKGATE_TOKEN, --token-file or PARKGATE_TOKENS_FILE, serve 127.0.0.1, or pass "
            "--insecure-no-token if another layer guards this address"
        )
    return NO_TOKEN_WARNING.format(host=host or "every address")


def _env(name: str) -> str | None:
    value = os.environ.get(name, "").strip()
    return value or None


def parse_pg_timeout(value: str | float) -> float:
    """A PostgreSQL acquisition timeout in seconds: a number above 0 and at most 600."""
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = float("nan")
    if not 0 < seconds <= MAX_PG_TIMEOUT_SECONDS:  # also refuses nan
        raise ValueError(
            f"the PostgreSQL timeout must be a number of seconds above 0 and at most "
            f"{MAX_PG_TIMEOUT_SECONDS:g}, not {value!r}"
        )
    return seconds


def open_server_store(url: str | None = None, *, schema: str | None = None, pg_timeout: float | None = None) -> Store:
    """The store the HTTP server runs on (the one place the server opens its store).

    On PostgreSQL, ``schema`` picks the schema, and a request waits at most
    ``pg_timeout`` seconds (default :data:`SERVER_PG_TIMEOUT_SECONDS`) for a connection
    before it fails with :class:`~parkgate.store.StoreUnavailable` (a 503): during an
    outage a request fails fast instead of hanging. Both are ignored on SQLite. Opening
    migrates.
    """
    url = url or DEFAULT_URL
    if not is_postgres_url(url):
        return open_store(url)
    timeout = SERVER_PG_TIMEOUT_SECONDS if pg_timeout is None else parse_pg_timeout(pg_timeout)
    return open_store(url, schema=schema, timeout=timeout)


def store_from_env() -> Store:
    """The store ``PARKGATE_DB`` names (default ``sqlite:///parkgate.db``).

    ``PARKGATE_PG_SCHEMA`` puts a PostgreSQL store in that schema, and
    ``PARKGATE_PG_TIMEOUT`` (seconds, default 3) bounds the wait for a connection.
    ``parkgate serve`` migrates through this before it starts its workers, and every
    worker opens its store through it, so both land in the same schema.
    """
    timeout = _env(ENV_PG_TIMEOUT)
    try:
        pg_timeout = None if timeout is None else parse_pg_timeout(timeout)
    except ValueError as error:
        raise ValueError(f"{ENV_PG_TIMEOUT}: {error}") from None
    return open_server_store(_env(ENV_DB), schema=_env(ENV_PG_SCHEMA), pg_timeout=pg_timeout)


__all__ = [
    "ENV_ALLOWED_HOSTS",
    "ENV_CALLBACK_ALLOW",
    "ENV_DB",
    "ENV_DIRECTORY",
    "ENV_PG_SCHEMA",
    "ENV_PG_TIMEOUT",
    "ENV_TOKEN",
    "ENV_TOKENS_FILE",
    "ENV_TOKEN_FILE",
    "SERVER_PG_TIMEOUT_SECONDS",
    "Settings",
    "SettingsError",
    "check_exposure",
    "directory_from_env",
    "host_of",
    "is_loopback_host",
    "load_directory",
    "open_server_store",
    "parse_pg_timeout",
    "settings_from_env",
    "store_from_env",
    "with_token",
]
