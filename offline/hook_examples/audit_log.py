#!/usr/bin/env python3
"""PreToolUse and PostToolUse hook for every tool: one JSON line per event in .claude/audit.log.

    {"matcher": "*", "hooks": [{"type": "command",
      "command": "python3 \"$CLAUDE_PROJECT_DIR/.claude/hooks/audit_log.py\""}]}

It decides nothing and prints nothing, so it never changes what happens: exit 0,
no output. Register it for PostToolUseFailure too to log the calls that failed.
"""
import json
import os
import sys
import time

event = json.load(sys.stdin)
line = {"time": time.strftime("%H:%M:%S"), "event": event["hook_event_name"],
        "tool": event["tool_name"], "input": event["tool_input"],
        "mode": event.get("permission_mode")}
log = os.path.join(os.environ.get("CLAUDE_PROJECT_DIR", "."), ".claude", "audit.log")
with open(log, "a", encoding="utf-8") as f:
    f.write(json.dumps(line)[:500] + "\n")
