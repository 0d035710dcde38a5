"""Channels: platforms where people answer asks (Slack, Telegram; a channel is one package).

The interface, in five parts:

- **The registry** (:mod:`parkgate.channels.registry`): each channel's package declares
  it once (a :class:`~parkgate.channels.registry.ChannelSpec`: its name, settings,
  target and location models, inbound routes, commands); what needs a channel outside
  the package (the HTTP API, serving, the CLI, the clients, the console) reads it there.

- **A channel** (:class:`~parkgate.channels.base.Channel`) posts an ask, updates it when
  it closes, and posts a reply's text in its thread. It is added to a gateway with
  :meth:`Gateway.add_channel <parkgate.Gateway.add_channel>`; its inbound side turns a
  platform event into
  :meth:`Gateway.handle_in_channel <parkgate.Gateway.handle_in_channel>`, with the
  platform's user as ``sender`` and the event's id as ``message_id``.
- **Where an ask was posted** is kept in a table of its own (``channel_posts``): the
  park's :class:`~parkgate.channels.base.ChannelTarget` (``post_to``), the location the
  platform answered, and the thread whose replies go to the ask.
- **The durable job queue** (``channel_outbox``, :mod:`parkgate.channels.jobs`): a
  ``post``, ``closed`` or ``reply`` job is written in the same transaction as the park,
  the close or the message it follows, so nothing is lost, and run by the deliverer
  (:class:`~parkgate.channels.deliver.ChannelDeliverer`) with the callbacks' backoff;
  failed jobs stay visible.
- **Serving** (:mod:`parkgate.channels.serving`): ``parkgate serve`` mounts each
  registered channel its environment switches on.
"""

from __future__ import annotations

from parkgate.channels.base import Channel, ChannelJobFailed, ChannelReply, ChannelTarget, Posted, check_target

__all__ = ["Channel", "ChannelJobFailed", "ChannelReply", "ChannelTarget", "Posted", "check_target"]
