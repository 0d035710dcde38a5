"""The channel keys of the API, made from the channel registry
(:mod:`parkgate.channels.registry`): one key per registered channel in ``POST /v1/asks``
(:class:`ChannelFieldsIn`, each the channel's target model) and in an ask's JSON
(:class:`ChannelPostsOut`, each its location model); the target a body's one channel key
names, and whether the caller's token may post there (its tokens-file ``channels``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator

from parkgate.channels import registry
from parkgate.channels.base import ChannelTarget
from parkgate.channels.registry import ChannelSpec, registered
from parkgate.errors import InputError
from parkgate.gateway.checks import check_inbound_text
from parkgate.http.tokens import Caller


class _StrictTarget(BaseModel):
    """What every channel's target takes over HTTP, as every body does: strict types, no
    unknown fields, and only text a store can keep."""

    model_config = ConfigDict(strict=True, extra="forbid")

    @model_validator(mode="after")
    def _storable_text(self) -> _StrictTarget:
        for name, value in self:
            if isinstance(value, str):
                check_inbound_text(value, what=name)
        return self


def _target_in(spec: ChannelSpec) -> type[BaseModel]:
    """The channel's target model as ``POST /v1/asks`` takes it (``SlackTarget`` as ``SlackTargetIn``)."""
    target: type[BaseModel] = spec.imported(spec.target)
    model: type[BaseModel] = create_model(
        f"{target.__name__}In", __base__=(target, _StrictTarget), __doc__=target.__doc__, __module__=__name__
    )
    return model


class _StrictPost(BaseModel):
    """What every channel's post location is in a response: no key it does not declare."""

    model_config = ConfigDict(extra="forbid")


def _post_out(spec: ChannelSpec) -> type[BaseModel]:
    """The channel's location model as an ask's JSON shows it, forbidding other keys (under its own name)."""
    location: type[BaseModel] = spec.imported(spec.location)
    model: type[BaseModel] = create_model(
        location.__name__, __base__=(location, _StrictPost), __doc__=location.__doc__, __module__=__name__
    )
    return model


#: The channel keys of ``POST /v1/asks``: each a registered channel's name, in the order registered.
CHANNEL_FIELDS: tuple[str, ...] = tuple(spec.name for spec in registered())

_posts_in: dict[str, Any] = {
    spec.name: (
        _target_in(spec) | None,
        Field(
            default=None,
            description=f"Post the ask on {spec.title} (when the server serves {spec.title}); "
            f"its JSON then has {spec.name}.",
        ),
    )
    for spec in registered()
}
_posts_out: dict[str, Any] = {
    spec.name: (
        _post_out(spec) | None,
        Field(default=None, description=f"Where it is posted on {spec.title}; absent until it is posted."),
    )
    for spec in registered()
}

if TYPE_CHECKING:
    ChannelFieldsIn = BaseModel
    ChannelPostsOut = BaseModel
else:
    #: ``POST /v1/asks``' channel keys: one a registered channel, each its target (at most one is given).
    ChannelFieldsIn = create_model("ChannelFieldsIn", __module__=__name__, **_posts_in)
    #: An ask's JSON's channel keys: where it is posted, under its channel's name.
    ChannelPostsOut = create_model("ChannelPostsOut", __module__=__name__, **_posts_out)


def channel_target_of(body: BaseModel) -> ChannelTarget | None:
    """The :class:`~parkgate.channels.ChannelTarget` of the one channel field ``body`` gives."""
    given = [(name, value) for name in CHANNEL_FIELDS if isinstance(value := getattr(body, name, None), BaseModel)]
    if len(given) > 1:
        raise InputError(f"an ask is posted to one channel, not {' and '.join(name for name, _ in given)}")
    return ChannelTarget(given[0][0], given[0][1].model_dump(exclude_none=True)) if given else None


def target_names(target: ChannelTarget) -> tuple[str, ...]:
    """``target`` as a token's ``channels`` patterns read it: ``"<channel>:<its target id>"``,
    one name per item when the target id is a list (each address an email is sent to)."""
    return registry.target_names(target.channel, target.where)


def channel_refusal(caller: Caller, target: ChannelTarget | None) -> str | None:
    """Why ``caller`` may not post to ``target`` (the 403's detail), or ``None`` when it may.

    A named token posts only where its table's ``channels`` patterns allow (every name of
    the target); the single token and a server without tokens post anywhere
    (:meth:`Caller.may_post_to`).
    """
    if target is None:
        return None
    name = next((name for name in target_names(target) if not caller.may_post_to(name)), None)
    if name is None:
        return None
    allowed = ", ".join(caller.channels or ()) or "no channels key, so no channel at all"
    return (
        f"the token {caller.name!r} may not post to {name}: its table in the tokens file allows "
        f"only the targets its channels key matches ({allowed}); add a pattern that matches {name} there"
    )
