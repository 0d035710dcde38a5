"""The names of the request parsers ``parkgate serve --http`` runs, defined once.

The command line offers them and :func:`parkgate.http.server.serve` maps each to its
bounded uvicorn protocol class; this module imports nothing, so the CLI reads the names
without loading the server.
"""

from __future__ import annotations

#: httptools (llhttp, in C): the default, several times faster than h11 at parsing.
HTTPTOOLS = "httptools"
#: h11 (pure Python): what ``serve`` ran before httptools.
H11 = "h11"
#: Every parser, the default first.
PARSERS = (HTTPTOOLS, H11)
DEFAULT_PARSER = HTTPTOOLS

__all__ = ["DEFAULT_PARSER", "H11", "HTTPTOOLS", "PARSERS"]
