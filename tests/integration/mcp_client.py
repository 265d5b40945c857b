"""The official MCP Python SDK's stdio client against mem-mcp (tests/integration/mcp.rs).

    mcp_client.py MEM_MCP QUERY

Initializes, lists the tools, calls search with QUERY and search without its required query,
and prints one JSON object: the server's name, the tool names, the search result's text and
whether the bad call came back as an MCP error."""
import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError


async def main(server, query):
    params = StdioServerParameters(command=server, args=[], env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            tools = await session.list_tools()
            found = await session.call_tool("search", {"query": query, "limit": 5})
            try:
                await session.call_tool("search", {})
                bad = False
            except MCPError:
                bad = True
            print(json.dumps({
                "server": init.server_info.name,
                "tools": [t.name for t in tools.tools],
                "search": found.content[0].text,
                "search_is_error": bool(found.is_error),
                "bad_arguments_error": bad,
            }))


asyncio.run(main(sys.argv[1], sys.argv[2]))
