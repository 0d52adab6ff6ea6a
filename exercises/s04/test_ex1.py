"""Checker for exercise s04 ex1 (warm-up): a hook that checks JSON after edits.

    pytest exercises/s04/test_ex1.py

Your file is a hook script, so the checker runs it as the agent would: a separate
program, the payload on its stdin. First on its own, then registered in a real
`.claude/settings.json` of the chapter's agent (s04_hooks/code.py, unchanged), while
a scripted model breaks a JSON file and then repairs it.
"""

import itertools
import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from exercises.conftest import ROOT, blocks, result_text, run_agent
from offline.chapters import load_file
from offline.server import reply, tool_use

BROKEN = '{\n  "widgets": 4\n  "gadgets": 2\n}\n'  # line 2 lacks its comma: line 3 fails
_loaded = itertools.count(1)


def run_hook(script: Path, payload: dict) -> subprocess.CompletedProcess:
    """Your hook, run as the agent runs it: the payload on stdin."""
    run = subprocess.run([sys.executable, str(script)], input=json.dumps(payload),
                         capture_output=True, text=True, timeout=30)
    if "NotImplementedError" in run.stderr:
        raise NotImplementedError(run.stderr.strip().splitlines()[-1].split(":", 1)[1].strip())
    assert "Traceback" not in run.stderr, (
        f"your hook crashed (exit {run.returncode}); the agent would only show a notice "
        f"and the model would hear nothing:\n{run.stderr[-1500:]}")
    return run


def payload(file_path: str | None, tool: str = "Write") -> dict:
    """What the agent sends a PostToolUse hook (paths already absolute)."""
    tool_input = {"command": "ls"} if file_path is None else {"file_path": file_path,
                                                                 "content": "..."}
    return {"session_id": "s", "transcript_path": "", "cwd": str(Path.cwd()),
            "permission_mode": "default", "hook_event_name": "PostToolUse",
            "tool_name": tool, "tool_input": tool_input, "tool_use_id": "toolu_1",
            "tool_response": "Wrote it"}


def test_a_broken_json_file_is_reported(exercise_path):
    """Broken JSON: exit 0, and one JSON answer: decision block, a reason with path:line:col."""
    path = str(Path("stock.json").resolve())
    Path(path).write_text(BROKEN)
    run = run_hook(exercise_path, payload(path))
    assert run.returncode == 0, (
        f"exit with 0 when you answer with JSON: the agent ignores stdout unless the "
        f"exit code is 0 (yours: {run.returncode}).")
    try:
        answer = json.loads(run.stdout)
    except ValueError:
        answer = None
    assert isinstance(answer, dict), (
        f"print exactly one JSON object on stdout, not {run.stdout!r}")
    assert answer.get("decision") == "block", (
        f'the answer needs "decision": "block", or the agent does not pass the reason to '
        f"the model: {answer}")
    try:
        json.loads(BROKEN)
    except json.JSONDecodeError as e:
        where = f"{path}:{e.lineno}:{e.colno}: {e.msg}"
    reason = str(answer.get("reason", ""))
    assert reason.startswith(where), (
        f"the reason should start with\n    {where!r}\n(path:line:column: the parser's "
        f"message), so the model can go straight to the spot. It is\n    {reason!r}")


def test_silence_when_there_is_nothing_to_say(exercise_path):
    """Valid JSON, a file that is not .json, a missing file, a call with no file_path:
    exit 0 and nothing on stdout."""
    Path("ok.json").write_text('{"widgets": 4}\n')
    Path("broken.py").write_text("def f(:\n")  # broken, but not our business
    cases = {"a valid JSON file": payload(str(Path("ok.json").resolve())),
             "a Python file": payload(str(Path("broken.py").resolve()), tool="Edit"),
             "a file that is gone": payload(str(Path("gone.json").resolve())),
             "a Bash call (no file_path)": payload(None, tool="Bash")}
    for case, data in cases.items():
        run = run_hook(exercise_path, data)
        assert run.returncode == 0 and not run.stdout.strip(), (
            f"{case}: expected exit 0 and no output, got exit {run.returncode} and "
            f"{run.stdout.strip()!r}. Anything else would reach the user's log for nothing.")


@pytest.fixture
def agent():
    """s04's agent as the chapter has it, imported afresh (its session state too)."""
    # as `python s04_hooks/code.py` loads it: its modules (bash_safety.py ...) from its
    # folder, fresh copies of its own
    module = load_file(ROOT / "s04_hooks" / "code.py", f"s04_agent_{next(_loaded)}.code",
                       ROOT / "s04_hooks")
    return module


def test_the_agent_tells_the_model_and_the_model_repairs_it(exercise_path, agent, server, client):
    """Registered as a PostToolUse hook: the model's broken write gets your reason after
    its result; the repaired file gets no comment."""
    Path(".claude").mkdir()
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(exercise_path))}"
    Path(".claude/settings.json").write_text(json.dumps({
        "permissions": {"defaultMode": "acceptEdits"},
        "hooks": {"PostToolUse": [{"matcher": "Edit|Write",
                                   "hooks": [{"type": "command", "command": command}]}]}}))
    server.add(reply(tool_use("write_file", {"file_path": "stock.json", "content": BROKEN})),
               reply(tool_use("edit_file", {"file_path": "stock.json",
                                            "old_string": '"widgets": 4\n',
                                            "new_string": '"widgets": 4,\n'})),
               reply("stock.json is valid again."))
    _, final = run_agent(agent, client, "record the stock")
    first = blocks(server.requests[1]["messages"][-1])[0]
    text = result_text(first)
    if "NotImplementedError" in text:
        raise NotImplementedError("your hook raised NotImplementedError")
    assert "<hook-feedback>" in text and "stock.json:3:" in text, (
        "after the broken write, the tool_result should carry your reason in "
        f"<hook-feedback> tags, with stock.json:3:... in it. It was:\n{text}")
    second = result_text(blocks(server.requests[2]["messages"][-1])[0])
    assert "<hook-feedback>" not in second, (
        f"the repaired file is valid JSON, so your hook should say nothing:\n{second}")
    assert json.loads(Path("stock.json").read_text()) == {"widgets": 4, "gadgets": 2}
    assert final == "stock.json is valid again."
