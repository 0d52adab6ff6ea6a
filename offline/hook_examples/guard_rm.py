#!/usr/bin/env python3
"""PreToolUse hook for Bash: refuse commands that run `rm`; suggest a way that can be undone.

    {"matcher": "Bash", "hooks": [{"type": "command",
      "command": "python3 \"$CLAUDE_PROJECT_DIR/.claude/hooks/guard_rm.py\""}]}

Exit 2 blocks the call, and what we print on stderr is what the model reads.
(Exit 1 would NOT block: it is a non-blocking error, and the command would run.)
A guard like this is a speed bump, not a wall: `find -delete` or a Python one-liner
deletes files too. The permission rules and modes are the wall.
"""
import json
import shlex
import sys

payload = json.load(sys.stdin)
command = payload["tool_input"].get("command", "")
try:
    words = shlex.split(command.replace(";", " ; ").replace("&&", " && ").replace("|", " | "))
except ValueError:  # unbalanced quotes: let the permission gate judge it
    sys.exit(0)
if any(word.rsplit("/", 1)[-1] == "rm" for word in words):
    print("rm is blocked in this project (.claude/hooks/guard_rm.py): move files "
          "into .trash/ instead, so that the user can undo it.", file=sys.stderr)
    sys.exit(2)
sys.exit(0)
