"""s06's offline demo: parallel batches, streaming early start, two subagents and a
command in the background.

The setup writes a .claude/settings.json that allows the test run, so the one unsafe
call of the story runs instead of being denied (the demo has no terminal to ask).

1. A slowly streamed reply with five calls. The three safe ones at its head start
   while the model is still writing; the slow test run (not read-only, so unsafe)
   waits for the end of the reply, alone, and starts in the background: its call
   returns at once with a task id and an output file; the read after it waits for it.
2. While the tests run, two subagents, one per money function, run side by side;
   their turns are routed by their prompts, since they reach the server in no fixed
   order. Their lines on the terminal are labelled with their descriptions.
3. The tests have ended: the next request carries a <task-notification>, and the
   model reads the output file.
4. The answer quotes the tests' summary and what the subagents returned.

In plan mode (`--permission-mode plan`) the test run is refused: the model does not
wait for it, reads no output, and says that the tests did not run.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from .scenarios import outcomes, results_of, unittest_summary, why_not
from .server import reply, routed, tool_use

SETTINGS = {"permissions": {"allow": ["Bash(python3 -m unittest:*)"]}}
TESTS = "sleep 1; python3 -m unittest 2>&1 | tail -n 3"  # slow: run in the background
OUTPUT = ".tool-results/bash_1.output"  # where its output goes (the call says so)

CHECK_TOTAL = ("Read inventory.py and tell me in one sentence whether total_value "
               "computes what its docstring promises.")
CHECK_REPORT = ("Read report.py and inventory.py's report() and tell me in one sentence "
                "what the low-stock lines say.")


def setup(workdir) -> None:
    (workdir / ".claude").mkdir(exist_ok=True)
    (workdir / ".claude" / "settings.json").write_text(json.dumps(SETTINGS, indent=2))


def the_tests_started(request: dict) -> bool:
    """Did the background test run start (plan mode, for one, refuses it)?"""
    return outcomes(request, "run_shell", command=TESTS)[-1][0]


def when_the_tests_end(then: dict, instead):
    """A turn that first waits until the background tests have written their summary
    (if they never started, `instead(request)` at once).
    subtle: a real model's pace varies; the scripted one waits here, before the
    subagents' second of work, so that the <task-notification> comes with the same
    request on every run and the transcript stays the same."""
    def turn(request: dict) -> dict:
        if not the_tests_started(request):
            return instead(request)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not re.search(
                r"^(OK|FAILED)", Path(OUTPUT).read_text() if Path(OUTPUT).is_file()
                else "", re.MULTILINE):
            time.sleep(0.05)
        return then
    return turn


def what_the_tests_said(request: dict) -> str:
    """The unittest summary in the output file, as read_file showed it; or why the
    tests did not run."""
    started, result = outcomes(request, "run_shell", command=TESTS)[-1]
    if not started:
        return f"I could not run the tests ({why_not(result)})"
    shown = " ".join(results_of(request, "read_file", file_path=OUTPUT))
    summary = unittest_summary([re.sub(r"^ *\d+\t", "", shown, flags=re.MULTILINE)])
    return "Tests: " + (summary or "(no unittest summary found)")


def answer(request: dict) -> dict:
    """The tour, the tests and what the subagents found."""
    return reply(
        "Tour: stockroom keeps stock in stock.json; inventory.py computes values, "
        f"report.py prints the morning report. {what_the_tests_said(request)}. The subagents "
        "found: (1) " + " (2) ".join(subagent_answers(request)) + " I changed nothing.")


def read_the_output(request: dict) -> dict:
    """The tests' output file, once they have ended; no tests, no output: the answer."""
    if not the_tests_started(request):
        return answer(request)
    return reply("The tests have finished; I'll read their output.",
                 tool_use("read_file", {"file_path": OUTPUT}))


def subagent_answers(request: dict) -> list[str]:
    """The subagents' final answers: the results of the agent calls."""
    return results_of(request, "agent")


def scenario() -> dict:
    """The scenario, made afresh for each run: its routed turns are used up as they
    are played (a second demo in the same process needs its own)."""
    fresh = {"subagent_type": "general-purpose"}
    checks = (tool_use("agent", {"description": "check total_value", "prompt": CHECK_TOTAL,
                                 **fresh}),
              tool_use("agent", {"description": "check report", "prompt": CHECK_REPORT,
                                 **fresh}))
    return {
        "title": "parallel batches, early start, subagents, background tests",
        "setup": setup,
        "prompts": [("Give me a quick tour of this project, run its tests, and check the "
                     "two functions that compute money. Be quick: do things in parallel.")],
        "turns": [
            # Streamed slowly: watch the first three calls start before the reply ends.
            reply("I'll look at the layout, the functions and the sizes at once, start "
                  "the tests in the background (they are slow), then read the README.",
                  tool_use("list_files", {"pattern": "**/*"}),
                  tool_use("grep_search", {"pattern": r"^def ", "include": "*.py"}),
                  tool_use("run_shell", {"command": "sleep 1; wc -l *.py"}),
                  tool_use("run_shell", {"command": TESTS, "run_in_background": True}),
                  tool_use("read_file", {"file_path": "README.md", "limit": 5}),
                  event_delay=0.04),
            when_the_tests_end(
                reply("While the tests run: two independent checks, one subagent each.",
                      *checks),
                lambda request: reply(
                    "The tests did not start (" + why_not(outcomes(
                        request, "run_shell", command=TESTS)[-1][1]) + "). Meanwhile, "
                    "two independent checks, one subagent each.", *checks)),
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
            read_the_output,
            answer,  # (not asked for when the tests never started)
        ],
    }


SCENARIO = scenario
