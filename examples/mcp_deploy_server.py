"""A plain MCP server (no parkgate in it) whose ``deploy`` tool elicits a form on stdio.

The form has three fields: the environment (a titled choice), the number of replicas
(an integer from 1 to 10, default 2) and a confirmation (a boolean). The tool answers
``deployed <env> x<replicas>``, or says why it did not. ``examples/mcp_chat_client.py``
lets a person answer it through parkgate.
"""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.server.mcpserver import Elicit, ElicitationResult, MCPServer, Resolve
from pydantic import BaseModel, Field

server = MCPServer("deployer")


class DeployForm(BaseModel):
    env: Literal["production", "staging"] = Field(title="Environment")
    replicas: int = Field(default=2, ge=1, le=10, title="Replicas")
    confirm: bool = Field(title="Deploy now?")


def deploy_form() -> Elicit[DeployForm]:
    return Elicit("Deploy the web service", DeployForm)


@server.tool(description="Deploy the web service, after asking which environment and how many replicas.")
def deploy(form: Annotated[ElicitationResult[DeployForm], Resolve(deploy_form)]) -> str:
    if form.action != "accept":
        return f"not deployed: the form was {form.action}d" if form.action == "decline" else "not deployed: cancelled"
    answer = form.data
    if not answer.confirm:
        return "not deployed: not confirmed"
    return f"deployed {answer.env} x{answer.replicas}"


if __name__ == "__main__":
    server.run()  # stdio
