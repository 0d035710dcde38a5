"""``parkgate serve`` opens its store the way its workers will: same schema, same timeout.

The uvicorn step is replaced by a stand-in that records what a worker would open (a
worker builds its app with ``app_from_env``, which opens its store with
``store_from_env``); everything before it (settings, migration) runs for real.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
import uvicorn
from click.testing import CliRunner

from parkgate import prove
from parkgate.cli import main
from parkgate.http import server
from parkgate.http.app import (
    ENV_DB,
    ENV_PG_SCHEMA,
    ENV_PG_TIMEOUT,
    SERVER_PG_TIMEOUT_SECONDS,
    store_from_env,
)
from parkgate.http.settings import ENV_TOKEN
from parkgate.store import StoreUnavailable
from parkgate.store.postgres import PostgresStore, create_schema, drop_schema

PARKGATE_TABLES = {"asks", "runs", "inbound_messages", "outbox", "schema_migrations"}


def tables_in(url: str, schema: str) -> set[str]:
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (schema,))
        return {str(row[0]) for row in rows}


def run_in_deployed_schema(
    command: str, pg_url: str, pg_schema: str, decoy: tuple[str, str], env: pytest.MonkeyPatch
) -> None:
    """Run ``parkgate COMMAND --db URL`` with PARKGATE_PG_SCHEMA set: it must succeed and
    leave the tables in that schema, none in the URL's own default (the decoy)."""
    url, decoy_schema = decoy
    env.setenv(ENV_PG_SCHEMA, pg_schema)
    result = CliRunner().invoke(main, [command, "--db", url])
    assert result.exit_code == 0, result.output
    assert tables_in(pg_url, pg_schema) >= PARKGATE_TABLES
    assert tables_in(pg_url, decoy_schema) == set()


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """The server's variables unset, and restored after the test (serve writes os.environ)."""
    for name in (ENV_DB, ENV_TOKEN, ENV_PG_SCHEMA, ENV_PG_TIMEOUT):
        monkeypatch.setenv(name, "placeholder")  # recorded, so it is restored at teardown
        monkeypatch.delenv(name)
    return monkeypatch


@pytest.fixture
def workers(clean_env: pytest.MonkeyPatch) -> Iterator[list[dict[str, Any]]]:
    """Replace uvicorn: record the call and what a worker opens as its store."""
    seen: list[dict[str, Any]] = []

    def fake_uvicorn_run(app: str, **options: Any) -> None:
        assert app == server.APP_FACTORY and options["factory"] is True
        store = store_from_env()  # what app_from_env does first in every worker
        try:
            seen.append(
                {
                    "schema": getattr(store, "schema", None),
                    "timeout": store._pool.timeout if isinstance(store, PostgresStore) else None,
                    "version": store.schema_version(),
                    "workers": options["workers"],
                }
            )
        finally:
            store.close()

    clean_env.setattr(uvicorn, "run", fake_uvicorn_run)
    yield seen


@pytest.fixture
def decoy(pg_url: str) -> Iterator[tuple[str, str]]:
    """A second schema, and ``pg_url`` with it as the session's default search_path.

    A migration that ignores PARKGATE_PG_SCHEMA lands in the decoy (as it would land in
    ``public`` on a default URL), so a regression never writes to the shared ``public``.
    Every test here that runs ``serve`` on PostgreSQL uses this URL.
    """
    name = create_schema(pg_url, "pgdecoy")
    separator = "&" if "?" in pg_url else "?"
    try:
        yield f"{pg_url}{separator}options=-csearch_path%3D{name}", name
    finally:
        drop_schema(pg_url, name)


@pytest.mark.postgres
def test_serve_migrates_into_the_schema_its_workers_use(
    pg_url: str, pg_schema: str, decoy: tuple[str, str], clean_env: pytest.MonkeyPatch, workers: list[dict[str, Any]]
) -> None:
    url, decoy_schema = decoy
    clean_env.setenv(ENV_PG_SCHEMA, pg_schema)
    assert tables_in(pg_url, pg_schema) == set()
    result = CliRunner().invoke(main, ["serve", "--db", url, "--port", "0", "--workers", "2"])
    assert result.exit_code == 0, result.output
    assert tables_in(pg_url, pg_schema) >= PARKGATE_TABLES  # migrated where the workers look
    assert tables_in(pg_url, decoy_schema) == set()  # and nowhere else
    assert [(worker["schema"], worker["workers"]) for worker in workers] == [(pg_schema, 2)]
    assert workers[0]["version"] >= 1  # the worker finds the schema already migrated


@pytest.mark.postgres
def test_serve_gives_its_workers_a_short_pg_timeout_by_default(
    pg_schema: str, decoy: tuple[str, str], clean_env: pytest.MonkeyPatch, workers: list[dict[str, Any]]
) -> None:
    clean_env.setenv(ENV_PG_SCHEMA, pg_schema)
    result = CliRunner().invoke(main, ["serve", "--db", decoy[0], "--port", "0"])
    assert result.exit_code == 0, result.output
    assert [worker["timeout"] for worker in workers] == [SERVER_PG_TIMEOUT_SECONDS] == [3.0]


@pytest.mark.postgres
@pytest.mark.parametrize(("args", "env", "expected"), [(["--pg-timeout", "1.5"], None, 1.5), ([], "0.75", 0.75)])
def test_the_operator_sets_the_pg_timeout_by_option_or_environment(
    pg_schema: str,
    decoy: tuple[str, str],
    clean_env: pytest.MonkeyPatch,
    workers: list[dict[str, Any]],
    args: list[str],
    env: str | None,
    expected: float,
) -> None:
    clean_env.setenv(ENV_PG_SCHEMA, pg_schema)
    if env is not None:
        clean_env.setenv(ENV_PG_TIMEOUT, env)
    result = CliRunner().invoke(main, ["serve", "--db", decoy[0], "--port", "0", *args])
    assert result.exit_code == 0, result.output
    assert [worker["timeout"] for worker in workers] == [expected]


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "601", "soon", ""])
def test_a_bad_pg_timeout_is_a_usage_error_before_anything_starts(
    value: str, tmp_path: Any, workers: list[dict[str, Any]]
) -> None:
    db = tmp_path / "never.db"
    result = CliRunner().invoke(main, ["serve", "--db", f"sqlite:///{db}", "--pg-timeout", value])
    assert result.exit_code == 2, result.output
    assert "--pg-timeout" in result.output and "seconds" in result.output
    assert workers == [] and not db.exists()


def test_serve_help_names_the_pg_timeout_and_its_default() -> None:
    result = CliRunner().invoke(main, ["serve", "--help"])
    assert result.exit_code == 0
    flat = " ".join(result.output.split())
    assert "--pg-timeout" in flat and "PARKGATE_PG_TIMEOUT" in flat
    assert f"default {SERVER_PG_TIMEOUT_SECONDS:g}" in flat


def test_serve_on_sqlite_migrates_the_file_and_ignores_the_pg_settings(
    tmp_path: Any, clean_env: pytest.MonkeyPatch, workers: list[dict[str, Any]]
) -> None:
    clean_env.setenv(ENV_PG_SCHEMA, "not_used_here")
    db = tmp_path / "s.db"
    result = CliRunner().invoke(main, ["serve", "--db", f"sqlite:///{db}", "--port", "0", "--pg-timeout", "2"])
    assert result.exit_code == 0, result.output
    assert db.exists()
    assert [(worker["schema"], worker["timeout"]) for worker in workers] == [(None, None)]
    assert workers[0]["version"] >= 1


@pytest.mark.postgres
def test_migrate_and_asks_use_the_same_schema_as_the_server(
    pg_url: str, pg_schema: str, decoy: tuple[str, str], clean_env: pytest.MonkeyPatch
) -> None:
    url, decoy_schema = decoy
    run_in_deployed_schema("migrate", pg_url, pg_schema, decoy, clean_env)
    # An ask parked in the deployment's schema is what `parkgate asks` lists.
    from parkgate import Gateway

    with Gateway(store=PostgresStore(pg_url, schema=pg_schema)) as gateway:
        gateway.ask("schema-chat", "Deploy?", ["Deploy", "Hold"])
    listed = CliRunner().invoke(main, ["asks", "--db", url, "--json"])
    assert listed.exit_code == 0, listed.output
    assert "schema-chat" in listed.output
    assert tables_in(pg_url, decoy_schema) == set()


@pytest.fixture
def missing_schema(pg_url: str, clean_env: pytest.MonkeyPatch) -> Iterator[str]:
    """PARKGATE_PG_SCHEMA names a schema that does not exist yet (dropped afterwards if made)."""
    import uuid

    name = f"pgmissing_{uuid.uuid4().hex[:10]}"
    clean_env.setenv(ENV_PG_SCHEMA, name)
    try:
        yield name
    finally:
        drop_schema(pg_url, name)


def schema_exists(url: str, name: str) -> bool:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM pg_namespace WHERE nspname = %s", (name,)).fetchone()
        return bool(row and row[0])


@pytest.mark.postgres
def test_serve_creates_the_schema_it_is_told_to_use(
    pg_url: str,
    missing_schema: str,
    decoy: tuple[str, str],
    workers: list[dict[str, Any]],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="parkgate")
    result = CliRunner().invoke(main, ["serve", "--db", decoy[0], "--port", "0"])
    assert result.exit_code == 0, result.output
    # The store creates it, and logs it (under serve: a JSON line on stderr).
    assert f"created PostgreSQL schema {missing_schema}" in caplog.messages
    assert tables_in(pg_url, missing_schema) >= PARKGATE_TABLES
    assert tables_in(pg_url, decoy[1]) == set()
    assert [worker["schema"] for worker in workers] == [missing_schema] and workers[0]["version"] >= 1


@pytest.mark.postgres
def test_migrate_creates_the_schema_and_the_read_commands_refuse_a_missing_one_clearly(
    pg_url: str, missing_schema: str
) -> None:
    for command in (["asks"], ["chat", "--conversation", "x"], ["doorcheck"]):
        result = CliRunner().invoke(main, [*command, "--db", pg_url], input="")
        assert result.exit_code == 1 and isinstance(result.exception, SystemExit), (command, result.output)
        flat = " ".join(result.output.split())
        assert f"schema {missing_schema!r} does not exist" in flat, flat
        assert "parkgate migrate" in flat and "no schema has been selected" not in flat
        assert "migrate=True" not in flat  # the library's argument means nothing at a terminal
        assert not schema_exists(pg_url, missing_schema)  # a typo is not turned into an empty schema
    migrated = CliRunner().invoke(main, ["migrate", "--db", pg_url])
    assert migrated.exit_code == 0, migrated.output
    assert f"created PostgreSQL schema {missing_schema}" in migrated.output
    assert tables_in(pg_url, missing_schema) >= PARKGATE_TABLES
    listed = CliRunner().invoke(main, ["asks", "--db", pg_url, "--json"])
    assert listed.exit_code == 0, listed.output
    again = CliRunner().invoke(main, ["migrate", "--db", pg_url])
    assert again.exit_code == 0 and "created" not in again.output


@pytest.mark.postgres
def test_the_server_started_directly_creates_its_schema_too(
    pg_url: str, missing_schema: str, clean_env: pytest.MonkeyPatch
) -> None:
    """``uvicorn --factory parkgate.http.app:app_from_env`` opens through store_from_env:
    the store's own migration creates the schema, no CLI needed."""
    clean_env.setenv(ENV_DB, pg_url)
    store = store_from_env()
    try:
        assert getattr(store, "schema", None) == missing_schema and store.schema_version() >= 1
    finally:
        store.close()
    assert tables_in(pg_url, missing_schema) >= PARKGATE_TABLES


@pytest.mark.postgres
def test_asks_refuses_a_schema_that_exists_but_holds_no_parkgate_tables(
    pg_url: str, pg_schema: str, clean_env: pytest.MonkeyPatch
) -> None:
    clean_env.setenv(ENV_PG_SCHEMA, pg_schema)
    result = CliRunner().invoke(main, ["asks", "--db", pg_url])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
    flat = " ".join(result.output.split())
    assert "no parkgate database" in flat and pg_schema in flat and "parkgate migrate" in flat
    assert tables_in(pg_url, pg_schema) == set()


# -- serve says what is true about its socket -----------------------------------------------
def test_serve_on_a_port_in_use_is_a_one_line_error_before_anything_starts(
    tmp_path: Any, workers: list[dict[str, Any]]
) -> None:
    import socket

    db = tmp_path / "s.db"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = CliRunner().invoke(main, ["serve", "--db", f"sqlite:///{db}", "--port", str(port)])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and f"cannot listen on 127.0.0.1:{port}" in lines[0], lines
    assert "serving" not in result.output
    assert workers == [] and not db.exists()


def test_serve_says_it_is_starting_not_that_it_is_serving(tmp_path: Any, workers: list[dict[str, Any]]) -> None:
    result = CliRunner().invoke(main, ["serve", "--db", f"sqlite:///{tmp_path / 's.db'}", "--port", "0"])
    assert result.exit_code == 0, result.output
    assert "starting" in result.output and "serving" not in result.output
    assert len(workers) == 1


def test_serve_turns_a_server_that_failed_to_start_into_one_line(tmp_path: Any, clean_env: pytest.MonkeyPatch) -> None:
    def failing_uvicorn_run(app: str, **options: Any) -> None:
        raise SystemExit(3)  # what uvicorn does when its startup (a bind) failed

    clean_env.setattr(uvicorn, "run", failing_uvicorn_run)
    result = CliRunner().invoke(main, ["serve", "--db", f"sqlite:///{tmp_path / 's.db'}", "--port", "0"])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
    assert "did not start" in result.output.strip().splitlines()[-1]


def few_store_cases(env: pytest.MonkeyPatch) -> None:
    """``prove``'s store run on a few of its cases: these tests are of where it runs and what it
    prints; every case through PostgreSQL is ``tests/store/test_prove_stores.py``'s."""
    few = [c for c in prove.store_cases() if c.mismatches == 3 and c.who is prove.Who.ANYONE and not c.expired]
    env.setattr(prove, "store_cases", lambda escalate_after=3: few)


@pytest.mark.postgres
def test_prove_runs_through_the_schema_every_other_command_uses(
    pg_url: str, pg_schema: str, decoy: tuple[str, str], clean_env: pytest.MonkeyPatch
) -> None:
    few_store_cases(clean_env)
    run_in_deployed_schema("prove", pg_url, pg_schema, decoy, clean_env)  # proved where serve and asks look


@pytest.mark.postgres
def test_prove_never_prints_the_store_password(pg_schema: str, clean_env: pytest.MonkeyPatch, pg_url: str) -> None:
    parts = urlsplit(pg_url)
    assert parts.username and not parts.password  # the local server trusts: any password is accepted
    with_password = urlunsplit(parts._replace(netloc=parts.netloc.replace("@", ":sekret-word@", 1)))
    clean_env.setenv(ENV_PG_SCHEMA, pg_schema)
    few_store_cases(clean_env)
    result = CliRunner().invoke(main, ["prove", "--db", with_password])
    assert result.exit_code == 0, result.output
    assert "sekret-word" not in result.output
    assert "== " + with_password.replace("sekret-word", "***") in result.output


def test_an_unreachable_postgresql_is_one_error_line_with_the_servers_reason(
    caplog: pytest.LogCaptureFixture, clean_env: pytest.MonkeyPatch
) -> None:
    """The pool's own retries stay quiet; the one error says why (here: nothing listens on port 1)."""
    unreachable = "postgresql://postgres@127.0.0.1:1/test"
    with caplog.at_level(logging.DEBUG, logger="psycopg.pool"), pytest.raises(StoreUnavailable) as refused:
        PostgresStore(unreachable, timeout=1.0)
    message = str(refused.value)
    assert "Connection refused" in message and "\n" not in message
    pool_warnings = [record for record in caplog.records if record.name == "psycopg.pool"]
    assert not [record for record in pool_warnings if record.levelno >= logging.WARNING]
    result = CliRunner().invoke(main, ["serve", "--db", unreachable, "--port", "0"])
    assert result.exit_code == 1
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: ") and "Connection refused" in lines[0], result.output


@pytest.mark.postgres
@pytest.mark.parametrize(("env", "expected"), [(None, SERVER_PG_TIMEOUT_SECONDS), ("0.75", 0.75)])
def test_the_other_commands_wait_as_briefly_as_the_server_for_postgresql(
    pg_url: str, pg_schema: str, clean_env: pytest.MonkeyPatch, env: str | None, expected: float
) -> None:
    """``asks`` (and every command that opens a store) fails fast on an unreachable
    PostgreSQL, as ``serve`` does: the server's timeout, or PARKGATE_PG_TIMEOUT."""
    import parkgate.cli.stores as cli_stores

    clean_env.setenv(ENV_PG_SCHEMA, pg_schema)
    if env is not None:
        clean_env.setenv(ENV_PG_TIMEOUT, env)
    assert CliRunner().invoke(main, ["migrate", "--db", pg_url]).exit_code == 0
    seen: list[float] = []
    real_gateway = cli_stores.Gateway

    def recording(**options: Any) -> Any:
        store = options["store"]
        assert isinstance(store, PostgresStore)
        seen.append(store._pool.timeout)
        return real_gateway(**options)

    clean_env.setattr(cli_stores, "Gateway", recording)
    result = CliRunner().invoke(main, ["asks", "--db", pg_url])
    assert result.exit_code == 0, result.output
    assert seen == [expected]


def test_asks_on_an_unreachable_postgresql_is_one_error_line(clean_env: pytest.MonkeyPatch) -> None:
    result = CliRunner().invoke(main, ["asks", "--db", "postgresql://postgres@127.0.0.1:1/test"])
    assert result.exit_code == 1
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: ") and "Connection refused" in lines[0], result.output
    clean_env.setenv(ENV_PG_TIMEOUT, "soon")
    bad = CliRunner().invoke(main, ["asks", "--db", "postgresql://postgres@127.0.0.1:1/test"])
    assert bad.exit_code == 1 and ENV_PG_TIMEOUT in bad.output and "seconds" in bad.output


@pytest.mark.parametrize("command", ["serve", "deliver"])
def test_a_webhook_secret_that_cannot_sign_stops_the_start_saying_how_to_make_one(
    tmp_path: Any, workers: list[dict[str, Any]], command: str
) -> None:
    db = tmp_path / "s.db"
    result = CliRunner().invoke(main, [command, "--db", f"sqlite:///{db}"], env={"PARKGATE_WEBHOOK_SECRET": "hunter2"})
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
    assert "PARKGATE_WEBHOOK_SECRET must start with whsec_" in result.output
    assert "base64.b64encode(os.urandom(32))" in result.output  # how to make one
    assert workers == [] and not db.exists()  # nothing started, nothing made


@pytest.mark.parametrize("command", ["serve", "deliver"])
def test_an_events_receiver_the_fence_refuses_stops_the_start_naming_both_variables(
    tmp_path: Any, workers: list[dict[str, Any]], command: str
) -> None:
    db = tmp_path / "s.db"
    env = {"PARKGATE_EVENTS_URL": "http://127.0.0.1:9501/events", "PARKGATE_CALLBACK_ALLOW": ""}
    result = CliRunner().invoke(main, [command, "--db", f"sqlite:///{db}"], env=env)
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
    assert "PARKGATE_EVENTS_URL points at an internal address (127.0.0.1)" in result.output
    assert "PARKGATE_CALLBACK_ALLOW" in result.output  # what lets it in
    assert workers == [] and not db.exists()  # nothing started, nothing made


def test_a_bad_directory_file_stops_the_start_naming_the_variable(tmp_path: Any, workers: list[dict[str, Any]]) -> None:
    db = tmp_path / "s.db"
    people = tmp_path / "people.json"
    people.write_text('{"U0ALICE": ""}', encoding="utf-8")
    result = CliRunner().invoke(main, ["serve", "--db", f"sqlite:///{db}"], env={"PARKGATE_DIRECTORY": str(people)})
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
    assert f"PARKGATE_DIRECTORY: {people} is not a directory of sender id to name" in result.output
    assert "the name of 'U0ALICE'" in result.output
    assert workers == [] and not db.exists()  # nothing started, nothing made
