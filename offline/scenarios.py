"""The scripted model of each chapter's offline demo.

A scenario is the user's prompts plus the assistant turns the scripted server plays,
in order, across all prompts. The tools really run on a copy of the sample project
(see sample_project/), so what the demo prints is what the code did. A turn may be a
function of the request: it reads the conversation so far (the tool_results, and so
what the user answered when the agent asked) and answers accordingly, the way a real
model would. So what a demo's model says it did is what the tool_results say happened,
in every permission mode and with every answer: a refused edit is reported as refused
(tests/test_demo_truthful.py runs each demo each way and checks its words against the
files on disk). `story()` lets a step be passed over (no bracket to close after an edit
that was refused) without moving the turns after it.

Optional keys: `setup(workdir)` prepares the copy, `env` sets variables for the demo's
run, `asks` says what the demo asks the learner (shown in the banner).
"""

from __future__ import annotations

import os
import threading
from collections import deque

from .server import error, reply, tool_use


def text_of(block: dict) -> str:
    """The text of a tool_result block."""
    content = block.get("content", "")
    if isinstance(content, list):
        content = "".join(c.get("text", "") for c in content)
    return content


def tool_results(message: dict) -> list[str]:
    """The texts of the tool_results in one user message."""
    content = message["content"] if isinstance(message["content"], list) else []
    return [text_of(b) for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]


def answered(request: dict) -> list[tuple[dict, dict]]:
    """Every answered tool call of the conversation, in order: (tool_use, tool_result)."""
    uses, done = {}, []
    for message in request["messages"]:
        for block in message["content"] if isinstance(message["content"], list) else []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use":
                uses[block["id"]] = block
            elif block.get("type") == "tool_result" and block["tool_use_id"] in uses:
                done.append((uses[block["tool_use_id"]], block))
    return done


def calls(request: dict) -> list[tuple[dict, str]]:
    """Every answered tool call of the conversation, in order: (tool_use, result text)."""
    return [(use, text_of(result)) for use, result in answered(request)]


def outcomes(request: dict, name: str, **fields) -> list[tuple[bool, str]]:
    """(did it succeed, its result text) for each call of tool `name` whose input has
    these fields, in order: a call succeeded when its tool_result is no error, so a
    refused call, a blocked one and a failed one did not."""
    return [(not result.get("is_error", False), text_of(result))
            for use, result in answered(request) if use["name"] == name
            and all(use["input"].get(k) == v for k, v in fields.items())]


def results_of(request: dict, name: str, **fields) -> list[str]:
    """The results of the calls of tool `name` whose input has these fields, in order."""
    return [text for use, text in calls(request) if use["name"] == name
            and all(use["input"].get(k) == v for k, v in fields.items())]


def refused(result: str) -> bool:
    """Did the permission gate refuse this call (it was not run)?"""
    return result.startswith("Permission denied")


def nobody_answered(result: str) -> bool:
    """Was it refused because no one could answer (stdin is not a terminal)?"""
    return "no one can answer" in result or "no one could answer" in result


def unittest_summary(texts: list[str]) -> str:
    """The closing lines of a unittest run found in `texts`, or ''."""
    lines = [ln for text in texts for ln in text.splitlines()
             if ln.startswith(("Ran ", "OK", "FAILED"))]
    return " / ".join(lines)


def first_line(result: str, starting: str) -> str:
    """The first line of a tool_result that starts with `starting`, or ''."""
    return next((ln for ln in result.splitlines() if ln.startswith(starting)), "")


def why_not(result: str) -> str:
    """How the model words why a call did not run or failed, from its tool_result."""
    if nobody_answered(result):
        return "no one was at the terminal to approve it"
    if "the user said no" in result:
        return "you said no"
    if "Why: plan mode" in result:
        return "plan mode lets only read-only calls run"
    if "Why: deny rule" in result:
        return "a deny rule forbids it"
    if result.startswith("Blocked by a PreToolUse hook"):
        return "a project hook blocked it"
    if refused(result):
        return "it was not approved"
    return result.strip().splitlines()[0].removeprefix("Error: ").rstrip(".") \
        if result.strip() else "it failed"


def what_tests_said(request: dict, command: str) -> str:
    """The tests' summary, or why they did not run: the last run of `command`."""
    runs = outcomes(request, "run_shell", command=command)
    if not runs:
        return "I did not run the tests"
    if refused(runs[-1][1]):
        return f"I could not run the tests ({why_not(runs[-1][1])})"
    return "Tests: " + (unittest_summary([runs[-1][1]]) or "(no unittest summary found)")


def story(*steps) -> list:
    """Turns in which a step may be passed over. A step is a turn, or a pair
    (condition, turn): played only when condition(request) holds for the request it
    would answer, else skipped for the next step. Returns one turn per step, all
    taking from one queue, so that a skipped step does not shift the turns of the
    prompts after it (the turns left over at the end are never asked for)."""
    queue, lock = deque(steps), threading.Lock()

    def turn(request: dict) -> dict:
        with lock:
            while queue:
                step = queue.popleft()
                if isinstance(step, tuple):
                    condition, step = step
                    if not condition(request):
                        continue
                break
            else:
                return error(400, "invalid_request_error", "scripted server: the "
                             "story has no more steps")
        return step(request) if callable(step) else step

    return [turn] * len(steps)


# --- s01: the loop, with one shell tool -----------------------------------------

def unittest_summary_from(request: dict) -> str:
    """Find the unittest summary in any earlier tool_result of the conversation."""
    for message in reversed(request["messages"]):
        summary = unittest_summary(tool_results(message)) if message["role"] == "user" else ""
        if summary:
            return summary
    return "(no unittest summary found)"


def s01_answer(request: dict) -> str:
    """What the project is, what its tests said (pass or not, as they said it), and
    what grep showed."""
    summary = unittest_summary_from(request)
    verdict = ("The tests pass" if summary.endswith("OK") else
               "The tests do not pass" if "FAILED" in summary else "I found no test summary")
    return ("This is *stockroom*, a tiny stock keeper (inventory.py, report.py, "
            f"stock.json). {verdict}: {summary}. Both `catalog_price` and `total_value` "
            "add `item[\"price\"]` only, so `total_value` forgets the quantity; and the "
            "report does not say how many units are left. I only looked; nothing was "
            "changed.")


S01 = {
    "title": "the agent loop with one tool, run_shell",
    "prompts": ["What is this project, and do its tests pass?"],
    "turns": [
        reply("Let me look around first.",
              tool_use("run_shell", {"command": "ls"}),
              tool_use("run_shell", {"command": "head -n 8 README.md"})),
        reply(tool_use("run_shell", {"command": "python3 -m unittest 2>&1 | tail -n 12"})),
        reply(tool_use("run_shell", {"command": "grep -n 'total +=' inventory.py"})),
        lambda request: reply(s01_answer(request)),
    ],
}


# --- s02: file tools, edit safeguards --------------------------------------------

FIX_CONTEXT = (
    '    """Sum of price times quantity: what the whole stock is worth."""\n'
    '    total = 0\n'
    '    for item in items:\n'
    '        total += item["price"]'
)

QTY = ' * item["qty"]'
LOW_STOCK = "lines.append(f\"Running low on \"{item['name']}\"\")"
LOW_STOCK_FIXED = "lines.append(f\"Running low on \"{item['name']}\" ({item['qty']} left)\")"


def s02_answer(request: dict) -> str:
    """What was fixed, as the edits' results say, and what the tests said."""
    edits = {"total_value": outcomes(request, "edit_file", new_string=FIX_CONTEXT + QTY),
             "the low-stock line": outcomes(request, "edit_file", new_string=LOW_STOCK_FIXED)}
    failed = [f"{what} ({why_not(runs[-1][1]) if runs else 'not tried'})"
              for what, runs in edits.items() if not (runs and runs[-1][0])]
    said = ("Fixed both in inventory.py: `total_value` now multiplies by the quantity, and "
            "the low-stock line says how many are left (the file's curly quotes were kept)."
            if not failed else "I could not fix everything; not fixed: " + "; ".join(failed)
            + ".")
    return said + " " + what_tests_said(request, "python3 -m unittest 2>&1 | tail -n 3") + "."


S02 = {
    "title": "file tools: read, grep, edit (ambiguous match, curly quotes), verify",
    "prompts": ["The stock value in the report is far too low, and the low-stock lines "
                "should say how many are left. Please fix both."],
    "turns": [
        reply("I'll find the code first.",
              tool_use("list_files", {"pattern": "**/*.py"}),
              tool_use("grep_search", {"pattern": r'item\["price"\]', "include": "*.py"})),
        reply(tool_use("read_file", {"file_path": "inventory.py"})),
        reply("`total_value` adds the unit price without the quantity.",
              tool_use("edit_file", {"file_path": "inventory.py",
                                     "old_string": '        total += item["price"]',
                                     "new_string": '        total += item["price"] * item["qty"]'})),
        reply("That line is in both functions; I'll include the docstring to pick the right one.",
              tool_use("edit_file", {"file_path": "inventory.py",
                                     "old_string": FIX_CONTEXT,
                                     "new_string": FIX_CONTEXT + ' * item["qty"]'})),
        # The file uses curly quotes around the name; the model types straight ones.
        reply(tool_use("edit_file", {"file_path": "inventory.py",
                                     "old_string": LOW_STOCK, "new_string": LOW_STOCK_FIXED})),
        reply(tool_use("run_shell", {"command": "python3 -m unittest 2>&1 | tail -n 3"}),
              tool_use("run_shell", {"command": "python3 report.py"})),
        lambda request: reply(s02_answer(request)),
    ],
}


# --- s03: the permission gate --------------------------------------------------
# The demo asks the learner (in a terminal) before the report runs, before build/ is
# removed and, if they said no to that, before the dangerous way of emptying it. Each
# turn after a question reads the answer in its tool_result and goes on from there.

S03_SETTINGS = {"permissions": {
    "defaultMode": "acceptEdits",                 # file edits in the workspace run
    "allow": ["Bash(python3 -m unittest *)"],     # the tests may run without asking
    "deny": ["Read(./.env)"],                     # secrets stay secret
}}
REPORT = "python3 report.py"               # runs code: asks, and "always" remembers it
REMOVE_BUILD = "ls build; rm -rf build"     # `ls` alone would run; the `rm` must ask
EMPTY_BUILD = 'rm -rf "$BUILD_DIR"/*'       # unset, that is `rm -rf /*`: dangerous
TESTS = "python3 -m unittest 2>&1 | tail -n 3"  # an allow rule lets it run unasked
# subtle: the demo sets BUILD_DIR=build (the scenario's "env"), so a learner who
# answers yes to the dangerous command empties build/ and nothing else.


def s03_setup(workdir) -> None:
    """Project settings, an old build folder and a secret, in the demo's copy."""
    import json
    (workdir / ".claude").mkdir(exist_ok=True)
    (workdir / ".claude" / "settings.json").write_text(json.dumps(S03_SETTINGS, indent=2))
    (workdir / "build").mkdir(exist_ok=True)
    (workdir / "build" / "report-old.txt").write_text("Stock value: 7.00\n")
    (workdir / ".env").write_text("SHOP_API_TOKEN=not-a-real-token\n")


def s03_after_the_report(request: dict) -> dict:
    ran, result = outcomes(request, "run_shell", command=REPORT)[-1]
    said = (f"The report says \"{first_line(result, 'Stock value')}\": too low."
            if ran else f"I'll do without the report ({why_not(result)}).")
    return reply(said + " Next, the old build folder.",
                 tool_use("run_shell", {"command": REMOVE_BUILD}))


def s03_after_removing(request: dict) -> dict:
    removed, result = outcomes(request, "run_shell", command=REMOVE_BUILD)[-1]
    edit = tool_use("edit_file", {"file_path": "inventory.py", "old_string": FIX_CONTEXT,
                                  "new_string": FIX_CONTEXT + ' * item["qty"]'})
    if removed:
        return reply("build/ is gone. I'll fix total_value straight away.", edit)
    if (not refused(result) or "plan mode" in why_not(result)
            or os.environ.get("BUILD_DIR") != "build"):  # never risk the real `rm -rf /*`
        return reply(f"I'll leave build/ alone ({why_not(result)}) and fix total_value.",
                     edit)
    return reply(f"I may not remove build/ ({why_not(result)}), so I'll only empty it, "
                 "and fix total_value straight away.",
                 tool_use("run_shell", {"command": EMPTY_BUILD}), edit)


def s03_check(request: dict) -> dict:
    """Run the tests, and the report again if it was allowed to run the first time."""
    report = results_of(request, "run_shell", command=REPORT)
    again = [tool_use("run_shell", {"command": REPORT})] if not refused(report[0]) else []
    return reply(tool_use("run_shell", {"command": TESTS}), *again)


def s03_fix_said(request: dict) -> str:
    """The fix of total_value: made (after reading the file, if it had to), or not."""
    edits = outcomes(request, "edit_file", file_path="inventory.py")
    fixed, result = edits[-1]
    if not fixed:
        return (f"I did not fix `total_value`: the edit was refused ({why_not(result)}), "
                "so inventory.py is unchanged.")
    read_first = any("has not been read" in text for _, text in edits)
    return ("Fixed `total_value` in inventory.py (it now multiplies by the quantity)"
            + ("; I read the file first, as the gate required." if read_first else "."))


def s03_build_said(request: dict) -> str:
    """What became of build/: removed, emptied (a dangerous command, so asked), or not."""
    removed, result = outcomes(request, "run_shell", command=REMOVE_BUILD)[-1]
    emptied = outcomes(request, "run_shell", command=EMPTY_BUILD)
    if removed:
        return "Removed build/."
    if emptied and emptied[-1][0]:
        return ("Emptied build/: you approved `rm -rf \"$BUILD_DIR\"/*`. This demo sets "
                "BUILD_DIR=build; unset, that command is `rm -rf /*`, which is why it asked.")
    return (f"I did not clear build/ ({why_not((emptied or [(removed, result)])[-1][1])}),"
            " so it is still there.")


def s03_answer(request: dict) -> dict:
    token_read, token = outcomes(request, "read_file", file_path=".env")[-1]
    token = ("I read .env: the token is there." if token_read else
             "I could not check the token: a deny rule keeps .env from me."
             if "deny rule" in why_not(token) else
             f"I could not check the token ({why_not(token)}).")
    tests = what_tests_said(request, TESTS)
    fixed = outcomes(request, "edit_file", file_path="inventory.py")[-1][0]
    if "FAILED" in tests:
        tests += (" (the low-stock line is a separate fix)" if fixed else
                  " (total_value is not fixed, and the low-stock line is a separate fix)")
    reports = outcomes(request, "run_shell", command=REPORT)
    report = (f" The report now says \"{first_line(reports[-1][1], 'Stock value')}\"."
              if len(reports) > 1 and reports[-1][0] else "")
    return reply(f"{s03_fix_said(request)} {s03_build_said(request)} {token} {tests}."
                 + report)


S03 = {
    "title": "the permission gate: read-only runs, a compound command asks, danger is caught",
    "setup": s03_setup,
    "env": {"BUILD_DIR": "build"},
    "asks": "before a command that is not read-only runs: answer y, n or a (always)",
    "prompts": ["Fix the stock value, clear out the old build folder, check the shop "
                "token is configured, and run the tests."],
    "turns": [
        reply("Let me look around first.",
              tool_use("run_shell", {"command": "ls -a && ls build"}),
              tool_use("run_shell", {"command": "grep -n 'total +=' inventory.py"})),
        reply("And what the report shows now.", tool_use("run_shell", {"command": REPORT})),
        s03_after_the_report,
        s03_after_removing,
        # the edit of an unread file was refused: read it, then edit again
        reply(tool_use("read_file", {"file_path": "inventory.py"})),
        reply(tool_use("edit_file", {"file_path": "inventory.py",
                                     "old_string": FIX_CONTEXT,
                                     "new_string": FIX_CONTEXT + ' * item["qty"]'})),
        reply(tool_use("read_file", {"file_path": ".env"})),
        s03_check,
        s03_answer,
    ],
}

SCENARIOS = {"s01": S01, "s02": S02, "s03": S03}
