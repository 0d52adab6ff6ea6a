#!/usr/bin/env python3
"""Benchmark (not a test): how much smaller is the first request with deferred tools?

What it measures
    The `tools` of a chapter's first request, serialised as JSON the way the SDK
    sends it (compact separators, UTF-8), in two versions:
      without deferral   every tool's full definition (the chapter's TOOLS)
      with deferral      what `tools_for_request()` sends before anything is loaded:
                         the tools that are not deferred, their names and tool_search's
                         description naming the deferred ones
    and, for each deferred tool, what loading it adds to every later request.
    With `--mcp` (the default from s05 on), the course's MCP server
    (offline/mcp_server.py, 24 tools) is connected first, as `.mcp.json` would: its
    tools count in full without deferral; with deferral, only their names, which
    the system prompt lists, are counted (added to the tools' bytes).

Tokens
    The exact count needs Anthropic's tokenizer, which is only reachable through the
    API (`client.messages.count_tokens`, a network call with a key): this script does
    not make it. `--count-tokens` makes that call when ANTHROPIC_API_KEY is set.
    Otherwise it prints an estimate at 4 bytes per token, which is marked as such.

Usage
    python benchmarks/deferred_tools_size.py [--chapter s05_deferred_tools]
           [--count-tokens]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def size(tools: list[dict]) -> int:
    """Bytes of `tools` as JSON, compact, as the SDK sends a request body."""
    return len(json.dumps(tools, separators=(",", ":"), ensure_ascii=False).encode())


def without_markers(tools: list[dict]) -> list[dict]:
    """Drop the cache_control marker: it is not part of a tool's definition."""
    return [{k: v for k, v in tool.items() if k != "cache_control"} for tool in tools]


@contextlib.contextmanager
def stockroom_connected(mod):
    """The chapter with offline/mcp_server.py connected, in a scratch workspace."""
    before = Path.cwd()
    with tempfile.TemporaryDirectory() as workspace:
        os.chdir(workspace)
        server = {"command": sys.executable, "args": [str(ROOT / "offline/mcp_server.py")]}
        Path(".mcp.json").write_text(json.dumps({"mcpServers": {"stockroom": server}}))
        Path(".claude").mkdir()
        Path(".claude/settings.json").write_text('{"enableAllProjectMcpServers": true}')
        try:
            mod.connect_mcp_servers()
            yield
        finally:
            mod.disconnect_mcp_servers()
            os.chdir(before)


def count_tokens(tools: list[dict], model: str, system: str = "") -> int | None:
    """Input tokens of a one-word request with these tools (and, with deferral, the
    MCP tools' names as a system prompt), by the API (network)."""
    from anthropic import Anthropic
    result = Anthropic().messages.count_tokens(
        model=model, messages=[{"role": "user", "content": "hi"}], tools=tools,
        **({"system": system} if system else {}))
    return result.input_tokens


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--chapter", default="s05_deferred_tools")
    p.add_argument("--count-tokens", action="store_true",
                   help="ask the API (needs ANTHROPIC_API_KEY and the network)")
    p.add_argument("--no-mcp", action="store_true",
                   help="leave out the MCP server (s05 on: it is connected by default)")
    args = p.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    mod = importlib.import_module("offline.chapters").load_chapter(args.chapter)
    mod.reset_session()
    mcp = hasattr(mod, "connect_mcp_servers") and not args.no_mcp
    with stockroom_connected(mod) if mcp else contextlib.nullcontext():
        return report(mod, args)


def report(mod, args) -> int:
    full = without_markers(mod.TOOLS)
    deferred = without_markers(mod.tools_for_request())
    names = [t["name"] for t in full if t["name"].startswith("mcp__")]
    # with deferral, the MCP tools cost their names in the system prompt: counted in
    # the bytes, not as a tool
    listed = ", ".join(names)
    rows = [("without deferral", full, 0),
            ("with deferral", deferred, len(listed.encode()) if names else 0)]
    print(f"{args.chapter}: the first request's tool definitions"
          + (" (with deferral: plus the MCP tools' names in the system prompt)"
             if names else ""))
    print(f"{'':18} {'tools':>5} {'bytes':>7} {'~tokens':>8}")
    for label, tools, extra in rows:
        total = size(tools) + extra
        print(f"{label:18} {len(tools):>5} {total:>7,} {total // 4:>8,}")
    before, after = size(full), size(deferred) + rows[1][2]
    saved = before - after
    print(f"saved: {saved:,} bytes per request ({saved / before:.0%}); "
          f"without / with = {before / after:.2f}")
    print("~tokens: an estimate at 4 bytes per token, not a tokenizer's count")
    print("\nwhat loading one deferred tool adds to each later request:")
    by_name = {tool["name"]: tool for tool in full}
    later = mod.deferred_names() if hasattr(mod, "deferred_names") else mod.DEFERRED_TOOLS
    width = max(map(len, later), default=0)
    for name in later:
        print(f"  {name:{width}} {size([by_name[name]]) - 2:>5,} bytes")

    if args.count_tokens:
        if not (os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN")):
            print("\n--count-tokens: no ANTHROPIC_API_KEY; the count needs the API.")
            return 1
        model = os.environ.get("MODEL_ID") or mod.DEFAULT_MODEL
        with_all = count_tokens(full, model)
        with_deferral = count_tokens(deferred, model, listed)
        print(f"\ninput tokens by the API ({model}), one-word request: without deferral "
              f"{with_all:,}, with deferral {with_deferral:,}, ratio "
              f"{with_all / with_deferral:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
