"""Adapter steps written once, run on a :class:`Gateway` or an :class:`AsyncGateway`.

An adapter's logic is a generator that yields what it needs done (a :class:`GatewayCall`,
or an effect of its own framework) and is sent back the result. :func:`run_sync` performs
the effects with blocking calls, :func:`run_async` awaits them, so the sync and the
asyncio entry points share one implementation.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from parkgate.gateway import Gateway
from parkgate.gateway.async_gateway import AsyncGateway

T = TypeVar("T")

Steps = Generator[Any, Any, T]
"""A step generator: yields effects, is sent their results, returns ``T``."""


@dataclass(frozen=True, slots=True)
class GatewayCall:
    """A gateway method to call: made on the :class:`Gateway`, awaited on the :class:`AsyncGateway`."""

    name: str
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)


def call(name: str, *args: Any, **kwargs: Any) -> GatewayCall:
    """The effect of calling ``gateway.<name>(*args, **kwargs)``."""
    return GatewayCall(name, args, kwargs)


def single(effect: GatewayCall) -> Steps[Any]:
    """The steps of one gateway call, returning its result."""
    return (yield effect)


def run_sync(gateway: Gateway, steps: Steps[T], perform: Callable[[Any], Any] | None = None) -> T:
    """Drive ``steps`` to its end with blocking calls; ``perform`` does any other effect.

    An effect that raises is thrown back into the generator, which may handle it.
    """
    result: Any = None
    error: Exception | None = None
    while True:
        try:
            effect = steps.throw(error) if error is not None else steps.send(result)
        except StopIteration as done:
            return cast(T, done.value)
        error = None
        try:
            if isinstance(effect, GatewayCall):
                result = getattr(gateway, effect.name)(*effect.args, **effect.kwargs)
            elif perform is not None:
                result = perform(effect)
            else:
                raise TypeError(f"no way to perform {effect!r}")
        except Exception as raised:
            error = raised


async def run_async(
    gateway: AsyncGateway, steps: Steps[T], perform: Callable[[Any], Awaitable[Any]] | None = None
) -> T:
    """:func:`run_sync` for asyncio code: gateway calls awaited on the :class:`AsyncGateway`."""
    result: Any = None
    error: Exception | None = None
    while True:
        try:
            effect = steps.throw(error) if error is not None else steps.send(result)
        except StopIteration as done:
            return cast(T, done.value)
        error = None
        try:
            if isinstance(effect, GatewayCall):
                result = await getattr(gateway, effect.name)(*effect.args, **effect.kwargs)
            elif perform is not None:
                result = await perform(effect)
            else:
                raise TypeError(f"no way to perform {effect!r}")
        except Exception as raised:
            error = raised


__all__ = ["GatewayCall", "Steps", "call", "run_async", "run_sync", "single"]
