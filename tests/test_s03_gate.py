"""s03: the gate wired into the one pipeline, and what it does to a real run.

Through execute_tool and through the real loop, SDK and scripted server: a denied
call changes nothing on disk, starts no process, and the model receives the reason;
an approval really lets the call happen; read-before-edit and the external-change
refusal; settings files and --permission-mode. Nobody can answer a prompt in a test
(stdin is not a terminal), so asking means no, unless a test plays the user by
replacing `input` and the chapter's own `stdin_is_interactive` (at_a_terminal).
Runs against s03 and every later chapter.
"""

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from conftest import (call_tool, chapter_params, load_chapter, result_text, run_agent,
                      run_cli, sent_tool_results, teaching_and_last)
from conftest import at_a_terminal, the_agent
from offline.server import reply, tool_use


@pytest.fixture(params=teaching_and_last("s03"))
def mod(request):
    return load_chapter(request.param)  # each test's agent starts a fresh session


def settings(workspace: Path, name: str = "settings.json", **permissions) -> None:
    folder = workspace / ".claude"
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(json.dumps({"permissions": permissions}))


class User:
    """Plays the person at the terminal: answers prompts from a list, records them."""

    def __init__(self, monkeypatch, mod, *answers):
        self.answers, self.prompts = list(answers), []
        at_a_terminal(monkeypatch, mod)
        monkeypatch.setattr("builtins.input", self.input)

    def input(self, prompt=""):
        self.prompts.append(prompt)
        if not self.answers:
            raise EOFError
        return self.answers.pop(0)


# --- denial: nothing happens, and the model is told why ----------------------------

def test_non_interactive_ask_is_a_denial_with_the_reason(mod, workspace):
    output, is_error = call_tool(mod, "write_file", file_path="new.txt", content="x")
    assert is_error
    assert "Permission denied" in output and "write_file" in output
    assert "not a terminal" in output and "default mode" in output
    assert not (workspace / "new.txt").exists()


def test_denied_command_starts_no_process(mod, workspace, monkeypatch):
    """`ls; touch made` is asked about, denied, and never reaches subprocess."""
    started = []
    monkeypatch.setattr(subprocess, "Popen", lambda *a, **k: started.append(a) or 1 / 0)
    output, is_error = call_tool(mod, "run_shell", command="ls; touch made")
    assert is_error and "Permission denied" in output and "'touch made' is not read-only" in output
    assert started == [] and not (workspace / "made").exists()


def test_denied_by_rule_even_when_someone_could_say_yes(mod, workspace, monkeypatch):
    user = User(monkeypatch, mod, "y")
    settings(workspace, deny=["Bash(rm *)"], defaultMode="bypassPermissions")
    (workspace / "keep").mkdir()
    output, is_error = call_tool(mod, "run_shell", command="ls && rm -rf keep")
    assert is_error and "deny rule Bash(rm *)" in output
    assert (workspace / "keep").is_dir() and user.prompts == []


def test_closed_stdin_means_no(mod, workspace, monkeypatch):
    User(monkeypatch, mod)  # a terminal that is closed before any answer
    output, is_error = call_tool(mod, "write_file", file_path="n.txt", content="x")
    assert is_error and "stdin was closed" in output
    assert not (workspace / "n.txt").exists()


def test_the_user_says_no(mod, workspace, monkeypatch):
    User(monkeypatch, mod, "n")
    output, is_error = call_tool(mod, "run_shell", command="touch made")
    assert is_error and "the user said no" in output
    assert not (workspace / "made").exists()


# --- approval takes effect ----------------------------------------------------------

def test_yes_runs_the_call(mod, workspace, monkeypatch):
    user = User(monkeypatch, mod, "y")
    output, is_error = call_tool(mod, "run_shell", command="touch made && echo done")
    assert not is_error and "done" in output
    assert (workspace / "made").exists()
    assert len(user.prompts) == 1 and "[a]lways" in user.prompts[0]


def test_the_prompt_names_the_tool_the_input_and_the_reason(mod, workspace, monkeypatch,
                                                             capsys):
    User(monkeypatch, mod, "n")
    call_tool(mod, "run_shell", command="ls; rm -rf build")
    shown = capsys.readouterr().out
    assert "run_shell" in shown and "ls; rm -rf build" in shown
    assert "'rm -rf build' is not read-only" in shown


def test_always_is_remembered_for_the_session(mod, workspace, monkeypatch):
    user = User(monkeypatch, mod, "a")
    for _ in range(3):
        output, is_error = call_tool(mod, "run_shell", command="touch made")
        assert not is_error
    assert len(user.prompts) == 1  # asked once, then remembered
    output, is_error = call_tool(mod, "run_shell", command="touch other")
    assert is_error  # "always" covered that exact command only; no one answers now


def test_always_is_not_offered_for_dangerous_calls(mod, workspace, monkeypatch):
    user = User(monkeypatch, mod, "a", "n")
    settings(workspace, defaultMode="bypassPermissions")
    output, is_error = call_tool(mod, "run_shell", command="git push --force")
    assert is_error and "dangerous" in output
    assert "[a]lways" not in user.prompts[0] and len(user.prompts) == 2


def test_an_answer_that_is_no_choice_says_what_is_expected(mod, workspace, monkeypatch,
                                                            capsys):
    """A sentence at the prompt: one line says what the prompt expects, and it asks
    again (without `a` where always is not offered); nothing runs until an answer."""
    user = User(monkeypatch, mod, "sure, go ahead", "y")
    output, is_error = call_tool(mod, "run_shell", command="touch made")
    assert not is_error and (workspace / "made").exists()
    assert len(user.prompts) == 2
    assert "  please answer y (yes), n (no) or a (always)\n" in capsys.readouterr().out
    user = User(monkeypatch, mod, "a", "n")
    settings(workspace, defaultMode="bypassPermissions")
    output, is_error = call_tool(mod, "run_shell", command="git push --force")
    assert is_error and len(user.prompts) == 2
    assert "  please answer y (yes) or n (no)\n" in capsys.readouterr().out


def test_approved_outside_read_really_happens(mod, workspace, monkeypatch):
    """Outside the workspace is a question now, not a hard error; yes means it is read."""
    secret = workspace.parent / "outside.txt"
    secret.write_text("OUTSIDE CONTENT\n")
    output, is_error = call_tool(mod, "read_file", file_path=str(secret))
    assert is_error and "outside the workspace" in output and "OUTSIDE" not in output
    User(monkeypatch, mod, "y")
    output, is_error = call_tool(mod, "read_file", file_path="../outside.txt")
    assert not is_error and "OUTSIDE CONTENT" in output


def test_approved_outside_write_really_happens(mod, workspace, monkeypatch):
    User(monkeypatch, mod, "y")
    target = workspace.parent / "out.txt"
    output, is_error = call_tool(mod, "write_file", file_path=str(target), content="hi\n")
    assert not is_error and target.read_text() == "hi\n"


# --- modes and settings through the pipeline ---------------------------------------

def test_default_mode_reads_run_writes_ask(mod, workspace):
    (workspace / "a.txt").write_text("hello\n")
    assert not call_tool(mod, "read_file", file_path="a.txt")[1]
    assert not call_tool(mod, "run_shell", command="cat a.txt | wc -l")[1]
    assert call_tool(mod, "run_shell", command="rm a.txt")[1]
    assert (workspace / "a.txt").exists()


def test_settings_default_mode_and_local_override(mod, workspace):
    settings(workspace, defaultMode="plan")
    assert "plan mode" in call_tool(mod, "write_file", file_path="x", content="")[0]
    settings(workspace, "settings.local.json", defaultMode="acceptEdits")
    assert not call_tool(mod, "write_file", file_path="x", content="")[1]


def test_rules_from_both_files_add_up(mod, workspace):
    settings(workspace, allow=["Bash(touch *)"])
    settings(workspace, "settings.local.json", deny=["Bash(touch secret*)"])
    assert not call_tool(mod, "run_shell", command="touch ok")[1]
    assert "deny rule" in call_tool(mod, "run_shell", command="touch secret.txt")[0]
    assert (workspace / "ok").exists() and not (workspace / "secret.txt").exists()


def test_session_mode_beats_settings(mod, workspace):
    settings(workspace, defaultMode="bypassPermissions")
    the_agent(mod).permissions.mode = "plan"
    output, is_error = call_tool(mod, "run_shell", command="touch made")
    assert is_error and "plan mode" in output and not (workspace / "made").exists()


def test_broken_settings_file_is_reported(mod, workspace):
    (workspace / ".claude").mkdir()
    (workspace / ".claude" / "settings.json").write_text("{not json")
    assert "broken settings file" in mod.permission_summary(the_agent(mod))


@pytest.mark.parametrize("body", ['{"permissions": []}', '{"permissions": {"allow": "Bash"}}',
                                  '[]', '{"permissions": {"deny": [1, null]}}'])
def test_odd_settings_do_not_crash_the_gate(mod, workspace, body):
    (workspace / ".claude").mkdir()
    (workspace / ".claude" / "settings.json").write_text(body)
    assert not call_tool(mod, "run_shell", command="echo hi")[1]
    assert call_tool(mod, "run_shell", command="touch made")[1]
    assert not (workspace / "made").exists()


def test_a_bug_in_the_gate_fails_closed(mod, workspace, monkeypatch):
    def broken(*args):
        raise RuntimeError("bug")
    monkeypatch.setattr(mod, "decide", broken)
    output, is_error = call_tool(mod, "run_shell", command="touch made")
    assert is_error and "permission check failed" in output
    assert not (workspace / "made").exists()


def test_agent_cannot_loosen_its_own_rules(mod, workspace):
    """Writing .claude/settings*.json is dangerous: it asks even in bypass mode."""
    settings(workspace, defaultMode="bypassPermissions", deny=["Bash(curl *)"])
    before = (workspace / ".claude" / "settings.json").read_text()
    assert not call_tool(mod, "read_file", file_path=".claude/settings.json")[1]
    output, is_error = call_tool(mod, "write_file", file_path=".claude/settings.json",
                                 content='{"permissions": {}}')
    assert is_error and "permission settings" in output
    output, is_error = call_tool(mod, "run_shell", command="echo '{}' > .claude/settings.json")
    assert is_error
    assert (workspace / ".claude" / "settings.json").read_text() == before


# --- read-before-edit and external changes ------------------------------------------

@pytest.fixture
def editable(mod, workspace):
    """acceptEdits, so edits run once the read-before-edit check lets them."""
    settings(workspace, defaultMode="acceptEdits")
    (workspace / "app.py").write_text("DEBUG = True\n")
    return workspace / "app.py"


def edit(mod, old="DEBUG = True", new="DEBUG = False"):
    return call_tool(mod, "edit_file", file_path="app.py", old_string=old, new_string=new)


def test_edit_without_read_is_refused(mod, editable):
    output, is_error = edit(mod)
    assert is_error and "Read it first" in output
    assert editable.read_text() == "DEBUG = True\n"


def test_write_over_an_unread_file_is_refused(mod, editable):
    output, is_error = call_tool(mod, "write_file", file_path="app.py", content="gone")
    assert is_error and "Read it first" in output
    assert editable.read_text() == "DEBUG = True\n"


def test_edit_after_read_works(mod, editable):
    assert not call_tool(mod, "read_file", file_path="app.py")[1]
    output, is_error = edit(mod)
    assert not is_error, output
    assert editable.read_text() == "DEBUG = False\n"


def test_own_writes_keep_the_file_known(mod, editable):
    call_tool(mod, "read_file", file_path="app.py")
    assert not edit(mod)[1]
    assert not edit(mod, "DEBUG = False", "DEBUG = None")[1]
    assert not call_tool(mod, "write_file", file_path="app.py", content="X = 1\n")[1]
    assert not edit(mod, "X = 1", "X = 2")[1]
    assert editable.read_text() == "X = 2\n"


def test_file_changed_on_disk_since_read_is_refused(mod, editable):
    call_tool(mod, "read_file", file_path="app.py")
    editable.write_text("DEBUG = True\nPORT = 1\n")
    os.utime(editable, ns=(1, 1))  # a different mtime, whatever the clock's resolution
    output, is_error = edit(mod)
    assert is_error and "modified since" in output and "Read it again" in output
    assert editable.read_text() == "DEBUG = True\nPORT = 1\n"
    call_tool(mod, "read_file", file_path="app.py")
    assert not edit(mod)[1]


def test_a_touch_is_not_a_change(mod, editable):
    call_tool(mod, "read_file", file_path="app.py")
    os.utime(editable, ns=(1, 1))  # same content, new mtime
    assert not edit(mod)[1]


def test_a_command_that_changes_the_file_counts_as_external(mod, editable):
    settings(editable.parent, defaultMode="bypassPermissions")
    call_tool(mod, "read_file", file_path="app.py")
    call_tool(mod, "run_shell", command="echo '# new' >> app.py && touch -d '2001-01-01' app.py")
    output, is_error = edit(mod)
    assert is_error and "modified since" in output


def test_new_file_needs_no_read(mod, editable):
    assert not call_tool(mod, "write_file", file_path="new.py", content="x = 1\n")[1]
    assert not call_tool(mod, "edit_file", file_path="other.py", old_string="",
                         new_string="y = 2\n")[1]


def test_read_before_edit_comes_before_asking(mod, workspace, monkeypatch):
    """An edit that would be refused anyway does not bother the user."""
    user = User(monkeypatch, mod, "y")
    (workspace / "app.py").write_text("A\n")
    output, is_error = call_tool(mod, "edit_file", file_path="app.py", old_string="A",
                                 new_string="B")
    assert is_error and "Read it first" in output and user.prompts == []


# --- end to end: the real loop, the real SDK, the scripted server --------------------

def test_compound_bypass_is_denied_and_the_model_is_told(mod, workspace, server, client):
    """The model hides `rm -rf` behind `ls;`: it is asked about, denied (no one can
    answer), the folder stays, and the model reads why and changes course."""
    (workspace / "build").mkdir()
    (workspace / "build" / "keep.txt").write_text("keep")
    server.add(
        reply(tool_use("run_shell", {"command": "ls"}, id="toolu_1"),
              tool_use("run_shell", {"command": "ls; rm -rf build"}, id="toolu_2")),
        reply("I could not delete build without your approval."),
    )
    messages, final = run_agent(mod, client, "clean up")
    results = sent_tool_results(server.requests[1])
    assert [r["tool_use_id"] for r in results] == ["toolu_1", "toolu_2"]
    assert not results[0].get("is_error") and "build" in result_text(results[0])
    assert results[1]["is_error"] is True
    assert "Permission denied" in result_text(results[1])
    assert "rm -rf build" in result_text(results[1])
    assert (workspace / "build" / "keep.txt").read_text() == "keep"
    assert final == "I could not delete build without your approval."


def test_dangerous_command_is_stopped_in_bypass_mode(mod, workspace, server, client):
    settings(workspace, defaultMode="bypassPermissions", allow=["Bash"])
    (workspace / "data.txt").write_text("precious")
    server.add(reply(tool_use("run_shell", {"command": 'rm -rf "$OUT_DIR"/*'})),
               reply("Stopped."))
    run_agent(mod, client, "empty the output folder")
    [result] = sent_tool_results(server.requests[1])
    assert result["is_error"] is True and "dangerous" in result_text(result)
    assert (workspace / "data.txt").read_text() == "precious"


def test_plan_mode_run_through_the_loop(mod, workspace, server, client):
    the_agent(mod).permissions.mode = "plan"
    (workspace / "a.txt").write_text("hello\n")
    server.add(
        reply(tool_use("read_file", {"file_path": "a.txt"}),
              tool_use("write_file", {"file_path": "a.txt", "content": "bye"}),
              tool_use("run_shell", {"command": "git status || true"})),
        reply("Here is my plan."),
    )
    run_agent(mod, client, "plan a change")
    read, write, shell = sent_tool_results(server.requests[1])
    assert not read.get("is_error") and "hello" in result_text(read)
    assert write["is_error"] is True and "plan mode" in result_text(write)
    assert not shell.get("is_error")
    assert (workspace / "a.txt").read_text() == "hello\n"


def test_edit_refused_then_read_then_edited(mod, workspace, server, client):
    settings(workspace, defaultMode="acceptEdits")
    (workspace / "app.py").write_text("DEBUG = True\n")
    change = {"file_path": "app.py", "old_string": "DEBUG = True", "new_string": "DEBUG = False"}
    server.add(reply(tool_use("edit_file", change)),
               reply(tool_use("read_file", {"file_path": "app.py"})),
               reply(tool_use("edit_file", change)),
               reply("Done."))
    run_agent(mod, client, "turn off debug")
    first = sent_tool_results(server.requests[1])[0]
    assert first["is_error"] is True and "Read it first" in result_text(first)
    last = sent_tool_results(server.requests[3])[0]
    assert not last.get("is_error"), result_text(last)
    assert (workspace / "app.py").read_text() == "DEBUG = False\n"


# --- the command line ---------------------------------------------------------------

@pytest.fixture(params=teaching_and_last("s03", between=False))  # each a process
def chapter(request):
    return request.param


def test_permission_mode_flag(chapter, workspace, server):
    """`--permission-mode plan` on the command line: the write is denied, exit 0."""
    server.add(reply(tool_use("write_file", {"file_path": "x.txt", "content": "x"})),
               reply("I am in plan mode."))
    proc = run_cli(chapter, "--permission-mode", "plan", "write x", cwd=workspace,
                   ANTHROPIC_API_KEY="test-key", ANTHROPIC_BASE_URL=server.url)
    assert proc.returncode == 0, proc.stderr
    assert "permission mode: plan" in proc.stdout and "I am in plan mode." in proc.stdout
    assert "plan mode" in result_text(sent_tool_results(server.requests[1])[0])
    assert not (workspace / "x.txt").exists()


def test_bad_permission_mode_is_a_usage_error(chapter, workspace):
    proc = run_cli(chapter, "--permission-mode", "yolo", "hi", cwd=workspace)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


@pytest.mark.parametrize("chapter", chapter_params("s03")[:1])
def test_s03_demo_shows_the_gate(chapter, workspace, tmp_path):
    """The offline demo: read-only runs, `ls; rm -rf` and a dangerous rm are denied,
    an unread edit is refused then made, a deny rule keeps .env; nothing is deleted."""
    proc = run_cli(chapter, "--offline", cwd=workspace, TMPDIR=str(tmp_path), timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "[allow] read-only command" in out
    assert "'rm -rf build' is not read-only" in out and "not a terminal" in out
    assert "Read it first" in out and "deny rule Read(./.env)" in out
    assert "dangerous: rm" in out and "allow rule Bash(python3 -m unittest *)" in out
    copy = Path(re.search(r"Workspace: (\S+)", out).group(1))
    assert (copy / "build" / "report-old.txt").exists()
    assert 'item["price"] * item["qty"]' in (copy / "inventory.py").read_text()


# --- checks before the question (issue 30) ------------------------------------------


def test_a_blank_command_is_refused_without_a_question(mod, server, client, workspace,
                                                      monkeypatch):
    """run_shell("   ") runs nothing: it is refused in s01's words, and the user, who
    would answer "y", is never asked about it."""
    user = User(monkeypatch, mod, "y")
    server.add(reply(tool_use("run_shell", {"command": "   "})), reply("Done."))
    run_agent(mod, client, "nothing")
    result = sent_tool_results(server.requests[1])[0]
    assert result["is_error"] and "a non-empty string" in result_text(result)
    assert user.prompts == []


def test_an_edit_that_cannot_apply_is_refused_without_a_question(
        mod, server, client, workspace, monkeypatch):
    """Default mode, a file read first: an edit_file whose old_string occurs twice,
    one that finds nothing and one that changes nothing are each refused with
    edit_file's own words, and the user is never asked; a good edit is asked."""
    (workspace / "app.py").write_text("x = 1\nx = 1\ny = 2\n")
    user = User(monkeypatch, mod, "y")
    edits = [{"old_string": "x = 1", "new_string": "x = 3"},
             {"old_string": "zzz", "new_string": "q"},
             {"old_string": "y = 2", "new_string": "y = 2"},
             {"old_string": "y = 2", "new_string": "y = 5"}]
    server.add(reply(tool_use("read_file", {"file_path": "app.py"})),
               reply(*[tool_use("edit_file", {"file_path": "app.py", **e}) for e in edits]),
               reply("Done."))
    run_agent(mod, client, "edit")
    twice, missing, same, good = sent_tool_results(server.requests[2])
    assert "found 2 times" in result_text(twice) and twice["is_error"]
    assert "not found" in result_text(missing).lower() and missing["is_error"]
    assert "the same" in result_text(same) and same["is_error"]
    assert not good["is_error"] and len(user.prompts) == 1  # only the good edit asked
    assert (workspace / "app.py").read_text() == "x = 1\nx = 1\ny = 5\n"


@pytest.mark.parametrize("target, content, problem", [
    (".claude/settings.json", '{"permissions": {"allow": ["Read"]', "valid JSON"),
    (".claude/settings.json", '{"permissions": ["Read"]}', "'permissions'"),
    (".claude/settings.local.json", '{"permissions": {"deny": "Bash"}}',
     "'permissions.deny'"),
    (".claude/settings.json", '{"hooks": {"PreToolUse": [{"command": "x"}]}}', "'hooks'"),
    (".mcp.json", '{"mcpServers": {"s": {"args": []}}}', "'mcpServers'"),
])
def test_a_settings_edit_that_would_break_it_is_refused(mod, server, client, workspace,
                                                        monkeypatch, target, content,
                                                        problem):
    """acceptEdits, the file read first: write_file of invalid JSON or an unknown
    shape to the agent's own settings is refused with the reason, before any
    question, and the file is unchanged; a valid edit of it goes on to the gate."""
    settings(workspace, "settings.local.json", defaultMode="acceptEdits")
    file = workspace / target
    before = file.read_text() if file.exists() else '{"permissions": {}}'
    file.write_text(before)
    user = User(monkeypatch, mod, "y")
    server.add(reply(tool_use("read_file", {"file_path": target})),
               reply(tool_use("write_file", {"file_path": target, "content": content})),
               reply("Done."))
    run_agent(mod, client, "configure")
    [result] = sent_tool_results(server.requests[2])
    assert result["is_error"] and problem in result_text(result), result_text(result)
    assert "nothing was written" in result_text(result) and user.prompts == []
    assert file.read_text() == before


def test_an_edit_file_of_settings_is_simulated_first(mod, server, client, workspace,
                                                     monkeypatch):
    """edit_file that would leave settings.json invalid JSON: refused, unchanged."""
    settings(workspace, allow=["Read"])
    before = (workspace / ".claude/settings.json").read_text()
    User(monkeypatch, mod)
    server.add(reply(tool_use("read_file", {"file_path": ".claude/settings.json"})),
               reply(tool_use("edit_file", {"file_path": ".claude/settings.json",
                                            "old_string": '["Read"]',
                                            "new_string": '["Read"'})),
               reply("Done."))
    run_agent(mod, client, "configure")
    [result] = sent_tool_results(server.requests[2])
    assert result["is_error"] and "valid JSON" in result_text(result)
    assert (workspace / ".claude/settings.json").read_text() == before
