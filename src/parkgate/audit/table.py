"""The clock check on a table of your own: the write-up's query, on SQLite or PostgreSQL.

::

    SELECT <shown columns>, <asked_at> FROM <table>
    WHERE <answered_at> IS NULL          -- or: WHERE (<your open-where SQL>)
    ORDER BY <asked_at> ASC
    LIMIT <max_rows + 1>

Every name is quoted as an identifier (:func:`~parkgate.audit.readonly.quote_identifier`);
the only SQL of the caller's that runs is an ``open_where`` fragment they pass
explicitly, inside a read-only transaction, so it can read but never write. The read is
bounded (:class:`~parkgate.audit.readonly.Bounds`): a row past ``max_rows`` or a query
past the time limit is an error, never a hang or every row in memory. Hours open are
counted here, from the values read, the same on both engines.
"""

from __future__ import annotations

from collections.abc import Sequence

from parkgate.audit.clock import Parked, as_utc, shorten
from parkgate.audit.readonly import Bounds, quote_identifier, read_only
from parkgate.errors import InputError


def open_rows_sql(
    engine: str,
    table: str,
    asked_at: str,
    *,
    answered_at: str | None = None,
    open_where: str | None = None,
    show: Sequence[str] = (),
    limit: int | None = None,
) -> str:
    """The query for ``table``'s open rows, oldest first.

    Args:
        engine: ``sqlite`` or ``postgres``: how names are quoted.
        table: The table (``schema.table`` for one in another schema).
        asked_at: The column that says when a row was asked.
        answered_at: The column that stays NULL while a row is open; or else
        open_where: A SQL condition that holds for the open rows (run as written).
        show: Columns to show beside ``asked_at`` (default: every column).
        limit: The most rows the query returns (default: no ``LIMIT``).

    Returns:
        The ``SELECT`` statement.

    Raises:
        InputError: Neither or both of ``answered_at`` and ``open_where`` given.
    """
    if (answered_at is None) == (open_where is None):
        raise InputError("give one of answered_at (a column NULL while open) or open_where (a SQL condition)")
    columns = ", ".join(quote_identifier(name, engine) for name in show) if show else "*"
    where = f"{quote_identifier(answered_at, engine)} IS NULL" if answered_at is not None else f"({open_where})"
    stamp = quote_identifier(asked_at, engine)
    statement = f"SELECT {columns}, {stamp} FROM {quote_identifier(table, engine)} WHERE {where} ORDER BY {stamp} ASC"
    return statement if limit is None else f"{statement} LIMIT {int(limit)}"


def parked_rows(
    url: str,
    table: str,
    asked_at: str,
    *,
    answered_at: str | None = None,
    open_where: str | None = None,
    show: Sequence[str] = (),
    bounds: Bounds | None = None,
) -> list[Parked]:
    """The open rows of ``table`` in the database at ``url``, read in a read-only transaction.

    Args:
        url: ``sqlite:///file.db`` (or a path) or ``postgresql://...``.
        table: As for :func:`open_rows_sql`.
        asked_at: As for :func:`open_rows_sql`.
        answered_at: As for :func:`open_rows_sql`.
        open_where: As for :func:`open_rows_sql`.
        show: As for :func:`open_rows_sql`.
        bounds: The time limit and the row limit (default :class:`~parkgate.audit.readonly.Bounds`).

    Returns:
        One :class:`~parkgate.audit.clock.Parked` a row: its shown columns, shortened.

    Raises:
        StoreError: The database is missing or out of reach, the query fails, runs past
            the time limit or returns more than the row limit, or an ``asked_at`` value is
            not a timestamp.
        InputError: As for :func:`open_rows_sql`.
    """
    bounds = bounds or Bounds()
    with read_only(url, bounds) as reader:
        statement = open_rows_sql(
            reader.engine,
            table,
            asked_at,
            answered_at=answered_at,
            open_where=open_where,
            show=show,
            limit=bounds.max_rows + 1,
        )
        rows = reader.rows(statement)
        names = reader.columns()[:-1]
    return [
        Parked(
            {name: shorten(value) for name, value in zip(names, row[:-1], strict=True) if name != asked_at},
            as_utc(row[-1], f"{asked_at} value"),
        )
        for row in rows
    ]
