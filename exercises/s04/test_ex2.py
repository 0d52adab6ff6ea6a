"""Checker for exercise s04 ex2 (core): a hook that rewrites npm into pnpm.

    pytest exercises/s04/test_ex2.py

Your file is a hook script, so the checker runs it as the agent would: a separate
program, the payload on its stdin. First on its own, then registered in a real
`.claude/settings.json` of the chapter's agent (s04_hooks/code.py, unchanged), with
stand-in `npm` and `pnpm` programs that only say they ran.
"""

import itertools
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from exercises.conftest import ROOT, blocks, result_text, run_agent
from offline.chapters import load_file
from offline.server import reply, tool_use

_loaded = itertools.count(1)


def run_hook(script: Path, tool_input: dict, tool: str = "Bash") -> subprocess.CompletedProcess:
    """Your hook, run as the agent runs it: a PreToolUse payload on stdin."""
    payload = {"session_id": "s", "transcript_path": "", "cwd": str(Path.cwd()),
               "permission_mode": "default", "hook_event_name": "PreToolUse",
               "tool_name": tool, "tool_input": tool_input, "tool_use_id": "toolu_1"}
    run = subprocess.run([sys.executable, str(script)], input=json.dumps(payload),
                         capture_output=True, text=True, timeout=30)
    if "NotImplementedError" in run.stderr:
        raise NotImplementedError(run.stderr.strip().splitlines()[-1].split(":", 1)[1].strip())
    assert "Traceback" not in run.stderr, (
        f"your hook crashed (exit {run.returncode}); the agent would only show a notice "
        f"and run the call unchanged:\n{run.stderr[-1500:]}")
    return run


def hook_output(run: subprocess.CompletedProcess) -> dict:
    assert run.returncode == 0, (
        f"exit 0 when you answer with JSON: the agent reads stdout only after exit 0 "
        f"(yours: {run.returncode}).")
    try:
        answer = json.loads(run.stdout)
    except ValueError:
        answer = None
    assert isinstance(answer, dict), f"print exactly one JSON object, not {run.stdout!r}"
    specific = answer.get("hookSpecificOutput")
    assert isinstance(specific, dict) and specific.get("hookEventName") == "PreToolUse", (
        "the answer belongs in hookSpecificOutput, with \"hookEventName\": \"PreToolUse\" "
        f"(else the agent does not read it at all): {answer}")
    return specific


def test_npm_becomes_pnpm(exercise_path):
    """`npm test` with a timeout: updatedInput is the whole input, command rewritten."""
    for command, want in (("npm test", "pnpm test"),
                          ("npm run build --silent", "pnpm run build --silent"),
                          ("npm install left-pad", "pnpm install left-pad")):
        specific = hook_output(run_hook(exercise_path, {"command": command, "timeout": 90000}))
        updated = specific.get("updatedInput")
        assert updated == {"command": want, "timeout": 90000}, (
            f"for `{command}`, updatedInput should be {{'command': {want!r}, 'timeout': 90000}}, "
            f"not {updated!r}. updatedInput replaces the whole input: keep the fields "
            "you do not change.")
        context = str(specific.get("additionalContext", ""))
        assert "pnpm" in context, (
            "say in additionalContext what you changed, so the model learns to use pnpm: "
            f"{context!r}")
        assert specific.get("permissionDecision") is None, (
            "decide nothing about permission: the gate must judge the new command itself "
            f"(you said {specific.get('permissionDecision')!r}).")


def test_everything_else_is_left_alone(exercise_path):
    """Other commands, compound commands and other tools: exit 0, no answer."""
    cases = {"ls -la": "not npm",
             "echo npm": "npm is only an argument",
             "npmx install": "a different program",
             "npm test && npm publish": "a compound command: not provably one npm call",
             "npm test; rm -rf build": "a compound command",
             "npm run $(cat target)": "a substitution: the command is only known at run time"}
    for command, why in cases.items():
        run = run_hook(exercise_path, {"command": command})
        assert run.returncode == 0 and not run.stdout.strip(), (
            f"`{command}` ({why}) should get no answer, exit 0; got exit {run.returncode} "
            f"and {run.stdout.strip()!r}")
    run = run_hook(exercise_path, {"file_path": "/x/a.py", "content": ""}, tool="Write")
    assert run.returncode == 0 and not run.stdout.strip(), (
        f"a call with no command (registered for '*', say) gets no answer: {run.stdout!r}")


@pytest.fixture
def agent(monkeypatch):
    """s04's agent as the chapter has it, imported afresh, with stand-in npm and pnpm
    programs first on PATH."""
    bin_dir = Path("bin").resolve()
    bin_dir.mkdir()
    for program in ("npm", "pnpm"):
        (bin_dir / program).write_text(f'#!/bin/sh\necho "{program} ran: $*"\n'
                                       f'touch "{program}-ran"\n')
        (bin_dir / program).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    # as `python s04_hooks/code.py` loads it: its modules (bash_safety.py ...) from its
    # folder, fresh copies of its own
    module = load_file(ROOT / "s04_hooks" / "code.py", f"s04_agent_{next(_loaded)}.code",
                       ROOT / "s04_hooks")
    return module


def settings(exercise_path: Path, allow: list) -> None:
    Path(".claude").mkdir()
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(exercise_path))}"
    Path(".claude/settings.json").write_text(json.dumps({
        "permissions": {"allow": allow},
        "hooks": {"PreToolUse": [{"matcher": "Bash",
                                  "hooks": [{"type": "command", "command": command}]}]}}))


def test_the_agent_runs_pnpm_and_tells_the_model(exercise_path, agent, server, client):
    """The model asks for `npm test`; pnpm runs, and the model reads why."""
    settings(exercise_path, allow=["Bash(pnpm test)"])
    server.add(reply(tool_use("run_shell", {"command": "npm test"})), reply("Tests pass."))
    run_agent(agent, client, "run the tests")
    result = blocks(server.requests[1]["messages"][-1])[0]
    text = result_text(result)
    assert Path("pnpm-ran").exists() and not Path("npm-ran").exists(), (
        f"the command that ran should be `pnpm test`, not `npm test`. The tool_result:\n{text}")
    assert not result.get("is_error") and "pnpm ran: test" in text, text
    assert "<hook-feedback>" in text and "pnpm" in text.split("<hook-feedback>")[1], (
        f"your additionalContext should follow the result, in <hook-feedback>:\n{text}")


def test_the_gate_judges_the_new_command(exercise_path, agent, server, client):
    """Only `Bash(npm test)` is allowed: the rewritten `pnpm test` is not, so it is denied."""
    settings(exercise_path, allow=["Bash(npm test)"])
    server.add(reply(tool_use("run_shell", {"command": "npm test"})), reply("Denied."))
    run_agent(agent, client, "run the tests")
    result = blocks(server.requests[1]["messages"][-1])[0]
    text = result_text(result)
    assert not Path("npm-ran").exists(), (
        "npm ran: your hook did not rewrite the command, so the allow rule for "
        f"`npm test` let it through. The tool_result:\n{text}")
    assert result.get("is_error") and "pnpm test" in text and not Path("pnpm-ran").exists(), (
        "`pnpm test` is not covered by the allow rule for `npm test`: the gate should ask, "
        f"and with no one at the terminal, deny. The tool_result:\n{text}")
