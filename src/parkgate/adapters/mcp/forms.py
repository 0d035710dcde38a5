"""MCP elicitation forms read as parkgate asks, and parkgate asks written as forms.

Each property of a form-mode ``requestedSchema`` becomes one ask (:class:`FormField`):
a boolean or a single-select enum a choice, a multi-select a several-options text ask,
a number or a string a text ask that takes only that form; a ``default`` becomes the
ask's default. A shape outside the spec is a :class:`~parkgate.StoppingPointError`
naming the field. The full table: docs/adapters/mcp.md.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from mcp_types import ElicitRequestFormParams

from parkgate.core import phrases as P
from parkgate.core import stopping_point
from parkgate.core.expect import (
    DATE,
    DATE_TIME,
    EMAIL,
    INTEGER,
    NUMBER,
    NUMBER_FORMS,
    SEVERAL,
    TEXT,
    URI,
    Expect,
    value_of,
)
from parkgate.core.kinds import AskKind
from parkgate.core.model import Ask
from parkgate.core.stopping_point import AskSpec, StoppingPointError
from parkgate.errors import InputError

#: A value in an ``ElicitResult``'s ``content``.
WireValue = str | int | float | bool | list[str]
#: The string formats MCP elicitation allows.
STRING_FORMATS: tuple[str, ...] = (EMAIL, URI, DATE, DATE_TIME)
#: The form field a parkgate choice ask is answered in: ``{"choice": label}``.
CHOICE_FIELD = "choice"
#: The form field a parkgate text ask is answered in: ``{"answer": text}``.
ANSWER_FIELD = "answer"


@dataclasses.dataclass(frozen=True, slots=True)
class FormField:
    """One field of a form, as the parkgate ask that asks it.

    ``values[i]`` is what goes back in ``content`` for option ``i + 1`` of a choice (an
    enum's ``const``, a boolean's ``True``/``False``) or of a multi-select (whose options
    are its ``expect``'s); ``expect`` is the form a text
    ask's answer must take; ``default`` the ask's default (a label, or text).
    """

    name: str
    spec: AskSpec
    values: tuple[WireValue, ...] = ()
    expect: Expect | None = None
    default: str | None = None

    @property
    def kind(self) -> AskKind:
        """The ask's kind: ``choice`` for an enum or a boolean, ``text`` otherwise."""
        return self.spec.kind

    def value(self, answer: str | None, option_index: int | None) -> WireValue | None:
        """What goes back in ``content`` for an answer to this field's ask."""
        if self.kind is AskKind.CHOICE:
            if option_index is None:
                return None
            return self.values[option_index - 1] if self.values else self.spec.options[option_index - 1]
        if answer is None or self.expect is None:
            return answer
        value = value_of(self.expect, answer)
        if isinstance(value, tuple):  # the several-options form: its labels, as their consts
            labels = self.expect.options or ()
            return [str(self.values[labels.index(label)]) if self.values else label for label in value]
        return value


@dataclasses.dataclass(frozen=True, slots=True)
class ElicitationForm:
    """A form-mode elicitation read as parkgate asks, one per field, in the form's order."""

    message: str
    fields: tuple[FormField, ...]


def read_form(params: ElicitRequestFormParams) -> ElicitationForm:
    """Read a form-mode elicitation as parkgate asks; :class:`StoppingPointError` naming
    the field for a shape parkgate does not ask (see the module's docstring)."""
    schema = params.requested_schema
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(properties, Mapping) or not properties:
        raise StoppingPointError("the form has no fields to ask")
    message = params.message.strip()
    count = len(properties)
    fields = []
    for position, (name, prop) in enumerate(properties.items(), start=1):
        if not isinstance(prop, Mapping):
            raise StoppingPointError(f"field {name!r} has no schema")
        label = str(prop.get("title") or name)
        described = str(prop.get("description") or "").strip()
        if count == 1:
            prompt = _single_prompt(message, str(prop.get("title") or ""), described)
        else:
            prompt = P.FORM_FIELD_PROMPT.format(message=message, label=label, position=position, count=count)
            if described and described != label:
                prompt = f"{prompt}\n{described}"
        try:
            fields.append(_field(str(name), prop, prompt.strip() or label))
        except InputError as error:  # a StoppingPointError is one
            text = str(error)
            raise StoppingPointError(text if text.startswith("field ") else f"field {name!r}: {text}") from None
    return ElicitationForm(message, tuple(fields))


def _single_prompt(message: str, title: str, described: str) -> str:
    """A one-field form's question: the message, then the field's title and description
    where they say more than it (a form's only field keeps its title)."""
    prompt = message
    if title and title != message:
        prompt = f"{prompt}\n\n{title}" if prompt else title
    if described and described not in (message, title):
        prompt = f"{prompt}\n{described}" if prompt else described
    return prompt


def _field(name: str, prop: Mapping[str, Any], prompt: str) -> FormField:
    kind = prop.get("type")
    default = prop.get("default")
    if kind == "boolean":
        if default is not None and not isinstance(default, bool):
            raise StoppingPointError(f"field {name!r}: a boolean's default must be true or false")
        labels = [P.BOOLEAN_YES, P.BOOLEAN_NO]
        chosen = None if default is None else labels[0 if default else 1]
        return FormField(name, stopping_point.make_spec(AskKind.CHOICE, prompt, labels), (True, False), None, chosen)
    if kind == "string" and ("oneOf" in prop or "enum" in prop):
        return _enum_field(name, prop, prompt, default)
    if kind in NUMBER_FORMS:
        if default is not None and (isinstance(default, bool) or not isinstance(default, (int, float))):
            raise StoppingPointError(f"field {name!r}: a number's default must be a number")
        expect = Expect(str(kind), minimum=prop.get("minimum"), maximum=prop.get("maximum"))
        return _text_field(name, prompt, expect, None if default is None else str(default))
    if kind == "string":
        form = prop.get("format", TEXT)
        if form not in (TEXT, *STRING_FORMATS):
            raise StoppingPointError(f"field {name!r}: format {form!r} is not one of {', '.join(STRING_FORMATS)}")
        if default is not None and not isinstance(default, str):
            raise StoppingPointError(f"field {name!r}: a string's default must be a string")
        expect = Expect(str(form), min_length=prop.get("minLength"), max_length=prop.get("maxLength"))
        return _text_field(name, prompt, None if expect.is_plain else expect, default)
    if kind == "array":
        return _multi_field(name, prop, prompt, default)
    raise StoppingPointError(
        f"field {name!r} is {kind!r}; parkgate asks a boolean, a string (enum, titled oneOf, format) or a number"
    )


def _enum_field(name: str, prop: Mapping[str, Any], prompt: str, default: object) -> FormField:
    one_of, enum = prop.get("oneOf"), prop.get("enum")
    if isinstance(one_of, list):
        items = [item for item in one_of if isinstance(item, Mapping) and isinstance(item.get("const"), str)]
        if not items or len(items) != len(one_of):
            raise StoppingPointError(f"field {name!r}: oneOf must list {{const, title}} options")
        values = [str(item["const"]) for item in items]
        labels = [str(item.get("title") or item["const"]) for item in items]
    elif isinstance(enum, list) and enum and all(isinstance(value, str) for value in enum):
        values = list(enum)
        names = prop.get("enumNames")
        labels = [str(n) for n in names] if isinstance(names, list) and len(names) == len(values) else values
    else:
        raise StoppingPointError(f"field {name!r}: enum must be a list of strings")
    spec = stopping_point.make_spec(AskKind.CHOICE, prompt, labels)
    chosen = None
    if default is not None:
        if default not in values:
            raise StoppingPointError(f"field {name!r}: default {default!r} is not one of its values")
        chosen = spec.options[values.index(str(default))]
    return FormField(name, spec, tuple(values), None, chosen)


def _options_of(name: str, items: object) -> tuple[list[str], list[str]]:
    """A multi-select's ``items``: its values and their labels (``enum``, or titled ``anyOf``)."""
    if isinstance(items, Mapping) and isinstance(items.get("anyOf"), list):
        listed = items["anyOf"]
        titled = [item for item in listed if isinstance(item, Mapping) and isinstance(item.get("const"), str)]
        if not titled or len(titled) != len(listed):
            raise StoppingPointError(f"field {name!r}: items.anyOf must list {{const, title}} options")
        return [str(item["const"]) for item in titled], [str(item.get("title") or item["const"]) for item in titled]
    enum = items.get("enum") if isinstance(items, Mapping) else None
    if isinstance(enum, list) and enum and all(isinstance(value, str) for value in enum):
        return list(enum), list(enum)
    raise StoppingPointError(f"field {name!r}: an array's items must be a string enum or a titled anyOf")


def _multi_field(name: str, prop: Mapping[str, Any], prompt: str, default: object) -> FormField:
    values, labels = _options_of(name, prop.get("items"))
    labels = list(stopping_point.make_spec(AskKind.CHOICE, prompt, labels).options)  # checked like a menu's
    expect = Expect(SEVERAL, options=tuple(labels), min_items=prop.get("minItems"), max_items=prop.get("maxItems"))
    chosen = None
    if default is not None:
        if not isinstance(default, list) or not all(isinstance(value, str) and value in values for value in default):
            raise StoppingPointError(f"field {name!r}: default {default!r} is not a list of its values")
        chosen = ", ".join(str(values.index(value) + 1) for value in default)  # positions: labels may hold commas
    return _text_field(name, prompt, expect, chosen, tuple(values))


def _text_field(
    name: str, prompt: str, expect: Expect | None, default: str | None, values: tuple[WireValue, ...] = ()
) -> FormField:
    if default is not None and expect is not None and value_of(expect, default) is None:
        raise StoppingPointError(f"field {name!r}: default {default!r} does not fit the field's own schema")
    return FormField(name, stopping_point.make_spec(AskKind.TEXT, prompt), values, expect, default)


# -- parkgate -> MCP ----------------------------------------------------------------------
def field_for(ask: Ask) -> str:
    """The form field a parkgate ask is answered in: ``choice`` or ``answer``."""
    return CHOICE_FIELD if ask.kind is AskKind.CHOICE else ANSWER_FIELD


def requested_schema(ask: Ask) -> dict[str, Any]:
    """The elicitation ``requestedSchema`` for ``ask``: one required field.

    A choice ask is a single-select enum of its labels (``{"choice": label}``); a text
    ask a string (``{"answer": text}``), or, when it expects a form, a number, an
    integer, a formatted string with the same bounds, or a multi-select of its options.

    Args:
        ask: The parked ask.

    Returns:
        The JSON schema of the form.
    """
    prop: dict[str, Any]
    expect = ask.expect
    if ask.kind is AskKind.CHOICE:
        prop = {"type": "string", "enum": list(ask.options)}
    elif expect is not None and expect.form == SEVERAL:
        prop = {"type": "array", "items": {"type": "string", "enum": list(expect.options or ())}}
        counts = {"minItems": expect.min_items, "maxItems": expect.max_items}
        prop.update({key: value for key, value in counts.items() if value is not None})
    elif expect is not None and expect.form in (NUMBER, INTEGER):
        bounds = {"minimum": expect.minimum, "maximum": expect.maximum}
        prop = {"type": expect.form, **{key: value for key, value in bounds.items() if value is not None}}
    else:
        prop = {"type": "string", "minLength": 1}
        if expect is not None:
            if expect.form != TEXT:
                prop["format"] = expect.form
            if expect.min_length is not None:
                prop["minLength"] = max(1, expect.min_length)
            if expect.max_length is not None:
                prop["maxLength"] = expect.max_length
    if ask.default is not None:
        prop["default"] = _wire_default(ask)
    name = field_for(ask)
    return {"type": "object", "properties": {name: prop}, "required": [name]}


def _wire_default(ask: Ask) -> WireValue:
    assert ask.default is not None
    if ask.expect is not None and ask.expect.form == SEVERAL:
        chosen = value_of(ask.expect, ask.default)
        return list(chosen) if isinstance(chosen, tuple) else ask.default
    if ask.expect is not None and ask.expect.form in (NUMBER, INTEGER):
        number = value_of(ask.expect, ask.default)
        return number if isinstance(number, (int, float)) else ask.default
    return ask.default


def elicit_params(ask: Ask, message: str | None = None) -> ElicitRequestFormParams:
    """The form-mode ``elicitation/create`` parameters that ask ``ask`` (``message``:
    the text shown instead of its prompt, say the retry line after a miss)."""
    return ElicitRequestFormParams(message=message or ask.prompt, requested_schema=requested_schema(ask))


def ask_field(ask: Ask) -> FormField:
    """The :class:`FormField` a parkgate ask is answered in (the reverse of :func:`requested_schema`)."""
    spec = AskSpec(ask.kind, ask.prompt, ask.options)
    return FormField(field_for(ask), spec, (), ask.expect, ask.default)
