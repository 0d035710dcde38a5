"""Where the ``parkgate`` log lines go when parkgate runs as a program (``serve``, ``chat``).

The gateway logs every expiry as one JSON object (``{"event": "ask_expired", ...}``) on
the ``parkgate`` logger at INFO. A library leaves handlers to its host; the programs
parkgate runs itself put those records on stderr, one JSON object a line:

- a record whose message already is a JSON object (the expiry line) is written as it is;
- any other record (a warning from the HTTP layer, a callback delivered by the outbox)
  is wrapped as ``{"level", "logger", "message"[, "exception"]}``.

So every ``parkgate`` line on stderr parses as JSON, whatever else (uvicorn's own lines)
shares the stream.
"""

from __future__ import annotations

import copy
import json
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

#: The logger the gateway (and, below it, the HTTP layer and the outbox) logs to.
LOGGER = "parkgate"


class JsonLineFormatter(logging.Formatter):
    """One JSON object per record, on one line."""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        if not record.exc_info and message.startswith("{") and "\n" not in message:
            try:
                if isinstance(json.loads(message), dict):
                    return message  # already structured: written as the gateway made it
            except ValueError:
                pass
        line: dict[str, Any] = {"level": record.levelname.lower(), "logger": record.name, "message": message}
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, default=str)


def uvicorn_log_config() -> dict[str, Any]:
    """uvicorn's logging config plus the ``parkgate`` logger at INFO, on stderr, as JSON lines.

    uvicorn applies it in every worker process it starts (``--workers N`` included).
    """
    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    config["formatters"]["parkgate"] = {"()": f"{__name__}.JsonLineFormatter"}
    config["handlers"]["parkgate"] = {
        "class": "logging.StreamHandler",
        "formatter": "parkgate",
        "stream": "ext://sys.stderr",
    }
    config["loggers"][LOGGER] = {"handlers": ["parkgate"], "level": "INFO", "propagate": False}
    return config


def stderr_handler() -> logging.Handler:
    """A handler writing JSON lines to the current ``sys.stderr``."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonLineFormatter())
    return handler


def _configured_elsewhere(logger: logging.Logger) -> bool:
    """The host process already decided where ``parkgate`` records go."""
    return bool(logger.handlers) or bool(logging.getLogger().handlers)


def ensure_stderr_logging() -> None:
    """For a server process nobody configured (``uvicorn --factory ...app_from_env``).

    Adds :func:`stderr_handler` to the ``parkgate`` logger and lets INFO through, unless
    that logger or the root logger already has a handler (``parkgate serve`` configures
    it through :func:`uvicorn_log_config`; a host with its own logging keeps it).
    """
    logger = logging.getLogger(LOGGER)
    if _configured_elsewhere(logger):
        return
    logger.addHandler(stderr_handler())
    if logger.level == logging.NOTSET:
        logger.setLevel(logging.INFO)


@contextmanager
def logging_to_stderr() -> Iterator[None]:
    """:func:`ensure_stderr_logging` for the length of a CLI command, then undone."""
    logger = logging.getLogger(LOGGER)
    if _configured_elsewhere(logger):
        yield
        return
    handler, level = stderr_handler(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


__all__ = ["LOGGER", "JsonLineFormatter", "ensure_stderr_logging", "logging_to_stderr", "uvicorn_log_config"]
