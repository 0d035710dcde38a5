"""``Transaction.store_pass``: the stored reply of a ``pass`` decided before its transaction,
stored only where the conversation still has nothing open and the ``message_id`` is new.

The gateway decides such a message on an event loop's thread and stores its reply later,
in a batch (``Gateway.record_inline``): the check and the insert are one statement, so a
conversation that parked an ask meanwhile, or a message stored twice, is refused, not an
error that would fail the batch.
"""

from __future__ import annotations

from datetime import UTC, datetime

from parkgate.core.model import Ask, AskKind, AskStatus, Run, RunStatus
from parkgate.store import Store
from parkgate.store.writes import NewAsk, StoredReply, Writes

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def _reply(conversation: str, message_id: str, text: str = '{"kind":"pass"}') -> StoredReply:
    return StoredReply(conversation, message_id, text, T0)


def test_a_pass_is_stored_once_and_never_where_an_ask_is_open(store: Store) -> None:
    ask = Ask("a-1", "parked", "r-1", AskKind.CHOICE, "Ship it?", ("Yes", "No"), AskStatus.OPEN, T0, T0, 60.0)
    with store.transaction() as tx:
        tx.write(Writes(park=NewAsk(ask, Run("r-1", "parked", None, RunStatus.RUNNING, None, {}, "a-1", T0, T0))))
    with store.transaction() as tx:
        assert tx.store_pass(_reply("free", "m-1")) is True
        assert tx.store_pass(_reply("free", "m-1", '{"kind":"other"}')) is False  # the same message again
        assert tx.store_pass(_reply("parked", "m-1")) is False  # an ask is open there
        assert tx.store_pass(_reply("free", "m-2")) is True
    with store.transaction() as tx:
        assert tx.reply_for("free", "m-1") == '{"kind":"pass"}'
        assert tx.reply_for("free", "m-2") == '{"kind":"pass"}'
        assert tx.reply_for("parked", "m-1") is None
        tx.write(Writes(reply=_reply("other", "m-9")))  # the ordinary insert beside it
    with store.transaction() as tx:
        assert tx.store_pass(_reply("other", "m-9")) is False
