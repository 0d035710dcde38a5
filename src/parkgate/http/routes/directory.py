"""``/v1/directory``: the display names the console shows in place of sender ids."""

from __future__ import annotations

from collections.abc import Mapping

from fastapi import APIRouter
from fastapi.responses import Response
from pydantic import Field

from parkgate.channels.base import KnowsNames
from parkgate.core.directory import Directory
from parkgate.http.dependencies import GatewayDep, SettingsDep
from parkgate.http.errors import V1_ERRORS, documented
from parkgate.http.models import SafeJSONResponse
from parkgate.http.outputs import Out
from parkgate.http.tokens import Scope, needs

router = APIRouter(tags=["directory"])


class DirectoryOut(Out):
    """Display names by sender id: the configured directory's, and the unique names the
    channels this process serves have learnt from their platforms (a Telegram ``@username``)."""

    names: dict[str, str] = Field(
        description="Each sender id (as asks record it: responders, votes, answered_by) and its display name."
    )


def directory_of(configured: Directory, channels: Mapping[str, object]) -> Directory:
    """The ``configured`` directory, with the names each of ``channels`` learnt added where it has none."""
    learned: dict[str, str] = {}
    for channel in list(channels.values()):
        if isinstance(channel, KnowsNames):
            learned.update(channel.known_names())
    return configured.merged(learned)


@router.get("/v1/directory", response_model=DirectoryOut, responses=documented(*V1_ERRORS))
@needs(Scope.READ)
async def read_directory(gateway: GatewayDep, settings: SettingsDep) -> Response:
    """The display names of people, by the sender ids asks record: the console shows a
    name in place of an id where one is known (``PARKGATE_DIRECTORY``, and names a channel
    learnt, such as a Telegram ``@username``); the rest of the API keeps ids."""
    directory = directory_of(settings.directory, gateway.sync.channels)
    return SafeJSONResponse({"names": dict(directory.names)})
