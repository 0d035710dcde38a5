"""Name resolution for callbacks, on threads of their own.

``loop.getaddrinfo`` runs in the event loop's default thread pool, which the deliverer's
store calls (``asyncio.to_thread``) share: a DNS server that never answers would hold
those threads and stall due reads and outbox writes behind it. Callbacks resolve here
instead, in a small pool of :data:`DNS_THREADS` threads that nothing else uses; a
resolution that hangs holds one of them, and the delivery's deadline ends the wait.
"""

from __future__ import annotations

import asyncio
import functools
import socket
import threading
from concurrent.futures import ThreadPoolExecutor

#: Threads that resolve callback hosts (per process); more resolutions at once queue.
DNS_THREADS = 4

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def dns_executor() -> ThreadPoolExecutor:
    """The process's resolver threads (made on first use)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=DNS_THREADS, thread_name_prefix="parkgate-dns")
        return _pool


async def resolve(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to (an address resolves to itself), resolved on the
    resolver threads (:func:`dns_executor`), never the default pool.

    Args:
        host: the callback URL's host.
        port: its port.

    Returns:
        The addresses, in the resolver's order, each once.
    """
    lookup = functools.partial(socket.getaddrinfo, host, port, type=socket.SOCK_STREAM)
    found = await asyncio.get_running_loop().run_in_executor(dns_executor(), lookup)
    return list(dict.fromkeys(str(entry[4][0]) for entry in found))
