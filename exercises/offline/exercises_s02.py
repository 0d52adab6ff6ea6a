"""The offline scenarios of s02's exercises: `python exercises/s02/exK.py --offline`.

Each one is short and uses what its exercise adds; a starter plays it too, and shows
what is still missing (an unknown tool, a refused field, `Not done yet`).
"""

from __future__ import annotations

from .scenarios import calls, unittest_summary_from
from .server import reply, tool_use


def ex1_setup(workdir) -> None:
    (workdir / "docs").mkdir()
    (workdir / "docs" / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4)
    (workdir / "docs" / "notes.md").write_text("# Notes\n\nStock is counted on Mondays.\n")


def errors(request: dict, name: str) -> list[str]:
    """The first lines of the error results of the calls of tool `name`."""
    return [text.splitlines()[0] for use, text in calls(request)
            if use["name"] == name and text.startswith("Error")]


def ex1_answer(request: dict) -> dict:
    infos = [text.splitlines()[0] for use, text in calls(request) if use["name"] == "file_info"]
    if len(errors(request, "file_info")) == len(infos):
        return reply(f"file_info did not work: {infos[0]}")
    return reply("What I found, without reading anything whole:\n"
                 + "\n".join(f"- {info[:100]}" for info in infos))


EX1 = {
    "title": "exercise 1: file_info, a tool of your own",
    "setup": ex1_setup,
    "prompts": ["What is in this project? Don't read the files, just tell me what they are."],
    "turns": [
        reply("file_info tells me what each one is without reading it.",
              tool_use("file_info", {"file_path": "."}),
              tool_use("file_info", {"file_path": "inventory.py"}),
              tool_use("file_info", {"file_path": "./docs/logo.png"}),
              tool_use("file_info", {"file_path": "docs"}),
              tool_use("file_info", {"file_path": "CHANGELOG.md"}),
              tool_use("file_info", {"file_path": "../outside.txt"})),
        ex1_answer,
    ],
}


def rename(old: str, count: int) -> dict:
    return tool_use("edit_file", {"file_path": "inventory.py", "old_string": old,
                                  "new_string": old.replace("total", "subtotal"),
                                  "expected_replacements": count})


EX2 = {
    "title": "exercise 2: edit_file with expected_replacements",
    "prompts": ["Both money functions call their running sum `total`. Rename it to "
                "`subtotal` in both, and nowhere else."],
    "turns": [
        reply(tool_use("read_file", {"file_path": "inventory.py"})),
        reply("`total = 0` starts both sums, and the report has one more, I think: 3.",
              rename("total = 0", 3)),
        reply("Only 2: the report has none. Again, saying 2.", rename("total = 0", 2)),
        reply(rename('total += item["price"]', 2), rename("return total", 2)),
        reply(tool_use("run_shell", {"command": "python3 -m unittest 2>&1 | tail -n 3"})),
        lambda request: reply(
            f"The renames were refused: {errors(request, 'edit_file')[-1]}"
            if len(errors(request, "edit_file")) > 1 else
            "Renamed `total` to `subtotal` in catalog_price and total_value, two matches "
            "each time, as I said. Tests: " + unittest_summary_from(request) + " (as before)."),
    ],
}


def edit(old: str, new: str) -> dict:
    return {"old_string": old, "new_string": new}


EX3 = {
    "title": "exercise 3: multi_edit, all or nothing",
    "prompts": ["Rename total_value to stock_value, in inventory.py and in its tests."],
    "turns": [
        reply(tool_use("read_file", {"file_path": "inventory.py"}),
              tool_use("read_file", {"file_path": "test_inventory.py"})),
        # the second edit has a typo: nothing is applied, not even the first
        reply("Two places in inventory.py, in one call.",
              tool_use("multi_edit", {"file_path": "inventory.py", "edits": [
                  edit("def total_value(items):", "def stock_value(items):"),
                  edit("{total_value(item):.2f}", "{stock_value(items):.2f}")]})),
        reply("My second edit had a typo, and the file is untouched. Again.",
              tool_use("multi_edit", {"file_path": "inventory.py", "edits": [
                  edit("def total_value(items):", "def stock_value(items):"),
                  edit("{total_value(items):.2f}", "{stock_value(items):.2f}")]})),
        reply(tool_use("multi_edit", {"file_path": "test_inventory.py", "edits": [
            edit("low_stock, report, total_value", "low_stock, report, stock_value"),
            edit("assertEqual(total_value(", "assertEqual(stock_value(")]})),
        reply(tool_use("run_shell", {"command": "python3 -m unittest 2>&1 | tail -n 3"})),
        lambda request: reply(
            f"multi_edit did not work: {errors(request, 'multi_edit')[-1]}"
            if len(errors(request, "multi_edit")) > 1 else
            "Renamed in both files, each file in one all-or-nothing call. Tests: "
            + unittest_summary_from(request) + "."),
    ],
}

SCENARIOS = {"ex1": EX1, "ex2": EX2, "ex3": EX3}
