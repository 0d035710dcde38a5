"""``Gateway(url)`` opens a PostgreSQL store in the schema ``PARKGATE_PG_SCHEMA`` names, as
``parkgate serve`` and the CLI do (issue 26, item 7): a library process and the server of
one deployment share the same tables, and nothing lands in the default schema."""

from __future__ import annotations

import pytest

from parkgate import Gateway
from parkgate.core.kinds import ReplyKind
from parkgate.http.settings import store_from_env
from parkgate.store import ENV_PG_SCHEMA
from parkgate.store.postgres import PostgresStore


def test_gateway_url_honours_the_deployed_schema_like_the_server(
    pg_url: str, pg_schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_PG_SCHEMA, pg_schema)
    monkeypatch.setenv("PARKGATE_DB", pg_url)
    with Gateway(pg_url) as library:
        parked = library.ask("c-1", "Deploy?", ["Deploy", "Hold"])
        assert parked.kind is ReplyKind.ASKED
    with Gateway(store=PostgresStore(pg_url, schema=pg_schema)) as direct:
        assert [ask.id for ask in direct.open_asks()] == [parked.ask_id]
    with Gateway(store=store_from_env()) as server_side:  # the store the server's workers open
        assert server_side.handle("c-1", "2").answer == "Hold"
    # (pg_url checks at the end of the run that no table was left in the default schema.)


def test_an_explicit_store_is_used_as_given(pg_url: str, pg_schema: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_PG_SCHEMA, "some_other_schema_never_made")
    with Gateway(store=PostgresStore(pg_url, schema=pg_schema)) as gateway:
        gateway.ask("c-1", "Deploy?", ["Deploy", "Hold"])
        assert len(gateway.open_asks()) == 1
