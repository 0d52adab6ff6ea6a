"""Checker for exercise s03 ex2 (core): a mode that never asks, dontAsk.

    pytest exercises/s03/test_ex2.py

It asks your gate (`decide_permission`, which is pure) about the same calls in
default mode and in dontAsk mode, then sends calls through `execute_tool` with
someone at the terminal ready to say yes, and checks that no one is asked.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from exercises.conftest import decide, the_agent
from exercises.conftest import call_tool

RULES = {"allow": ["Bash(npm test)"], "deny": ["Read(./.env)"],
         "ask": ["Bash(git push *)"]}
CALLS = [  # (tool, input, what default mode does with it)
    ("read_file", {"file_path": "notes.txt"}, "allow: a read-only tool"),
    ("run_shell", {"command": "ls -la"}, "allow: a read-only command"),
    ("run_shell", {"command": "npm test"}, "allow: an allow rule"),
    ("read_file", {"file_path": ".env"}, "deny: a deny rule"),
    ("run_shell", {"command": "rm -rf build"}, "ask: not read-only"),
    ("write_file", {"file_path": "new.txt", "content": "x"}, "ask: an edit"),
    ("run_shell", {"command": "git push origin main"}, "ask: an ask rule"),
    ("run_shell", {"command": 'rm -rf "$OUT"/*'}, "ask: a dangerous command"),
    ("read_file", {"file_path": "../outside.txt"}, "ask: a path outside the workspace"),
    ("web_fetch", {"url": "https://example.com/"}, "ask: the network"),
]


@pytest.fixture
def files():
    Path("notes.txt").write_text("hello\n")
    Path(".env").write_text("SECRET=1\n")


def test_decisions_are_default_modes_except_asks(mod, files):
    """dontAsk: what default mode allows or denies stays; what it would ask is denied."""
    for tool, tool_input, default_does in CALLS:
        default = decide(mod, tool, tool_input, "default", RULES)
        got = decide(mod, tool, tool_input, "dontAsk", RULES)
        call = f"{tool}({tool_input})"
        if default[0] != "ask":
            assert got == default, (
                f"{call}: default mode says {default}, and dontAsk should say the same "
                f"({default_does}), but it says {got}.")
            continue
        assert got[0] == "deny", (
            f"{call}: default mode would ask ({default_does}), so dontAsk must deny it, "
            f"but it says {got[0]!r}.")
        assert got[1].startswith("dontAsk mode: ") and default[1] in got[1], (
            f"{call}: the reason should start 'dontAsk mode: ' and then give default "
            f"mode's reason to ask ({default[1]!r}), so that the model knows what to "
            f"avoid. It is {got[1]!r}.")


def test_the_other_modes_are_unchanged(mod, files):
    """default, acceptEdits, plan and bypassPermissions decide exactly as before."""
    assert decide(mod, "run_shell", {"command": "rm -rf build"}, "default",
                                 RULES)[0] == "ask", "default mode must still ask"
    assert decide(mod, "write_file", {"file_path": "a.txt", "content": ""},
                                 "acceptEdits", RULES)[0] == "allow"
    assert decide(mod, "write_file", {"file_path": "a.txt", "content": ""},
                                 "plan", RULES)[0] == "deny"
    assert decide(mod, "run_shell", {"command": "rm -rf build"},
                                 "bypassPermissions", RULES)[0] == "allow"
    assert decide(mod, "run_shell", {"command": "ls"}, "noSuchMode",
                                 RULES)[0] == "deny", "an unknown mode must still be denied"


def test_the_mode_is_known_to_the_command_line_and_the_settings(mod):
    """`--permission-mode dontAsk` is accepted, and so is `"defaultMode": "dontAsk"`."""
    try:
        args = mod.parse_args(["--permission-mode", "dontAsk"])
    except SystemExit:  # argparse refused the value
        args = None
    assert args is not None and args.permission_mode == "dontAsk", (
        "`--permission-mode dontAsk` is refused by the command line: its choices are "
        "PERMISSION_MODES.")
    mode = mod.current_mode(the_agent(mod), {"defaultMode": "dontAsk"})
    assert mode == "dontAsk", (
        f"with \"defaultMode\": \"dontAsk\" in the settings, current_mode gives {mode!r}: "
        "it only accepts the modes in PERMISSION_MODES.")


def test_no_one_is_asked_even_at_a_terminal(mod, files, monkeypatch):
    """Settings say dontAsk; someone at the terminal would say yes, but is never asked."""
    Path(".claude").mkdir()
    Path(".claude/settings.json").write_text(
        json.dumps({"permissions": {"defaultMode": "dontAsk"}}))
    asked = []
    for where in (mod, sys.modules[mod.ask_user.__module__]):  # code.py, asking.py
        monkeypatch.setattr(where, "stdin_is_interactive", lambda: True)
    monkeypatch.setattr("builtins.input", lambda prompt="": asked.append(prompt) or "y")
    output, is_error = call_tool(mod, "run_shell", command="touch made.txt")
    assert not asked, (
        f"the user was asked {asked[0]!r}: dontAsk mode must never show the prompt.")
    assert is_error and "dontAsk" in output, (
        f"`touch made.txt` would ask in default mode, so it must be denied, saying "
        f"dontAsk: {output!r}")
    assert not Path("made.txt").exists(), "the denied command ran anyway"
    output, is_error = call_tool(mod, "read_file", file_path="notes.txt")
    assert not is_error and "hello" in output, f"a read-only call should still run: {output!r}"


def test_the_chapter_runs_in_the_new_mode(exercise_path):
    """`python ex2.py --offline --permission-mode dontAsk` plays the demo in the new mode."""
    run = subprocess.run([sys.executable, str(exercise_path), "--offline",
                          "--permission-mode", "dontAsk"], capture_output=True, text=True,
                         timeout=120, stdin=subprocess.DEVNULL)
    assert run.returncode == 0, f"the demo failed:\n{run.stdout[-1500:]}\n{run.stderr[-1500:]}"
    assert "permission mode: dontAsk" in run.stdout, (
        "the first line should say `permission mode: dontAsk (from --permission-mode)`: "
        f"{run.stdout[:300]!r}")
