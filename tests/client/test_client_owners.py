"""The client carries what the service says of owners: an ask's and a run's ``owner``, and
the two refusals between owners as the library's exceptions, naming the caller's own ids.
No server is needed: these read the service's JSON as it is written.
"""

from __future__ import annotations

import httpx
import pytest

from parkgate import ConversationBusy, Gateway, RunClosed
from parkgate.client import wire
from parkgate.client.responses import raise_error
from parkgate.client.views import AskView, run_from_dict
from parkgate.gateway.shapes import ask_to_dict
from parkgate.http.responses import run_to_dict


def test_an_ask_view_and_a_run_carry_their_owner(gateway: Gateway) -> None:
    parked = gateway.ask("c-1", "Deploy?", ["Yes", "No"], run_id="run-1", owner="agent")
    view = AskView.from_dict(ask_to_dict(gateway.get(parked.ask_id or "")))
    run = gateway.run("run-1")
    assert run is not None
    assert (view.owner, run_from_dict(run_to_dict(run)).owner) == ("agent", "agent")


def test_the_refusals_between_owners_are_the_librarys_exceptions() -> None:
    call = wire.park("c-1", "Your key?", None, None, {"run_id": "run-b", "replace": True})
    busy = httpx.Response(409, json={"error": "conversation_busy", "detail": "busy"})
    with pytest.raises(ConversationBusy) as refused:
        raise_error(call, busy, busy.json())
    assert (refused.value.conversation_id, str(refused.value)) == ("c-1", "busy")
    closed = httpx.Response(409, json={"error": "run_closed", "detail": "closed"})
    with pytest.raises(RunClosed) as refused_run:
        raise_error(call, closed, closed.json())
    assert refused_run.value.run_id == "run-b"
