"""Checker for exercise s05 ex3 (stretch): the one file plan mode may write.

    pytest exercises/s05/test_ex3.py

It checks `is_plan_file` on its own (links included), then the gate in plan mode:
the plan file may be written and edited, every other write is still denied, deny
rules still win; then exit_plan_mode without a plan presents the plan file.
"""

import json
import os
from pathlib import Path

from exercises.conftest import the_agent
from exercises.conftest import blocks, call_tool, result_text, run_agent
from offline.server import reply, tool_use

PLAN = "# Plan\n1. Fix total_value: multiply by the quantity.\n2. Add a test.\n"


def plan_mode(mod, **permissions):
    """The plan-mode tools loaded, the mode switched to plan, settings written."""
    if permissions:
        Path(".claude").mkdir(exist_ok=True)
        Path(".claude/settings.json").write_text(json.dumps({"permissions": permissions}))
    call_tool(mod, "tool_search", query="select:enter_plan_mode,exit_plan_mode")
    output, is_error = call_tool(mod, "enter_plan_mode")
    assert not is_error, output


def test_is_plan_file(mod):
    """Writes and edits of .plan.md count; other paths and other tools do not."""
    cases = [("write_file", {"file_path": ".plan.md", "content": ""}, True),
             ("edit_file", {"file_path": "./notes/../.plan.md", "old_string": "a",
                            "new_string": "b"}, True),
             ("write_file", {"file_path": "notes/.plan.md", "content": ""}, False),
             ("write_file", {"file_path": ".plan.md.bak", "content": ""}, False),
             ("read_file", {"file_path": ".plan.md"}, False),
             ("run_shell", {"command": "echo x > .plan.md"}, False)]
    for tool, tool_input, want in cases:
        got = mod.is_plan_file(tool, tool_input)
        assert got is want, f"is_plan_file({tool!r}, {tool_input}) returned {got!r}, not {want!r}"


def test_a_link_is_not_the_plan_file(mod):
    """.plan.md as a symbolic link to app.py: writing through it is not a plan write."""
    Path("app.py").write_text("print('app')\n")
    Path(".claude").mkdir()
    os.symlink(Path("app.py").resolve(), ".plan.md")
    got = mod.is_plan_file("write_file", {"file_path": ".plan.md", "content": "x"})
    assert got is False, (
        "with .plan.md a link to app.py, a write to .plan.md really writes "
        "app.py; is_plan_file must say False. Compare where the path leads with where "
        "the plan file should be, without resolving the latter.")


def test_plan_mode_lets_the_plan_be_written(mod):
    """In plan mode: the plan file can be written and then edited; app.py cannot."""
    Path("app.py").write_text("total = price\n")
    plan_mode(mod)
    output, is_error = call_tool(mod, "write_file", file_path=".plan.md", content=PLAN)
    assert not is_error, f"plan mode should let write_file create the plan file: {output}"
    assert Path(".plan.md").read_text() == PLAN
    output, is_error = call_tool(mod, "edit_file", file_path=".plan.md",
                                 old_string="2. Add a test.", new_string="2. Add two tests.")
    assert not is_error and "two tests" in Path(".plan.md").read_text(), (
        f"plan mode should let edit_file change the plan file: {output}")
    output, is_error = call_tool(mod, "write_file", file_path="app.py", content="oops\n")
    assert is_error and Path("app.py").read_text() == "total = price\n", (
        f"any other write must still be denied in plan mode: {output}")


def test_rules_still_come_first(mod):
    """A deny rule on the plan file wins over plan mode's exception."""
    plan_mode(mod, deny=["Write(.plan.md)"])
    output, is_error = call_tool(mod, "write_file", file_path=".plan.md", content=PLAN)
    assert is_error and not Path(".plan.md").exists(), (
        "a deny rule must still win: allow the plan file only where plan mode would "
        f"deny, after the deny rules, not before them. Got {output!r}")


def test_outside_plan_mode_nothing_changes(mod):
    """In default mode, writing .plan.md asks (and, with no one to ask, is denied)."""
    output, is_error = call_tool(mod, "write_file", file_path=".plan.md", content=PLAN)
    assert is_error and not Path(".plan.md").exists(), (
        f"the exception is for plan mode only: {output!r}")


def test_exit_without_a_plan_presents_the_plan_file(mod, monkeypatch, capsys):
    """exit_plan_mode() with no plan shows the plan file; with no plan file, an error."""
    monkeypatch.setattr(mod, "ask_plan_approval", lambda: (True, "approved"))
    schema = {t["name"]: t for t in mod.TOOLS}["exit_plan_mode"]["input_schema"]
    assert schema.get("required") == [], (
        f"exit_plan_mode's `plan` should be optional now: required is {schema.get('required')}")
    plan_mode(mod)
    output, is_error = call_tool(mod, "exit_plan_mode")
    assert is_error and ".plan.md" in output, (
        f"no plan given and no plan file: say where to write the plan: {output!r}")
    assert mod.current_mode(the_agent(mod), mod.load_settings()) == "plan", "still in plan mode"
    call_tool(mod, "write_file", file_path=".plan.md", content=PLAN)
    capsys.readouterr()
    output, is_error = call_tool(mod, "exit_plan_mode")
    shown = capsys.readouterr().out
    assert not is_error and "Fix total_value" in shown, (
        f"exit_plan_mode() should show the plan file's text to the user; it printed:\n{shown}")
    assert mod.current_mode(the_agent(mod), mod.load_settings()) == "default", "approved: plan mode ends"


def test_the_model_writes_its_plan_then_presents_it(mod, server, client, monkeypatch, capsys):
    """Through the loop: enter plan mode, write the plan file, exit with no plan."""
    monkeypatch.setattr(mod, "ask_plan_approval", lambda: (True, "approved"))
    server.add(reply(tool_use("tool_search", {"query": "select:enter_plan_mode,exit_plan_mode"})),
               reply(tool_use("enter_plan_mode", {})),
               reply(tool_use("write_file", {"file_path": ".plan.md", "content": PLAN})),
               reply(tool_use("exit_plan_mode", {})),
               reply("Approved; starting."))
    _, final = run_agent(mod, client, "plan the fix")
    written = blocks(server.requests[3]["messages"][-1])[0]
    assert not written.get("is_error"), f"writing the plan file was refused: {result_text(written)}"
    exited = blocks(server.requests[4]["messages"][-1])[0]
    assert not exited.get("is_error") and "approved" in result_text(exited), (
        f"exit_plan_mode with no plan: {result_text(exited)!r}")
    assert "Fix total_value" in capsys.readouterr().out, "the plan file was not shown to the user"
    assert final == "Approved; starting."
