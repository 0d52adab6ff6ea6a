"""The offline scenarios of s05's exercises: `python exercises/s05/exK.py --offline`.

Each one is short and uses what its exercise adds; a starter plays it too, and shows
what is still missing (an unknown tool, a refused field, a denied write).
"""

from __future__ import annotations

from .scenario_s05 import ENTRY, FIX_CONTEXT, setup as s05_setup
from .scenarios import calls, nobody_answered, refused
from .server import reply, tool_use


def last_result(request: dict) -> str:
    return calls(request)[-1][1]


# --- ex1: diff_files, a deferred tool ---------------------------------------------------

def ex1_setup(workdir) -> None:
    stock = (workdir / "stock.json").read_text()
    (workdir / "stock.json.bak").write_text(stock.replace('"qty": 3}', '"qty": 7}')
                                            .replace('"price": 3.50', '"price": 3.25'))


COMPARE = {"file_a": "stock.json.bak", "file_b": "stock.json"}

EX1 = {
    "title": "exercise 1: diff_files, a deferred tool of your own",
    "setup": ex1_setup,
    "prompts": ["What changed in stock.json since the backup, stock.json.bak?"],
    "turns": [
        reply(tool_use("diff_files", COMPARE)),
        reply("It is deferred: I'll find it first.",
              tool_use("tool_search", {"query": "compare two files"})),
        reply(tool_use("diff_files", COMPARE)),
        lambda request: reply(
            "Since the backup: " + ("the hinges' price and the oak planks' stock changed "
                                    "(see the diff above)." if last_result(request)
                                    .startswith("---") else
                                    "I could not compare them: "
                                    + last_result(request).splitlines()[0][:160])),
    ],
}


# --- ex2: a skill's bundled files -------------------------------------------------------

TEMPLATE = "- <Fixed|Added|Changed|Known issue>: <what the user notices> (<file>)\n"


def ex2_setup(workdir) -> None:
    s05_setup(workdir)
    folder = workdir / ".claude" / "skills" / "changelog" / "templates"
    folder.mkdir()
    (folder / "entry.md").write_text(TEMPLATE)


def ex2_after_template(request: dict) -> dict:
    if last_result(request).startswith("Skill 'changelog', file"):
        return reply(tool_use("read_file", {"file_path": "CHANGELOG.md"}))
    return reply("I could not read the skill's template: "
                 + last_result(request).splitlines()[0][:160])


EX2 = {
    "title": "exercise 2: a skill's bundled files",
    "setup": ex2_setup,
    "prompts": ["Note the stock-value bug in the changelog, with the changelog skill's "
                "template."],
    "turns": [
        reply(tool_use("skill", {"name": "changelog"})),
        reply("Its template, then. I'll guess the name.",
              tool_use("skill", {"name": "changelog", "file": "template.md"})),
        reply(tool_use("skill", {"name": "changelog", "file": "templates/entry.md"})),
        ex2_after_template,
        reply(tool_use("edit_file", {"file_path": "CHANGELOG.md",
                                     "old_string": "## Unreleased\n\n",
                                     "new_string": "## Unreleased\n\n" + ENTRY + "\n"})),
        reply("Added the entry, in the template's shape, under ## Unreleased."),
    ],
}


# --- ex3: the plan file -----------------------------------------------------------------

PLAN = """\
## Fix the stock value

1. `total_value` in inventory.py: multiply `item["price"]` by `item["qty"]`.
2. Leave `catalog_price` alone (it has the same line, on purpose).
3. Run the tests.
"""


def ex3_after_plan(request: dict) -> dict:
    use, result = calls(request)[-1]
    if use["name"] == "write_file" and refused(result):
        return reply("Plan mode denies that write, so I'll present the plan myself.",
                     tool_use("exit_plan_mode", {"plan": PLAN}))
    if use["name"] == "write_file":
        return reply("The plan is in .plan.md; I'll present it from there.",
                     tool_use("exit_plan_mode"))
    if use["name"] == "exit_plan_mode" and "approved your plan" in result:
        return reply(tool_use("edit_file", {"file_path": "inventory.py",
                                            "old_string": FIX_CONTEXT,
                                            "new_string": FIX_CONTEXT + ' * item["qty"]'}))
    if use["name"] == "exit_plan_mode":
        why = ("no one was at the terminal to approve it" if nobody_answered(result)
               else result.splitlines()[0][:200])
        return reply(f"The plan was not approved ({why}); I changed nothing.")
    return reply("Done: total_value now counts every unit.")


EX3 = {
    "title": "exercise 3: the one file plan mode may write",
    "setup": lambda workdir: s05_setup(workdir),
    "asks": "to approve the plan (y, n, or type what to change)",
    "prompts": ["Plan the stock-value fix. Write the plan down first, then show it to me."],
    "turns": [
        reply(tool_use("tool_search", {"query": "select:enter_plan_mode,exit_plan_mode"})),
        reply(tool_use("enter_plan_mode")),
        reply(tool_use("read_file", {"file_path": "inventory.py"})),
        reply("I'll draft the plan in the plan file.",
              tool_use("write_file", {"file_path": ".plan.md", "content": PLAN})),
        *[ex3_after_plan] * 3,
    ],
}

SCENARIOS = {"ex1": EX1, "ex2": EX2, "ex3": EX3}
