#!/bin/sh
# PreToolUse hook for Edit|Write, WITH THE MOST COMMON BUG IN REAL HOOKS: it means to
# protect stock.json, but it exits 1. Exit 1 is a non-blocking error: the user sees a
# notice, the model sees nothing, and the edit goes ahead. Blocking takes exit 2.
#
#   {"matcher": "Edit|Write", "hooks": [{"type": "command",
#     "command": "sh \"$CLAUDE_PROJECT_DIR/.claude/hooks/protect_stock_exit1.sh\""}]}
if grep -q '/stock\.json"'; then  # the JSON on stdin names stock.json as the file
  echo "stock.json is written by the warehouse system; do not edit it by hand" >&2
  exit 1  # the bug: this should be `exit 2`
fi
exit 0
