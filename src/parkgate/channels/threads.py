"""Where a run's next ask is posted: in the same place, and the same thread, as the ask
before it (a workflow's next phase follows its answered phase).

Read from the stored post (``channel_posts``) alone, so it holds in any process, with or
without the channel added. A channel whose asks each start a thread names the fields
that keep the next one in it (:data:`THREAD_FIELDS`); any other channel's target is
used as it was given (Telegram's chat and forum topic).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from parkgate.channels.base import ChannelTarget
from parkgate.store.channel_tables import ChannelPost

#: Per channel: the target's thread field, and the location fields that name the thread,
#: in order (a Slack ask posted in a thread keeps its ``thread_ts``; one that started a
#: thread is that thread, its ``ts``).
THREAD_FIELDS: Mapping[str, tuple[str, tuple[str, ...]]] = {"slack": ("thread_ts", ("thread_ts", "ts"))}


def next_target(post: ChannelPost | None) -> ChannelTarget | None:
    """Where the ask after ``post``'s ask in its run is posted.

    Args:
        post: Where the previous ask was posted, as stored (``None``: it was not).

    Returns:
        The previous target, in the previous ask's thread once the platform has said
        where that is; ``None`` when the previous ask was not posted.
    """
    if post is None:
        return None
    where = dict(json.loads(post.target))
    fields = THREAD_FIELDS.get(post.channel)
    if fields is not None and post.location is not None and fields[0] not in where:
        location = json.loads(post.location)
        thread = next((location[name] for name in fields[1] if location.get(name)), None)
        if thread is not None:
            where[fields[0]] = thread
    return ChannelTarget(post.channel, where)
