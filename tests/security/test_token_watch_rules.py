"""The tokens file is watched (issue 26, item 7): the pure rules, on an injected clock.

Removing a token from the file revokes it and adding one grants it, once the server looks
again (at most once a second); between looks the file is not read. A file that becomes
unreadable or invalid keeps the last good tokens and logs an error.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from parkgate.http.settings import settings_from_env
from parkgate.http.token_watch import CHECK_EVERY_SECONDS, WatchedTokens
from parkgate.http.tokens import TokenFileError, digest


def _table(name: str, token: str) -> str:
    return f'[[token]]\nname = "{name}"\nsha256 = "{digest(token)}"\nscopes = ["read"]\n'


class Ticks:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_removed_token_is_refused_after_the_next_look_and_an_added_one_accepted(tmp_path: Path) -> None:
    path = tmp_path / "tokens.toml"
    path.write_text(_table("alice", "alice-token") + _table("bob", "bob-token"), encoding="utf-8")
    ticks = Ticks()
    tokens = WatchedTokens(path, monotonic=ticks)
    assert tokens.identify(b"alice-token") is not None
    path.write_text(_table("bob", "bob-token") + _table("carol", "carol-token-new"), encoding="utf-8")
    ticks.now += CHECK_EVERY_SECONDS / 2
    alice = tokens.identify(b"alice-token")  # not looked at yet: at most one look a second
    assert alice is not None and alice.name == "alice"
    ticks.now += CHECK_EVERY_SECONDS
    assert tokens.identify(b"alice-token") is None
    carol = tokens.identify(b"carol-token-new")
    assert carol is not None and carol.name == "carol"
    assert tokens.identify(b"bob-token") is not None


@pytest.mark.parametrize("broken", ["not [ toml", '[[token]]\nname = "x"\n', None])
def test_a_broken_or_missing_file_keeps_the_last_good_tokens_and_logs_an_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, broken: str | None
) -> None:
    path = tmp_path / "tokens.toml"
    path.write_text(_table("alice", "alice-token"), encoding="utf-8")
    ticks = Ticks()
    tokens = WatchedTokens(path, monotonic=ticks)
    if broken is None:
        path.unlink()
    else:
        path.write_text(broken, encoding="utf-8")
    ticks.now += CHECK_EVERY_SECONDS
    with caplog.at_level(logging.INFO, logger="parkgate"):
        assert tokens.identify(b"alice-token") is not None
        ticks.now += CHECK_EVERY_SECONDS
        assert tokens.identify(b"alice-token") is not None
    errors = [record for record in caplog.records if record.levelno == logging.ERROR]
    assert len(errors) == 1  # once per change of the file, not once a second
    assert str(path) in errors[0].getMessage() and "keeps the tokens it last read" in errors[0].getMessage()
    path.write_text(_table("dave", "dave-token"), encoding="utf-8")  # fixed: read again
    ticks.now += CHECK_EVERY_SECONDS
    assert tokens.identify(b"alice-token") is None and tokens.identify(b"dave-token") is not None


def test_a_file_that_is_bad_at_start_still_stops_the_server(tmp_path: Path) -> None:
    path = tmp_path / "tokens.toml"
    path.write_text("not [ toml", encoding="utf-8")
    with pytest.raises(TokenFileError, match="not valid TOML"):
        WatchedTokens(path)


def test_the_server_settings_watch_the_tokens_file(tmp_path: Path) -> None:
    path = tmp_path / "tokens.toml"
    path.write_text(_table("alice", "alice-token"), encoding="utf-8")
    settings = settings_from_env({"PARKGATE_TOKENS_FILE": str(path)})
    assert isinstance(settings.tokens, WatchedTokens)
