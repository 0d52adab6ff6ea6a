"""The offline scenarios of s06's exercises: `python exercises/s06/exK.py --offline`.

Each one is one reply with several calls, cut into batches the way the exercise
shows or changes; a starter plays it too, and runs it as the chapter does.
"""

from __future__ import annotations

import json

from .scenarios import calls
from .server import reply, tool_use


def allow_the_tests(workdir) -> None:
    (workdir / ".claude").mkdir()
    (workdir / ".claude" / "settings.json").write_text(json.dumps(
        {"permissions": {"allow": ["Bash(python3 -m unittest:*)"]}}, indent=2) + "\n")


EX1 = {
    "title": "exercise 1: show the batches",
    "setup": allow_the_tests,
    "prompts": ["Give me a quick tour of the code, and run the tests."],
    "turns": [
        reply("Two reads at once, the tests alone (they are not read-only), then the "
              "README and the report script together.",
              tool_use("list_files", {"pattern": "*.py"}),
              tool_use("grep_search", {"pattern": r"^def ", "include": "*.py"}),
              tool_use("run_shell", {"command": "python3 -m unittest 2>&1 | tail -n 1"}),
              tool_use("read_file", {"file_path": "README.md", "limit": 3}),
              tool_use("read_file", {"file_path": "report.py"})),
        reply("Tour done: the logic is in inventory.py, report.py prints it, and the "
              "tests still fail on the stock value."),
    ],
}

CHECK = "sleep 1; date +%T"  # read-only, so safe to run side by side

EX2 = {
    "title": "exercise 2: at most two shell commands at once",
    "note": ("Four one-second commands and a read, in one reply: with a cap of two, the "
             "commands end in two waves, a second apart; the read does not wait."),
    "prompts": ["Run the four slow checks, and show me the README meanwhile."],
    "turns": [
        reply(*[tool_use("run_shell", {"command": CHECK}) for _ in range(4)],
              tool_use("read_file", {"file_path": "README.md", "limit": 2})),
        lambda request: reply(
            "The four checks ended at " + ", ".join(
                text.splitlines()[0] for use, text in calls(request)
                if use["name"] == "run_shell") + "."),
    ],
}

SLOW = "sleep 2; echo slow check done"

EX3 = {
    "title": "exercise 3: a failed command stops its siblings",
    "note": ("grep finds no TODO and exits 1 at once: with your change, the two slow "
             "commands beside it are stopped instead of running their 2 seconds."),
    "prompts": ["Check for TODOs, and run the two slow checks while you are at it."],
    "turns": [
        reply(tool_use("read_file", {"file_path": "README.md", "limit": 2}),
              tool_use("run_shell", {"command": SLOW}),
              tool_use("run_shell", {"command": "grep -n TODO inventory.py"}),
              tool_use("run_shell", {"command": SLOW.replace("check", "check 2")})),
        lambda request: reply("No TODO in inventory.py (grep exited 1). The slow checks: "
                              + "; ".join(text.splitlines()[0][:90] for use, text
                                          in calls(request) if "sleep" in
                                          use["input"].get("command", "")) + "."),
    ],
}

SCENARIOS = {"ex1": EX1, "ex2": EX2, "ex3": EX3}
