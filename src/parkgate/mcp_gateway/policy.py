"""The gateway's one file: the downstream servers and the approval rules, read from TOML.

Every mistake is a :class:`~parkgate.errors.ConfigurationError` naming the file and the
line (``gateway.toml, line 12: [[approval]] 1: ttl '10x' is not a duration like 90s, 10m
or 6h``), raised before anything is started. An approval rule's ask options are checked
by the gateway's own checks (:class:`~parkgate.gateway.options.AskOptions`), so a rule
that loads parks.
"""

from __future__ import annotations

import fnmatch
import json
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from parkgate.channels.base import ChannelTarget, check_target
from parkgate.core import phrases as P
from parkgate.core import stopping_point
from parkgate.core.kinds import AskKind
from parkgate.core.shape import Form, declared_options
from parkgate.errors import ConfigurationError, InputError
from parkgate.gateway.checks import check_duration, check_sender
from parkgate.gateway.options import AskOptions, ParkFields, PostFields

#: How long one call is held open before it returns "pending", when a rule does not say:
#: under the 60 s tool timeout of common MCP clients.
DEFAULT_HOLD = timedelta(seconds=50)
#: Argument names (globs, any case) whose values are never shown, when the file does not say.
DEFAULT_REDACT = ("*password*", "*passwd*", "*secret*", "*token*", "*api_key*", "*apikey*", "*credential*")
#: How many characters of one argument's value are shown before it is cut.
DEFAULT_VALUE_CHARS = 200
#: The MCP tool annotations a rule may match on, by their names in the spec.
ANNOTATIONS = {
    "readOnlyHint": "read_only_hint",
    "destructiveHint": "destructive_hint",
    "idempotentHint": "idempotent_hint",
    "openWorldHint": "open_world_hint",
}

_SERVER_KEYS = frozenset({"command", "args", "env", "cwd", "url"})
#: The options of every park a single call names: a rule's ask takes the others.
_PER_CALL = frozenset({"run_id", "replace", "key"})
#: A rule's keys that are the ask's options (:mod:`parkgate.gateway.options`): those every
#: park takes but the per-call ones, and the channel to post on, in their declared order,
#: which is the order their checks depend on each other (quorum after responders, the
#: escalation's responders after its time).
_ASK_KEYS = (*(name for name in ParkFields.__annotations__ if name not in _PER_CALL), *PostFields.__annotations__)
#: How a rule's ask option is written in its TOML, by its form: durations as "5m" or seconds.
_FORMS = {name: option.form for name, option in declared_options(ParkFields).items()}
_RULE_KEYS = frozenset(
    {"tools", "annotations", "arguments", "hold", "valid_for", "ask_client", "options", "redact", *_ASK_KEYS}
)
#: The sender a client's own user answers as under ``ask_client = true`` (a rule with
#: responders names one of them instead).
CLIENT_SENDER = "mcp-client"
_TOP_KEYS = frozenset({"servers", "approval", "redact", "max_value_chars"})
_DURATION = re.compile(r"(?:(\d+(?:\.\d+)?)\s*(d|h|m|s|ms))+")
_PART = re.compile(r"(\d+(?:\.\d+)?)\s*(d|h|m|s|ms)")
_UNIT_SECONDS = {"d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
#: A server's name: it prefixes its tools' names where they collide (``ops.deploy``).
_SERVER_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


@dataclass(frozen=True)
class ServerSpec:
    """One downstream MCP server: a command with ``args`` run in ``cwd`` (stdio), or a
    ``url`` (streamable HTTP)."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] | None = None
    cwd: str | None = None
    url: str | None = None


@dataclass(frozen=True)
class Rule:
    """One ``[[approval]]`` table: which calls it holds, and how their ask is parked.

    ``ask_fields`` are :meth:`Gateway.ask <parkgate.Gateway.ask>`'s keyword options
    (responders, quorum, ttl, post_to, reminders), checked when the file is read.
    ``valid_for`` is how long an approval keeps forwarding the identical call (same
    server, tool and arguments) without a new ask; without it, an approval forwards one.
    ``ask_client`` is who the client's own user answers as when the client can show a
    form (MCP elicitation); without it, people answer on parkgate's surfaces alone.
    """

    number: int
    tools: tuple[str, ...]
    annotations: Mapping[str, bool]
    arguments: Mapping[str, str]
    hold: timedelta
    options: tuple[str, ...]
    redact: tuple[str, ...]
    ask_fields: Mapping[str, Any] = field(default_factory=dict)
    #: How long an approval forwards identical calls, from the moment it was given;
    #: ``None``: it forwards exactly one call.
    valid_for: timedelta | None = None
    #: The sender the client's own user answers as, through an MCP elicitation, where the
    #: client declares it; ``None``: only people on parkgate's surfaces answer.
    ask_client: str | None = None

    def applies(self, server: str, tool: str, annotations: Any, arguments: Mapping[str, Any]) -> bool:
        """Whether a call of ``tool`` on ``server`` with ``arguments`` needs this rule's approval.

        Every selector the rule names must hold: a ``tools`` glob matches the tool's own name
        or ``server.tool``; each named annotation has that value; each named argument's
        value, as text, matches its glob.
        """
        names = (tool, f"{server}.{tool}")
        if not any(fnmatch.fnmatchcase(name, glob) for glob in self.tools for name in names):
            return False
        for name, wanted in self.annotations.items():
            if getattr(annotations, ANNOTATIONS[name], None) is not wanted:
                return False
        for name, glob in self.arguments.items():
            if name not in arguments or not fnmatch.fnmatchcase(_as_text(arguments[name]), glob):
                return False
        return True


@dataclass(frozen=True)
class Policy:
    """The whole file: the servers by name and the rules in order (the first that applies wins)."""

    servers: Mapping[str, ServerSpec]
    rules: tuple[Rule, ...]
    max_value_chars: int = DEFAULT_VALUE_CHARS

    def rule_for(self, server: str, tool: str, annotations: Any, arguments: Mapping[str, Any]) -> Rule | None:
        """The first rule that holds this call, or ``None``: the call is forwarded at once."""
        return next((rule for rule in self.rules if rule.applies(server, tool, annotations, arguments)), None)


def load_policy(path: str | Path) -> Policy:
    """Read the gateway's TOML file at ``path``.

    Args:
        path: The file.

    Returns:
        The policy it declares.

    Raises:
        ConfigurationError: The file is missing, is not TOML, or declares something
            unusable; the message names the file and the line.
    """
    source = Path(path)
    try:
        text = source.read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigurationError(f"{source}: cannot read it ({error.strerror or error})") from None
    return parse_policy(text, source.name, source.parent)


def parse_policy(text: str, name: str = "the config", base: Path = Path()) -> Policy:
    """The policy ``text`` declares (:func:`load_policy`'s reading; ``name`` names it in
    errors, and a server's command runs in ``base``, the file's folder)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        found = re.search(r"\(at line (\d+)", str(error))
        line = int(found[1]) if found else max(1, len(text.splitlines()))  # "at end of document"
        raise ConfigurationError(f"{name}, line {line}: not TOML: {error}") from None
    lines = _Lines(text)

    def fail(where: tuple[Any, ...], key: str | None, message: str) -> ConfigurationError:
        return ConfigurationError(f"{name}, line {lines.of(where, key)}: {message}")

    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        raise fail((), unknown[0], f"unknown key {unknown[0]!r}; the file holds {', '.join(sorted(_TOP_KEYS))}")
    servers_data = data.get("servers")
    if not isinstance(servers_data, dict) or not servers_data:
        raise fail((), "servers", "no [servers.NAME] table: name at least one downstream MCP server")
    servers = {key: _server(key, value, base, fail) for key, value in servers_data.items()}
    redact = _globs(data.get("redact", list(DEFAULT_REDACT)), (), "redact", fail)
    max_chars = data.get("max_value_chars", DEFAULT_VALUE_CHARS)
    if isinstance(max_chars, bool) or not isinstance(max_chars, int) or not 10 <= max_chars <= 2000:
        raise fail((), "max_value_chars", "max_value_chars must be a whole number from 10 to 2000")
    rules_data = data.get("approval", [])
    if not isinstance(rules_data, list):
        raise fail((), "approval", "approval rules are [[approval]] tables")
    rules = tuple(_rule(number, value, redact, fail) for number, value in enumerate(rules_data, start=1))
    return Policy(servers, rules, max_chars)


Fail = Any  # (where, key, message) -> ConfigurationError


def _server(name: str, data: object, base: Path, fail: Fail) -> ServerSpec:
    where = ("servers", name)
    if not _SERVER_NAME.fullmatch(name):
        raise fail(where, None, f"server name {name!r}: letters, digits, '_' and '-' only (it prefixes tool names)")
    if not isinstance(data, dict):
        raise fail(where, None, f"servers.{name} must be a table with command (and args) or url")
    unknown = sorted(set(data) - _SERVER_KEYS)
    if unknown:
        raise fail(where, unknown[0], f"servers.{name}: unknown key {unknown[0]!r}")
    command, url = data.get("command"), data.get("url")
    if (command is None) == (url is None):
        raise fail(where, None, f"servers.{name} needs command (a stdio server) or url (streamable HTTP), not both")
    if command is not None and (not isinstance(command, str) or not command.strip()):
        raise fail(where, "command", f"servers.{name}.command must be a program's name or path")
    if url is not None and (not isinstance(url, str) or not url.startswith(("http://", "https://"))):
        raise fail(where, "url", f"servers.{name}.url must be an http:// or https:// URL")
    args = data.get("args", [])
    if not isinstance(args, list) or not all(isinstance(item, str) for item in args):
        raise fail(where, "args", f"servers.{name}.args must be a list of strings")
    if url is not None and (args or "env" in data or "cwd" in data):
        raise fail(where, None, f"servers.{name}: args, env and cwd are for a command, not a url")
    env = _strings(data, "env", where, fail)
    cwd = data.get("cwd", ".")
    if not isinstance(cwd, str):
        raise fail(where, "cwd", f"servers.{name}.cwd must be a folder's path")
    # A command runs in the config file's folder (or cwd, read from there), so that
    # args = ["ops_server.py"] names the file beside the config.
    folder = str((base / cwd).resolve()) if command is not None else None
    return ServerSpec(name, command, tuple(args), env, folder, url)


def _strings(data: Mapping[str, Any], key: str, where: tuple[Any, ...], fail: Fail) -> Mapping[str, str] | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, dict) or not all(isinstance(item, str) for item in value.values()):
        raise fail(where, key, f"{key} must be a table of strings")
    return dict(value)


def _rule(number: int, data: object, redact: tuple[str, ...], fail: Fail) -> Rule:
    where = ("approval", number)
    label = f"[[approval]] {number}"
    if not isinstance(data, dict):
        raise fail(where, None, f"{label} must be a table")
    unknown = sorted(set(data) - _RULE_KEYS)
    if unknown:
        raise fail(
            where, unknown[0], f"{label}: unknown key {unknown[0]!r}; a rule takes {', '.join(sorted(_RULE_KEYS))}"
        )
    if "tools" not in data and "annotations" not in data:
        raise fail(where, None, f"{label} names no tools: give tools (globs) or annotations to match")
    tools = _globs(data.get("tools", ["*"]), where, "tools", fail)
    annotations = data.get("annotations", {})
    if not isinstance(annotations, dict) or not all(isinstance(v, bool) for v in annotations.values()):
        raise fail(
            where, "annotations", f"{label}: annotations must be a table of true/false, such as destructiveHint = true"
        )
    for key in annotations:
        if key not in ANNOTATIONS:
            raise fail(where, "annotations", f"{label}: annotation {key!r} is not one of {', '.join(ANNOTATIONS)}")
    arguments = data.get("arguments", {})
    if not isinstance(arguments, dict) or not all(isinstance(v, str) for v in arguments.values()):
        raise fail(where, "arguments", f'{label}: arguments must be a table of globs, such as env = "prod*"')
    options = data.get("options", [P.HITL_APPROVE, P.HITL_REJECT])
    if not isinstance(options, list) or len(options) < 2 or not all(isinstance(o, str) for o in options):
        raise fail(where, "options", f"{label}: options must be at least two labels; the first approves")
    try:
        stopping_point.make_spec(AskKind.CHOICE, label, options)
    except InputError as error:
        raise fail(where, "options", f"{label}: options: {error}") from None
    hold = _duration(data.get("hold", DEFAULT_HOLD), where, "hold", label, fail)
    valid_for = _duration(data["valid_for"], where, "valid_for", label, fail) if "valid_for" in data else None
    fields: dict[str, Any] = {"follow_up": True}
    # One key at a time, in the order the gateway's checks depend on each other (quorum on
    # responders, escalation on the TTL), so the error names the key that broke them.
    for key in _ASK_KEYS:
        if key not in data:
            continue
        fields[key] = _field(key, data[key], where, label, fail)
        try:
            AskOptions.checked(fields)  # the gateway's own checks, so that a rule that loads parks
        except InputError as error:
            raise fail(where, key, f"{label}: {error}") from None
    ask_client = _client_sender(data.get("ask_client", False), fields.get("responders"), where, label, fail)
    return Rule(
        number,
        tools,
        dict(annotations),
        dict(arguments),
        hold,
        tuple(options),
        redact + _globs(data.get("redact", []), where, "redact", fail),
        fields,
        valid_for,
        ask_client,
    )


def _client_sender(value: object, responders: object, where: tuple[Any, ...], label: str, fail: Fail) -> str | None:
    """Who the client's own user answers as under ``ask_client`` (``true``, or a responder's
    name), or ``None`` (``false``): with responders, it must be one of them."""
    if value is False:
        return None
    if value is not True and not isinstance(value, str):
        raise fail(where, "ask_client", f"{label}: ask_client is true, false, or the responder the client's user is")
    try:
        sender = CLIENT_SENDER if value is True else check_sender(value, "ask_client")
    except InputError as error:
        raise fail(where, "ask_client", f"{label}: {error}") from None
    assert sender is not None
    if isinstance(responders, (list, tuple)) and sender not in responders:
        raise fail(
            where,
            "ask_client",
            f"{label}: the client's user would answer as {sender!r}, who is not among the responders; "
            'name the one they are: ask_client = "alice"',
        )
    return sender


def _field(key: str, value: object, where: tuple[Any, ...], label: str, fail: Fail) -> Any:
    """A rule's ask option as :meth:`Gateway.ask <parkgate.Gateway.ask>` takes it."""
    form = _FORMS.get(key)
    if form is Form.SECONDS:
        return _duration(value, where, key, label, fail)
    if form is Form.OFFSETS:
        return [_duration(one, where, key, label, fail) for one in (value if isinstance(value, list) else [value])]
    if key in PostFields.__annotations__:
        return _target(value, where, label, fail)
    return value


def _target(value: object, where: tuple[Any, ...], label: str, fail: Fail) -> ChannelTarget:
    if not isinstance(value, dict) or set(value) != {"channel", "where"}:
        raise fail(
            where,
            "post_to",
            f'{label}: post_to is {{ channel = "<a registered channel>", where = {{ ... its target ... }} }}',
        )
    target = check_target(ChannelTarget(value["channel"], value["where"]))
    assert target is not None
    return target


def _globs(value: object, where: tuple[Any, ...], key: str, fail: Fail) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise fail(where, key, f"{key} must be a list of names or globs")
    return tuple(value)


def _duration(value: object, where: tuple[Any, ...], key: str, label: str, fail: Fail) -> timedelta:
    """``value`` as a duration: a number of seconds, or text such as ``90s``, ``10m``, ``1h30m``."""
    seconds: float | None = None
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
    elif isinstance(value, str) and _DURATION.fullmatch(value.strip()):
        seconds = sum(float(n) * _UNIT_SECONDS[unit] for n, unit in _PART.findall(value))
    if seconds is None:
        raise fail(where, key, f"{label}: {key} {value!r} is not a duration like 90s, 10m or 6h")
    try:
        return check_duration(seconds, key)
    except InputError as error:
        raise fail(where, key, f"{label}: {error}") from None


def _as_text(value: object) -> str:
    """An argument's value as an ``arguments`` glob reads it: a string as it is, else its JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


class _Lines:
    """Where each table and key of a TOML text starts, so an error names the line.

    ``[servers.ops]`` is ``("servers", "ops")``, the n-th ``[[approval]]`` is
    ``("approval", n)``, top-level keys are under ``()``.
    """

    _HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?")
    _KEY = re.compile(r"^\s*([A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*')\s*[.=]")

    def __init__(self, text: str) -> None:
        self.tables: dict[tuple[Any, ...], int] = {(): 1}
        self.keys: dict[tuple[tuple[Any, ...], str], int] = {}
        counts: dict[str, int] = {}
        current: tuple[Any, ...] = ()
        for number, line in enumerate(text.splitlines(), start=1):
            header = self._HEADER.match(line)
            if header:
                parts = tuple(part.strip().strip("\"'") for part in header[2].split("."))
                if header[1] == "[[":
                    counts[header[2]] = counts.get(header[2], 0) + 1
                    current = (*parts, counts[header[2]])
                else:
                    current = parts
                self.tables.setdefault(current, number)
                continue
            key = self._KEY.match(line)
            if key:
                self.keys.setdefault((current, key[1].strip("\"'")), number)

    def of(self, where: Sequence[Any], key: str | None) -> int:
        """The line of ``key`` in the table ``where`` (the table's own line without one)."""
        table = tuple(where)
        if key is not None and (table, key) in self.keys:
            return self.keys[(table, key)]
        return self.tables.get(table, 1)


__all__ = ["CLIENT_SENDER", "DEFAULT_HOLD", "Policy", "Rule", "ServerSpec", "load_policy", "parse_policy"]
