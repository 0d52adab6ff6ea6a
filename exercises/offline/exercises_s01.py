"""The offline scenarios of s01's exercises: `python exercises/s01/exK.py --offline`.

Each one is short and uses what its exercise adds; a starter plays it too, and shows
what is still missing (a `NotImplementedError` line, or the chapter's behaviour).
"""

from __future__ import annotations

from .scenarios import unittest_summary_from
from .server import reply, tool_use


def costing(turn: dict, input_tokens: int) -> dict:
    """A turn whose usage reports `input_tokens`, as a live API's would."""
    return dict(turn, input_tokens=input_tokens)


EX1 = {
    "title": "exercise 1: a [tokens] line after every model call",
    "note": ("The scripted server reports made-up input token counts that grow turn by "
             "turn, as a live API's do: the whole conversation is sent again each time."),
    "prompts": ["How big is this project? Count the lines of each Python file."],
    "turns": [
        costing(reply("I'll list the files first.", tool_use("run_shell", {"command": "ls"})),
                1_184),
        costing(reply(tool_use("run_shell", {"command": "wc -l *.py"})), 1_391),
        costing(reply("Three Python files: inventory.py holds the logic, report.py "
                      "prints it, test_inventory.py tests it; wc counted their lines above."),
                1_702),
    ],
}

# Long replies cost output tokens: a budget of 150 stops this task at its second reply.
THINKING = ("I want to be sure before I answer, so I will look at every part of the "
            "project in turn: the files, then the code that computes the money, then the "
            "tests, and only then will I say what I think.")

EX2 = {
    "title": "exercise 2: a token budget (--token-budget N)",
    "note": ("Run it with --token-budget 150 to watch the budget stop this task at its "
             "second reply, with a tool_result for every call it did not run."),
    "prompts": ["Look the whole project over and tell me what you think of it."],
    "turns": [
        reply(THINKING, tool_use("run_shell", {"command": "ls"})),
        reply(THINKING.replace("I want", "Still, I want"),
              tool_use("run_shell", {"command": "cat inventory.py"}),
              tool_use("run_shell", {"command": "cat test_inventory.py"})),
        reply(tool_use("run_shell", {"command": "python3 -m unittest 2>&1 | tail -n 3"})),
        lambda request: reply("A small, readable project; its tests say: "
                              + unittest_summary_from(request) + "."),
    ],
}

TESTS = {"command": "python3 -m unittest 2>&1 | tail -n 1"}

EX3 = {
    "title": "exercise 3: stop a model that repeats itself",
    "note": ("The scripted model runs the same test command again and again, hoping it "
             "passes. With MAX_REPEATS = 3 your loop stops it at the third run."),
    "prompts": ["The tests fail now and then. Run them until they pass."],
    "turns": [
        reply(tool_use("run_shell", {"command": "ls"})),
        reply("Let's see.", tool_use("run_shell", TESTS)),
        reply("Again.", tool_use("run_shell", TESTS)),
        reply("Once more; it may be flaky.", tool_use("run_shell", TESTS)),
        reply("And again.", tool_use("run_shell", TESTS)),
        reply("They fail every time: this is a real failure, not a flaky test."),
    ],
}

SCENARIOS = {"ex1": EX1, "ex2": EX2, "ex3": EX3}
