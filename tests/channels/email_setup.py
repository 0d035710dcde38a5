"""What the email channel's tests share: a server configured for it (in a thread, built
from the environment as ``parkgate serve`` builds its workers), and a link's token
opened up, as someone who edits a URL would."""

from __future__ import annotations

import base64
import html
import json
import os
import re
from pathlib import Path
from typing import Any

import httpx
from live_server import Server
from smtp_server import SmtpServer

from parkgate import ManualClock

TOKEN = "secret-token"
SECRET = "whsec_" + base64.b64encode(os.urandom(32)).decode()
SENDER = "Asks <asks@example.com>"
ALICE, BOB, CAROL = "alice@example.com", "bob@example.com", "carol@example.com"


def email_env(smtp: SmtpServer, public_url: str) -> dict[str, str]:
    """The settings that serve the email channel against ``smtp``."""
    return {
        "PARKGATE_SMTP_URL": smtp.url,
        "PARKGATE_EMAIL_FROM": SENDER,
        "PARKGATE_EMAIL_SECRET": SECRET,
        "PARKGATE_PUBLIC_URL": public_url,
    }


def email_server(location: Any, tmp_path: Path, smtp: SmtpServer, clock: ManualClock | None = None) -> Server:
    """A server (not started) that serves email; its links point at itself."""
    server = Server(location.url, tmp_path / "server.log", token=TOKEN, schema=location.schema, in_thread=True)
    server.clock = clock
    server.extra_env.update(email_env(smtp, server.url))
    return server


def park(client: httpx.Client, conversation: str, to: list[str], **fields: Any) -> str:
    body = {
        "conversation_id": conversation,
        "prompt": "Deploy to production?",
        "options": ["Deploy", "Hold"],
        "email": {"to": to},
        **fields,
    }
    answer = client.post("/v1/asks", json=body)
    assert answer.status_code == 201, answer.text
    return str(answer.json()["ask_id"])


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def edited(link: str, position: int, value: Any) -> str:
    """``link`` with one field of its token's payload changed (1: the ask, 2: the choice,
    3: the address, 4: the expiry), its signature kept as it was."""
    base, _, token = link.rpartition("/")
    payload, _, mac = token.partition(".")
    fields = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    fields[position] = value
    return f"{base}/{_b64(json.dumps(fields, separators=(',', ':')).encode())}.{mac}"


def form_of(page: str) -> dict[str, str]:
    """The hidden fields of a link page's confirm form."""
    return dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)">', page))


def outcome_of(page: str) -> str:
    """What a page says it did, or why it did nothing."""
    found = re.search(r'id="outcome">(.*?)</p>', page, re.S)
    assert found, page
    return html.unescape(found.group(1))


def note_of(page: str) -> str | None:
    """The note a page shows under what it did (a vote's votes so far), ``None`` for none."""
    found = re.search(r'id="note">(.*?)</p>', page, re.S)
    return html.unescape(found.group(1)) if found else None


def confirm(link: str, text: str | None = None) -> httpx.Response:
    """Open ``link``'s page and press its button (a text ask's form with ``text``), as a person does."""
    page = httpx.get(link, timeout=30)
    assert page.status_code == 200, page.text
    fields = form_of(page.text)
    if text is not None:
        fields["text"] = text
    return httpx.post(link.split("/email/l/")[0] + "/email/confirm", data=fields, timeout=30)
