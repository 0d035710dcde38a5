"""People's display names: the sender ids asks record, mapped to the names the console and
the CLI show in their place.

An ask names people by the sender ids its surfaces record: a Slack user id (``U0ALICE``),
a Telegram or Discord user id (``111``), an email address, a name given over HTTP. The
API keeps those ids; the console and the CLI show a person's display name where the
directory has one, and their id where it has none.

A directory comes from a file an operator keeps (``PARKGATE_DIRECTORY``: a JSON object,
or a TOML table, of sender id to name, read once at start), merged with the names a
channel learns from its platform (a Telegram ``@username``), the file's winning.

Pure: :func:`parse_directory` reads a file's text; reading the file is
:func:`parkgate.http.settings.load_directory`'s.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

#: The environment variable naming the directory file.
ENV_DIRECTORY = "PARKGATE_DIRECTORY"
#: The longest sender id and display name a directory holds, in characters.
MAX_ID_CHARS = 256
MAX_NAME_CHARS = 200
#: The most entries a directory file holds.
MAX_ENTRIES = 100_000


@dataclass(frozen=True)
class Directory:
    """Display names by sender id (read-only).

    Args:
        names: Each sender id, exactly as asks record it, and the name shown for it.
    """

    names: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "names", MappingProxyType(dict(self.names)))

    def name_of(self, sender: str) -> str | None:
        """``sender``'s display name, ``None`` when the directory has none."""
        return self.names.get(sender)

    def shown(self, sender: str) -> str:
        """What stands for ``sender`` on a screen: their display name, else their id."""
        return self.names.get(sender, sender)

    def merged(self, learned: Mapping[str, str]) -> Directory:
        """This directory with ``learned`` names (a platform's) added where it has none."""
        if not learned:
            return self
        return Directory({**learned, **self.names})


def parse_directory(text: str, toml: bool = False) -> Directory:
    """A directory file's text: a JSON object (or, with ``toml``, a TOML table) of sender
    id to display name, such as ``{"U0ALICE": "Alice Ng", "111": "Bob"}``.

    Args:
        text: The file's text.
        toml: Whether it is TOML (a ``.toml`` file); JSON otherwise.

    Returns:
        The directory.

    Raises:
        ValueError: It is not one: not JSON (TOML), not an object, a value that is not a
            non-blank string, an id or a name that is too long, or over
            :data:`MAX_ENTRIES` entries; the message says which.
    """
    try:
        loaded: object = tomllib.loads(text) if toml else json.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as error:
        raise ValueError(f"it is not {'TOML' if toml else 'JSON'}: {error}") from None
    if not isinstance(loaded, dict):
        raise ValueError(f"it must be an object of sender id to name, not {type(loaded).__name__}")
    if len(loaded) > MAX_ENTRIES:
        raise ValueError(f"it holds {len(loaded)} names; the limit is {MAX_ENTRIES}")
    names: dict[str, str] = {}
    for sender, name in loaded.items():
        if not sender.strip() or len(sender) > MAX_ID_CHARS:
            raise ValueError(f"{sender[:40]!r} is not a sender id (1 to {MAX_ID_CHARS} characters)")
        if not isinstance(name, str) or not name.strip() or len(name) > MAX_NAME_CHARS:
            raise ValueError(f"the name of {sender!r} must be a string of 1 to {MAX_NAME_CHARS} characters")
        names[sender] = name.strip()
    return Directory(names)


__all__ = ["ENV_DIRECTORY", "MAX_ENTRIES", "MAX_NAME_CHARS", "Directory", "parse_directory"]
