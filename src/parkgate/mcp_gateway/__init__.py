"""The MCP approval gateway (``parkgate mcp-gateway``; needs ``mcp``: ``pip install 'parkgate[adapters]'``).

An MCP server that fronts other MCP servers, lists their tools and forwards every call,
except those a policy names: each of those is parked as an Approve / Reject ask bound to
a hash of its server, tool and arguments, held open up to a bound, and forwarded once,
with exactly the approved arguments, when a person approves (docs/mcp-gateway.md).

- :mod:`~parkgate.mcp_gateway.policy`: the TOML file (servers, approval rules), its errors naming the line;
- :mod:`~parkgate.mcp_gateway.render`: the call's hash, its arguments as shown, the prompt, the
  client's form and the results' text;
- :mod:`~parkgate.mcp_gateway.downstream`: the downstream servers, connected with the MCP SDK's client;
- :mod:`~parkgate.mcp_gateway.holding`: a held call's park, attach, hold and forward;
- :mod:`~parkgate.mcp_gateway.elicitation`: the client's own user as an approver, on an MCP form;
- :mod:`~parkgate.mcp_gateway.server`: the MCP server the agent's client talks to, on stdio or HTTP;
- :mod:`~parkgate.mcp_gateway.stdio`: its stdio, read and written on the event loop.
"""

from parkgate.errors import MissingExtra
from parkgate.mcp_gateway.policy import DEFAULT_HOLD, Policy, Rule, ServerSpec, load_policy, parse_policy

try:
    from parkgate.mcp_gateway.downstream import Downstream
    from parkgate.mcp_gateway.holding import Holds
    from parkgate.mcp_gateway.server import build_server, serve, start
except ModuleNotFoundError as missing:  # the one line that says what to install
    raise MissingExtra(__name__, missing) from None

__all__ = [
    "DEFAULT_HOLD",
    "Downstream",
    "Holds",
    "Policy",
    "Rule",
    "ServerSpec",
    "build_server",
    "load_policy",
    "parse_policy",
    "serve",
    "start",
]
