"""The front doors list what they hold: ``parkgate`` and ``parkgate.store`` expose exactly
the names in their ``__all__`` (a subpackage aside), each one defined inside parkgate, and
``parkgate`` keeps to the few dozen names a user of the library needs.
"""

from __future__ import annotations

from types import ModuleType

import pytest

import parkgate
import parkgate.store

FRONT_DOORS = [parkgate, parkgate.store]

#: The most names ``import parkgate`` offers; the store's plug-in interface, the channels'
#: and the options' finer sets live in their packages.
MAX_TOP_LEVEL_NAMES = 60


def _public_names(module: ModuleType) -> set[str]:
    """The names a ``from module import *`` reader or a completing editor sees: those
    without a leading underscore, the subpackages Python binds on import left out."""
    return {
        name for name, value in vars(module).items() if not name.startswith("_") and not isinstance(value, ModuleType)
    }


@pytest.mark.parametrize("front", FRONT_DOORS, ids=lambda module: module.__name__)
def test_the_public_names_are_exactly_those_listed(front: ModuleType) -> None:
    assert sorted(_public_names(front)) == sorted(front.__all__)
    assert len(front.__all__) == len(set(front.__all__))


def _foreign(module: ModuleType) -> dict[str, str]:
    """The listed names whose class or function is defined outside parkgate, with where;
    a listed name that is missing raises (``AttributeError``)."""
    found = {}
    for name in module.__all__:
        home = getattr(getattr(module, name), "__module__", None)
        if home is not None and home != "parkgate" and not home.startswith("parkgate."):
            found[name] = home
    return found  # a constant (no __module__) lives where the package defines it


@pytest.mark.parametrize("front", FRONT_DOORS, ids=lambda module: module.__name__)
def test_every_listed_name_imports_and_is_parkgate_s_own(front: ModuleType) -> None:
    assert _foreign(front) == {}


def test_the_checks_see_an_unlisted_name_a_foreign_one_and_a_missing_one() -> None:
    fake = ModuleType("parkgate.fake")
    fake.Listed = type("Listed", (), {"__module__": "parkgate.fake"})
    fake.Unlisted = 1
    fake.Borrowed = ModuleType  # defined in the standard library
    fake.store = parkgate.store  # a subpackage: not a public name
    fake.__all__ = ["Listed", "Borrowed"]
    assert _public_names(fake) == {"Listed", "Unlisted", "Borrowed"}
    assert _foreign(fake) == {"Borrowed": "builtins"}
    fake.__all__.append("Gone")
    with pytest.raises(AttributeError):
        _foreign(fake)


def test_the_top_level_offers_at_most_60_names() -> None:
    assert len(parkgate.__all__) <= MAX_TOP_LEVEL_NAMES
    # what a first program needs is there, the store's plug-in interface is not
    assert {"Gateway", "AsyncGateway", "open_store", "Store", "ParkgateError", "ManualClock"} <= set(parkgate.__all__)
    assert {"Transaction", "OpenAsks", "Outbox", "Writes", "Intent"}.isdisjoint(parkgate.__all__)


def test_the_store_plug_in_interface_imports_from_parkgate_store() -> None:
    from parkgate.store import CloseSignal, Intent, OpenAsks, Outbox, Transaction, Writes
    from parkgate.store.base import Transaction as DeclaredTransaction

    assert Transaction is DeclaredTransaction
    assert {Intent, OpenAsks, Outbox, Writes, CloseSignal} <= {
        getattr(parkgate.store, n) for n in parkgate.store.__all__
    }
