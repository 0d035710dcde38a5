"""A recording stand-in for Discord's REST API on loopback (``PARKGATE_DISCORD_API_URL``),
and the interactions Discord would send, signed with an Ed25519 key (PyNaCl).

The stand-in answers the calls parkgate makes as Discord does: Create Message, Edit
Message, Start Thread from Message (the thread has the message's id; a second start is
Discord's 400 with code 160004) and the interaction followup webhook. It records every
call with the time it came, checks the bot token (``Authorization: Bot ...``), and refuses,
as Discord does with a 400 (code 50035, Invalid Form Body), a body whose fields are not
Discord's: every key of a message, an action row, a button, a modal and a text field is
checked against the field names of discord.py's payload types (``discord/types/components.py``,
``discord/types/message.py``, ``discord/http.py``'s message and thread payloads), and the
limits Discord documents (2,000 characters of content, 5 action rows of 5 buttons, an 80
character label, a 100 character custom_id). It can be told to answer the next calls of
a path with a 429 and a ``retry_after`` (a rate limit).
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from nacl.signing import SigningKey

BOT_TOKEN = "discord-bot-token"
APPLICATION_ID = "900000000000000001"
GUILD_ID = "900000000000000002"

#: discord.py's field names: what Discord takes in each object parkgate sends.
MESSAGE_FIELDS = {
    "content", "tts", "embeds", "nonce", "allowed_mentions", "message_reference", "components",
    "sticker_ids", "flags", "attachments", "poll", "enforce_nonce",
}  # fmt: skip
FOLLOWUP_FIELDS = {"content", "username", "avatar_url", "tts", "embeds", "allowed_mentions", "components", "flags"}
THREAD_FIELDS = {"name", "auto_archive_duration", "rate_limit_per_user"}
ALLOWED_MENTIONS_FIELDS = {"parse", "roles", "users", "replied_user"}
MESSAGE_REFERENCE_FIELDS = {"message_id", "channel_id", "guild_id", "fail_if_not_exists", "type"}
ACTION_ROW_FIELDS = {"type", "components", "id"}
BUTTON_FIELDS = {"type", "style", "custom_id", "url", "disabled", "emoji", "label", "sku_id", "id"}
TEXT_INPUT_FIELDS = {
    "type",
    "custom_id",
    "style",
    "label",
    "min_length",
    "max_length",
    "required",
    "value",
    "placeholder",
    "id",
}
MODAL_FIELDS = {"title", "custom_id", "components"}
INTERACTION_RESPONSE_FIELDS = {"type", "data"}

_MESSAGES = re.compile(r"/channels/(?P<channel>[0-9]+)/messages")
_MESSAGE = re.compile(r"/channels/(?P<channel>[0-9]+)/messages/(?P<message>[0-9]+)")
_THREADS = re.compile(r"/channels/(?P<channel>[0-9]+)/messages/(?P<message>[0-9]+)/threads")
_FOLLOWUP = re.compile(r"/webhooks/(?P<app>[0-9]+)/(?P<token>[A-Za-z0-9_.-]+)")


class FormError(ValueError):
    """A body Discord would refuse with Invalid Form Body."""


def _keys(value: Any, allowed: set[str], what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise FormError(f"{what} is not an object")
    unknown = set(value) - allowed
    if unknown:
        raise FormError(f"{what} has fields Discord does not take: {sorted(unknown)}")
    return value


def check_components(rows: Any, inside_modal: bool = False) -> None:
    """Raise :class:`FormError` unless ``rows`` are action rows Discord takes."""
    if not isinstance(rows, list) or len(rows) > 5:
        raise FormError("components must be at most 5 action rows")
    for row in rows:
        _keys(row, ACTION_ROW_FIELDS, "an action row")
        children = row.get("components")
        if row.get("type") != 1 or not isinstance(children, list) or not 1 <= len(children) <= 5:
            raise FormError("an action row is type 1 with 1 to 5 components")
        for child in children:
            if inside_modal:
                _keys(child, TEXT_INPUT_FIELDS, "a text input")
                if child.get("type") != 4 or len(child.get("label", "")) > 45 or not child.get("custom_id"):
                    raise FormError("a text input is type 4 with a custom_id and a label of at most 45")
                continue
            _keys(child, BUTTON_FIELDS, "a button")
            if child.get("type") != 2 or child.get("style") not in (1, 2, 3, 4):
                raise FormError("a button is type 2 with a style from 1 to 4")
            if len(child.get("label", "")) > 80 or not 1 <= len(child.get("custom_id", "")) <= 100:
                raise FormError("a button's label is at most 80 characters, its custom_id 1 to 100")


def check_message(body: Any, fields: set[str] = MESSAGE_FIELDS) -> dict[str, Any]:
    """A message body Discord takes, or :class:`FormError`."""
    message = _keys(body, fields, "a message")
    if len(message.get("content") or "") > 2000:
        raise FormError("content is over 2000 characters")
    if "allowed_mentions" in message:
        _keys(message["allowed_mentions"], ALLOWED_MENTIONS_FIELDS, "allowed_mentions")
    if "message_reference" in message:
        _keys(message["message_reference"], MESSAGE_REFERENCE_FIELDS, "message_reference")
    if "components" in message:
        check_components(message["components"])
    return message


def check_response(body: Any) -> dict[str, Any]:
    """An interaction response Discord takes (a modal's fields checked too), or :class:`FormError`."""
    response = _keys(body, INTERACTION_RESPONSE_FIELDS, "an interaction response")
    if response.get("type") == 9:
        modal = _keys(response.get("data"), MODAL_FIELDS, "a modal")
        if len(modal.get("title", "")) > 45:
            raise FormError("a modal's title is at most 45 characters")
        check_components(modal.get("components"), inside_modal=True)
    elif response.get("type") == 4:
        check_message(response.get("data"), FOLLOWUP_FIELDS)
    return response


@dataclass
class Call:
    """One recorded call: its method, path, JSON body, and when it came (``time.time``)."""

    method: str
    path: str
    body: dict[str, Any]
    at: float


@dataclass
class DiscordApi:
    """The stand-in's state: every call, each message's content and components, the threads."""

    calls: list[Call] = field(default_factory=list)
    messages: dict[str, dict[str, Any]] = field(default_factory=dict)
    threads: set[str] = field(default_factory=set)
    #: Paths (regex) answered with a 429 and this ``retry_after``, this many more times.
    limited: dict[str, tuple[float, int]] = field(default_factory=dict)
    url: str = ""
    _next_id: int = 1_100_000_000_000_000_000
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def of(self, method: str, pattern: str) -> list[Call]:
        """The recorded calls of ``method`` on a path matching ``pattern`` (in full), in order."""
        with self._lock:
            return [c for c in self.calls if c.method == method and re.fullmatch(pattern, c.path)]

    def posts(self, channel: str = "[0-9]+") -> list[Call]:
        return self.of("POST", f"/channels/{channel}/messages")

    def edits(self) -> list[Call]:
        return self.of("PATCH", r"/channels/[0-9]+/messages/[0-9]+")

    def followups(self) -> list[Call]:
        return self.of("POST", r"/webhooks/[0-9]+/.+")

    def rate_limit(self, pattern: str, retry_after: float, times: int = 1) -> None:
        """Answer the next ``times`` calls on a path matching ``pattern`` with a 429."""
        with self._lock:
            self.limited[pattern] = (retry_after, times)

    def answer(self, method: str, path: str, authorization: str | None, body: Any) -> tuple[int, Any, dict[str, str]]:
        """The status, JSON body and headers Discord would answer the call with."""
        with self._lock:
            self.calls.append(Call(method, path, body if isinstance(body, dict) else {}, time.time()))
            for pattern, (retry_after, times) in list(self.limited.items()):
                if times > 0 and re.fullmatch(pattern, path):
                    self.limited[pattern] = (retry_after, times - 1)
                    limited = {"message": "You are being rate limited.", "retry_after": retry_after, "global": False}
                    return 429, limited, {"Retry-After": str(int(retry_after) + 1)}
            if not _FOLLOWUP.fullmatch(path) and authorization != f"Bot {BOT_TOKEN}":
                return 401, {"message": "401: Unauthorized", "code": 0}, {}
            try:
                return self._route(method, path, body)
            except FormError as error:
                return 400, {"message": "Invalid Form Body", "code": 50035, "errors": str(error)}, {}

    def _route(self, method: str, path: str, body: Any) -> tuple[int, Any, dict[str, str]]:
        if method == "POST" and (found := _MESSAGES.fullmatch(path)):
            message = check_message(body)
            self._next_id += 1
            made = {
                "id": str(self._next_id),
                "channel_id": found["channel"],
                "content": message.get("content", ""),
                "components": message.get("components", []),
                "author": {"id": APPLICATION_ID, "username": "parkgate", "bot": True},
                "type": 0 if "message_reference" not in message else 19,
            }
            self.messages[made["id"]] = made
            return 200, made, {}
        if method == "PATCH" and (found := _MESSAGE.fullmatch(path)):
            message = check_message(body)
            known = self.messages.get(found["message"])
            if known is None or known["channel_id"] != found["channel"]:
                return 404, {"message": "Unknown Message", "code": 10008}, {}
            known.update({key: message[key] for key in ("content", "components") if key in message})
            return 200, known, {}
        if method == "POST" and (found := _THREADS.fullmatch(path)):
            thread = _keys(body, THREAD_FIELDS, "a thread")
            if not 1 <= len(thread.get("name", "")) <= 100:
                raise FormError("a thread's name is 1 to 100 characters")
            if found["message"] not in self.messages:
                return 404, {"message": "Unknown Message", "code": 10008}, {}
            if found["message"] in self.threads:
                return 400, {"message": "A thread has already been created for this message", "code": 160004}, {}
            self.threads.add(found["message"])
            return 201, {"id": found["message"], "type": 11, "parent_id": found["channel"], "name": thread["name"]}, {}
        if method == "POST" and _FOLLOWUP.fullmatch(path):
            message = check_message(body, FOLLOWUP_FIELDS)
            self._next_id += 1
            return (
                200,
                {"id": str(self._next_id), "content": message.get("content", ""), "flags": message.get("flags", 0)},
                {},
            )
        return 404, {"message": "404: Not Found", "code": 0}, {}

    def start(self) -> DiscordApi:
        state = self

        class Handler(BaseHTTPRequestHandler):
            def _any(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body = json.loads(raw) if raw else {}
                except ValueError:
                    body = None
                path = self.path.removeprefix("/api/v10")
                status, answer, headers = state.answer(self.command, path, self.headers.get("Authorization"), body)
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            do_POST = do_PATCH = _any

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_port}/api/v10"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


class Signer:
    """The application's key pair: signs interactions as Discord does (Ed25519 over the
    timestamp followed by the body), and builds the interactions Discord sends."""

    def __init__(self) -> None:
        self.key = SigningKey.generate()
        self._ids = 1_200_000_000_000_000_000

    @property
    def public_key(self) -> str:
        """The public key, as the Developer Portal shows it (hex)."""
        return self.key.verify_key.encode().hex()

    def headers(self, body: bytes, key: SigningKey | None = None, timestamp: str | None = None) -> dict[str, str]:
        """The signature headers of ``body`` (signed with ``key``, another key to forge one)."""
        stamp = timestamp or str(int(time.time()))
        signed = (key or self.key).sign(stamp.encode() + body)
        return {
            "X-Signature-Ed25519": signed.signature.hex(),
            "X-Signature-Timestamp": stamp,
            "Content-Type": "application/json",
        }

    def _next(self) -> str:
        self._ids += 1
        return str(self._ids)

    def _base(self, kind: int, user: str, roles: tuple[str, ...], message: dict[str, Any] | None) -> dict[str, Any]:
        interaction: dict[str, Any] = {
            "id": self._next(),
            "application_id": APPLICATION_ID,
            "type": kind,
            "token": f"interaction-token-{self._ids}",
            "version": 1,
            "guild_id": GUILD_ID,
            "member": {"user": {"id": user, "username": f"user{user[-3:]}"}, "roles": list(roles)},
        }
        if message is not None:
            interaction["channel_id"] = message["channel_id"]
            interaction["message"] = {
                "id": message["id"],
                "channel_id": message["channel_id"],
                "content": message["content"],
            }
        return interaction

    def ping(self) -> dict[str, Any]:
        return {"id": self._next(), "application_id": APPLICATION_ID, "type": 1, "token": "t", "version": 1}

    def press(self, message: dict[str, Any], custom_id: str, user: str, roles: tuple[str, ...] = ()) -> dict[str, Any]:
        """A button press (a message component interaction) on ``message``."""
        interaction = self._base(3, user, roles, message)
        interaction["data"] = {"custom_id": custom_id, "component_type": 2}
        return interaction

    def submit(self, message: dict[str, Any], custom_id: str, user: str, text: str) -> dict[str, Any]:
        """A modal's form sent, with one text input (``answer``) holding ``text``."""
        interaction = self._base(5, user, (), message)
        field = {"type": 4, "custom_id": "answer", "value": text}
        interaction["data"] = {"custom_id": custom_id, "components": [{"type": 1, "components": [field]}]}
        return interaction
