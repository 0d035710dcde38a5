"""Watchers of other processes' commits, feeding the close signal (:mod:`parkgate.store.signal`).

- :class:`PostgresWatcher` holds one connection that ``LISTEN``\\s on channel ``parkgate``.
  Migration 5's triggers send ``<schema> <event> <id>`` from the transaction that closes
  an ask, parks one with a due time or queues a callback, delivered at its commit, so a
  waiter in another process wakes as soon as the answer commits. A close notifies only
  when something may wait on the ask (migration 9): an ask with a due time, or one whose
  ``waited`` flag a :class:`WaitRegistrar` set for a waiter of this process.
- :class:`SQLiteWatcher` polls ``PRAGMA data_version`` (a counter in shared memory that
  changes when another connection commits) every :data:`SQLITE_POLL_SECONDS` while
  anything in this process waits, and on a change asks the file, in one query, which of
  the asks waited on here have closed.

Both run in a daemon thread of their own and stop with :meth:`stop`. After (re)connecting,
the PostgreSQL watcher signals :data:`~parkgate.store.signal.Change.ANY`: notifications sent
while it was away are lost, so every waiter reads again.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections import OrderedDict
from typing import Any

import psycopg

from parkgate.store.signal import Change, CloseSignal

log = logging.getLogger("parkgate.watch")

#: How often the SQLite watcher looks for another process's commit while something waits.
SQLITE_POLL_SECONDS = 0.005
#: How long the PostgreSQL watcher blocks for notifications before checking for stop().
LISTEN_SLICE_SECONDS = 0.25
#: Reconnect backoff bounds of the PostgreSQL watcher, in seconds.
RECONNECT_FIRST, RECONNECT_MAX = 0.1, 5.0
CHANNEL = "parkgate"
_EVENTS = {"closed": Change.CLOSED, "due": Change.DUE, "outbox": Change.OUTBOX}
#: Asks a process remembers having flagged ``waited`` (it flags them again once forgotten).
REMEMBERED_FLAGS = 10_000
#: Ids per ``IN (...)`` query of the SQLite watcher (below SQLite's parameter limit).
_CHUNK = 500


class _Thread:
    """A named daemon thread running ``self._run`` until :meth:`stop`."""

    def __init__(self, name: str) -> None:
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._guarded, name=name, daemon=True)
        self._thread.start()

    def _guarded(self) -> None:
        try:
            self._run()
        except Exception:  # a watcher that dies leaves waiters on their fallback reads
            log.exception("%s stopped", self._thread.name)

    def _run(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        self._stopping.set()
        self._wake()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout=5)

    def _wake(self) -> None:
        """Interrupt a blocking wait so :meth:`stop` returns promptly."""


class PostgresWatcher(_Thread):
    """Wakes this process's waiters on other processes' closes, via ``LISTEN parkgate``."""

    def __init__(self, url: str, schema: str | None, signal: CloseSignal) -> None:
        self._url = url
        self._schema = schema
        self._signal = signal
        self._registrar = WaitRegistrar(url, schema, signal)
        super().__init__("parkgate-listen")

    def waiting_on(self, ask_id: str) -> None:
        """A waiter of this process waits on ``ask_id``: make its close notify."""
        self._registrar.add(ask_id)

    def stop(self) -> None:
        self._registrar.stop()
        super().stop()

    def _run(self) -> None:
        delay = RECONNECT_FIRST
        while not self._stopping.is_set():
            try:
                with psycopg.connect(self._url, autocommit=True, connect_timeout=5) as conn:
                    self._listen(conn)
                    delay = RECONNECT_FIRST
            except psycopg.Error as error:
                log.warning("close signal: listening failed (%s); retrying in %.1f s", error, delay)
                self._stopping.wait(delay)
                delay = min(delay * 2, RECONNECT_MAX)

    def _listen(self, conn: psycopg.Connection[Any]) -> None:
        if self._schema:
            conn.execute("SELECT set_config('search_path', %s, false)", (self._schema,))
        row = conn.execute("SELECT current_schema()").fetchone()
        schema = row[0] if row else "public"
        conn.execute(f"LISTEN {CHANNEL}")
        self._signal.changed(Change.ANY)  # what committed before this LISTEN was not heard
        while not self._stopping.is_set():
            for note in conn.notifies(timeout=LISTEN_SLICE_SECONDS):
                where, _, rest = note.payload.partition(" ")
                event, _, ask_id = rest.partition(" ")
                change = _EVENTS.get(event)
                if where != schema or change is None:
                    continue
                if change is Change.CLOSED:
                    self._signal.closed((ask_id,))
                else:
                    self._signal.changed(change, ask_id)
                if self._stopping.is_set():
                    return


class WaitRegistrar(_Thread):
    """Sets ``asks.waited`` for the asks this process's waiters wait on (PostgreSQL).

    A close of a plain ask sends ``NOTIFY`` only once its ``waited`` flag is set (migration
    9). The flag's ``UPDATE ... WHERE status = 'open'`` is ordered with a close by the row
    lock, so an ask it does not find open has closed already (or does not exist): its
    waiters are woken at once and read it. An ask flagged once stays flagged, so each is
    flagged once per process (the last :data:`REMEMBERED_FLAGS` remembered).
    """

    def __init__(self, url: str, schema: str | None, signal: CloseSignal) -> None:
        self._url = url
        self._schema = schema
        self._signal = signal
        self._pending: list[str] = []
        self._flagged: OrderedDict[str, None] = OrderedDict()
        self._arrived = threading.Condition()
        self._needed = True
        super().__init__("parkgate-waited")

    def add(self, ask_id: str) -> None:
        """Flag ``ask_id`` soon (never blocks: a waiter's event loop calls it)."""
        with self._arrived:
            if not self._needed or ask_id in self._flagged:
                return
            self._pending.append(ask_id)
            self._arrived.notify()

    def _wake(self) -> None:
        with self._arrived:
            self._arrived.notify_all()

    def _take(self) -> list[str]:
        with self._arrived:
            while not self._pending and not self._stopping.is_set():
                self._arrived.wait()
            taken, self._pending = list(dict.fromkeys(self._pending)), []
            return taken

    def _run(self) -> None:
        delay = RECONNECT_FIRST
        while self._needed and not self._stopping.is_set():
            try:
                with psycopg.connect(self._url, autocommit=True, connect_timeout=5) as conn:
                    if self._schema:
                        conn.execute("SELECT set_config('search_path', %s, false)", (self._schema,))
                    while self._needed and not self._stopping.is_set():
                        self._flag(conn, self._take())
                        delay = RECONNECT_FIRST
            except psycopg.Error as error:
                log.warning("close signal: flagging waited asks failed (%s); retrying in %.1f s", error, delay)
                self._signal.changed(Change.ANY)  # a waiter whose flag was lost reads again
                self._stopping.wait(delay)
                delay = min(delay * 2, RECONNECT_MAX)

    def _flag(self, conn: psycopg.Connection[Any], ask_ids: list[str]) -> None:
        if not ask_ids:
            return
        try:
            rows = conn.execute(
                "UPDATE asks SET waited = true WHERE id = ANY(%s) AND status = 'open' RETURNING id", (ask_ids,)
            ).fetchall()
        except psycopg.errors.UndefinedColumn:  # a schema before version 9: every close notifies
            self._needed = False
            return
        except psycopg.Error:
            with self._arrived:
                self._pending[:0] = ask_ids
            raise
        with self._arrived:
            for ask_id in ask_ids:
                self._flagged[ask_id] = None
            while len(self._flagged) > REMEMBERED_FLAGS:
                self._flagged.popitem(last=False)
        still_open = {row[0] for row in rows}
        closed = [ask_id for ask_id in ask_ids if ask_id not in still_open]
        if closed:
            self._signal.closed(closed)


class SQLiteWatcher(_Thread):
    """Wakes this process's waiters on other processes' closes, via ``PRAGMA data_version``."""

    def __init__(self, target: str, uri: bool, signal: CloseSignal) -> None:
        self._target = target
        self._uri = uri
        self._signal = signal
        super().__init__("parkgate-watch")

    def waiting_on(self, ask_id: str) -> None:
        """Nothing to do: this watcher looks at every waited-on ask after each commit."""

    def _wake(self) -> None:
        self._signal.stir()

    def _run(self) -> None:
        conn = sqlite3.connect(self._target, uri=self._uri, isolation_level=None, timeout=1.0)
        try:
            last = conn.execute("PRAGMA data_version").fetchone()[0]
            while not self._stopping.is_set():
                if not self._signal.wait_for_interest(1.0):
                    continue
                version = conn.execute("PRAGMA data_version").fetchone()[0]
                if version != last:
                    last = version
                    self._look(conn)
                self._stopping.wait(SQLITE_POLL_SECONDS)
        finally:
            conn.close()

    def _look(self, conn: sqlite3.Connection) -> None:
        waited = self._signal.waited_ids()
        closed: list[str] = []
        for start in range(0, len(waited), _CHUNK):
            chunk = waited[start : start + _CHUNK]
            marks = ", ".join("?" * len(chunk))
            try:
                rows = conn.execute(f"SELECT id FROM asks WHERE status <> 'open' AND id IN ({marks})", chunk)
                closed.extend(row[0] for row in rows)
            except sqlite3.Error as error:  # busy, or a file being replaced: look next time
                log.debug("close signal: look failed (%s)", error)
                return
        if closed:
            self._signal.closed(closed)
        self._signal.changed(Change.COMMITTED)
