"""One error tree: every exception class parkgate defines is a ``ParkgateError``, and
every one of them has a documented 4xx or 503 over HTTP, never a 500.
"""

from __future__ import annotations

import importlib
import pickle
import pkgutil
import subprocess
import sys
from types import ModuleType

import pytest

import parkgate
import parkgate.errors
from parkgate.errors import (
    ConfigurationError,
    InputError,
    ParkgateError,
    SettingsError,
    StoreError,
    TokenFileError,
    UnknownAsk,
    UnknownRun,
    UnknownWorkflow,
)


def _modules() -> list[ModuleType]:
    names = [info.name for info in pkgutil.walk_packages(parkgate.__path__, "parkgate.")]
    return [importlib.import_module(name) for name in ["parkgate", *names] if name != "parkgate.__main__"]


def _exception_classes() -> dict[str, type[BaseException]]:
    """Every exception class a module of the package defines, by its qualified name."""
    found: dict[str, type[BaseException]] = {}
    for module in _modules():
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, BaseException) and value.__module__.startswith("parkgate"):
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return found


def _public(classes: dict[str, type[BaseException]]) -> dict[str, type[BaseException]]:
    return {name: cls for name, cls in classes.items() if not cls.__name__.startswith("_")}


def test_the_walk_finds_the_errors_of_every_layer() -> None:
    names = {cls.__name__ for cls in _public(_exception_classes()).values()}
    # the core, the store, the surfaces, the client and the adapters: the walk reaches each of them
    assert {"InputError", "StoppingPointError", "StoreUnavailable", "QuotaExceeded", "SettingsError"} <= names
    assert {"NotThisGraph", "MissingExtra", "CallbackRefused", "TokenFileError", "SchemaMissing"} <= names


def test_every_public_exception_class_is_a_parkgate_error() -> None:
    strays = sorted(name for name, cls in _public(_exception_classes()).items() if not issubclass(cls, ParkgateError))
    assert strays == [], f"exception classes outside the ParkgateError tree: {strays}"


def test_store_errors_and_bad_workflows_are_in_the_tree() -> None:
    from parkgate.workflow import Phase, Workflow

    assert issubclass(StoreError, ParkgateError) and not issubclass(StoreError, RuntimeError)
    with pytest.raises(InputError, match="has no phases"):
        Workflow("empty", [], finish=lambda answers: "")
    flow = Workflow("w", [Phase("a", "A?")], finish=lambda answers: "")
    with pytest.raises(InputError, match="has no phase 'b'"):
        flow.phase("b")


@pytest.mark.parametrize("name", sorted(_public(_exception_classes())))
def test_every_parkgate_error_has_a_documented_status_that_is_not_a_500(name: str) -> None:
    error = _public(_exception_classes())[name]
    assert issubclass(error, ParkgateError)
    status, code = error.answered_as()
    assert status == 503 or 400 <= status < 500, (name, status)
    assert code and code != "internal_error"


def _defined_in_errors() -> set[type[BaseException]]:
    return {
        value
        for value in vars(parkgate.errors).values()
        if isinstance(value, type) and issubclass(value, BaseException) and value.__module__ == "parkgate.errors"
    }


def test_the_errors_module_defines_the_whole_tree_and_draws_it() -> None:
    defined = _defined_in_errors()
    assert {"ParkgateError", "StoreError", "ClientError", "SettingsError"} <= {e.__name__ for e in defined}
    assert all(issubclass(error, ParkgateError) for error in defined)
    drawing = parkgate.errors.__doc__ or ""
    for error in defined:
        assert error.__name__ in drawing, f"{error.__name__} is not drawn in parkgate.errors' docstring"


def test_every_public_error_is_defined_in_parkgate_errors() -> None:
    elsewhere = sorted(
        name for name, error in _public(_exception_classes()).items() if error.__module__ != "parkgate.errors"
    )
    assert elsewhere == [], f"public errors defined outside parkgate.errors: {elsewhere}"


def test_unknown_ids_share_their_parents_and_start_up_errors_are_not_bad_input() -> None:
    for unknown in (UnknownAsk, UnknownRun, UnknownWorkflow):
        assert issubclass(unknown, LookupError) and not issubclass(unknown, InputError), unknown
    for start_up in (SettingsError, TokenFileError):
        assert issubclass(start_up, ConfigurationError) and not issubclass(start_up, InputError), start_up


def test_delivery_internals_are_not_in_the_public_tree() -> None:
    from parkgate.delivery import outbox

    internal = [v for v in vars(outbox).values() if isinstance(v, type) and issubclass(v, Exception)]
    assert internal and all(e.__name__.startswith("_") and not issubclass(e, ParkgateError) for e in internal)


def test_errors_pickle_by_their_public_home() -> None:
    error = pickle.loads(pickle.dumps(InputError("bad")))
    assert type(error) is InputError and str(error) == "bad"
    store = pickle.loads(pickle.dumps(UnknownRun("r-1")))
    assert type(store) is UnknownRun and store.run_id == "r-1"


@pytest.mark.parametrize(
    ("module", "framework"),
    [("parkgate.adapters.langgraph", "langgraph"), ("parkgate.adapters.mcp", "mcp")],
)
def test_importing_an_adapter_without_its_framework_names_the_extra(module: str, framework: str) -> None:
    """With the framework absent (``sys.modules[name] = None`` makes its import fail as a
    missing package does), the import error says what to install, and is still an ImportError."""
    script = (
        f"import sys; sys.modules[{framework!r}] = None\n"
        "from parkgate.errors import MissingExtra\n"
        "try:\n"
        f"    import {module}\n"
        "except MissingExtra as error:\n"
        "    assert isinstance(error, ModuleNotFoundError), type(error).__mro__\n"
        "    print(error)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "pip install 'parkgate[adapters]'" in done.stdout and framework in done.stdout
    assert module in done.stdout
