"""s04 end to end: hooks seen from the model's side of the conversation.

The real loop and SDK against the scripted server, real hook scripts in a real
`.claude/settings.json`: assert on what the server received, on the disk, and on the
command line's output and status. Runs against s04 and every later chapter.
"""

import json
import stat
from pathlib import Path

import pytest

from conftest import (load_chapter, result_text, run_agent, run_cli, sent_tool_results,
                      teaching_and_last)
from conftest import the_agent
from offline.server import reply, tool_use

# Their hooks and MCP servers run: the folder is trusted (s04 · trust).
pytestmark = pytest.mark.usefixtures("trusted_folder")


@pytest.fixture(params=teaching_and_last("s04"))
def chapter(request):
    return request.param


@pytest.fixture
def mod(chapter):
    return load_chapter(chapter)


def write_settings(workspace: Path, body: dict) -> None:
    (workspace / ".claude").mkdir(exist_ok=True)
    (workspace / ".claude" / "settings.json").write_text(json.dumps(body, indent=2))


def guard_script(workspace: Path, exit_code: int) -> str:
    """The chapter's first hook: refuse any command that runs `rm`."""
    folder = workspace / ".claude" / "hooks"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "no_rm.sh"
    path.write_text(
        "#!/bin/sh\n"
        "command=$(python3 -c 'import json, sys; "
        "print(json.load(sys.stdin)[\"tool_input\"][\"command\"])')\n"
        'case " $command" in\n'
        '  *" rm "*)\n'
        '    echo "rm is blocked by the project guard; move files to trash/ instead" >&2\n'
        f"    exit {exit_code};;\n"
        "esac\n"
        "exit 0\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return "./.claude/hooks/no_rm.sh"


def settings_with_guard(workspace: Path, exit_code: int) -> None:
    write_settings(workspace, {
        "permissions": {"allow": ["Bash(rm *)", "Bash(mkdir *)", "Bash(mv *)"]},
        "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": guard_script(workspace, exit_code)}]}]}})


def results(request: dict) -> list[tuple[str, bool, str]]:
    return [(r["tool_use_id"], bool(r.get("is_error")), result_text(r))
            for r in sent_tool_results(request)]


def test_exit_2_guard_blocks_and_the_model_changes_course(mod, workspace, server, client):
    """An allow rule would let `rm` run; the hook blocks it; the model reads why and
    moves the file instead."""
    (workspace / "old.log").write_text("old\n")
    settings_with_guard(workspace, exit_code=2)
    server.add(
        reply(tool_use("run_shell", {"command": "rm old.log"}, id="toolu_rm")),
        reply(tool_use("run_shell", {"command": "mkdir -p trash && mv old.log trash/"},
                       id="toolu_mv")),
        reply("Moved old.log to trash/."),
    )
    _, final = run_agent(mod, client, "clean up old.log")
    assert final == "Moved old.log to trash/."
    [(tid, is_error, text)] = results(server.requests[1])
    assert tid == "toolu_rm" and is_error
    assert "rm is blocked by the project guard" in text
    [(tid, is_error, _)] = results(server.requests[2])
    assert tid == "toolu_mv" and not is_error
    assert (workspace / "trash" / "old.log").exists()


def test_exit_1_guard_silently_fails_to_block(mod, workspace, server, client, capsys):
    """The same hook with `exit 1`: the file is gone, the model hears nothing of the
    hook, and only the user's terminal shows a notice."""
    (workspace / "old.log").write_text("old\n")
    settings_with_guard(workspace, exit_code=1)
    server.add(reply(tool_use("run_shell", {"command": "rm old.log"}, id="toolu_rm")),
               reply("Deleted."))
    run_agent(mod, client, "clean up old.log")
    [(_, is_error, text)] = results(server.requests[1])
    assert not is_error and "project guard" not in text
    assert not (workspace / "old.log").exists()
    assert "rm is blocked by the project guard" in capsys.readouterr().out


def test_post_tool_use_feedback_reaches_the_model_after_the_result(mod, workspace, server,
                                                                   client):
    write_settings(workspace, {
        "permissions": {"defaultMode": "acceptEdits"},
        "hooks": {"PostToolUse": [{"matcher": "Write|Edit", "hooks": [{
            "type": "command",
            "command": "python3 -c \"import json,sys; p=json.load(sys.stdin)['tool_input']"
                       "['file_path']; t=open(p).read(); sys.exit(0 if t.endswith(chr(10)) "
                       "else print(p + ': no newline at end of file', file=sys.stderr) "
                       "or 2)\""}]}]}})
    server.add(reply(tool_use("write_file", {"file_path": "app.py", "content": "x = 1"},
                              id="toolu_w")),
               reply("Done."))
    run_agent(mod, client, "write app.py")
    [(_, is_error, text)] = results(server.requests[1])
    assert not is_error
    assert text.index("Created app.py") < text.index("no newline at end of file")
    assert (workspace / "app.py").read_text() == "x = 1"


def test_continue_false_stops_the_agent(mod, workspace, server, client):
    """A hook says stop: the call does not run, nor does the rest of the batch; every
    tool_use still gets its tool_result; the model is not called again, and the next
    prompt works as usual."""
    write_settings(workspace, {
        "permissions": {"allow": ["Bash"]},
        "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command":
            "echo '{\"continue\": false, \"stopReason\": \"daily budget used up\"}'"}]}]}})
    server.add(reply(tool_use("run_shell", {"command": "touch a.txt"}, id="toolu_a"),
                     tool_use("run_shell", {"command": "touch b.txt"}, id="toolu_b")))
    messages, final = run_agent(mod, client, "make two files")
    assert "daily budget used up" in final
    assert len(server.requests) == 1
    assert not (workspace / "a.txt").exists() and not (workspace / "b.txt").exists()
    last = messages[-1]["content"]
    assert [r["tool_use_id"] for r in last] == ["toolu_a", "toolu_b"]
    assert all(r["is_error"] and "daily budget" not in r["content"] for r in last)

    (workspace / ".claude" / "settings.json").unlink()
    server.add(reply("Hello again."))
    messages.append({"role": "user", "content": "hi"})
    assert mod.agent_loop(messages, the_agent(mod, client)) == "Hello again."
    assert "daily budget" not in json.dumps(server.requests[1])


@pytest.mark.parametrize("chapter", teaching_and_last("s04", between=False))
def test_one_shot_run_stopped_by_a_hook_exits_0(chapter, workspace, server):
    write_settings(workspace, {"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command":
        "echo '{\"continue\": false, \"stopReason\": \"stop requested by hook\"}'"}]}]}})
    server.add(reply(tool_use("run_shell", {"command": "echo hi"})), reply("never sent"))
    proc = run_cli(chapter, "say hi", cwd=workspace, ANTHROPIC_API_KEY="test-key",
                   ANTHROPIC_BASE_URL=server.url)
    assert proc.returncode == 0, proc.stderr
    assert "stop requested by hook" in proc.stdout
    assert "never sent" not in proc.stdout
    assert len(server.requests) == 1
