"""s05's offline demo: a skill loaded on demand, then plan mode through deferred tools.

The setup adds to the scratch copy what this chapter reads: two skills (one of them
broken, to show that it is reported while the other still loads), a CHANGELOG.md, and
a settings file in acceptEdits mode (so that, with s03's permissions, the edits run
without a prompt and plan mode has a mode to return to).

The plan is approved only if someone answers "y" at a terminal. When stdin is not a
terminal (tests, the docs build), the answer is no and the model stops there; run the
demo in a terminal to approve the plan and watch the fix go in.
"""

from __future__ import annotations

from pathlib import Path

from .scenarios import FIX_CONTEXT, tool_results, unittest_summary_from
from .server import reply, tool_use

CHANGELOG_SKILL = """\
---
name: changelog
description: >-
  Write a CHANGELOG.md entry the way this project does it: one line per change,
  under "## Unreleased". Use it for every fix, feature or known issue.
license: MIT
allowed-tools: [Read, Edit]
---
# Changelog entries

1. Read `examples.md` in this skill's folder: it shows good and bad entries.
2. Read CHANGELOG.md. New entries go first under `## Unreleased`.
3. One line per change: `- <Fixed|Added|Changed|Known issue>: <what the user
   notices> (<file>)`. Say what the user sees, not how the code changed.
"""

EXAMPLES = """\
Good: - Fixed: the report no longer lists items that are out of stock twice (report.py)
Bad:  - changed the loop in report()   (says how, not what the user notices)
"""

BROKEN_SKILL = "# Deploy\n\nRun ./deploy.sh with the release tag.\n"  # no front matter

CHANGELOG = "# Changelog\n\n## Unreleased\n\n## 0.1.0\n\n- Added: the stock report (report.py)\n"

ENTRY = ("- Known issue: the report's stock value counts one unit of each item, "
         "not the whole stock (inventory.py)\n")

PLAN = """\
## Fix the stock value

1. In `inventory.py`, `total_value` adds `item["price"]` once per item.
   Multiply it by `item["qty"]`, so that the value counts every unit.
2. Leave `catalog_price` alone: it adds one of each on purpose. It has the
   same line, so the edit includes the docstring to pick the right one.
3. Run the tests: `python3 -m unittest`.
"""


def setup(workdir: Path) -> None:
    skills = workdir / ".claude" / "skills"
    (skills / "changelog").mkdir(parents=True)
    # Windows line endings, as a SKILL.md edited on Windows has them: they still load.
    (skills / "changelog" / "SKILL.md").write_bytes(CHANGELOG_SKILL.replace("\n", "\r\n").encode())
    (skills / "changelog" / "examples.md").write_text(EXAMPLES)
    (skills / "deploy").mkdir()
    (skills / "deploy" / "SKILL.md").write_text(BROKEN_SKILL)
    (workdir / ".claude" / "settings.json").write_text(
        '{"permissions": {"defaultMode": "acceptEdits",\n'
        '                 "allow": ["Bash(python3 -m unittest *)"]}}\n')
    (workdir / "CHANGELOG.md").write_text(CHANGELOG)


def broken_skills(request: dict) -> str:
    """The system prompt's report of the skills that could not be loaded."""
    lines = request["system"].split("could not be loaded")[-1].splitlines()
    return "; ".join(ln[2:] for ln in lines if ln.startswith("- ")) or "(none)"


def approved(request: dict) -> bool:
    last = tool_results(request["messages"][-1])
    return any("approved your plan" in text for text in last)


def after_the_plan(request: dict) -> dict:
    if approved(request):
        return reply("Approved. Making the change now.",
                     tool_use("edit_file", {"file_path": "inventory.py",
                                            "old_string": FIX_CONTEXT,
                                            "new_string": FIX_CONTEXT + ' * item["qty"]'}))
    said = tool_results(request["messages"][-1])[0]
    why = said[said.find("(") + 1:said.find(")")] if "(" in said else said
    return reply(f"The plan was not approved ({why}), so I changed nothing, and I am "
                 "still in plan mode. Run this demo in a terminal to answer yourself.")


SCENARIO = {
    "title": "deferred tools, plan mode and a skill loaded on demand",
    "setup": setup,
    "prompts": [
        "Note the stock-value bug in the changelog, the way this project writes entries.",
        "Now plan the fix for the stock value. Don't change anything until I approve.",
    ],
    "turns": [
        # --- prompt 1: the system prompt lists the skills; the body loads on demand
        reply("This project has a changelog skill. I'll load it.",
              tool_use("skill", {"name": "changelog"})),
        reply(tool_use("read_file", {"file_path": ".claude/skills/changelog/examples.md"}),
              tool_use("read_file", {"file_path": "CHANGELOG.md"})),
        reply(tool_use("edit_file", {"file_path": "CHANGELOG.md",
                                     "old_string": "## Unreleased\n\n",
                                     "new_string": "## Unreleased\n\n" + ENTRY + "\n"})),
        lambda request: reply(
            "Added a 'Known issue' line under ## Unreleased, following the changelog "
            "skill. One skill could not be loaded: " + broken_skills(request) + "."),
        # --- prompt 2: plan mode, whose tools are deferred
        reply("This needs a plan first.", tool_use("enter_plan_mode")),
        reply("That tool is deferred. I'll load the plan-mode tools.",
              tool_use("tool_search", {"query": "plan mode"})),
        reply(tool_use("enter_plan_mode")),
        reply(tool_use("read_file", {"file_path": "inventory.py"})),
        reply("The fix is one line; I'll just make it.",
              tool_use("edit_file", {"file_path": "inventory.py",
                                     "old_string": FIX_CONTEXT,
                                     "new_string": FIX_CONTEXT + ' * item["qty"]'})),
        reply("Right: in plan mode I present the plan first.",
              tool_use("exit_plan_mode", {"plan": PLAN})),
        after_the_plan,
        # Only reached when the plan was approved (at a terminal):
        reply(tool_use("run_shell", {"command": "python3 -m unittest 2>&1 | tail -n 3"})),
        lambda request: reply("Done: `total_value` now multiplies by the quantity. "
                              "Tests: " + unittest_summary_from(request) + " (the "
                              "low-stock line is a separate fix)."),
    ],
}
