"""The scripted model of each chapter's offline demo.

A scenario is the user's prompts plus the assistant turns the scripted server plays,
in order, across all prompts. The tools really run on a copy of the sample project
(see sample_project/), so what the demo prints is what the code did. A turn may be a
function of the request, to quote a real tool_result back in the final answer.
"""

from __future__ import annotations

from .server import reply, tool_use


def tool_results(message: dict) -> list[str]:
    """The texts of the tool_results in one user message."""
    texts = []
    for block in message["content"] if isinstance(message["content"], list) else []:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            content = block.get("content", "")
            if isinstance(content, list):
                content = "".join(c.get("text", "") for c in content)
            texts.append(content)
    return texts


def unittest_summary(texts: list[str]) -> str:
    """The closing lines of a unittest run found in `texts`, or ''."""
    lines = [ln for text in texts for ln in text.splitlines()
             if ln.startswith(("Ran ", "OK", "FAILED"))]
    return " / ".join(lines)


# --- s01: the loop, with one shell tool -----------------------------------------

S01 = {
    "title": "the agent loop with one tool, run_shell",
    "prompts": ["What is this project, and do its tests pass?"],
    "turns": [
        reply("Let me look around first.",
              tool_use("run_shell", {"command": "ls"}),
              tool_use("run_shell", {"command": "head -n 8 README.md"})),
        reply(tool_use("run_shell", {"command": "python3 -m unittest 2>&1 | tail -n 12"})),
        reply(tool_use("run_shell", {"command": "grep -n 'total +=' inventory.py"})),
        lambda request: reply(
            "This is *stockroom*, a tiny stock keeper (inventory.py, report.py, "
            "stock.json). The tests do not pass: " + unittest_summary_from(request) +
            ". Both `catalog_price` and `total_value` add `item[\"price\"]` only, so "
            "`total_value` forgets the quantity; and the report does not say how many "
            "units are left. I only looked; nothing was changed."),
    ],
}


def unittest_summary_from(request: dict) -> str:
    """Find the unittest summary in any earlier tool_result of the conversation."""
    for message in reversed(request["messages"]):
        summary = unittest_summary(tool_results(message)) if message["role"] == "user" else ""
        if summary:
            return summary
    return "(no unittest summary found)"


# --- s02: file tools, edit safeguards --------------------------------------------

FIX_CONTEXT = (
    '    """Sum of price times quantity: what the whole stock is worth."""\n'
    '    total = 0\n'
    '    for item in items:\n'
    '        total += item["price"]'
)

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
        reply(tool_use("edit_file", {
            "file_path": "inventory.py",
            "old_string": "lines.append(f\"Running low on \"{item['name']}\"\")",
            "new_string": "lines.append(f\"Running low on \"{item['name']}\" ({item['qty']} left)\")"})),
        reply(tool_use("run_shell", {"command": "python3 -m unittest 2>&1 | tail -n 3"}),
              tool_use("run_shell", {"command": "python3 report.py"})),
        lambda request: reply(
            "Fixed both in inventory.py: `total_value` now multiplies by the quantity, and "
            "the low-stock line says how many are left (the file's curly quotes were kept). "
            "Tests: " + unittest_summary_from(request) + "."),
    ],
}


# --- s03: the permission gate --------------------------------------------------

S03_SETTINGS = {"permissions": {
    "defaultMode": "acceptEdits",                 # file edits in the workspace run
    "allow": ["Bash(python3 -m unittest *)"],     # the tests may run without asking
    "deny": ["Read(./.env)"],                     # secrets stay secret
}}


def s03_setup(workdir) -> None:
    """Project settings, an old build folder and a secret, in the demo's copy."""
    import json
    (workdir / ".claude").mkdir(exist_ok=True)
    (workdir / ".claude" / "settings.json").write_text(json.dumps(S03_SETTINGS, indent=2))
    (workdir / "build").mkdir(exist_ok=True)
    (workdir / "build" / "report-old.txt").write_text("Stock value: 7.00\n")
    (workdir / ".env").write_text("SHOP_API_TOKEN=not-a-real-token\n")


S03 = {
    "title": "the permission gate: read-only runs, a compound command asks, danger is caught",
    "setup": s03_setup,
    "prompts": ["Fix the stock value, clear out the old build folder, check the shop "
                "token is configured, and run the tests."],
    "turns": [
        reply("Let me look around first.",
              tool_use("run_shell", {"command": "ls -a && ls build"}),
              tool_use("run_shell", {"command": "grep -n 'total +=' inventory.py"})),
        # `ls` alone would run unasked; `; rm -rf build` rides along and must ask.
        reply(tool_use("run_shell", {"command": "ls build; rm -rf build"})),
        reply("I'll fix total_value straight away.",
              tool_use("edit_file", {"file_path": "inventory.py",
                                     "old_string": FIX_CONTEXT,
                                     "new_string": FIX_CONTEXT + ' * item["qty"]'})),
        reply(tool_use("read_file", {"file_path": "inventory.py"})),
        reply(tool_use("edit_file", {"file_path": "inventory.py",
                                     "old_string": FIX_CONTEXT,
                                     "new_string": FIX_CONTEXT + ' * item["qty"]'})),
        # A classic: an unset variable turns this into `rm -rf /*`.
        reply("I'll empty the build folder another way.",
              tool_use("run_shell", {"command": 'rm -rf "$BUILD_DIR"/*'})),
        reply(tool_use("read_file", {"file_path": ".env"})),
        reply(tool_use("run_shell", {"command": "python3 -m unittest 2>&1 | tail -n 3"}),
              tool_use("run_shell", {"command": "ls build"})),
        lambda request: reply(
            "Fixed `total_value` in inventory.py (it now multiplies by the quantity); I read "
            "the file first, as the gate required. I did not clear build/: removing it needs "
            "your approval, and no one was at the terminal to give it, so it is still there. "
            "I could not check the token: a deny rule keeps .env from me. Tests: "
            + unittest_summary_from(request) + " (the low-stock line is a separate fix)."),
    ],
}

SCENARIOS = {"s01": S01, "s02": S02, "s03": S03}
