"""s04's offline demo: the example hooks at work on the sample project.

The setup copies the example hooks from offline/hook_examples/ into the scratch
copy's .claude/hooks/ and writes a .claude/settings.json that registers them, with
permission rules that would let every call of the story through on their own:

- guard_rm.py (PreToolUse, Bash): blocks `rm` with exit 2, although an allow rule
  says `Bash(rm *)`. The model reads the hook's reason and moves the folder instead.
- check_python.py (PostToolUse, Edit|Write): the model's first edit breaks the
  syntax; the edit stands, the hook's complaint follows the result, the model fixes it.
- protect_stock_exit1.sh (PreToolUse, Edit|Write): meant to protect stock.json, but it
  exits 1, so the edit goes through: the user sees a notice, the model sees nothing.
- audit_log.py (PreToolUse and PostToolUse, every tool): a JSON line per event in
  .claude/audit.log, which the model shows at the end.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from .scenarios import outcomes, story, tool_results, what_tests_said, why_not
from .server import reply, tool_use

EXAMPLES = Path(__file__).parent / "hook_examples"


def command(script: str) -> list[dict]:
    """The `hooks` list of one matcher group: one command hook running `script`."""
    runner = "sh" if script.endswith(".sh") else "python3"
    return [{"type": "command",
             "command": f'{runner} "$CLAUDE_PROJECT_DIR/.claude/hooks/{script}"'}]


SETTINGS = {
    "permissions": {
        "defaultMode": "acceptEdits",
        "allow": ["Bash(rm *)", "Bash(mkdir *)", "Bash(mv *)",
                  "Bash(python3 -m unittest:*)"],
    },
    "hooks": {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": command("guard_rm.py")},
            {"matcher": "Edit|Write", "hooks": command("protect_stock_exit1.sh")},
            {"matcher": "*", "hooks": command("audit_log.py")},
        ],
        "PostToolUse": [
            {"matcher": "Edit|Write", "hooks": command("check_python.py")},
            {"matcher": "*", "hooks": command("audit_log.py")},
        ],
    },
}


def setup(workdir: Path) -> None:
    hooks = workdir / ".claude" / "hooks"
    hooks.mkdir(parents=True)
    for example in EXAMPLES.iterdir():
        if example.suffix in (".py", ".sh"):
            shutil.copy2(example, hooks / example.name)
    (workdir / ".claude" / "settings.json").write_text(json.dumps(SETTINGS, indent=2) + "\n")
    (workdir / "build").mkdir()
    (workdir / "build" / "report.txt").write_text("Stock value: 27.50\n")


OLD_LINE = '''    """Sum of price times quantity: what the whole stock is worth."""
    total = 0
    for item in items:
        total += item["price"]'''
BROKEN = OLD_LINE + ' * item["qty"'
FIXED = OLD_LINE + ' * item["qty"]'
MOVE_BUILD = "mkdir -p .trash && mv build .trash/"


TESTS = "python3 -m unittest 2>&1 | tail -n 3"
OAK_3 = '{"name": "oak plank", "price": 18.00, "qty": 3}'
OAK_12 = '{"name": "oak plank", "price": 18.00, "qty": 12}'


def last_result(request: dict) -> str:
    return (tool_results(request["messages"][-1]) or [""])[0]


def audit_summary(request: dict) -> str:
    lines = [line for line in last_result(request).splitlines() if line.startswith("{")]
    return f"{len(lines)} lines shown" if lines else "no audit lines found"


def after_rm(request: dict) -> dict:
    """rm was blocked (by the hook, whatever the mode): move the folder instead."""
    _, result = outcomes(request, "run_shell", command="rm -rf build")[-1]
    said = ("A project hook blocks rm and suggests moving it instead. I'll do that."
            if "hook" in why_not(result) else
            f"rm did not run ({why_not(result)}). I'll move the folder aside instead.")
    return reply(said, tool_use("run_shell", {"command": MOVE_BUILD}))


def broken_edit_went_in(request: dict) -> bool:
    """Did the first edit, the one that leaves a bracket open, reach the file?"""
    return any(ok for ok, _ in outcomes(request, "edit_file", new_string=BROKEN))


def fix_said(request: dict) -> str:
    """The fix of total_value: in, half in (the bracket left open), or not at all."""
    broken = outcomes(request, "edit_file", new_string=BROKEN)[-1]
    fixed = outcomes(request, "edit_file", new_string=FIXED)
    if fixed and fixed[-1][0]:
        return "fixed total_value: it now multiplies the price by the quantity"
    if broken[0]:
        return (f"left total_value half fixed: my first edit left a bracket open and the "
                f"edit that closes it was refused ({why_not(fixed[-1][1])}), so "
                "inventory.py does not compile now")
    return (f"did not fix total_value: the edit was refused ({why_not(broken[1])}), so "
            "inventory.py is unchanged")


def first_answer(request: dict) -> dict:
    """What became of build/ and of total_value, and what the tests said."""
    moved, result = outcomes(request, "run_shell", command=MOVE_BUILD)[-1]
    build = ("Moved build/ to .trash/ (rm is blocked here)" if moved else
             f"build/ is still there: rm is blocked here, and the move did not go "
             f"through ({why_not(result)})")
    tests = what_tests_said(request, TESTS)
    if "FAILED" in tests:
        tests += (" (the failure left is the low-stock line, which you did not ask me "
                  "to change)" if "multiplies" in fix_said(request) else
                  " (total_value is not fixed, and the low-stock line was not asked for)")
    return reply(f"{build}; I {fix_said(request)}. {tests}.")


def stock_answer(request: dict) -> dict:
    edited, result = outcomes(request, "edit_file", file_path="stock.json")[-1]
    return reply("Done: oak plank now has 12 in stock.json." if edited else
                 f"I did not change stock.json: the edit was refused ({why_not(result)}).")


def scenario() -> dict:
    """The scenario, made afresh for each run: its story is a queue of steps, used up
    as they are played (a second demo in the same process needs its own)."""
    return {
        "title": "hooks: a command guard, a check after edits, an exit-1 bug, an audit log",
        "prompts": [
            "Delete the old build/ folder, then fix the stock value in the report.",
            "Set the oak plank stock to 12 in stock.json.",
            "Show me the last lines of the audit log.",
        ],
        # A story: the step that closes the bracket is played only if the edit that
        # opened it went in (plan mode, or a "no", refuses it), and no later turn moves.
        "turns": story(
            reply("First, the old build output.",
                  tool_use("run_shell", {"command": "rm -rf build"})),
            after_rm,
            reply(tool_use("read_file", {"file_path": "inventory.py"})),
            reply("total_value forgets the quantity.",
                  tool_use("edit_file", {"file_path": "inventory.py",
                                         "old_string": OLD_LINE, "new_string": BROKEN})),
            (broken_edit_went_in,
             reply("The check after my edit says I left a bracket open. Fixing it.",
                   tool_use("edit_file", {"file_path": "inventory.py",
                                          "old_string": BROKEN, "new_string": FIXED}))),
            reply(tool_use("run_shell", {"command": TESTS})),
            first_answer,
            # The second prompt: the exit-1 hook cannot stop this edit.
            reply(tool_use("read_file", {"file_path": "stock.json"})),
            reply(tool_use("edit_file", {"file_path": "stock.json",
                                         "old_string": OAK_3, "new_string": OAK_12})),
            stock_answer,
            # The third prompt: what the audit hook wrote.
            reply(tool_use("run_shell", {"command": "tail -n 4 .claude/audit.log"})),
            lambda request: reply("Those are the last entries of .claude/audit.log ("
                                  + audit_summary(request) + "): one line before every "
                                  "tool call and one after each that succeeded, written by "
                                  "the audit hook."),
        ),
        "setup": setup,
    }


SCENARIO = scenario
