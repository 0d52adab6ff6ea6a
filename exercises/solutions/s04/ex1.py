#!/usr/bin/env python3
# >>> EXERCISE ex1-about
# Reference solution of exercise s04 ex1 (warm-up): a hook that checks JSON after edits.
# standalone: a hook script of its own, not a copy of s04_hooks/code.py.
# The task: exercises/s04/README.md. The changes are between the `>>> EXERCISE` markers.
# Check:  EXERCISE_FILE=exercises/solutions/s04/ex1.py pytest exercises/s04/test_ex1.py
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
def json_problem(path: str) -> str | None:
    """None if `path` is not a .json file, is gone, or holds valid JSON; else
    `<path>:<line>:<column>: <what the parser says>`."""
    if not path.endswith(".json"):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            json.load(f)
    except FileNotFoundError:
        return None  # deleted since: nothing to check
    except json.JSONDecodeError as e:
        return f"{path}:{e.lineno}:{e.colno}: {e.msg}"
    except (OSError, UnicodeDecodeError) as e:
        return f"{path}: cannot be read as UTF-8 text ({e})"
    return None


def main() -> int:
    payload = json.load(sys.stdin)
    # subtle: a hook registered for "*" also sees Bash calls, which have no file_path.
    path = (payload.get("tool_input") or {}).get("file_path") or ""
    problem = json_problem(path)
    if problem:
        print(json.dumps({"decision": "block",
                          "reason": f"{problem}. The edit was saved; fix the JSON."}))
    return 0  # the answer is in the JSON; exit 2 would ignore our stdout
# <<< EXERCISE ex1


if __name__ == "__main__":
    sys.exit(main())
