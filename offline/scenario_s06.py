"""s06's offline demo: parallel batches, streaming early start, a command in the
background, a task list that a fork and a background agent work on.

The setup writes a .claude/settings.json that allows the test run, so the one unsafe
call of the story runs instead of being denied (the demo has no terminal to ask).

1. A slowly streamed reply with five calls. The three safe ones at its head start
   while the model is still writing; the slow test run (not read-only, so unsafe)
   waits for the end of the reply, alone, and starts in the background: its call
   returns at once with a task id and an output file; the read after it waits for it.
2. While the tests run, the model writes a plan of two checks on the task list, and
   hands them out in one reply: a fork of itself takes #1 (it has seen the files
   already: its first request repeats the main agent's, and its usage line shows
   that prompt read from the cache), a general-purpose agent in the background
   takes #2. Each claims its task (task_update in_progress: it becomes the owner)
   and completes it. Their turns are routed (offline.server.by_agent: a fork by its
   directive), since they reach the server in no fixed order; their lines on the
   terminal are labelled with their descriptions.
3. The fork answers the agent call; the background agent's answer comes later, as
   a <task-notification>, as do the tests'; the model lists the tasks and reads the
   tests' output file.
4. The answer quotes the tests' summary, both agents' answers and the task list.

In plan mode (`--permission-mode plan`) the test run is refused: the model does not
wait for it, reads no output, and says that the tests did not run.
"""

from __future__ import annotations

import glob
import json
import os
import re
import subprocess
import threading
import time
from pathlib import Path

from .scenarios import outcomes, results_of, unittest_summary, why_not
from .server import by_agent, reply, routed, tool_use

SETTINGS = {"permissions": {"allow": ["Bash(python3 -m unittest:*)"]}}
TESTS = "sleep 1; python3 -m unittest 2>&1 | tail -n 3"  # slow: run in the background
OUTPUT = ".tool-results/bash_1.output"  # where its output goes (the call says so)

PROMPT = ("Give me a quick tour of this project, run its tests, and check the "
          "two functions that compute money. Be quick: do things in parallel.")
CHECK_TOTAL = ("Take task 1: say in one sentence whether total_value computes what "
               "its docstring promises.")
CHECK_REPORT = ("Take task 2: say in one sentence what the low-stock lines of "
                "inventory.py's report() say.")
TASKS = (("Check total_value", "Does it compute what its docstring promises?"),
         ("Check the low-stock report", "What do the low-stock lines say?"))
REPORT_DONE = threading.Event()  # the background agent was given its last turn


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
        until(lambda: re.search(r"^(OK|FAILED)", Path(OUTPUT).read_text()
                                if Path(OUTPUT).is_file() else "", re.MULTILINE)
              and not held_open(Path(OUTPUT)))
        return then
    return turn


def until(condition, guard: float = 60) -> None:
    """Wait until condition() holds (the guard: against a hang, not a pace)."""
    deadline = time.monotonic() + guard
    while time.monotonic() < deadline and not condition():
        time.sleep(0.02)


def held_open(path: Path) -> bool:
    """Does a process still hold the file open? The command writing it, or the agent,
    which closes it once it has recorded how the command ended (background.py): the
    tests have ended for the agent too, and its next request tells the model.
    Linux reads /proc; elsewhere lsof answers."""
    target = os.path.realpath(path)
    if not os.path.isdir("/proc/self/fd"):
        return subprocess.run(["lsof", "-t", "--", target], capture_output=True,
                              check=False).returncode == 0
    for fd in glob.glob("/proc/[0-9]*/fd/*"):
        try:
            if os.readlink(fd) == target:
                return True
        except OSError:  # a process or a descriptor gone meanwhile
            continue
    return False


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
    """The tour, the tests, what the agents found and the task list, as it was."""
    tasks = results_of(request, "task_list")
    return reply(
        "Tour: stockroom keeps stock in stock.json; inventory.py computes values, "
        f"report.py prints the morning report. {what_the_tests_said(request)}. The agents "
        "found: (1) " + " (2) ".join(subagent_answers(request)) + " The task list: "
        + (tasks[-1].replace("\n", "; ") if tasks else "(not read)")
        + ". I changed nothing.")


def read_the_output(request: dict) -> dict:
    """The tests' output file, once they have ended; no tests, no output: the answer."""
    if not the_tests_started(request):
        return answer(request)
    return reply("The tests have finished; I'll read their output.",
                 tool_use("read_file", {"file_path": OUTPUT}))


def subagent_answers(request: dict) -> list[str]:
    """The agents' final answers: a synchronous one's is its call's result, one in
    the background's the <result> of its notification."""
    found = [r for r in results_of(request, "agent")
             if not r.startswith("Agent running in background")]
    told = [b.get("text", "") for m in request["messages"] if m["role"] == "user"
            and isinstance(m["content"], list) for b in m["content"]]
    return found + [m[1] for t in told if (m := re.search(
        r"<result>(.*)</result>", t, re.DOTALL))] or ["(no agent answered)"]


def after_the_report(request: dict) -> dict:
    """The fork is back: once the background agent has had its last turn, the task
    list (subtle: the wait, as when_the_tests_end's, keeps the transcript the same
    on every run: the notification comes with the next request)."""
    REPORT_DONE.wait(60)
    until(lambda: not any(t.name.startswith("background agent_")  # its thread records
                          for t in threading.enumerate()))  # its answer, then ends
    return reply("The fork is back; the report check ran in the background.",
                 tool_use("task_list", {}))


def tasks_and_output(request: dict) -> dict:
    """After the task list: the tests' output (or the answer, if none)."""
    return read_the_output(request)


def last_turn_of_the_report(turn: dict):
    def it(request: dict) -> dict:
        REPORT_DONE.set()
        return turn
    return it


def scenario() -> dict:
    """The scenario, made afresh for each run: its routed turns are used up as they
    are played (a second demo in the same process needs its own)."""
    REPORT_DONE.clear()
    plan = [tool_use("task_create", {"subject": subject, "description": description})
            for subject, description in TASKS]
    checks = (tool_use("agent", {"description": "check total_value",
                                 "prompt": CHECK_TOTAL}),  # no subagent_type: a fork
              tool_use("agent", {"description": "check report", "prompt": CHECK_REPORT,
                                 "subagent_type": "general-purpose",
                                 "run_in_background": True}))
    hand_out = reply("Two checks: a fork of me for #1 (it has seen the files), an agent "
                     "in the background for #2.", *checks)
    return {
        "title": "parallel batches, early start, background tests, a fork, a "
                 "background agent, one task list",
        "setup": setup,
        "prompts": [PROMPT],
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
                reply("While the tests run: a plan of two checks.", *plan),
                lambda request: reply(
                    "The tests did not start (" + why_not(outcomes(
                        request, "run_shell", command=TESTS)[-1][1]) + "). Meanwhile, "
                    "a plan of two checks.", *plan)),
            *routed({
                PROMPT: [hand_out, after_the_report, tasks_and_output, answer],
                CHECK_TOTAL: [
                    reply(tool_use("task_update", {"taskId": "1",
                                                   "status": "in_progress"}),
                          tool_use("grep_search", {"pattern": "total \\+=",
                                                   "path": "inventory.py"})),
                    reply(tool_use("task_update", {"taskId": "1",
                                                   "status": "completed"})),
                    reply("total_value adds item[\"price\"] only, so it ignores the "
                          "quantity its docstring promises.")],
                CHECK_REPORT: [
                    reply(tool_use("task_update", {"taskId": "2",
                                                   "status": "in_progress"}),
                          tool_use("grep_search", {"pattern": "Running low",
                                                   "path": "inventory.py"}),
                          delay=1.0),  # the fork is done first: one transcript
                    reply(tool_use("task_update", {"taskId": "2",
                                                   "status": "completed"})),
                    last_turn_of_the_report(reply(
                        "The low-stock lines name the item but not how many are "
                        "left."))],
            }, key=by_agent),
        ],
    }


SCENARIO = scenario
