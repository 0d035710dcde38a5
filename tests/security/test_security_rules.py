"""The pure rules behind the HTTP service's security: tokens, rates, settings and what a
screen shows (the callback fence's own rules are in tests/test_fence_rules.py; the attacks
themselves are in tests/security)."""

from __future__ import annotations

import unicodedata

import pytest

from parkgate.core.display import HIDDEN_RANGES, is_hidden, json_line, visible_id, visible_text
from parkgate.core.fence import CallbackRefused
from parkgate.errors import InputError
from parkgate.http.ratelimit import RateLimiter
from parkgate.http.settings import SettingsError, check_exposure, settings_from_env
from parkgate.http.tokens import Scope, Tokens, digest


def test_a_refused_callback_is_an_input_error_and_the_library_refuses_what_does_not_parse() -> None:
    assert issubclass(CallbackRefused, InputError)
    from parkgate.gateway.options import AskOptions

    for bad in ("http://[::1", "http://a\r\nb/", "http://xn--a.com/", "http://h:99999/"):
        with pytest.raises(InputError, match="callback_url"):
            AskOptions.checked({"callback_url": bad})
    hook = "http://127.0.0.1:9/hook"  # the library fences at delivery
    assert AskOptions.checked({"callback_url": hook}).callback_url == hook


def test_tokens_are_looked_up_by_hash_and_carry_their_scopes() -> None:
    tokens = Tokens.from_tables(
        {"token": [{"name": "a", "sha256": digest("tok-a"), "scopes": ["park"], "max_open_asks": 2}]}
    )
    caller = tokens.identify(b"tok-a")
    assert caller is not None and caller.scopes == {Scope.PARK} and caller.owner == "a" and caller.max_open_asks == 2
    assert tokens.identify(digest("tok-a").encode()) is None
    for table, says in (
        ({"name": "a", "sha256": digest("x"), "scopes": ["park"], "token": "x"}, "never the token"),
        ({"name": "a", "sha256": digest("x"), "scopes": []}, "non-empty list"),
        ({"name": "a", "sha256": digest("x"), "scopes": ["read"], "max_open_asks": 0}, "max_open_asks"),
        ({"name": "a", "sha256": digest("x"), "scopes": ["read"], "rate_per_second": -1}, "rate_per_second"),
    ):
        with pytest.raises(ValueError, match=says):
            Tokens.from_tables({"token": [table]})


def test_the_rate_limiter_allows_one_seconds_worth_then_names_the_wait() -> None:
    now = [100.0]
    limiter = RateLimiter(lambda: now[0])
    assert [limiter.take("t", 2) for _ in range(3)] == [None, None, 1]
    now[0] += 0.5
    assert limiter.take("t", 2) is None and limiter.take("t", 2) == 1
    assert limiter.take("other", 2) is None


def test_settings_refuse_blank_or_doubled_tokens_and_exposure_without_one(tmp_path: object) -> None:
    with pytest.raises(SettingsError, match="blank"):
        settings_from_env({"PARKGATE_TOKEN": "   "})
    with pytest.raises(SettingsError, match="not several"):
        settings_from_env({"PARKGATE_TOKEN": "a", "PARKGATE_TOKENS_FILE": "/x"})
    assert settings_from_env({"PARKGATE_TOKEN": ""}).tokens is None
    open_settings = settings_from_env({})
    assert check_exposure("127.0.0.1", open_settings, False) is None
    assert check_exposure("::1", open_settings, False) is None
    with pytest.raises(SettingsError, match="without a token"):
        check_exposure("0.0.0.0", open_settings, False)
    assert "WITHOUT A TOKEN" in (check_exposure("0.0.0.0", open_settings, True) or "")
    assert check_exposure("0.0.0.0", settings_from_env({"PARKGATE_TOKEN": "t"}), False) is None


def test_hidden_ranges_are_the_control_format_and_blank_characters() -> None:
    extra = {0x034F, 0x115F, 0x1160, 0x3164, 0xFFA0, 0x2800}
    for point in range(0x110000):
        char = chr(point)
        expected = unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp", "Cs") or point in extra
        if unicodedata.category(char) == "Cn":
            continue  # unassigned in this Python's Unicode: either way
        assert is_hidden(char) is expected, hex(point)
    assert tuple(sorted(HIDDEN_RANGES)) == HIDDEN_RANGES


def test_values_are_shown_escaped() -> None:
    assert visible_text("a\nb\t\x1b[31m\x07\u202e") == "a\nb\t\\u001b[31m\\u0007\\u202e"
    assert visible_id("mk\u200bａ\\[/bold]") == "mk\\u200b\\uff41\\u005c[/bold]"
    assert visible_text("\U000e0041") == "\\U000e0041"
    assert json_line({"id": "x\u202e\U000e0041"}) == '{"id": "x\\u202e\\udb40\\udc41"}'
