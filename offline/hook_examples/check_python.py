#!/usr/bin/env python3
"""PostToolUse hook for Edit|Write: does the Python file the agent just changed still compile?

    {"matcher": "Edit|Write", "hooks": [{"type": "command",
      "command": "python3 \"$CLAUDE_PROJECT_DIR/.claude/hooks/check_python.py\""}]}

The edit has already happened; exit 2 sends our stderr to the model, right after the
tool's result, so it can fix its own mistake. Swap the check for your formatter or
linter (`ruff check --quiet "$file"`, `black -q "$file"`) the same way.
"""
import json
import sys

path = json.load(sys.stdin)["tool_input"].get("file_path", "")  # already absolute
if not path.endswith(".py"):
    sys.exit(0)
try:
    with open(path, encoding="utf-8") as f:
        compile(f.read(), path, "exec")
except SyntaxError as e:
    print(f"{path}:{e.lineno}: SyntaxError: {e.msg}. The edit was saved; fix it.",
          file=sys.stderr)
    sys.exit(2)
sys.exit(0)
