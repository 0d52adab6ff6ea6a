#!/usr/bin/env python3
"""Benchmark (not a test): how long does reading a 20 MB MCP result take?

What it measures
    A small stdio MCP server (written here, JSON-RPC by hand) answers one tool call
    with one line of `--size-mb` megabytes: a text result. The time is from the call
    to its text in hand, read two ways:
      the course   mcp_client.py (s05 on): its own pipe reads each chunk of the line
                   once, then the SDK's types parse it
      the SDK      the official `mcp` SDK's own stdio_client, whose reader joins
                   its buffer to every new chunk: quadratic in a line's length
    Both then cut the text to what the model may see (MAX_MCP_OUTPUT_TOKENS); that
    part is not timed. The SDK's reader is measured at `--sdk-mb` (default 5), and
    at the full size only with --sdk-full (it takes seconds, and grows as the square).

Usage
    python benchmarks/mcp_big_result.py [--size-mb 20] [--sdk-mb 5] [--sdk-full]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "s05_deferred_tools"))

SERVER = r'''
import json, sys
size = int(sys.argv[1])
for line in sys.stdin:
    msg = json.loads(line)
    mid, method = msg.get("id"), msg.get("method")
    if mid is None:
        continue
    if method == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"],
                  "capabilities": {"tools": {}}, "serverInfo": {"name": "big", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [{"name": "big", "inputSchema": {"type": "object"}}]}
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": "x" * size}]}
    else:
        result = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": mid, "result": result}) + "\n")
    sys.stdout.flush()
'''


def course(script: Path, size: int) -> float:
    """Seconds for one call through mcp_client.py's pipe."""
    from mcp_client import McpServers
    servers = McpServers()
    try:
        spec = {"command": sys.executable, "args": [str(script), str(size)], "env": {}}
        started = servers.start_all({"big": spec}, str(script.parent), 60)
        assert isinstance(started["big"], list), started
        began = time.perf_counter()
        text, _, failed = servers.call("big", "big", {}, 600)
        took = time.perf_counter() - began
        assert not failed and len(text) == size, text[:200]
        return took
    finally:
        servers.close()


def sdk(script: Path, size: int) -> float:
    """Seconds for one call through the SDK's own stdio_client."""
    from mcp import ClientSession, StdioServerParameters, stdio_client

    async def one_call() -> float:
        params = StdioServerParameters(command=sys.executable,
                                       args=[str(script), str(size)])
        async with stdio_client(params) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            began = time.perf_counter()
            result = await session.call_tool("big", {})
            took = time.perf_counter() - began
            assert len(result.content[0].text) == size
            return took
    return asyncio.run(one_call())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size-mb", type=float, default=20)
    parser.add_argument("--sdk-mb", type=float, default=5)
    parser.add_argument("--sdk-full", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "big_server.py"
        script.write_text(SERVER)
        size = int(args.size_mb * 1_000_000)
        print(f"one tool result of {args.size_mb:g} MB on one line")
        print(f"the course (mcp_client.py)  {args.size_mb:>5g} MB  "
              f"{course(script, size):6.2f} s")
        for mb in sorted({args.sdk_mb, args.size_mb} if args.sdk_full
                         else {args.sdk_mb}):
            print(f"the SDK's stdio_client      {mb:>5g} MB  "
                  f"{sdk(script, int(mb * 1_000_000)):6.2f} s")


if __name__ == "__main__":
    main()
