"""s06's offline demo: parallel batches, streaming early start and two subagents.

The setup writes a .claude/settings.json that allows the test run, so the one unsafe
call of the story runs instead of being denied (the demo has no terminal to ask).

1. A slowly streamed reply with six calls. The three safe ones at its head start
   while the model is still writing; the test run (not read-only, so unsafe) waits
   for the end of the reply and runs alone; the read after it waits for it.
2. Two subagents, one per money function, run side by side; their turns are routed
   by their prompts, since they reach the server in no fixed order. Their lines on
   the terminal are labelled with their descriptions.
3. The answer quotes what the subagents returned.
"""

from __future__ import annotations

import json

from .scenarios import tool_results, unittest_summary_from
from .server import reply, routed, tool_use

SETTINGS = {"permissions": {"allow": ["Bash(python3 -m unittest:*)"]}}

CHECK_TOTAL = ("Read inventory.py and tell me in one sentence whether total_value "
               "computes what its docstring promises.")
CHECK_REPORT = ("Read report.py and inventory.py's report() and tell me in one sentence "
                "what the low-stock lines say.")


def setup(workdir) -> None:
    (workdir / ".claude").mkdir(exist_ok=True)
    (workdir / ".claude" / "settings.json").write_text(json.dumps(SETTINGS, indent=2))


def subagent_answers(request: dict) -> list[str]:
    """The subagents' final answers: the tool_results of the last user message."""
    return tool_results(request["messages"][-1])


def scenario() -> dict:
    """The scenario, made afresh for each run: its routed turns are used up as they
    are played (a second demo in the same process needs its own)."""
    return {
        "title": "parallel batches, streaming early start, subagents",
        "setup": setup,
        "prompts": ["Give me a quick tour of this project, run its tests, and check the two "
                    "functions that compute money. Be quick: do things in parallel."],
        "turns": [
            # Streamed slowly: watch the first three calls start before the reply ends.
            reply("I'll look at the layout, the functions and the sizes at once, then run "
                  "the tests (that one runs alone), then read the README.",
                  tool_use("list_files", {"pattern": "**/*"}),
                  tool_use("grep_search", {"pattern": r"^def ", "include": "*.py"}),
                  tool_use("run_shell", {"command": "sleep 1; wc -l *.py"}),
                  tool_use("run_shell", {"command": "python3 -m unittest 2>&1 | tail -n 3"}),
                  tool_use("read_file", {"file_path": "README.md", "limit": 5}),
                  event_delay=0.04),
            reply("Two independent checks: one subagent each.",
                  tool_use("agent", {"description": "check total_value", "prompt": CHECK_TOTAL}),
                  tool_use("agent", {"description": "check report", "prompt": CHECK_REPORT})),
            *routed({
                CHECK_TOTAL: [
                    reply(tool_use("grep_search", {"pattern": "total \\+=", "path": "inventory.py"}),
                          delay=0.5),
                    reply("total_value adds item[\"price\"] only, so it ignores the quantity "
                          "its docstring promises.", delay=0.5)],
                CHECK_REPORT: [
                    reply(tool_use("read_file", {"file_path": "report.py", "limit": 20}),
                          tool_use("grep_search", {"pattern": "Running low", "path": "inventory.py"}),
                          delay=0.5),
                    reply("The low-stock lines name the item but not how many are left.",
                          delay=0.5)],
            }),
            lambda request: reply(
                "Tour: stockroom keeps stock in stock.json; inventory.py computes values, "
                "report.py prints the morning report. Tests: " + unittest_summary_from(request)
                + ". The subagents found: (1) " + " (2) ".join(subagent_answers(request))
                + " I changed nothing."),
        ],
    }


SCENARIO = scenario
