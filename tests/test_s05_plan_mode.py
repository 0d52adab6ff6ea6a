"""s05's plan mode: enter it, be denied writes, present the plan, be approved or not.

Each test runs against s05 and every later chapter, through execute_tool and through
the scripted server. Approval needs a terminal: a test that approves replaces stdin
with a terminal-like stream holding the user's answer; with the test runner's own
stdin (not a terminal) nobody can answer, and the plan is not approved.
"""

import io
import sys

import pytest

from conftest import call_tool, chapter_params, load_chapter, result_text, run_agent, \
    sent_tool_results
from conftest import the_agent
from offline.server import reply, tool_use

PLAN = "## Plan\n\n1. Change `a.txt` to say b.\n2. Check it."


@pytest.fixture(params=chapter_params("s05"))
def mod(request):
    """The chapter, with a fresh session (conftest puts the session state back after
    every test) and the plan-mode tools loaded."""
    m = load_chapter(request.param)
    call_tool(m, "tool_search", query="select:enter_plan_mode,exit_plan_mode")
    return m


class Terminal(io.StringIO):
    """Stdin as a terminal on which the user types `answers`."""

    def isatty(self) -> bool:
        return True


def user_types(monkeypatch, *answers: str) -> None:
    monkeypatch.setattr(sys, "stdin", Terminal("".join(a + "\n" for a in answers)))


def settings(workspace, mode: str) -> None:
    (workspace / ".claude").mkdir(exist_ok=True)
    (workspace / ".claude" / "settings.json").write_text(
        f'{{"permissions": {{"defaultMode": "{mode}"}}}}\n')


def mode(mod) -> str:
    return mod.current_mode(the_agent(mod), mod.load_settings())


# --- entering, and what plan mode denies -----------------------------------------------------


def test_enter_plan_mode_switches_the_mode(mod, workspace):
    """enter_plan_mode: the mode is plan, and the result tells the model what to do."""
    settings(workspace, "acceptEdits")
    output, is_error = call_tool(mod, "enter_plan_mode")
    assert not is_error and "exit_plan_mode" in output and "read-only" in output
    assert mode(mod) == "plan"
    output, is_error = call_tool(mod, "enter_plan_mode")
    assert not is_error and "already" in output and mode(mod) == "plan"


@pytest.mark.parametrize("name, tool_input", [
    ("write_file", {"file_path": "new.txt", "content": "x\n"}),
    ("edit_file", {"file_path": "new.txt", "old_string": "", "new_string": "x\n"}),
    ("run_shell", {"command": "touch new.txt"}),
    ("run_shell", {"command": "ls && touch new.txt"}),
], ids=["write", "edit", "command", "compound"])
def test_plan_mode_denies_changes_and_points_to_exit(mod, workspace, name, tool_input):
    """In plan mode (even over acceptEdits) a write, an edit or a non-read-only command
    is denied, nothing happens, and the message points to exit_plan_mode."""
    settings(workspace, "acceptEdits")
    call_tool(mod, "enter_plan_mode")
    output, is_error = call_tool(mod, name, **tool_input)
    assert is_error and "exit_plan_mode" in output
    assert not (workspace / "new.txt").exists()


def test_plan_mode_lets_read_only_calls_run(mod, workspace):
    """Reading, searching and read-only commands still run in plan mode."""
    (workspace / "a.txt").write_text("alpha\n")
    call_tool(mod, "enter_plan_mode")
    for name, tool_input in [("read_file", {"file_path": "a.txt"}),
                             ("grep_search", {"pattern": "alpha"}),
                             ("list_files", {"pattern": "*.txt"}),
                             ("run_shell", {"command": "cat a.txt"})]:
        output, is_error = call_tool(mod, name, **tool_input)
        assert not is_error and ("alpha" in output or "a.txt" in output), (name, output)


# --- exit_plan_mode: approval ---------------------------------------------------------------


def test_not_approved_when_no_one_can_answer(mod, workspace, capsys):
    """stdin is not a terminal: the plan is shown, not approved, plan mode stays,
    and a write is still denied."""
    settings(workspace, "acceptEdits")
    call_tool(mod, "enter_plan_mode")
    output, is_error = call_tool(mod, "exit_plan_mode", plan=PLAN)
    assert is_error and "not approve" in output and "terminal" in output
    assert "Change `a.txt` to say b." in capsys.readouterr().out  # the user saw the plan
    assert mode(mod) == "plan"
    _, is_error = call_tool(mod, "write_file", file_path="new.txt", content="x")
    assert is_error and not (workspace / "new.txt").exists()


def test_approval_restores_the_previous_mode(mod, workspace, monkeypatch):
    """Approved: the mode before plan mode (acceptEdits, from the settings) is back,
    the model is told to proceed, and a write now runs."""
    settings(workspace, "acceptEdits")
    call_tool(mod, "enter_plan_mode")
    user_types(monkeypatch, "y")
    output, is_error = call_tool(mod, "exit_plan_mode", plan=PLAN)
    assert not is_error and "approved" in output and "acceptEdits" in output
    assert mode(mod) == "acceptEdits"
    _, is_error = call_tool(mod, "write_file", file_path="new.txt", content="x\n")
    assert not is_error and (workspace / "new.txt").read_text() == "x\n"


def test_approval_restores_a_mode_given_on_the_command_line(mod, workspace, monkeypatch):
    """The mode set for the session (as --permission-mode does) comes back too."""
    the_agent(mod).permissions.mode = "bypassPermissions"
    call_tool(mod, "enter_plan_mode")
    assert mode(mod) == "plan"
    user_types(monkeypatch, "yes")
    _, is_error = call_tool(mod, "exit_plan_mode", plan=PLAN)
    assert not is_error and mode(mod) == "bypassPermissions"


def test_approval_leaves_plan_mode_even_when_the_settings_default_to_it(mod, workspace,
                                                                        monkeypatch):
    """defaultMode plan in the settings: after approval the mode is default, not plan."""
    settings(workspace, "plan")
    output, _ = call_tool(mod, "enter_plan_mode")
    assert "already" in output
    user_types(monkeypatch, "y")
    _, is_error = call_tool(mod, "exit_plan_mode", plan=PLAN)
    assert not is_error and mode(mod) == "default"


def test_rejection_with_feedback_reaches_the_model(mod, workspace, monkeypatch):
    """Rejected with feedback: plan mode stays, and the feedback is in the result."""
    call_tool(mod, "enter_plan_mode")
    user_types(monkeypatch, "keep a backup of a.txt first")
    output, is_error = call_tool(mod, "exit_plan_mode", plan=PLAN)
    assert is_error and "keep a backup of a.txt first" in output
    assert mode(mod) == "plan"


def test_plain_no_is_a_rejection(mod, workspace, monkeypatch):
    call_tool(mod, "enter_plan_mode")
    user_types(monkeypatch, "n")
    output, is_error = call_tool(mod, "exit_plan_mode", plan=PLAN)
    assert is_error and mode(mod) == "plan"


def test_exit_outside_plan_mode_is_an_error(mod, workspace):
    """exit_plan_mode with no plan mode on: an error, the mode is unchanged."""
    output, is_error = call_tool(mod, "exit_plan_mode", plan=PLAN)
    assert is_error and "not in plan mode" in output
    assert mode(mod) == "default"


# --- end to end through the scripted server ---------------------------------------------------


def test_plan_mode_end_to_end_rejected(mod, server, client, workspace):
    """The model enters plan mode, tries a write, presents its plan; no terminal, so it
    learns the plan was not approved. Nothing on disk changed."""
    (workspace / "a.txt").write_text("a\n")
    settings(workspace, "acceptEdits")
    server.add(
        reply(tool_use("enter_plan_mode")),
        reply(tool_use("read_file", {"file_path": "a.txt"})),
        reply(tool_use("edit_file", {"file_path": "a.txt", "old_string": "a",
                                     "new_string": "b"})),
        reply(tool_use("exit_plan_mode", {"plan": PLAN})),
        reply("Waiting for approval."),
    )
    run_agent(mod, client, "plan the change")
    results = [sent_tool_results(r)[0] for r in server.requests[1:]]
    assert [r["is_error"] for r in results] == [False, False, True, True]
    assert "exit_plan_mode" in result_text(results[2])
    assert "not approve" in result_text(results[3])
    assert (workspace / "a.txt").read_text() == "a\n"


def test_plan_mode_end_to_end_approved(mod, server, client, workspace, monkeypatch):
    """Approved at the terminal: the edit the model makes next really happens."""
    (workspace / "a.txt").write_text("a\n")
    settings(workspace, "acceptEdits")
    user_types(monkeypatch, "y")
    server.add(
        reply(tool_use("enter_plan_mode")),
        reply(tool_use("read_file", {"file_path": "a.txt"})),
        reply(tool_use("exit_plan_mode", {"plan": PLAN})),
        reply(tool_use("edit_file", {"file_path": "a.txt", "old_string": "a",
                                     "new_string": "b"})),
        reply("Done."),
    )
    run_agent(mod, client, "plan, then change")
    approval = sent_tool_results(server.requests[3])[0]
    assert approval["is_error"] is False and "approved" in result_text(approval)
    assert sent_tool_results(server.requests[4])[0]["is_error"] is False
    assert (workspace / "a.txt").read_text() == "b\n"
