"""The public API is complete: every parkgate type a public signature names imports from
``parkgate`` (the store's plug-in interface, :class:`~parkgate.Store`'s own calls, from
``parkgate.store``), and ``import parkgate`` loads no HTTP client library.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import subprocess
import sys
import typing
from collections.abc import Callable, Iterator
from types import ModuleType

import parkgate
import parkgate.errors
import parkgate.store


def _named_types(hint: object) -> Iterator[type]:
    """Every class a type hint names, through unions, generics and ``Callable`` arguments."""
    if isinstance(hint, type) and not typing.get_args(hint):
        yield hint
    origin = typing.get_origin(hint)
    if isinstance(origin, type):
        yield origin
    for argument in typing.get_args(hint):
        if isinstance(argument, list):  # Callable[[A, B], R]
            for item in argument:
                yield from _named_types(item)
        else:
            yield from _named_types(argument)


def _public_callables(owner: type) -> Iterator[tuple[str, Callable[..., object]]]:
    """The class itself (its ``__init__``) and each public method, property and class method."""
    yield f"{owner.__name__}.__init__", owner.__init__
    for name, member in inspect.getmembers(owner):
        if name.startswith("_"):
            continue
        if isinstance(member, property) and member.fget is not None:
            yield f"{owner.__name__}.{name}", member.fget
        elif inspect.isfunction(member) or inspect.ismethod(member):
            yield f"{owner.__name__}.{name}", member


def _every_parkgate_class() -> dict[str, object]:
    """Each class a parkgate module defines, by name: what a hint imported only for type
    checking (under ``TYPE_CHECKING``) names."""
    found: dict[str, object] = {}
    for info in pkgutil.walk_packages(parkgate.__path__, "parkgate."):
        if info.name == "parkgate.__main__":
            continue
        for value in vars(importlib.import_module(info.name)).values():
            if isinstance(value, type) and value.__module__.startswith("parkgate"):
                found.setdefault(value.__name__, value)
    return found


def _hints(function: Callable[..., object], module: ModuleType, every: dict[str, object]) -> dict[str, object]:
    """The function's hints, each name read in its module first, then among parkgate's classes."""
    return typing.get_type_hints(function, globalns=every, localns=dict(vars(module)))


def _signature_types(front: ModuleType = parkgate) -> dict[type, set[str]]:
    """Every parkgate class named in a public signature of what ``front`` exports, with
    the signatures that name it."""
    found: dict[type, set[str]] = {}
    every = _every_parkgate_class()
    for export in front.__all__:
        value = getattr(front, export)
        owners = [value] if isinstance(value, type) else []
        calls = [(export, value)] if inspect.isfunction(value) else []
        for owner in owners:
            calls.extend(_public_callables(owner))
        for where, function in calls:
            module = sys.modules[getattr(function, "__module__", None) or "parkgate"]
            for hint in _hints(function, module, every).values():
                for named in _named_types(hint):
                    if named.__module__.startswith("parkgate"):
                        found.setdefault(named, set()).add(where)
    return found


def test_the_walk_reads_the_signatures_it_should() -> None:
    found = _signature_types()
    # Gateway.run returns a Run; Gateway.ask takes an Expect; Reply carries a ReplyKind
    assert parkgate.Run in found and "Gateway.run" in found[parkgate.Run]
    assert parkgate.Expect in found and parkgate.RunStatus in found and parkgate.ReplyKind in found


def _exported(front: ModuleType) -> set[object]:
    return {getattr(front, name) for name in front.__all__}


def test_every_type_a_public_signature_names_imports_from_parkgate() -> None:
    exported = _exported(parkgate)
    plug_in = _exported(parkgate.store)
    missing = {
        f"{named.__module__}.{named.__qualname__}": sorted(where)[:3]
        for named, where in _signature_types().items()
        if named not in exported and not (named in plug_in and all(w.startswith("Store.") for w in where))
    }
    assert missing == {}, f"types named in public signatures but not exported from parkgate: {missing}"


def test_every_type_the_store_interface_names_imports_from_parkgate_store() -> None:
    found = _signature_types(parkgate.store)
    assert parkgate.store.Transaction in found and "Store.transaction" in found[parkgate.store.Transaction]
    exported = _exported(parkgate.store) | _exported(parkgate)
    missing = {
        f"{named.__module__}.{named.__qualname__}": sorted(where)[:3]
        for named, where in found.items()
        if named not in exported
    }
    assert missing == {}, f"types the store's interface names but parkgate.store does not export: {missing}"


def test_the_run_types_and_expected_forms_import_from_parkgate() -> None:
    from parkgate import Expect, Run, RunOutcome, RunStatus

    assert RunStatus("complete") is RunStatus.COMPLETE and RunOutcome("expired") is RunOutcome.EXPIRED
    assert Expect("integer", minimum=1).form == "integer" and Run.__name__ == "Run"


def test_importing_parkgate_loads_no_http_client_library() -> None:
    script = (
        "import sys, parkgate, parkgate.errors, parkgate.core.fence\n"
        "loaded = sorted(m for m in ('httpx', 'requests', 'aiohttp', 'urllib3') if m in sys.modules)\n"
        "assert not loaded, loaded\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
