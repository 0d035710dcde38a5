"""``parkgate doorcheck --url`` goes through the client: a base URL ending in ``/v1`` (or ``/``)
is the same server, not ``/v1/v1/...``."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from live_server import Server

from parkgate.cli import DOORCHECK_EXIT, DOORCHECK_INPUTS, main


@pytest.mark.parametrize("suffix", ["", "/", "/v1", "/v1/"])
def test_doorcheck_takes_the_base_url_with_or_without_v1(served: Server, suffix: str) -> None:
    result = CliRunner().invoke(main, ["doorcheck", "--url", served.url + suffix])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert [line["input"] for line in lines] == [*DOORCHECK_INPUTS, DOORCHECK_EXIT]
    assert [line["kind"] for line in lines] == ["retry", "retry", "escalated", "escalated", "cancelled"]
    assert "doorcheck passed" in result.stderr
