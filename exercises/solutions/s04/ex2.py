#!/usr/bin/env python3
# >>> EXERCISE ex2-about
# Reference solution of exercise s04 ex2 (core): a hook that rewrites npm into pnpm.
# standalone: a hook script of its own, not a copy of s04_hooks/code.py.
# The task: exercises/s04/README.md. The changes are between the `>>> EXERCISE` markers.
# Check:  EXERCISE_FILE=exercises/solutions/s04/ex2.py pytest exercises/s04/test_ex2.py
# <<< EXERCISE ex2-about
"""PreToolUse hook for Bash: this project uses pnpm, so `npm ...` runs as `pnpm ...`.

    {"matcher": "Bash", "hooks": [{"type": "command",
      "command": "python3 \"$CLAUDE_PROJECT_DIR/.claude/hooks/use_pnpm.py\""}]}

Instead of blocking the model's `npm test` and making it try again, we change the
call: exit 0 with hookSpecificOutput.updatedInput, the whole new input, and an
additionalContext that tells the model what happened. We decide nothing about
permission: the agent's gate judges the new command as if the model had written it.
"""
import json
import re
import sys


# >>> EXERCISE ex2
# Anything that could run a second command, or build one at run time, or span lines.
SHELL_SYNTAX = re.compile(r"[;&|<>`$(){}\n\\]")


def rewrite(command: str) -> str | None:
    """`npm ARGS` -> `pnpm ARGS`; None if the command is anything else."""
    # subtle: only a plain, single npm call. In `npm test && npm publish` or
    # `npm run $(x)` we cannot be sure what we would change; leave it to the gate.
    if SHELL_SYNTAX.search(command) or not re.match(r"\s*npm(\s|$)", command):
        return None
    return re.sub(r"^\s*npm", "pnpm", command, count=1)


def main() -> int:
    payload = json.load(sys.stdin)
    tool_input = payload.get("tool_input") or {}
    new = rewrite(str(tool_input.get("command", "")))
    if new is None:
        return 0  # not ours: no answer, the call goes on unchanged
    print(json.dumps({"hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        # subtle: updatedInput replaces the WHOLE input; keep what we do not change.
        "updatedInput": {**tool_input, "command": new},
        "additionalContext": ("This project uses pnpm, not npm: "
                              f"`{tool_input['command']}` was run as `{new}`. "
                              "Use pnpm from now on."),
    }}))
    return 0
# <<< EXERCISE ex2


if __name__ == "__main__":
    sys.exit(main())
