"""``:memory:``: a database of one gateway alone, shared by its threads and its group
commit, and gone when it closes."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

import pytest

from parkgate import Gateway, ManualClock, ReplyKind
from parkgate.store.sqlite import SQLiteStore


@pytest.mark.parametrize("url", [":memory:", "sqlite:///:memory:"])
def test_a_memory_gateway_parks_and_answers_from_several_threads_and_leaves_nothing(url: str) -> None:
    with Gateway(url, clock=ManualClock(datetime(2026, 1, 5, tzinfo=UTC))) as gateway:
        store = gateway.store
        assert isinstance(store, SQLiteStore)
        folder = store.path.parent
        replies: list[ReplyKind] = []

        def converse(n: int) -> None:
            gateway.ask(f"c{n}", "Deploy?", ["Yes", "No"])
            replies.append(gateway.handle(f"c{n}", "1").kind)

        threads = [threading.Thread(target=converse, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert replies == [ReplyKind.SELECTED] * 8
        assert folder.is_dir() and folder.name.startswith("parkgate-memory-")
    assert not folder.exists()  # gone with the gateway
    with Gateway(url) as again:
        assert again.parked("c1") is None  # a new one starts empty
