"""s05's offline demo: a skill loaded on demand, an MCP server's tools found with
tool_search, then plan mode through deferred tools.

The setup adds to the scratch copy what this chapter reads: two skills (one of them
broken, to show that it is reported while the other still loads), a CHANGELOG.md, a
settings file in acceptEdits mode (so that, with s03's permissions, the edits run
without a prompt and plan mode has a mode to return to) with an allow rule on the MCP
tool that finds suppliers (its server claims readOnlyHint, which asks all the same:
the rule is the learner's word for it), a deny rule on the MCP
tool that places orders, a `.mcp.json` naming the stockroom server (offline/
mcp_server.py, run by the Python running the demo) and, in settings.local.json, the
approval that lets it start (enabledMcpjsonServers), so that it asks nothing.

The second prompt shows MCP: the model finds the supplier tools with a keyword
tool_search, calls one and uses its answer, loads the ordering tool by name
('select:'), and meets the deny rule: the server never sees that call.

Two questions go to the learner at a terminal, and the story follows the answers:

- Running the report (not read-only) asks: y, n or a. After an approved plan the
  model runs it again: "a" (always) lets that run unasked, "y" asks again, and after
  "n" the model does without it.
- The plan asks for approval: "y" and the fix goes in, the tests and the report run;
  "n" and nothing changes; anything else typed is feedback: the model presents the
  plan again with the note, and asks once more.

When stdin is not a terminal (tests, the docs build) every answer is no, and the
model stops after the plan, having changed nothing in inventory.py. In every mode
(`--permission-mode`) and with every answer, what the model says it did is what the
tool_results say happened: an edit refused (the changelog's in default or plan mode,
the fix's after an approved plan that returns to default mode) is reported as refused.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from .scenarios import (FIX_CONTEXT, calls, first_line, nobody_answered, outcomes,
                        refused, results_of, what_tests_said, why_not)
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
3. Run the tests and the report: `python3 -m unittest`, `python3 report.py`.
"""
REPORT = "python3 report.py"  # not read-only: it asks, and "always" remembers it
TESTS = "python3 -m unittest 2>&1 | tail -n 3"  # an allow rule lets it run unasked
STOCKROOM = Path(__file__).resolve().parent / "mcp_server.py"
FIND_SUPPLIER = "mcp__stockroom__find_supplier"   # claims read-only; an allow rule
PLACE_ORDER = "mcp__stockroom__place_order"       # writes, and a deny rule names it


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
        '                 "allow": ["Bash(python3 -m unittest *)",\n'
        f'                           "{FIND_SUPPLIER}"],\n'
        f'                 "deny": ["{PLACE_ORDER}"]}}}}\n')
    # the server runs with the Python running the demo: the one that has the mcp SDK
    (workdir / ".mcp.json").write_text(json.dumps({"mcpServers": {"stockroom": {
        "command": sys.executable, "args": [str(STOCKROOM)]}}}, indent=2) + "\n")
    (workdir / ".claude" / "settings.local.json").write_text(
        '{"enabledMcpjsonServers": ["stockroom"]}\n')
    (workdir / "CHANGELOG.md").write_text(CHANGELOG)


def broken_skills(request: dict) -> str:
    """The system prompt's report of the skills that could not be loaded."""
    lines = request["system"].split("could not be loaded")[-1].splitlines()
    return "; ".join(ln[2:] for ln in lines if ln.startswith("- ")) or "(none)"


def plan_answer(result: str) -> str | None:
    """What the user said to a plan that was not approved (None: it was approved)."""
    found = re.search(r"did not approve the plan \((.*)\)\. You are still", result, re.S)
    return found[1] if found else None


def changelog_turn(request: dict) -> dict:
    """The entry says what the user notices: the report's figure, if it could run."""
    result = results_of(request, "run_shell", command=REPORT)[-1]
    value = first_line(result, "Stock value: ").removeprefix("Stock value: ")
    entry = ENTRY.replace("stock value", f"stock value ({value} today)" if value else
                          "stock value", 1)
    return reply(tool_use("edit_file", {"file_path": "CHANGELOG.md",
                                        "old_string": "## Unreleased\n\n",
                                        "new_string": "## Unreleased\n\n" + entry + "\n"}))


def supplier_said(request: dict) -> str:
    """Who supplies oak plank, as the server answered, or why it was not asked."""
    asked, found = outcomes(request, FIND_SUPPLIER)[-1]
    if not asked:
        return f"I could not ask the stockroom who supplies oak plank ({why_not(found)})."
    return f"Oak plank comes from {found.strip().split(': ', 1)[-1]}."


def supplier_found(request: dict) -> dict:
    """The server's answer, read; then the order, loaded by its exact name."""
    return reply(f"{supplier_said(request)} Now the order: I'll load that tool by its name.",
                 tool_use("tool_search", {"query": f"select:{PLACE_ORDER}"}))


def order_answer(request: dict) -> dict:
    """What the supplier tool said, and why the order was not placed."""
    placed, ordered = outcomes(request, PLACE_ORDER)[-1]
    said = supplier_said(request)
    if placed:
        return reply(f"{said} Ordered: {ordered.strip()}.")
    if "deny rule" not in why_not(ordered):
        return reply(f"{said} I did not order any ({why_not(ordered)}).")
    return reply(f"{said} I did not order any: a deny rule in .claude/settings.json "
                 f"({PLACE_ORDER}) stops that tool before the stockroom server sees the "
                 "call. Place the order yourself, or change the rule if I should.")


def changelog_answer(request: dict) -> dict:
    """The entry, added or refused; and the skill that could not be loaded."""
    added, result = outcomes(request, "edit_file", file_path="CHANGELOG.md")[-1]
    said = ("Added a 'Known issue' line under ## Unreleased, following the changelog "
            "skill." if added else f"I did not add the entry: the edit of CHANGELOG.md "
            f"was refused ({why_not(result)}), so the changelog is unchanged.")
    return reply(f"{said} One skill could not be loaded: {broken_skills(request)}.")


def after_the_plan(request: dict) -> dict:
    """The rest of the story, from the last call's result: whatever the user answered."""
    use, result = calls(request)[-1]
    said = plan_answer(result) if use["name"] == "exit_plan_mode" else None
    if use["name"] == "exit_plan_mode" and said is None:
        return reply("Approved. Making the change now.",
                     tool_use("edit_file", {"file_path": "inventory.py",
                                            "old_string": FIX_CONTEXT,
                                            "new_string": FIX_CONTEXT + ' * item["qty"]'}))
    if said and said.startswith("the user's feedback: ") and use["input"]["plan"] == PLAN:
        note = said.removeprefix("the user's feedback: ")
        return reply("Here is the plan again, with your note.", tool_use(
            "exit_plan_mode", {"plan": PLAN + f"4. Your note, \"{note}\": a change of its "
                               "own, after this one. I will not make it now.\n"}))
    if said:
        ending = (" Run this demo in a terminal to answer yourself." if nobody_answered(result)
                  else " Tell me what to change, and I will plan again.")
        return reply(f"The plan was not approved ({said}), so I changed nothing, and I am "
                     "still in plan mode." + ending)
    if use["name"] == "edit_file" and refused(result):
        return reply(f"The plan was approved, but the edit was refused ({why_not(result)}), "
                     "so inventory.py is unchanged.")
    if use["name"] == "edit_file":
        report = results_of(request, "run_shell", command=REPORT)[0]
        again = [tool_use("run_shell", {"command": REPORT})] if not refused(report) else []
        return reply(tool_use("run_shell", {"command": TESTS}), *again)
    reports = results_of(request, "run_shell", command=REPORT)
    report = (f" The report now says \"{first_line(reports[-1], 'Stock value')}\"."
              if len(reports) > 1 and not refused(reports[-1]) else "")
    noted = " Your note is left for a change of its own." if any(
        "Your note" in use["input"].get("plan", "") for use, _ in calls(request)) else ""
    tests = what_tests_said(request, TESTS)
    if "FAILED" in tests:
        tests += " (the low-stock line is a separate fix)"
    return reply(f"Done: `total_value` now multiplies by the quantity. {tests}."
                 + report + noted)


SCENARIO = {
    "title": "deferred tools (an MCP server's too), plan mode, a skill loaded on demand",
    "setup": setup,
    "asks": ("before the report runs (y, n or a for always) and to approve the plan "
             "(y, n, or type what to change)"),
    "prompts": [
        "Note the stock-value bug in the changelog, the way this project writes entries.",
        "Oak plank is running low: who supplies it, and how long does a delivery "
        "take? Then order 10 more.",
        "Now plan the fix for the stock value. Don't change anything until I approve.",
    ],
    "turns": [
        # --- prompt 1: the system prompt lists the skills; the body loads on demand
        reply("This project has a changelog skill. I'll load it.",
              tool_use("skill", {"name": "changelog"})),
        reply("The skill says to write what the user notices, so I'll look at the report too.",
              tool_use("read_file", {"file_path": ".claude/skills/changelog/examples.md"}),
              tool_use("read_file", {"file_path": "CHANGELOG.md"}),
              tool_use("run_shell", {"command": REPORT})),
        changelog_turn,
        changelog_answer,
        # --- prompt 2: the stockroom's MCP tools, deferred: found, called, denied
        reply("The stockroom MCP server has supplier tools. I'll load them.",
              tool_use("tool_search", {"query": "supplier", "max_results": 2})),
        reply(tool_use(FIND_SUPPLIER, {"item_name": "oak plank"})),
        supplier_found,
        reply(tool_use(PLACE_ORDER, {"item_name": "oak plank", "quantity": 10})),
        order_answer,
        # --- prompt 3: plan mode, whose tools are deferred
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
        # approved, refused, or feedback and a second plan: the story reads the answer
        *[after_the_plan] * 5,
    ],
}
