"""The channels parkgate knows, each declared once, by its own package.

A channel package declares itself as one :class:`ChannelSpec` and hands it to
:func:`register` when it is imported. Nothing outside the package names the channel;
what needs one reads the registry:

- ``POST /v1/asks`` takes one key per registered channel, its :attr:`~ChannelSpec.target`
  model, and an ask's JSON shows where it is posted under the same key, its
  :attr:`~ChannelSpec.location` model (:mod:`parkgate.http.channel_targets`); the
  clients send a target and read a post by the channel's name;
- ``parkgate serve`` serves each channel whose :attr:`~ChannelSpec.switch` is set, its
  inbound routes mounted (:attr:`~ChannelSpec.serve`), and ``parkgate deliver`` sends for
  it (:attr:`~ChannelSpec.sending`) (:mod:`parkgate.channels.serving`);
- the ``parkgate`` command mounts its :attr:`~ChannelSpec.commands`;
- a token's ``channels`` patterns match its :attr:`~ChannelSpec.target_id`, and a
  workflow's next ask stays in the thread its :attr:`~ChannelSpec.thread` names.

The registry loads itself on first use: the channels that ship (:data:`BUILT_IN`), then
each module the environment variable :data:`ENV_CHANNELS` names (a comma list of
importable modules, each registering a channel). What a spec refers to is a reference,
``"module:name"``, imported when it is used: reading the registry imports neither a
platform's library nor the models, and a package imported without its extra still
declares its channel.
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from parkgate.errors import MissingExtra, SettingsError

#: The channels that ship with parkgate: the modules whose import registers each.
BUILT_IN = (
    "parkgate.channels.slack.spec",
    "parkgate.channels.telegram.spec",
    "parkgate.channels.discord.spec",
    "parkgate.channels.email.spec",
)
#: More channels to load: a comma list of importable modules, each calling :func:`register`.
ENV_CHANNELS = "PARKGATE_CHANNELS"


@dataclass(frozen=True)
class ChannelSpec:
    """A channel, as its package declares it: everything parkgate needs to know of it
    outside the package.

    References (``"module:name"``) are imported when used (:meth:`imported`), so a
    declaration costs no import of the platform's library.
    """

    #: The channel's name: the key of its target in ``POST /v1/asks`` and of its post in
    #: an ask's JSON, its jobs' channel, a ``ChannelTarget``'s channel (a Python identifier).
    name: str
    #: How people name the platform ("Slack"), in what the API says of the channel.
    title: str
    #: Its settings: each environment variable it reads, and what it holds.
    settings: Mapping[str, str]
    #: The setting whose presence serves the channel (``parkgate serve``, ``parkgate deliver``).
    switch: str
    #: Where an ask is posted: the pydantic model of its target (``"module:Model"``).
    target: str
    #: The target's field a token's ``channels`` patterns match, after ``<name>:``.
    target_id: str
    #: Where a post lives: the pydantic model of the location its post returns.
    location: str
    #: ``serve(gateway, environ) -> ServedChannel``: the channel and its inbound routes.
    serve: str
    #: ``sending(environ) -> Channel``: the channel alone, from what sending needs.
    sending: str
    #: The target's field that keeps a run's next ask in the thread of the one before, and
    #: the location's fields that name that thread, in order (``None``: targets are kept as
    #: given).
    thread: tuple[str, tuple[str, ...]] | None = None
    #: The settings serving needs besides :attr:`switch`: one of them set while the switch
    #: is not is half a configuration, and stops the start naming the switch.
    required: tuple[str, ...] = ()
    #: Click commands the ``parkgate`` command mounts (``"module:command"``).
    commands: tuple[str, ...] = ()
    #: The optional extra its platform's library comes with (``pip install 'parkgate[extra]'``).
    extra: str | None = None
    #: The package that declares it, named by :class:`~parkgate.errors.MissingExtra`.
    package: str = field(default="")

    def __post_init__(self) -> None:
        if not self.name.isidentifier() or len(self.name) > 40:
            raise SettingsError(f"a channel's name is an identifier of at most 40 characters, not {self.name!r}")
        if self.switch not in self.settings:
            raise SettingsError(f"{self.name}: its switch {self.switch} is not one of its settings")
        unknown = [name for name in self.required if name not in self.settings]
        if unknown:
            raise SettingsError(f"{self.name}: its required {unknown[0]} is not one of its settings")
        refs = (self.target, self.location, self.serve, self.sending, *self.commands)
        bad = [ref for ref in refs if ref.count(":") != 1]
        if bad:
            raise SettingsError(f"{self.name}: a reference is 'module:name', not {bad[0]!r}")

    def lazy(self, package: str, names: Mapping[str, str]) -> Callable[[str], Any]:
        """A channel package's module ``__getattr__``: each of ``names`` (a name -> its
        ``"module:name"``) imported on first use through :meth:`imported`, so the package
        imports without its extra and says which to install when a name needs it.

        Args:
            package: The package's ``__name__`` (for the ``AttributeError`` of other names).
            names: The names imported on first use, and where each is.
        """

        def attribute(name: str) -> Any:
            if name not in names:
                raise AttributeError(f"module {package!r} has no attribute {name!r}")
            return self.imported(names[name])

        return attribute

    def imported(self, ref: str) -> Any:
        """What ``ref`` (``"module:name"``) names, imported.

        Raises:
            MissingExtra: The module needs a library the channel's extra installs, and it
                is not installed.
        """
        module_name, _, name = ref.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as missing:
            if self.extra is None or (missing.name or "").startswith("parkgate"):
                raise
            raise MissingExtra(self.package or module_name, missing, extra=self.extra) from None
        return getattr(module, name)


_lock = threading.RLock()
_specs: dict[str, ChannelSpec] = {}
_loaded = False


def register(spec: ChannelSpec) -> ChannelSpec:
    """Add ``spec`` to the registry (again is a no-op) and return it.

    Register before the HTTP app's models are made (importing :mod:`parkgate.http`) and
    before the clients read an ask: a module :data:`ENV_CHANNELS` names is.

    Raises:
        SettingsError: Another channel of the same name is registered.
    """
    with _lock:
        known = _specs.get(spec.name)
        if known is not None and known != spec:
            raise SettingsError(f"a channel named {spec.name!r} is registered already, by {known.package}")
        _specs[spec.name] = spec
    return spec


def load(environ: Mapping[str, str] | None = None) -> None:
    """Import the channels that ship, then each module ``environ``'s :data:`ENV_CHANNELS`
    names; once (a later call does nothing).

    Raises:
        SettingsError: A named module cannot be imported.
    """
    global _loaded
    with _lock:
        if _loaded:
            return
        named = (environ if environ is not None else os.environ).get(ENV_CHANNELS, "")
        extra = tuple(module for module in (part.strip() for part in named.split(",")) if module)
        for module in BUILT_IN + extra:
            try:
                importlib.import_module(module)
            except ImportError as error:
                if module in BUILT_IN:
                    raise
                raise SettingsError(f"{ENV_CHANNELS} names {module!r}, which does not import: {error}") from None
        _loaded = True


def registered() -> tuple[ChannelSpec, ...]:
    """Every registered channel, in the order registered (the registry loaded first)."""
    load()
    return tuple(_specs.values())


def names() -> tuple[str, ...]:
    """Every registered channel's name, in the order registered."""
    return tuple(spec.name for spec in registered())


def spec_of(name: str) -> ChannelSpec | None:
    """The registered channel named ``name``, or ``None``."""
    load()
    return _specs.get(name)


def target_names(channel: str, where: Mapping[str, Any]) -> tuple[str, ...]:
    """A channel target as a token's ``channels`` patterns and the history's ``channel``
    filter read it: ``"<channel>:<its target id>"`` (``where`` at the spec's
    :attr:`~ChannelSpec.target_id`), one name per item when the target id is a list (each
    address an email is sent to)."""
    spec = spec_of(channel)
    value = where.get(spec.target_id, "") if spec is not None else ""
    items = value if isinstance(value, list) and value else [value]
    return tuple(f"{channel}:{item}" for item in items)


__all__ = [
    "BUILT_IN",
    "ENV_CHANNELS",
    "ChannelSpec",
    "load",
    "names",
    "register",
    "registered",
    "spec_of",
    "target_names",
]
