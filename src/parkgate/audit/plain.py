"""Checkpoint values read as plain data: nothing read ever names a thing that is built or run.

LangGraph stores a value as a ``(type, bytes)`` pair. Its own decoder
(``JsonPlusSerializer.loads_typed``) revives msgpack extensions by importing the module and
calling the name each one carries (``os.system`` as readily as ``datetime.fromisoformat``),
and unpickles ``pickle`` values: whoever can write one row to a checkpointer would run
code on the machine of whoever audits it. This decoder imports nothing and calls nothing
it reads: a msgpack extension becomes a :class:`Typed` (the names it carries, as text,
beside its data), JSON is parsed without hooks, and any other type is a :class:`Unread`.
Nesting is bounded, so a hostile value is a short note in the report, never a crash.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from parkgate.errors import MissingExtra

#: LangGraph's extension codes that carry ``(module, name, data, ...)``: a constructor
#: with one, positional or keyword arguments, a method with one, a pydantic v1 or v2 model.
_NAMED_CODES = frozenset({0, 1, 2, 3, 4, 5})
#: A numpy array ``(dtype, shape, order, buffer)``, and a delta snapshot (one value).
_NUMPY_CODE = 6
_SNAPSHOT_CODE = 7
#: How many levels (containers and extensions) are read; what lies deeper is cut.
MAX_DEPTH = 64
#: What is shown in place of what lies deeper.
TOO_DEEP = "\u2026"


@dataclass(frozen=True)
class Typed:
    """A msgpack extension as read: the module and name it carries (text, never imported)
    and its data, itself decoded as plain data."""

    module: str
    name: str
    data: Any


@dataclass(frozen=True)
class Unread:
    """A value this decoder does not read, and why (shown in its place)."""

    why: str


def _ormsgpack() -> Any:
    try:
        import ormsgpack
    except ModuleNotFoundError as missing:
        raise MissingExtra("reading a LangGraph checkpointer", missing) from None
    return ormsgpack


@dataclass(frozen=True)
class _Raw:
    """An extension as the unpacker hands it over, decoded later (:func:`_resolve`)."""

    code: int
    payload: bytes


def _unpack(data: bytes) -> Any:
    """``data`` as msgpack, each extension left as a :class:`_Raw`.

    The hook never decodes inside the unpacker: an extension nested in arrays nested in
    an extension would stack one unpacker's recursion on another's until the process
    crashes. :func:`_resolve` decodes them afterwards, one level at a time.
    """
    ormsgpack = _ormsgpack()
    return ormsgpack.unpackb(data, ext_hook=_Raw, option=ormsgpack.OPT_NON_STR_KEYS)


def _resolve(value: Any, depth: int) -> Any:
    """``value`` with each :class:`_Raw` decoded (:func:`_extension`), cut at
    :data:`MAX_DEPTH` levels (containers and extensions alike) to :data:`TOO_DEEP`."""
    if depth > MAX_DEPTH:
        return TOO_DEEP
    if isinstance(value, _Raw):
        return _extension(value, depth)
    if isinstance(value, dict):
        return {_resolved_key(key, depth + 1): _resolve(item, depth + 1) for key, item in value.items()}
    if isinstance(value, list):
        return [_resolve(item, depth + 1) for item in value]
    if isinstance(value, tuple):  # a map key OPT_NON_STR_KEYS read from an array
        return tuple(_resolve(item, depth + 1) for item in value)
    return value


def _resolved_key(key: Any, depth: int) -> Any:
    """A map key, resolved; one that no longer hashes (an extension holding a list) as text."""
    resolved = _resolve(key, depth)
    try:
        hash(resolved)
    except TypeError:
        return _key(resolved)
    return resolved


def _extension(raw: _Raw, depth: int) -> Any:
    """One extension as plain data: named ones as :class:`Typed`, the rest as :class:`Unread`."""
    if raw.code == _NUMPY_CODE:
        return Unread("a numpy array")
    try:
        inner = _resolve(_unpack(raw.payload), depth + 1)
    except ValueError:
        return Unread(f"a malformed msgpack extension {raw.code}")
    if raw.code == _SNAPSHOT_CODE:
        return inner
    if raw.code in _NAMED_CODES and isinstance(inner, list) and len(inner) >= 3:
        module, name = inner[0], inner[1]
        if isinstance(module, str) and isinstance(name, str):
            return Typed(module, name, inner[2])
    return Unread(f"a msgpack extension {raw.code}")


def loads_plain(kind: object, stored: object) -> Any:
    """A stored ``(type, bytes)`` value as plain data; never raises on what it reads.

    Args:
        kind: The value's type column: ``msgpack``, ``json``, ``bytes``, ``bytearray`` or
            ``null`` are read; any other (``pickle`` among them) is :class:`Unread`.
        stored: The value's bytes as the database returned them.

    Returns:
        Plain data (dicts, lists, text, numbers), :class:`Typed` for each extension,
        :class:`Unread` where nothing is read, :data:`TOO_DEEP` below :data:`MAX_DEPTH`.
    """
    if kind == "null":
        return None
    if isinstance(stored, str):
        stored = stored.encode()
    if not isinstance(stored, (bytes, bytearray, memoryview)):
        return Unread(f"{type(stored).__name__} where bytes were expected")
    data = bytes(stored)
    if kind in ("bytes", "bytearray"):
        return data
    try:
        if kind == "msgpack":
            return _resolve(_unpack(data), 0)
        if kind == "json":
            return _resolve(json.loads(data), 0)
    except (ValueError, RecursionError):
        return Unread(f"malformed {kind}")
    return Unread(f"a {shown_kind(kind)} value, which an audit never decodes")


def shown_kind(kind: object) -> str:
    """A type column's value as named in a note: short, one line."""
    text = kind if isinstance(kind, str) else repr(kind)
    text = " ".join(text.split())
    return repr(text if len(text) <= 20 else text[:19] + "\u2026")


def plain(value: Any) -> Any:
    """``value`` (as :func:`loads_plain` returns it) with every :class:`Typed` replaced by
    its data and every :class:`Unread` by a note, keys made text where JSON needs it:
    ready for ``json.dumps``. Its depth is :func:`loads_plain`'s bound."""
    if isinstance(value, Typed):
        return plain(value.data)
    if isinstance(value, Unread):
        return f"(not decoded: {value.why})"
    if isinstance(value, dict):
        return {_key(key): plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def _key(key: object) -> str | int | float | bool | None:
    """A mapping key as JSON can hold it."""
    if key is None or isinstance(key, (str, int, float, bool)):
        return key
    return json.dumps(plain(key), ensure_ascii=False, default=str)
