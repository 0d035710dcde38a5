"""Where a run's next ask is posted: in the same place, and the same thread, as the ask
before it (a workflow's next phase follows its answered phase).

Read from the stored post (``channel_posts``) alone, so it holds in any process, with or
without the channel added. A channel whose asks each start a thread names the fields
that keep the next one in it (its declaration's ``thread``:
:attr:`~parkgate.channels.registry.ChannelSpec.thread`); any other channel's target is
used as it was given (Telegram's chat and forum topic).
"""

from __future__ import annotations

import json

from parkgate.channels.base import ChannelTarget
from parkgate.channels.registry import spec_of
from parkgate.store.channel_tables import ChannelPost


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
    spec = spec_of(post.channel)
    fields = spec.thread if spec is not None else None
    if fields is not None and post.location is not None and fields[0] not in where:
        location = json.loads(post.location)
        thread = next((location[name] for name in fields[1] if location.get(name)), None)
        if thread is not None:
            where[fields[0]] = thread
    return ChannelTarget(post.channel, where)
