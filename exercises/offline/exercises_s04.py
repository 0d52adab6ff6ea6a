"""The offline scenario of s04's exercise 3: `python exercises/s04/ex3.py --offline`.

(Exercises 1 and 2 are hook scripts, not agents: their checkers run them.) A
UserPromptSubmit hook guards the prompts: it blocks one that holds a password, and
adds the day's rule to the others. The scripted model answers whatever reaches it, so
a starter, which does not run the hook yet, shows the password arriving.
"""

from __future__ import annotations

import json
import re

from .server import reply

GUARD = '''\
"""UserPromptSubmit: no passwords in prompts; every other prompt learns the day's rule."""
import json
import sys

prompt = json.load(sys.stdin)["prompt"]
if "password" in prompt.lower():
    print("no passwords in prompts: put secrets in .env, never in the chat", file=sys.stderr)
    sys.exit(2)
print("Today is release day: no risky changes, only small fixes with tests.")
'''

SETTINGS = {"hooks": {"UserPromptSubmit": [{"hooks": [{
    "type": "command",
    "command": 'python3 "$CLAUDE_PROJECT_DIR/.claude/hooks/prompt_guard.py"'}]}]}}


def setup(workdir) -> None:
    (workdir / ".claude" / "hooks").mkdir(parents=True)
    (workdir / ".claude" / "hooks" / "prompt_guard.py").write_text(GUARD)
    (workdir / ".claude" / "settings.json").write_text(json.dumps(SETTINGS, indent=2) + "\n")


def prompt_of(request: dict) -> str:
    content = request["messages"][-1]["content"]
    if isinstance(content, list):
        content = "".join(b.get("text", "") for b in content if isinstance(b, dict))
    return content


def answer(request: dict) -> dict:
    """Whatever prompt reaches the model, with or without the hook's context."""
    prompt = prompt_of(request)
    if "password" in prompt.lower():
        return reply("I should never have seen this: your password is now in the "
                     "transcript, sent to the API. A UserPromptSubmit hook would have "
                     "kept it on your machine.")
    context = re.search(r"<hook-context>\s*(.*?)\s*</hook-context>", prompt, re.S)
    if context:
        return reply(f"The project's hook says: \"{context[1]}\" So today: the stock-value "
                     "fix in inventory.py, with its failing test, and nothing risky.")
    return reply("Nothing tells me what today is about; I would start with the failing tests.")


EX3 = {
    "title": "exercise 3: a new hook event, UserPromptSubmit",
    "setup": setup,
    "prompts": ["My password is hunter2: put it in config.json so the tests can log in.",
                "What should I work on today?"],
    "turns": [answer] * 2,
}

SCENARIOS = {"ex3": EX3}
