"""Fields declared once: each field of a declared dataclass (an ask, a run, a vote, a
callback's state) carries a :class:`FieldSpec` that says what its JSON calls it, how its
value is written as JSON and read back, how a store keeps it, and whether the public
JSON shows it.

Everything that restates a value's fields is derived from these declarations: the
store's columns, inserts and row decoding (:mod:`parkgate.store.ask_rows`), the JSON the
API sends (:func:`to_json`), its OpenAPI schema (:func:`parkgate.http.outputs.model_of`)
and the client's views (:func:`from_json`). Adding a field to an ask is the field, its
spec when it is not a plain value, a migration pair and the code that uses it.

A field without a spec is a plain value (text, a number, a flag or ``None``): its JSON
is the value under the field's name, and a store keeps it in a column of that name.
"""

from __future__ import annotations

import json
import typing
from collections.abc import Callable, Mapping
from dataclasses import MISSING, Field, dataclass, fields
from datetime import datetime
from enum import Enum
from typing import Any, Literal, TypeVar

T = TypeVar("T")

#: The key of a field's spec in its ``dataclasses.field(metadata=...)``.
SPEC_KEY = "parkgate.shape"


@dataclass(frozen=True, slots=True)
class Codec:
    """How a field's value is written as JSON and read back, and how a store keeps it.

    ``None`` is ``None`` everywhere: the functions see only other values.
    """

    #: The value as JSON; ``None``: the value is its own JSON (text, a number, a flag).
    to_json: Callable[[Any], Any] | None = None
    #: The value from its JSON; ``None``: the JSON is the value.
    from_json: Callable[[Any], Any] | None = None
    #: What the JSON value is, for a schema (``str``, ``list[str]``, a declared class, a
    #: ``list`` of one); ``None``: the field's own type.
    json_type: Any = None
    #: How a store keeps the value: ``"value"`` (its JSON value), ``"text"`` (its JSON as
    #: text) or ``"time"`` (the store's own time type).
    stored: Literal["value", "text", "time"] = "value"
    #: A ``"text"`` value that is empty is stored as ``NULL`` (read back as the field's default).
    empty_is_null: bool = False
    #: The value as stored text, when not ``json.dumps`` of its JSON (a cached encoder).
    to_text: Callable[[Any], str] | None = None
    #: The value from stored text, when not :attr:`from_json` of ``json.loads`` (a cached decoder).
    from_text: Callable[[str], Any] | None = None
    #: The enum whose members the value is: written as the member's value, inline in the
    #: compiled writers (a plain value is written as it is, so a store's driver refuses
    #: what is neither).
    enum: type[Enum] | None = None

    def text_of(self, value: Any) -> str:
        """``value`` as the text a store keeps (a ``"text"`` codec)."""
        if self.to_text is not None:
            return self.to_text(value)
        return json.dumps(self.to_json(value) if self.to_json is not None else value, ensure_ascii=False)

    def from_stored_text(self, raw: str) -> Any:
        """The value a store's text holds (a ``"text"`` codec)."""
        if self.from_text is not None:
            return self.from_text(raw)
        loaded = json.loads(raw)
        return self.from_json(loaded) if self.from_json is not None else loaded


#: A plain value: text, a number, a flag.
PLAIN = Codec()
#: A moment: ISO 8601 text in JSON, the store's time type in a store.
TIME = Codec(to_json=datetime.isoformat, from_json=datetime.fromisoformat, json_type=str, stored="time")
#: A number of seconds, read back as a float whatever number the JSON or the store holds.
SECONDS = Codec(from_json=float, json_type=float)
#: Any JSON value, as it is, stored as its text.
JSON_VALUE = Codec(json_type=Any, stored="text")
#: A JSON object (a mapping of JSON values), copied both ways and stored as its text.
OBJECT = Codec(to_json=dict, from_json=dict, json_type=dict[str, Any], stored="text")


def enum_codec(kind: type[Enum]) -> Codec:
    """An enum's member as its value (the JSON and the store hold the value)."""
    members = {member.value: member for member in kind}  # a dict lookup: cheaper than kind(value) per row
    return Codec(to_json=_value_of, from_json=members.__getitem__, json_type=Literal[tuple(members)], enum=kind)


#: How the compiled writers write an enum's member ``v``: its value (a run's status is
#: often given as its plain value, written as it is). Inline: a message's path runs no
#: function of this module.
VALUE_OF = "getattr(v, 'value', v)"


def _value_of(member: Any) -> Any:
    return getattr(member, "value", member)


def texts_codec(*, empty_is_null: bool, from_text: Callable[[str], Any] | None = None) -> Codec:
    """A tuple of strings: a JSON list, stored as its text."""
    return Codec(
        to_json=list,
        from_json=_texts,
        json_type=list[str],
        stored="text",
        empty_is_null=empty_is_null,
        from_text=from_text,
    )


def _texts(value: Any) -> tuple[str, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise TypeError(f"expected a list of strings, not {type(value).__name__}")
    return tuple(_text(item) for item in value)


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, not {type(value).__name__}")
    return value


def _floats(value: Any) -> tuple[float, ...]:
    return tuple(float(item) for item in value)


#: A tuple of numbers of seconds: a JSON list, stored as its text (``NULL`` when empty).
SECONDS_LIST = Codec(to_json=list, from_json=_floats, json_type=list[float], stored="text", empty_is_null=True)


def object_codec(kind: type[Any], *, empty_is_null: bool = False) -> Codec:
    """A tuple of declared values (such as votes): a JSON list of their objects, stored as its text."""

    def write(values: Any) -> list[dict[str, Any]]:
        return [to_json(value) for value in values]

    def read(values: Any) -> tuple[Any, ...]:
        return tuple(from_json(kind, item) for item in values)

    return Codec(to_json=write, from_json=read, json_type=list[kind], stored="text", empty_is_null=empty_is_null)  # type: ignore[valid-type]


def nested_codec(kind: type[Any]) -> Codec:
    """One declared value (such as a callback's state) as its JSON object."""
    return Codec(to_json=to_json, from_json=lambda data: from_json(kind, data), json_type=kind, stored="text")


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """One field's declaration beyond its name and type."""

    codec: Codec = PLAIN
    #: Its JSON name; ``""``: the field's name.
    wire: str = ""
    #: Its column in a store; ``""``: the field's name; ``None``: no column of its own.
    column: str | None = ""
    #: Whether the public JSON (the API's, the client's) shows it.
    public: bool = True
    #: What it holds, for the API's schema.
    doc: str = ""


def spec(
    codec: Codec = PLAIN, *, wire: str = "", column: str | None = "", public: bool = True, doc: str = ""
) -> dict[str, FieldSpec]:
    """A field's declaration, as ``dataclasses.field(metadata=spec(...))`` takes it."""
    return {SPEC_KEY: FieldSpec(codec, wire, column, public, doc)}


_PLAIN_SPEC = FieldSpec()


@dataclass(frozen=True, slots=True)
class Declared:
    """A declared field, its names resolved: what every derivation reads."""

    name: str
    spec: FieldSpec
    #: The field's type, resolved.
    type: Any
    #: Whether a value must be given (the field has no default).
    required: bool
    #: The field's default (``None`` for a required field).
    default: Any

    @property
    def codec(self) -> Codec:
        return self.spec.codec

    @property
    def wire(self) -> str:
        """The field's JSON name."""
        return self.spec.wire or self.name

    @property
    def column(self) -> str | None:
        """The field's column in a store (``None``: it has none of its own)."""
        return self.name if self.spec.column == "" else self.spec.column


def declared(kind: type[Any]) -> tuple[Declared, ...]:
    """The fields of the dataclass ``kind``, in order, each with its spec.

    Args:
        kind: A dataclass whose fields may carry a :func:`spec`.

    Returns:
        One :class:`Declared` a field (a field without a spec is a plain value).
    """
    found = _DECLARED.get(kind)
    if found is None:
        hints = typing.get_type_hints(kind)
        found = _DECLARED[kind] = tuple(_declared(item, hints[item.name]) for item in fields(kind))
    return found


#: Each declared class's fields, read once (a derivation runs per row, per response).
_DECLARED: dict[type[Any], tuple[Declared, ...]] = {}
_PUBLIC: dict[type[Any], tuple[Declared, ...]] = {}


def _declared(item: Field[Any], hint: Any) -> Declared:
    found = item.metadata.get(SPEC_KEY, _PLAIN_SPEC)
    if item.default is not MISSING:
        return Declared(item.name, found, hint, False, item.default)
    if item.default_factory is not MISSING:
        return Declared(item.name, found, hint, False, item.default_factory())
    return Declared(item.name, found, hint, True, None)


def public(kind: type[Any]) -> tuple[Declared, ...]:
    """The fields of ``kind`` the public JSON shows."""
    found = _PUBLIC.get(kind)
    if found is None:
        found = _PUBLIC[kind] = tuple(item for item in declared(kind) if item.spec.public)
    return found


def to_json(value: Any) -> dict[str, Any]:
    """The public JSON object of a declared value: one key a public field, in field order.

    Args:
        value: An instance of a declared dataclass.

    Returns:
        JSON-ready values, each under its field's JSON name.
    """
    return json_writer(type(value))(value)


def from_json(kind: type[T], data: Mapping[str, Any]) -> T:
    """The declared value the public JSON object ``data`` describes.

    A field missing from ``data``, or ``null`` there, takes its default; a required
    field must be present. A text field's value must be text.

    Args:
        kind: The declared dataclass.
        data: Its JSON object.

    Returns:
        The value.

    Raises:
        KeyError: A required field is missing, or an enum's value is unknown.
        TypeError: A value is not of its field's JSON type.
        ValueError: A value is not one its field takes (a time that does not parse).
    """
    return json_reader(kind)(data)


def json_writer(kind: type[T]) -> Callable[[T], dict[str, Any]]:
    """:func:`to_json` for one declared class: what a caller on a hot path keeps and calls."""
    write = _JSON_WRITERS.get(kind)
    if write is None:
        write = _JSON_WRITERS[kind] = _json_writer(kind)
    return write


def json_reader(kind: type[T]) -> Callable[[Mapping[str, Any]], T]:
    """:func:`from_json` for one declared class: what a caller on a hot path keeps and calls."""
    read = _JSON_READERS.get(kind)
    if read is None:
        read = _JSON_READERS[kind] = _json_reader(kind)
    return read


# Every reply and every ask shown is written by these, so each class's writer and reader
# are compiled once from its declaration (as dataclasses compiles __init__): the code is
# the hand-written dict display and constructor call it replaces.
_JSON_WRITERS: dict[type[Any], Callable[[Any], dict[str, Any]]] = {}
_JSON_READERS: dict[type[Any], Callable[[Mapping[str, Any]], Any]] = {}


def _json_writer(kind: type[Any]) -> Callable[[Any], dict[str, Any]]:
    namespace: dict[str, Any] = {}
    parts = []
    for at, item in enumerate(public(kind)):
        value = f"value.{item.name}"
        if item.codec.enum is not None:
            value = f"(None if (v := {value}) is None else {VALUE_OF})"
        elif item.codec.to_json is not None:
            namespace[f"write{at}"] = item.codec.to_json
            value = f"(None if (v := {value}) is None else write{at}(v))"
        parts.append(f"{item.wire!r}: {value}")
    return compiled(f"{kind.__name__} to JSON", "value", "{" + ", ".join(parts) + "}", namespace)


def _json_reader(kind: type[Any]) -> Callable[[Mapping[str, Any]], Any]:
    namespace: dict[str, Any] = {"kind": kind}
    parts = []
    for at, item in enumerate(public(kind)):
        raw = f"data[{item.wire!r}]" if item.required else f"data.get({item.wire!r})"
        read = item.codec.from_json or (_text if item.type is str else None)
        if read is None and item.default is None:
            parts.append(f"{item.name}={raw}")
            continue
        namespace[f"default{at}"] = item.default
        value = "v"
        if read is not None:
            namespace[f"read{at}"] = read
            value = f"read{at}(v)"
        parts.append(f"{item.name}=(default{at} if (v := {raw}) is None else {value})")
    return compiled(f"{kind.__name__} from JSON", "data", f"kind({', '.join(parts)})", namespace)


def compiled(what: str, arguments: str, body: str, namespace: dict[str, Any]) -> Callable[..., Any]:
    """``def f(arguments): return body``, compiled in ``namespace``: code derived from a
    declaration, built once where it runs per row or per response.

    Args:
        what: What the function does (its code's file name, in a traceback).
        arguments: Its parameter list.
        body: The expression it returns.
        namespace: The names ``body`` uses.
    """
    exec(compile(f"def f({arguments}):\n    return {body}\n", f"<{what}>", "exec"), namespace)
    function: Callable[..., Any] = namespace.pop("f")
    return function


class Form(Enum):
    """The JSON form of an option a caller may set: the HTTP input model maps each to the
    JSON it takes, the client to how it writes a Python value there."""

    #: Text, stored as given.
    TEXT = "text"
    #: An id: non-empty text of at most 200 characters.
    ID = "id"
    #: True or false (``null``: false).
    FLAG = "flag"
    #: True or false, or an id naming who (a watcher).
    FLAG_OR_ID = "flag_or_id"
    #: A whole number.
    COUNT = "count"
    #: A URL.
    URL = "url"
    #: A duration: positive seconds in JSON; a timedelta or seconds in Python.
    SECONDS = "seconds"
    #: Durations: seconds, or a list of them.
    OFFSETS = "offsets"
    #: A list of distinct senders' ids.
    SENDERS = "senders"
    #: A text answer's form: its JSON object; an Expect, a form's name or a mapping in Python.
    EXPECT = "expect"
    #: A JSON object.
    OBJECT = "object"


@dataclass(frozen=True, slots=True)
class Option:
    """How an option travels in JSON (``Annotated[type, Option(...)]`` on its field of an
    options ``TypedDict``): its form, what it means (the schema's description) and its JSON
    name (``""``: the option's name). An option without one is the library's only."""

    form: Form
    doc: str = ""
    wire: str = ""


def declared_options(options: type) -> dict[str, Option]:
    """The options an options ``TypedDict`` holds that travel in JSON, by name, in order.

    Args:
        options: A ``TypedDict`` whose fields may be ``Annotated[type, Option(...)]``.

    Returns:
        Each such option's :class:`Option`, its ``wire`` name filled in.
    """
    found = _OPTIONS.get(options)
    if found is None:
        found = {}
        for name, hint in typing.get_type_hints(options, include_extras=True).items():
            option = next((item for item in getattr(hint, "__metadata__", ()) if isinstance(item, Option)), None)
            if option is not None:
                found[name] = Option(option.form, option.doc, option.wire or name)
        _OPTIONS[options] = found
    return found


_OPTIONS: dict[type, dict[str, Option]] = {}


__all__ = [
    "JSON_VALUE",
    "OBJECT",
    "PLAIN",
    "SECONDS",
    "SECONDS_LIST",
    "TIME",
    "VALUE_OF",
    "Codec",
    "Declared",
    "FieldSpec",
    "Form",
    "Option",
    "compiled",
    "declared",
    "declared_options",
    "enum_codec",
    "from_json",
    "json_reader",
    "json_writer",
    "nested_codec",
    "object_codec",
    "public",
    "spec",
    "texts_codec",
    "to_json",
]
