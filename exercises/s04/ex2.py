#!/usr/bin/env python3
# >>> EXERCISE ex2-about
# Exercise s04 ex2 (core): a hook that rewrites npm into pnpm.
# standalone: a hook script of its own, not a copy of s04_hooks/code.py.
# Write main(): for a Bash call whose command is a plain `npm ...`, answer with an
# updatedInput that runs `pnpm ...` instead, and tell the model why.
# The task: exercises/s04/README.md. Your work goes between the `>>> EXERCISE ex2`
# markers below; leave the rest as it is.
# Check:  pytest exercises/s04/test_ex2.py
# Try:    echo '{"tool_input": {"command": "npm test"}}' | python exercises/s04/ex2.py
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
def main() -> int:
    """Read the PreToolUse payload on stdin; answer on stdout (or not at all);
    return the exit code."""
    raise NotImplementedError("write main(): read the payload on stdin and, for a "
                              "plain `npm ...` command, answer with updatedInput "
                              "running pnpm")
# <<< EXERCISE ex2


if __name__ == "__main__":
    sys.exit(main())
