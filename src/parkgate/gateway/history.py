"""The operator's reads of every ask: a history page and the figures of a window, each in
one unit of work (:meth:`parkgate.Gateway.history`, :meth:`~parkgate.Gateway.stats`).

A listing is a read: the open asks it bears on that are past their TTL are closed as
expired first, through the read every call makes (:meth:`RunLifeCycle.read
<parkgate.gateway.runs.RunLifeCycle.read>`), so they are listed, and counted, as they now
stand: expired at their due time.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime

from parkgate.channels import registry
from parkgate.clock import Clock
from parkgate.core.history import HistoryPage, HistoryQuery, encode_history_cursor, listing_of
from parkgate.core.stats import NOT_POSTED, Stats, StatsBy, compute_stats
from parkgate.gateway.runs import RunLifeCycle, WritePlan
from parkgate.store.base import Transaction
from parkgate.store.channel_tables import ChannelPost

#: The lapsed asks one statement reads and closes before the next.
LAPSED_BATCH = 500
#: The most rows the figures are computed from (the newest asks first); more is reported as truncated.
MAX_FIGURE_ROWS = 100_000


def close_lapsed(
    tx: Transaction,
    plan: WritePlan,
    runs: RunLifeCycle,
    clock: Clock,
    now: datetime,
    owner: str | None = None,
    conversation_id: str | None = None,
) -> None:
    """Close as expired every open ask past its TTL at ``now`` (only ``owner``'s, only that
    conversation's, when given), and write the closes into ``tx`` so the reads after see them."""
    while True:
        found = tx.history.lapsed(now, LAPSED_BATCH, owner, conversation_id)
        for ask in found:
            # Read unlocked: each is read again locked, since a racing worker may have
            # answered it meanwhile (never overwrite that answer).
            current = tx.ask(ask.id)
            if current is not None:
                runs.read(plan, current, now)
        plan.write(tx, clock)
        if len(found) < LAPSED_BATCH:
            return


def target_key(channel: str | None) -> str | None:
    """The key of a channel's target JSON that holds its target id (``"channel"`` for
    Slack), for a history filter ``"slack:C0OPS"``; ``None`` without a target id, or for a
    channel no registered channel is."""
    if channel is None or ":" not in channel:
        return None
    spec = registry.spec_of(channel.split(":", 1)[0])
    return None if spec is None else spec.target_id


def history_page(
    tx: Transaction, plan: WritePlan, runs: RunLifeCycle, clock: Clock, query: HistoryQuery, now: datetime
) -> HistoryPage:
    """``query``'s page, the lapsed asks it bears on closed first."""
    if listing_of(query).may_hold_lapsed:
        close_lapsed(tx, plan, runs, clock, now, query.owner, query.conversation_id)
    found = tx.history.history(query, query.limit + 1, target_key(query.channel))
    page = found[: query.limit]
    following = encode_history_cursor(query.key_of(page[-1]), page[-1].id) if len(found) > query.limit else None
    return HistoryPage(page, following)


def channel_key(post: ChannelPost) -> str:
    """The channel target an ask was posted to, as the ``channel`` filter names it (``slack:C0OPS``)."""
    try:
        where = json.loads(post.target)
    except ValueError:
        where = {}
    names = registry.target_names(post.channel, where if isinstance(where, dict) else {})
    return names[0] if names else post.channel


def window_stats(
    tx: Transaction,
    plan: WritePlan,
    runs: RunLifeCycle,
    clock: Clock,
    window: tuple[datetime | None, datetime | None],
    now: datetime,
    by: StatsBy | None,
    owner: str | None,
) -> Stats:
    """The figures of ``window`` from one bounded read, the lapsed asks closed first."""
    close_lapsed(tx, plan, runs, clock, now, owner)
    since, until = window
    rows = tx.history.figure_rows(since, until, MAX_FIGURE_ROWS + 1, owner)
    truncated = len(rows) > MAX_FIGURE_ROWS
    rows = rows[:MAX_FIGURE_ROWS]
    channels: Mapping[str, str] | None = None
    if by is StatsBy.CHANNEL:
        posts = tx.channels.posts_of([ask.id for ask in rows])
        channels = {ask_id: channel_key(post) for ask_id, post in posts.items()}
    return compute_stats(rows, since, until, now, by, channels, truncated)


__all__ = [
    "LAPSED_BATCH",
    "MAX_FIGURE_ROWS",
    "NOT_POSTED",
    "channel_key",
    "close_lapsed",
    "history_page",
    "target_key",
    "window_stats",
]
