"""The base errors, defined in the pure core so that the core can raise them.

:mod:`parkgate.errors` is their public home: it re-exports them beside the errors of the
surfaces, draws the whole tree, and they report it as their module (so they pickle by
that name). The core may import nothing from the rest of the package, and the store's
errors derive from :class:`ParkgateError`, so the root lives here.
"""

from __future__ import annotations


class ParkgateError(Exception):
    """The root of every error parkgate raises: ``except ParkgateError`` catches them all."""

    __module__ = "parkgate.errors"


class InputError(ParkgateError, ValueError):
    """The input is not usable as given (not text, too long, an empty id, ...).

    Raised before anything is read or written: the parked ask stays as it was.
    """

    __module__ = "parkgate.errors"
