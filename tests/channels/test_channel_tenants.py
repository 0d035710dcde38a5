"""Tenants sharing the bot, through a live server (in a thread) with named tokens, Slack and
Telegram served against their recording stand-ins: a named token posts only where its
tokens-file ``channels`` allows (403 ``channel_not_allowed`` elsewhere, and nowhere
without the key), ``PARKGATE_TOKEN`` posts anywhere, and in a chat or thread where two
tenants' asks are open a typed message answers neither unless it replies to one's post.

The attack, as it was found: tenant B parks "Paste the staging DB password" in a chat,
tenant A parks a text ask in the same chat, and a person types the password without
replying to a message; before, A's ask took it and A read it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from live_server import Server
from slack_stand_in import BOT_TOKEN as SLACK_BOT_TOKEN
from slack_stand_in import SIGNING_SECRET, SlackWebApi, event_body, send
from telegram_bot_api import BotApiStandIn, bot_api
from telegram_updates import typed

from parkgate import Gateway
from parkgate.channels import ChannelTarget
from parkgate.channels.deliver import ChannelDeliverer
from parkgate.channels.telegram import BotApi, TelegramChannel, TelegramInbound
from parkgate.core import phrases as P
from parkgate.http.tokens import Tokens, digest
from polling import until

BOT_TOKEN = "123456:TEST-bot-token"
SECRET = "webhook-secret_1"
CHAT = -100777
ALICE = 11
PASSWORD = "hunter2-staging"
Factory = Any

#: name -> the ``channels`` line of its table ("" for a table without the key), and the token.
TENANTS = {
    "tenant-a": ('channels = ["telegram:-100777", "slack:C0OPS"]\n', "token-of-tenant-a"),
    "tenant-b": ('channels = ["telegram:-100*", "slack:*"]\n', "token-of-tenant-b"),
    "no-channels": ("", "token-of-no-channels"),
    "chat": ("", "token-of-the-chat-surface"),
}


@pytest.fixture
def api() -> Iterator[BotApiStandIn]:
    with bot_api(BOT_TOKEN) as stand_in:
        yield stand_in


@pytest.fixture
def slack_api() -> Iterator[SlackWebApi]:
    web_api = SlackWebApi().start()
    yield web_api
    web_api.stop()


def channels_env(api: BotApiStandIn, slack_api: SlackWebApi) -> dict[str, str]:
    return {
        "PARKGATE_TELEGRAM_BOT_TOKEN": BOT_TOKEN,
        "PARKGATE_TELEGRAM_WEBHOOK_SECRET": SECRET,
        "PARKGATE_TELEGRAM_API_URL": api.root,
        "PARKGATE_SLACK_BOT_TOKEN": SLACK_BOT_TOKEN,
        "PARKGATE_SLACK_SIGNING_SECRET": SIGNING_SECRET,
        "PARKGATE_SLACK_API_URL": slack_api.url,
    }


def tokens_file(folder: Path) -> Path:
    tables = []
    for name, (channels, token) in TENANTS.items():
        scopes = '["answer"]' if name == "chat" else '["park"]'
        tables.append(f'[[token]]\nname = "{name}"\nsha256 = "{digest(token)}"\nscopes = {scopes}\n{channels}')
    path = folder / "tokens.toml"
    path.write_text("\n".join(tables), encoding="utf-8")
    return path


def start(location: Any, tmp_path: Path, env: dict[str, str], token: str | None = None) -> Server:
    return Server(
        location.url, tmp_path / "server.log", token=token, schema=location.schema, extra_env=env, in_thread=True
    ).start()


# One engine: the channel behaviour here is above the store (issue 39; the store suite runs both).
@pytest.fixture(params=["sqlite"])
def tenants_server(
    request: pytest.FixtureRequest,
    store_url_factory: Factory,
    tmp_path: Path,
    api: BotApiStandIn,
    slack_api: SlackWebApi,
) -> Iterator[Server]:
    env = {**channels_env(api, slack_api), "PARKGATE_TOKENS_FILE": str(tokens_file(tmp_path))}
    running = start(store_url_factory(request.param), tmp_path, env)
    yield running
    running.stop()


def client(server: Server, name: str) -> httpx.Client:
    return server.client(token=TENANTS[name][1])


def park_text(tenant: httpx.Client, conversation: str, prompt: str, **where: Any) -> str:
    answer = tenant.post("/v1/asks", json={"conversation_id": conversation, "prompt": prompt, **where})
    assert answer.status_code == 201, answer.text
    return str(answer.json()["ask_id"])


def posted(tenant: httpx.Client, ask_id: str, channel: str) -> dict[str, Any]:
    """Where ``ask_id`` was posted, once the deliverer has posted it (its owner reads it)."""
    return dict(until(lambda: tenant.get(f"/v1/asks/{ask_id}").json().get(channel), 10, f"the {channel} post"))


def ask_of(tenant: httpx.Client, ask_id: str) -> dict[str, Any]:
    return dict(tenant.get(f"/v1/asks/{ask_id}").json())


def webhook(telegram: httpx.Client, update: dict[str, Any]) -> httpx.Response:
    return telegram.post("/telegram/webhook", json=update, headers={"X-Telegram-Bot-Api-Secret-Token": SECRET})


def test_a_typed_password_in_a_shared_telegram_chat_reaches_no_ask_and_a_reply_reaches_its_own(
    tenants_server: Server,
) -> None:
    with (
        client(tenants_server, "tenant-a") as tenant_a,
        client(tenants_server, "tenant-b") as tenant_b,
        httpx.Client(base_url=tenants_server.url, timeout=30) as telegram,
    ):
        theirs = park_text(tenant_b, "b-ops", "Paste the staging DB password", telegram={"chat_id": CHAT})
        their_message = posted(tenant_b, theirs, "telegram")["message_id"]
        mine = park_text(tenant_a, "a-release", "What should the release be called?", telegram={"chat_id": CHAT})
        posted(tenant_a, mine, "telegram")

        update = typed(CHAT, PASSWORD, user_id=ALICE)  # typed in the chat, replying to no message
        told = webhook(telegram, update)
        for tenant, ask_id in ((tenant_a, mine), (tenant_b, theirs)):
            assert (ask_of(tenant, ask_id)["status"], ask_of(tenant, ask_id)["answer"]) == ("open", None)
        assert told.status_code == 200, told.text
        assert told.json() == {
            "method": "sendMessage",
            "chat_id": CHAT,
            "text": P.CHANNEL_REPLY_TO_THE_QUESTION,
            "reply_parameters": {"message_id": update["message"]["message_id"], "allow_sending_without_reply": True},
        }

        # A reply to B's question answers B's, and only B's.
        assert webhook(telegram, typed(CHAT, PASSWORD, user_id=ALICE, reply_to=their_message)).status_code == 200
        answered = ask_of(tenant_b, theirs)
        assert (answered["status"], answered["answer"]) == ("answered", PASSWORD)
        assert (ask_of(tenant_a, mine)["status"], ask_of(tenant_a, mine)["answer"]) == ("open", None)

        # One ask open in the chat again: a typed message goes to it, as it always did.
        assert webhook(telegram, typed(CHAT, "v2.4 Heron", user_id=ALICE)).status_code == 200
        assert ask_of(tenant_a, mine)["answer"] == "v2.4 Heron"


def test_a_typed_password_in_a_shared_slack_thread_reaches_no_ask_and_its_own_thread_reaches_one(
    tenants_server: Server, slack_api: SlackWebApi
) -> None:
    with (
        client(tenants_server, "tenant-a") as tenant_a,
        client(tenants_server, "tenant-b") as tenant_b,
        client(tenants_server, "chat") as chat,
        httpx.Client(base_url=tenants_server.url, timeout=30) as slack,
    ):
        theirs = park_text(tenant_b, "b-ops", "Paste the staging DB password", slack={"channel": "C0OPS"})
        thread = posted(tenant_b, theirs, "slack")["ts"]
        # Tenant A posts into B's thread (its ts is in every link to the message).
        mine = park_text(tenant_a, "a-release", "Release name?", slack={"channel": "C0OPS", "thread_ts": thread})
        posted(tenant_a, mine, "slack")
        apart = park_text(tenant_a, "a-notes", "Release notes?", slack={"channel": "C0OPS"})
        own_thread = posted(tenant_a, apart, "slack")["ts"]

        def message(text: str, ts: str, in_thread: str) -> dict[str, Any]:
            return {
                "type": "message",
                "channel": "C0OPS",
                "user": "UALICE",
                "text": text,
                "ts": ts,
                "thread_ts": in_thread,
            }

        assert send(slack, event_body(message(PASSWORD, "9.1", thread), "Ev1")).status_code == 200
        for tenant, ask_id in ((tenant_a, mine), (tenant_b, theirs)):
            assert (ask_of(tenant, ask_id)["status"], ask_of(tenant, ask_id)["answer"]) == ("open", None)
        (told,) = until(lambda: slack_api.of("chat.postEphemeral"), 10, "the private line")
        assert told.args["user"] == "UALICE" and told.args["thread_ts"] == thread
        assert told.args["text"] == P.CHANNEL_REPLY_TO_THE_QUESTION

        # A thread holding one open ask is that ask's: the reply reaches it alone.
        assert send(slack, event_body(message("Fixes the login loop", "9.2", own_thread), "Ev2")).status_code == 200
        assert ask_of(tenant_a, apart)["answer"] == "Fixes the login loop"
        assert ask_of(tenant_a, mine)["status"] == ask_of(tenant_b, theirs)["status"] == "open"

        # Once A's ask in the shared thread is answered elsewhere, B's is the thread's one open ask.
        assert chat.post("/v1/conversations/a-release/messages", json={"text": "Heron"}).status_code == 200
        assert send(slack, event_body(message(PASSWORD, "9.3", thread), "Ev3")).status_code == 200
        assert ask_of(tenant_b, theirs)["answer"] == PASSWORD
        assert ask_of(tenant_a, mine)["answer"] == "Heron"


def test_a_named_token_posts_only_where_its_channels_key_allows(
    store_url_factory: Factory, tmp_path: Path, api: BotApiStandIn, slack_api: SlackWebApi
) -> None:
    env = {**channels_env(api, slack_api), "PARKGATE_TOKENS_FILE": str(tokens_file(tmp_path))}
    server = start(store_url_factory("sqlite"), tmp_path, env)
    try:
        with (
            client(server, "tenant-a") as tenant_a,
            client(server, "tenant-b") as tenant_b,
            client(server, "no-channels") as nowhere,
        ):
            refused = [
                (nowhere, "no-channels", {"telegram": {"chat_id": CHAT}}, "telegram:-100777"),
                (nowhere, "no-channels", {"slack": {"channel": "C0OPS"}}, "slack:C0OPS"),
                (tenant_a, "tenant-a", {"telegram": {"chat_id": -100888}}, "telegram:-100888"),
                (tenant_a, "tenant-a", {"slack": {"channel": "CSECRET"}}, "slack:CSECRET"),
                (tenant_a, "tenant-a", {"slack": {"channel": "U_CEO"}}, "slack:U_CEO"),  # a direct message
                (tenant_b, "tenant-b", {"telegram": {"chat_id": 424242}}, "telegram:424242"),  # a person's chat
            ]
            for number, (tenant, name, where, target) in enumerate(refused):
                answer = tenant.post(
                    "/v1/asks", json={"conversation_id": f"refused-{number}", "prompt": "Key?", **where}
                )
                assert answer.status_code == 403, answer.text
                error = answer.json()
                assert error["error"] == "channel_not_allowed"
                assert f"'{name}'" in error["detail"] and target in error["detail"]
                assert "tokens file" in error["detail"] and "channels" in error["detail"]
            allowed = [
                (tenant_a, {"telegram": {"chat_id": CHAT}}),
                (tenant_a, {"slack": {"channel": "C0OPS"}}),
                (tenant_b, {"telegram": {"chat_id": -100888}}),  # telegram:-100*
                (tenant_b, {"slack": {"channel": "CANY"}}),  # slack:*
            ]
            for number, (tenant, where) in enumerate(allowed):
                answer = tenant.post(
                    "/v1/asks", json={"conversation_id": f"allowed-{number}", "prompt": "Key?", **where}
                )
                assert answer.status_code == 201, answer.text
            until(lambda: len(api.of("sendMessage")) == 2 and len(slack_api.of("chat.postMessage")) == 2, 10, "posts")
            assert sorted(call.params["chat_id"] for call in api.of("sendMessage")) == [-100888, CHAT]
            assert sorted(call.args["channel"] for call in slack_api.of("chat.postMessage")) == ["C0OPS", "CANY"]
    finally:
        server.stop()


def test_the_single_token_posts_anywhere(
    store_url_factory: Factory, tmp_path: Path, api: BotApiStandIn, slack_api: SlackWebApi
) -> None:
    server = start(store_url_factory("sqlite"), tmp_path, channels_env(api, slack_api), token="the-one-token")
    try:
        with server.client() as anyone:
            for number, where in enumerate(({"telegram": {"chat_id": 424242}}, {"slack": {"channel": "U_CEO"}})):
                answer = anyone.post("/v1/asks", json={"conversation_id": f"c{number}", "prompt": "Key?", **where})
                assert answer.status_code == 201, answer.text
    finally:
        server.stop()


def test_a_tokens_file_with_bad_channels_is_refused_naming_the_token() -> None:
    def table(channels: object) -> dict[str, Any]:
        return {"token": [{"name": "agent", "sha256": digest("t"), "scopes": ["park"], "channels": channels}]}

    for bad in ("slack:*", ["C0OPS"], [""], [42], ["slack:C 1"]):
        with pytest.raises(ValueError, match=r"token 1 \(agent\): .*channels"):
            Tokens.from_tables(table(bad))
    (caller,) = Tokens.from_tables(table(["slack:C0*", "telegram:-100777"])).callers
    assert [
        caller.may_post_to(target) for target in ("slack:C0OPS", "slack:C1", "telegram:-100777", "telegram:-1")
    ] == [
        True,
        False,
        True,
        False,
    ]
    (keyless,) = Tokens.from_tables({"token": [{"name": "a", "sha256": digest("t"), "scopes": ["park"]}]}).callers
    assert keyless.channels == () and not keyless.may_post_to("slack:C0OPS")
    (single,) = Tokens.single("t").callers
    assert single.may_post_to("telegram:424242")


def test_a_polled_typed_message_in_a_chat_with_two_open_asks_is_answered_with_where_to_reply(
    gateway: Gateway, api: BotApiStandIn
) -> None:
    channel = TelegramChannel(BotApi(BOT_TOKEN, api.root))
    gateway.add_channel(channel)
    inbound = TelegramInbound(gateway, channel)
    for conversation in ("b-ops", "a-release"):
        gateway.ask(
            conversation, "Paste it", post_to=ChannelTarget("telegram", {"chat_id": CHAT, "message_thread_id": 5})
        )
    ChannelDeliverer(gateway.store, gateway.clock, gateway.channels, draw=lambda: 0.0).run_due()

    inbound.handle_polled(typed(CHAT, PASSWORD, user_id=ALICE, thread_id=5))
    told = api.of("sendMessage")[-1].params
    assert (told["chat_id"], told["message_thread_id"], told["text"]) == (CHAT, 5, P.CHANNEL_REPLY_TO_THE_QUESTION)
    assert all(ask.answer is None for ask in gateway.open_asks()) and len(gateway.open_asks()) == 2
