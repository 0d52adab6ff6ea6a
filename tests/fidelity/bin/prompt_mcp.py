#!/usr/bin/env python3
"""A tiny stdio MCP server for Claude Code's --permission-prompt-tool.

Claude Code calls its one tool, `ask`, whenever it would ask the person at the
terminal. It answers "deny" (so nothing runs) and appends the call's tool name and
input to the file named by FIDELITY_ASKED: a call listed there was *asked*, one that
is denied without being listed was *denied* by a rule or a mode.
"""
import json
import os
import sys

TOOL = {"name": "ask", "description": "Records a permission prompt and answers no.",
        "inputSchema": {"type": "object", "properties": {
            "tool_name": {"type": "string"}, "input": {"type": "object"},
            "tool_use_id": {"type": "string"}}}}


def answer(request: dict):
    method = request.get("method")
    if method == "initialize":
        return {"protocolVersion": request["params"].get("protocolVersion", "2024-11-05"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "fidelity-prompt", "version": "1"}}
    if method == "tools/list":
        return {"tools": [TOOL]}
    if method == "tools/call":
        args = request["params"].get("arguments") or {}
        with open(os.environ["FIDELITY_ASKED"], "a", encoding="utf-8") as f:
            f.write(json.dumps(args) + "\n")
        verdict = {"behavior": "deny", "message": "fidelity: asked"}
        return {"content": [{"type": "text", "text": json.dumps(verdict)}]}
    return {}


for line in sys.stdin:
    request = json.loads(line)
    if "id" not in request:
        continue  # a notification
    print(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": answer(request)}),
          flush=True)
