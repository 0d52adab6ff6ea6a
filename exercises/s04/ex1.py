#!/usr/bin/env python3
# >>> EXERCISE ex1-about
# Exercise s04 ex1 (warm-up): a hook that checks JSON after edits.
# standalone: a hook script of its own, not a copy of s04_hooks/code.py.
# Write main(): read the hook's payload on stdin and, if the edited file is a .json
# file that no longer parses, answer {"decision": "block", "reason": ...}.
# The task: exercises/s04/README.md. Your work goes between the `>>> EXERCISE ex1`
# markers below; leave the rest as it is.
# Check:  pytest exercises/s04/test_ex1.py
# Try: echo '{"tool_input": {"file_path": "/tmp/x.json"}}' | python exercises/s04/ex1.py
# <<< EXERCISE ex1-about
"""PostToolUse hook for Edit|Write: is the JSON file the agent just changed still JSON?

    {"matcher": "Edit|Write", "hooks": [{"type": "command",
      "command": "python3 \"$CLAUDE_PROJECT_DIR/.claude/hooks/check_json.py\""}]}

The edit has already happened. If the file no longer parses, we answer with exit 0
and Claude Code's JSON, {"decision": "block", "reason": ...}: the agent puts the
reason after the tool's result, for the model to read and fix. A valid file, or
any file that is not .json, gets no answer at all: silence means "fine".
"""
import json
import sys


# >>> EXERCISE ex1
def main() -> int:
    """Read the PostToolUse payload on stdin; answer on stdout (or not at all);
    return the exit code."""
    raise NotImplementedError("write main(): read the payload on stdin, check the file "
                              "in tool_input.file_path, answer with JSON if it is "
                              "broken")
# <<< EXERCISE ex1


if __name__ == "__main__":
    sys.exit(main())
