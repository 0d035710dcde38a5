"""One name per option on every surface: a client call told an option's JSON name (or a
near miss) says what the option is called here, and ``Client.ask`` documents every option
it takes."""

from __future__ import annotations

import inspect

import pytest

from parkgate import Gateway
from parkgate.client import AsyncClient, Client
from parkgate.gateway.options import ClientAskFields, field_names


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ({"ttl_seconds": 60}, "unexpected keyword argument 'ttl_seconds': this option is 'ttl' here"),
        ({"responder": ["U_A"]}, "unexpected keyword argument 'responder': did you mean 'responders'?"),
    ],
)
def test_a_clients_ask_with_another_surfaces_name_says_this_ones(given: dict[str, object], said: str) -> None:
    client = Client("http://127.0.0.1:9", token="unused")
    with pytest.raises(TypeError, match=said):
        client.ask("c1", "Deploy?", ["Yes", "No"], **given)  # type: ignore[arg-type]


def test_the_librarys_ask_says_it_too(gateway: Gateway) -> None:
    with pytest.raises(TypeError, match="this option is 'ttl' here"):
        gateway.ask("c1", "Deploy?", ["Yes", "No"], ttl_seconds=60)  # type: ignore[call-arg]
    assert gateway.parked("c1") is None


def test_client_ask_documents_every_option_it_takes() -> None:
    documented = inspect.getdoc(Client.ask) or ""
    channel_keys = {"slack", "telegram", "discord", "email"}  # named by the registry, documented by example
    missing = [name for name in sorted(field_names(ClientAskFields) - channel_keys) if f"``{name}``" not in documented]
    assert missing == []
    assert "Client.ask" in (inspect.getdoc(AsyncClient.ask) or "")  # the async one points to it
