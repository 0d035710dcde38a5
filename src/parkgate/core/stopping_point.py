"""The stopping-point marker: how a skill's text output asks a question.

Syntax (inside any free text; one marker per output)::

    [[ask]]
    Which UML diagram?

    1. Sequence
    2. Class
    [[/ask]]

``[[ask text]]`` opens a free-text question (no options). ``[[ask for=U_ALICE,U_BOB
quorum=2]]`` names who may answer and how many must agree (:mod:`.marker_who`). Options are numbered
``1.``, ``1)`` or ``1 -``; blank lines, CRLF and trailing spaces are tolerated. The
option list is the trailing run of numbered lines and must count 1..n with no gap,
no duplicate number or label, and no empty label: anything else is a
:class:`StoppingPointError` naming the line, never a guess.

A byte order mark (U+FEFF) before a marker is tolerated like whitespace.

Structured input is accepted too: ``{"prompt": ..., "options": [...], "kind": ...}``
(with ``"responders"`` and ``"quorum"`` if it names who may answer),
through :func:`from_json`, or as a skill's whole output (:func:`find` takes an output
that is exactly such a JSON object as its stopping point; other JSON is prose).

An :class:`AskSpec` is validated and canonicalised when it is built, however it is built
(:func:`make_spec`, :func:`parse`, :func:`from_json` or ``AskSpec(...)`` directly), so
``parse(render(spec)) == spec`` holds for every spec that exists.

:class:`StoppingPointError` is an :class:`~parkgate.errors.InputError`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from parkgate.core.kinds import AskKind
from parkgate.core.marker_who import ATTRIBUTES, checked_who, parse_attributes, render_attributes, who_from_json
from parkgate.core.menu import normalise
from parkgate.core.option_lines import numbering_problem, option_line, option_number
from parkgate.errors import StoppingPointError as StoppingPointError

MAX_OPTIONS = 50
MAX_LABEL_CHARS = 200
MAX_PROMPT_CHARS = 4000

#: Longest JSON text :func:`from_json` reads (characters, or bytes when given bytes): the
#: HTTP service's body limit. A valid ask is far smaller even with every character escaped.
MAX_JSON_CHARS = 1024 * 1024

# A byte order mark counts as blank around a marker: producers that concatenate files or
# streams leave one at the start of the output (or of a line).
_OPEN = re.compile(r"^[\s\ufeff]*\[\[ask(?:\s+(choice|text))?" + ATTRIBUTES + r"\s*\]\][\s\ufeff]*$", re.IGNORECASE)
_CLOSE = re.compile(r"^[\s\ufeff]*\[\[/ask\]\][\s\ufeff]*$", re.IGNORECASE)


def is_marker_line(line: str) -> bool:
    """True when ``line`` would open or close a stopping-point marker (so no prompt may hold it)."""
    return bool(_OPEN.match(line) or _CLOSE.match(line))


@dataclass(frozen=True, slots=True)
class AskSpec:
    """What a stopping point asks: its kind, prompt, (for a choice) options, and who may answer.

    Building one validates and canonicalises it exactly as :func:`make_spec` does
    (``kind`` may be given as a string, ``options`` as any list or tuple of strings):
    an invalid spec raises :class:`StoppingPointError` and never exists.
    """

    kind: AskKind
    prompt: str
    options: tuple[str, ...] = ()
    #: Who may answer (none: anyone), and how many of them must agree on one option.
    responders: tuple[str, ...] = ()
    quorum: int = 1

    def __post_init__(self) -> None:
        quorum = None if not self.responders and self.quorum == 1 else self.quorum  # the default: anyone's
        canonical = make_spec(self.kind, self.prompt, self.options, self.responders or None, quorum)
        for name in ("kind", "prompt", "options", "responders", "quorum"):
            object.__setattr__(self, name, getattr(canonical, name))


def _trusted(kind: AskKind, prompt: str, options: tuple[str, ...], who: tuple[tuple[str, ...], int]) -> AskSpec:
    """An AskSpec from values :func:`_make_spec` has just validated: no second check."""
    spec = object.__new__(AskSpec)
    for name, value in zip(
        ("kind", "prompt", "options", "responders", "quorum"), (kind, prompt, options, *who), strict=True
    ):
        object.__setattr__(spec, name, value)
    return spec


def _canonical_prompt(prompt: str) -> str:
    lines = [line.rstrip() for line in prompt.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    out: list[str] = []
    for line in lines:
        if not line and (not out or not out[-1]):
            continue  # fold runs of blank lines, drop leading ones
        out.append(line)
    while out and not out[-1]:
        out.pop()
    return "\n".join(out)


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def make_spec(
    kind: AskKind | str,
    prompt: str,
    options: Sequence[str] | None = None,
    responders: Sequence[str] | None = None,
    quorum: int | None = None,
) -> AskSpec:
    """Validate and canonicalise an ask. Raises :class:`StoppingPointError`.

    ``options`` is ``None`` or a sequence of strings (a list or tuple): a string, bytes,
    a mapping, a set or an iterator is refused, not read one item at a time.
    ``responders`` and ``quorum`` are who may answer (:func:`.marker_who.checked_who`).
    """
    if options is None:
        labels: tuple[str, ...] = ()
    elif isinstance(options, (str, bytes, bytearray, memoryview, Mapping)) or not isinstance(options, Sequence):
        raise StoppingPointError(f"options must be a list or tuple of strings, not {type(options).__name__}")
    else:
        labels = tuple(options)  # a tuple is itself: no copy on the hot path
    names = tuple(responders) if isinstance(responders, list) else responders
    try:
        return _make_spec_once(kind, prompt, labels, names, quorum)
    except TypeError:  # something unhashable: validated uncached, which names what is wrong
        return _make_spec(kind, prompt, labels, names, quorum)


@lru_cache(maxsize=256)
def _make_spec_once(
    kind: AskKind | str, prompt: str, options: tuple[str, ...], responders: Sequence[str] | None, quorum: int | None
) -> AskSpec:
    # Pure, and a run asks the same few questions again and again: validate each once.
    # (Errors are not cached: lru_cache keeps only returned values.)
    return _make_spec(kind, prompt, options, responders, quorum)


def _make_spec(
    kind: AskKind | str, prompt: str, options: tuple[str, ...], responders: Sequence[str] | None, quorum: int | None
) -> AskSpec:
    """The checked spec: its kind, its canonical prompt, its tidied labels and who may answer."""
    try:
        ask_kind = AskKind(kind)
    except ValueError:
        raise StoppingPointError(f"kind must be 'choice' or 'text', not {kind!r}") from None
    text = _checked_prompt(prompt)
    who = checked_who(ask_kind, responders, quorum)
    if ask_kind is AskKind.TEXT:
        if options:
            raise StoppingPointError("a text ask takes no options")
        return _trusted(ask_kind, text, (), who)
    if not options:
        raise StoppingPointError("a choice ask needs at least one option")
    if len(options) > MAX_OPTIONS:
        raise StoppingPointError(f"{len(options)} options; the limit is {MAX_OPTIONS}")
    if option_line(text.split("\n")[-1]) is not None:
        raise StoppingPointError("the prompt's last line looks like a numbered option")
    return _trusted(ask_kind, text, _checked_labels(options), who)


def _checked_prompt(prompt: object) -> str:
    """The prompt in canonical form, or :class:`StoppingPointError` naming what is wrong."""
    if not isinstance(prompt, str):
        raise StoppingPointError("prompt must be a string")
    text = _canonical_prompt(prompt)
    if not text:
        raise StoppingPointError("prompt is empty")
    if len(text) > MAX_PROMPT_CHARS:
        raise StoppingPointError(f"prompt is {len(text)} characters; the limit is {MAX_PROMPT_CHARS}")
    if "\x00" in text:
        raise StoppingPointError("prompt contains a NUL character")
    if not _encodable(text):
        raise StoppingPointError("prompt is not valid Unicode (it holds a lone surrogate)")
    for number, line in enumerate(text.split("\n"), start=1):
        if is_marker_line(line):  # it would end or nest the rendered marker
            raise StoppingPointError(f"prompt line {number} is a stopping-point marker ({line.strip()!r})")
    return text


def _checked_labels(options: tuple[str, ...]) -> tuple[str, ...]:
    """Each label with its whitespace folded, or :class:`StoppingPointError` naming the
    first that is not a usable, distinct option."""
    seen: dict[str, int] = {}
    clean: list[str] = []
    for position, label in enumerate(options, start=1):
        if not isinstance(label, str):
            raise StoppingPointError(f"option {position} is not a string")
        tidy = " ".join(label.split())
        if not tidy:
            raise StoppingPointError(f"option {position} is empty")
        if "\x00" in tidy:
            raise StoppingPointError(f"option {position} contains a NUL character")
        if not _encodable(tidy):
            raise StoppingPointError(f"option {position} is not valid Unicode (it holds a lone surrogate)")
        if len(tidy) > MAX_LABEL_CHARS:
            raise StoppingPointError(f"option {position} is longer than {MAX_LABEL_CHARS} characters")
        key = normalise(tidy)
        if key.startswith("/"):  # after NFKC: a fullwidth "／stop" would shadow /stop too
            raise StoppingPointError(f"option {position} starts with '/', which is kept for commands")
        if key in seen:
            raise StoppingPointError(f"option {position} repeats option {seen[key]} ({tidy!r})")
        seen[key] = position
        clean.append(tidy)
    return tuple(clean)


def render(spec: AskSpec) -> str:
    """The marker text for ``spec`` (the canonical form ``parse`` reads back)."""
    head = f"[[ask{' text' if spec.kind == AskKind.TEXT else ''}{render_attributes(spec.responders, spec.quorum)}]]"
    body = [spec.prompt]
    if spec.options:
        body.append("")
        body.extend(f"{i}. {label}" for i, label in enumerate(spec.options, start=1))
    return "\n".join([head, *body, "[[/ask]]"])


def find(output: str) -> AskSpec | None:
    """The stopping point in a skill's free output, or ``None`` when it has none."""
    lines = output.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    start: int | None = None
    kind, who = AskKind.CHOICE, ""
    body: list[tuple[int, str]] = []
    found: AskSpec | None = None
    for number, line in enumerate(lines, start=1):
        if start is None:
            opened = _OPEN.match(line)
            if opened:
                if found is not None:
                    raise StoppingPointError("a second stopping point; only one is allowed", number)
                start, kind, body = number, AskKind((opened.group(1) or "choice").lower()), []
                who = opened.group("who")
            elif _CLOSE.match(line):
                raise StoppingPointError("[[/ask]] without an opening [[ask]]", number)
            continue
        if _CLOSE.match(line):
            found = _from_lines(kind, body, start, who)
            start = None
        elif _OPEN.match(line):
            raise StoppingPointError("[[ask]] inside another [[ask]]", number)
        else:
            body.append((number, line))
    if start is not None:
        raise StoppingPointError("[[ask]] is never closed with [[/ask]]", start)
    return found if found is not None else _structured(output)


_STRUCTURED_FIELDS = frozenset({"prompt", "options", "kind", "responders", "quorum"})


def _structured(output: str) -> AskSpec | None:
    """An output that is, as a whole, a JSON object with a ``prompt`` (and only the
    fields of :func:`from_json`): that stopping point. Any other JSON, or none, is prose."""
    text = output.strip().removeprefix("\ufeff").strip()
    if not (text.startswith("{") and text.endswith("}")) or len(text) > MAX_JSON_CHARS:
        return None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or "prompt" not in data or not set(data) <= _STRUCTURED_FIELDS:
        return None
    return from_json(data)


def parse(output: str) -> AskSpec:
    """Like :func:`find`, but a missing stopping point is an error."""
    spec = find(output)
    if spec is None:
        raise StoppingPointError("no [[ask]] ... [[/ask]] stopping point found")
    return spec


def _from_lines(kind: AskKind, body: list[tuple[int, str]], start: int, who: str) -> AskSpec:
    try:
        responders, quorum = parse_attributes(who)
        checked_who(kind, responders, quorum)  # a marker's own mistake is named at its line
    except StoppingPointError as error:
        raise StoppingPointError(str(error), start) from None
    if kind is AskKind.TEXT:
        return _checked(kind, "\n".join(line for _, line in body), [], start, (responders, quorum))
    # The option list is the trailing run of numbered lines (blank lines allowed).
    cut = len(body)
    for index in range(len(body) - 1, -1, -1):
        line = body[index][1]
        if not line.strip():
            continue
        if option_line(line) is not None:
            cut = index
        else:
            break
    prompt_lines = [line for _, line in body[:cut]]
    option_lines = [(number, line) for number, line in body[cut:] if line.strip()]
    if not option_lines:
        raise StoppingPointError("a choice stopping point has no numbered options", start)
    labels: list[str] = []
    for expected, (number, line) in enumerate(option_lines, start=1):
        found = option_line(line)
        assert found is not None
        digits, label = found
        given = option_number(digits)
        if given != expected:
            raise StoppingPointError(numbering_problem(digits, given, expected), number)
        if not label:
            raise StoppingPointError(f"option {given} has no label", number)
        labels.append(label)
    line_of = {position: number for position, (number, _) in enumerate(option_lines, start=1)}
    try:
        return make_spec(kind, "\n".join(prompt_lines), labels, responders, quorum)
    except StoppingPointError as error:
        position = re.match(r"option (\d+)", str(error))
        at = line_of.get(int(position.group(1))) if position else start
        raise StoppingPointError(str(error), at) from None


def _checked(
    kind: AskKind, prompt: str, labels: list[str], start: int, who: tuple[tuple[str, ...] | None, int | None]
) -> AskSpec:
    try:
        return make_spec(kind, prompt, labels, *who)
    except StoppingPointError as error:
        raise StoppingPointError(str(error), start) from None


def from_json(payload: str | bytes | Mapping[str, Any]) -> AskSpec:
    """Structured input: ``{"prompt": str, "options": [str], "kind": "choice"|"text"}``, and
    ``"responders": [str]`` and ``"quorum": int`` when it names who may answer.

    ``kind`` may be left out (or ``null``): a choice when there are options, else text.
    Given, it must be ``"choice"`` or ``"text"`` in any case. JSON text longer than
    :data:`MAX_JSON_CHARS`, or nested too deeply to read, is refused; a leading byte
    order mark is skipped.
    """
    data: Any = payload
    if isinstance(payload, (str, bytes)):
        unit = "characters" if isinstance(payload, str) else "bytes"
        if len(payload) > MAX_JSON_CHARS:
            raise StoppingPointError(
                f"the structured stopping point is {len(payload)} {unit}; the limit is {MAX_JSON_CHARS}"
            )
        text = payload.removeprefix("\ufeff") if isinstance(payload, str) else payload
        try:
            data = json.loads(text)
        except RecursionError:
            raise StoppingPointError("not valid JSON: nested too deeply") from None
        except (ValueError, UnicodeDecodeError) as error:
            raise StoppingPointError(f"not valid JSON: {error}") from None
    if not isinstance(data, Mapping):
        raise StoppingPointError("a structured stopping point must be a JSON object")
    unknown = set(data) - _STRUCTURED_FIELDS
    if unknown:
        raise StoppingPointError(f"unknown field(s): {', '.join(sorted(map(str, unknown)))}")
    options = data.get("options")
    if options is None:
        options = []
    kind = data.get("kind")
    if kind is None:
        kind = AskKind.CHOICE if options else AskKind.TEXT
    elif not isinstance(kind, str) or kind.lower() not in {known.value for known in AskKind}:
        raise StoppingPointError(f"kind must be 'choice' or 'text', not {kind!r}")
    else:
        kind = kind.lower()
    return make_spec(kind, data.get("prompt", ""), options, *who_from_json(data))
