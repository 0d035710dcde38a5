"""The gateway's stdio transport: the process's stdin and stdout as asyncio pipes, feeding
the MCP SDK's server the same message streams its own ``stdio_server`` does (one
JSON-RPC message a line, UTF-8, undecodable bytes replaced), so the SDK's protocol
handling is unchanged. What differs is the path of each line: the SDK reads and writes
through a worker thread (a thread hop for every line read, two for every line written:
the write, then the flush), which is most of what the gateway added to a forwarded call;
here the event loop reads and writes the pipes itself.

As the SDK's transport does, it serves the wire from private copies of file descriptors
0 and 1 and points 0 at the null device and 1 at stderr while serving, so nothing else in
the process (a stray ``print``, a child that inherits them) can write into the MCP
stream; both are put back on exit. Where stdin or stdout is not a pipe, a socket or a
terminal (a regular file, ``/dev/null``), or on Windows, it is the SDK's ``stdio_server``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

#: The longest line read as one message; a longer one is refused (an error on the read
#: stream, as for any line that is not JSON-RPC) and the reading goes on after it.
MAX_LINE_BYTES = 64 * 1024 * 1024

Streams = tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]


@asynccontextmanager
async def stdio_streams() -> AsyncIterator[Any]:
    """The MCP message streams of this process's stdin and stdout, ``(read, write)``, as
    the SDK's server takes them (:meth:`Server.run <mcp.server.Server.run>`)."""
    if sys.platform == "win32" or not (_is_pipe(0) and _is_pipe(1)):
        async with stdio_server() as streams:
            yield streams
        return
    async with _piped() as streams:
        yield streams


def _is_pipe(fd: int) -> bool:
    """Whether ``fd`` is something the event loop can wait on: a pipe, a socket or a
    terminal (not a regular file, nor a device such as ``/dev/null``)."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or (stat.S_ISCHR(mode) and os.isatty(fd))


@asynccontextmanager
async def _piped() -> AsyncIterator[Streams]:
    loop = asyncio.get_running_loop()
    wire_in, wire_out = os.dup(0), os.dup(1)  # the wire, kept to put back on exit
    _divert()
    reader = asyncio.StreamReader(limit=MAX_LINE_BYTES, loop=loop)
    read_transport: asyncio.BaseTransport | None = None
    write_transport: asyncio.WriteTransport | None = None
    try:
        read_transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader, loop=loop), os.fdopen(os.dup(wire_in), "rb", buffering=0)
        )
        write_transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, os.fdopen(os.dup(wire_out), "wb", buffering=0)
        )
        writer = asyncio.StreamWriter(write_transport, protocol, None, loop)
        read_send, read_receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        write_send, write_receive = anyio.create_memory_object_stream[SessionMessage](0)

        async def read_lines() -> None:
            async with read_send:
                while True:
                    try:
                        line = await reader.readline()
                    except ValueError as error:  # over MAX_LINE_BYTES: refused, then read on
                        await read_send.send(error)
                        continue
                    if not line:
                        return  # the client closed stdin
                    try:
                        message = types.jsonrpc_message_adapter.validate_json(
                            line.decode("utf-8", errors="replace"), by_name=False
                        )
                    except Exception as error:  # the SDK's reading: the error goes to the server
                        await read_send.send(error)
                        continue
                    await read_send.send(SessionMessage(message))

        async def write_lines() -> None:
            async with write_receive:
                async for session_message in write_receive:
                    line = session_message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    writer.write(line.encode("utf-8") + b"\n")
                    await writer.drain()

        async with anyio.create_task_group() as group:
            group.start_soon(read_lines)
            group.start_soon(write_lines)
            yield read_receive, write_send
            group.cancel_scope.cancel()
    finally:
        for transport in (read_transport, write_transport):
            if transport is not None:
                transport.close()
        for fd in (wire_in, wire_out):
            with contextlib.suppress(OSError):
                os.set_blocking(fd, True)  # the pipes' end shared with whoever started us
        _restore(wire_in, wire_out)


def _divert() -> None:
    """Point fd 0 at the null device and fd 1 at stderr while the wire is served."""
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
    finally:
        os.close(null)
    os.dup2(2, 1)


def _restore(wire_in: int, wire_out: int) -> None:
    """Put the wire back on fds 0 and 1, and close the copies kept of it."""
    for fd, wire in ((0, wire_in), (1, wire_out)):
        with contextlib.suppress(OSError):
            os.dup2(wire, fd)
        os.close(wire)
