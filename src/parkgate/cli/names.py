"""People as the CLI shows them: a display name from the directory ``PARKGATE_DIRECTORY``
names (:mod:`parkgate.core.directory`) in place of a sender id, the id where it has none.
``--json`` output keeps ids."""

from __future__ import annotations

import click

from parkgate.core.directory import Directory
from parkgate.core.display import visible_id, visible_text
from parkgate.errors import SettingsError
from parkgate.http.settings import directory_from_env


def directory() -> Directory:
    """The directory ``PARKGATE_DIRECTORY`` names (empty when unset).

    Raises:
        click.ClickException: The file cannot be read or is not a directory (the message
            names the variable and the file).
    """
    try:
        return directory_from_env()
    except SettingsError as error:
        raise click.ClickException(str(error)) from None


def person(names: Directory, sender: str) -> str:
    """``sender`` as a line shows them: their display name (prose, hidden characters
    escaped), else their id (:func:`~parkgate.core.display.visible_id`)."""
    name = names.name_of(sender)
    return visible_id(sender) if name is None else visible_text(name)


def people(names: Directory, senders: list[str] | tuple[str, ...]) -> str:
    """``senders`` as a line lists them: each as :func:`person` shows them, comma-separated."""
    return ", ".join(person(names, sender) for sender in senders)
