"""s06 at a terminal: Ctrl-C while two subagents work, and what the screen shows.

Issue 41's bug: after Ctrl-C both `agent(...)` lines were on the screen with no result
under them (and earlier, a subagent's work printed before the line that started it).
Here s06's REPL runs in a real pseudo-terminal that is its controlling terminal
(offline/terminal.py), live against the scripted server; the model starts two
general-purpose agents at once, each runs a command that sleeps; once both commands
run (the event: both in the process table), the test types Ctrl-C (the byte 0x03: the
terminal, not the test, sends SIGINT to the chapter) and reads the screen up to the
next prompt. Each agent line must be followed by what happened to it (its
interruption), each subagent's work must come after the line that started it and
before its result, and nothing may print twice or after the turn's last line.
"""

import os
import re
import sys

import pytest

from conftest import GUARD, ROOT, clean_env, command_lines, wait_until
from offline.server import reply, routed, tool_use

pytest.importorskip("pty", reason="pseudo-terminals are POSIX only")
from offline.terminal import Terminal  # noqa: E402

# a tag of this test run's own, so that another run's sleeps are never taken for ours
TAG = f"{os.getpid() % 100_000:05d}"
HELPERS = {"helper one": f"sleep 941.1{TAG}", "helper two": f"sleep 941.2{TAG}"}
PROMPT = "s06 >> "
INTERRUPTED = "! Interrupted: the user pressed Ctrl-C before this call finished."
TURN_ENDS = "[interrupted: the tool calls that had not finished were stopped]"
# In the terminal: make it the chapter's controlling terminal, then run the chapter,
# so that Ctrl-C typed there reaches it as a terminal's SIGINT does.
AT_A_TERMINAL = ("import fcntl, os, sys, termios; "
                 "fcntl.ioctl(0, termios.TIOCSCTTY, 0); "
                 "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])")


def running(marker: str) -> bool:
    return bool(command_lines(re.escape(marker)))


def agent_call(description: str, index: int) -> dict:
    return tool_use("agent", {"description": description, "prompt": f"wait, {index}",
                              "subagent_type": "general-purpose"}, id=f"toolu_{index}")


@pytest.fixture
def screen_after_ctrl_c(server, workspace):
    """The lines the terminal showed from the task to the next prompt."""
    server.add(
        reply(*[agent_call(name, i) for i, name in enumerate(HELPERS)]),
        *routed({f"wait, {i}": [reply(tool_use("run_shell", {"command": command}))]
                 for i, command in enumerate(HELPERS.values())}),
    )
    code = ROOT / "s06_concurrency" / "code.py"
    env = clean_env(ANTHROPIC_API_KEY="test-key", ANTHROPIC_BASE_URL=server.url)
    term = Terminal([sys.executable, "-c", AT_A_TERMINAL, str(code)], workspace, env)
    try:
        term.expect(PROMPT, timeout=GUARD)  # GUARD: against a hang, not about speed
        term.answer("wait for both")
        both = wait_until(lambda: all(running(c) for c in HELPERS.values()),
                          unless=lambda: term.proc.poll() is not None)
        assert both, f"both subagents' commands should run:\n{term.screen}"
        os.write(term.master, b"\x03")  # Ctrl-C, typed
        shown = term.expect(PROMPT, timeout=GUARD)
        gone = wait_until(lambda: not any(running(c) for c in HELPERS.values()))
        term.answer("exit")
        status, _ = term.finish(timeout=GUARD)
    finally:
        term.close()
    assert gone, "Ctrl-C must end the subagents' commands"
    assert status == 0, term.screen
    # the terminal echoes the keystroke as ^C, wherever the cursor stood
    shown = shown[:-len(PROMPT)].replace("^C", "")
    return [line for line in shown.splitlines() if line.strip()]


def test_after_ctrl_c_each_agent_line_is_followed_by_its_interruption(
        screen_after_ctrl_c):
    lines = screen_after_ctrl_c
    screen = "\n".join(lines)
    assert "Traceback" not in screen, screen
    at = {}  # what -> the index of its one line
    for name, command in HELPERS.items():
        for what, text in ((name, f"> agent(description={name!r}"),
                           (command, f"[{name}] > run_shell(command={command!r})"),
                           (f"{name} stopped", f"[{name}] {INTERRUPTED}")):
            found = [i for i, line in enumerate(lines) if line.startswith(text)]
            assert len(found) == 1, f"{text!r} should show once:\n{screen}"
            at[what] = found[0]
        # its subagent's work comes after the agent line, its result after its call
        assert at[name] < at[command] < at[f"{name} stopped"], (
            f"{name}'s work should show after its agent line, its call before its "
            f"result:\n{screen}")
    # the agents' own results: one interruption per agent line, each after its
    # subagent's last line (they read alike: whichever subagent stopped k-th from
    # the end has at least k of them after it), none before both agent lines
    results = [i for i, line in enumerate(lines) if line.startswith(INTERRUPTED)]
    assert len(results) == len(HELPERS), f"one result per agent line:\n{screen}"
    assert min(results) > max(at[n] for n in HELPERS), screen
    stops = sorted(at[f"{n} stopped"] for n in HELPERS)
    for k, stop in enumerate(reversed(stops), 1):
        assert sum(i > stop for i in results) >= k, screen
    # the turn ends last, once, right after the last result: nothing comes after
    assert [line for line in lines if TURN_ENDS in line] == [lines[-1]], screen
    assert lines[-1].startswith(TURN_ENDS) and results[-1] == len(lines) - 2, screen
