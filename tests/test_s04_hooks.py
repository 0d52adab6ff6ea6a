"""s04's hooks, call by call: Claude Code's protocol, from the settings to the answer.

Each test writes a real `.claude/settings.json` (and hook scripts) into the test's
workspace, sends one tool call through the chapter's own `execute_tool`, and checks
what happened: on disk, in the tool_result, in what the hook received. Runs against
s04 and every later chapter.
"""

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

from conftest import call_tool, load_chapter, teaching_and_last, tool_use_block, wait_until
from conftest import the_agent

# Their hooks and MCP servers run: the folder is trusted (s04 · trust).
pytestmark = pytest.mark.usefixtures("trusted_folder")


@pytest.fixture(params=teaching_and_last("s04"))
def mod(request):
    return load_chapter(request.param)


# --- helpers: settings files and hook scripts ------------------------------------------


def settings(workspace: Path, hooks: dict | None = None, permissions: dict | None = None,
             name: str = "settings.json") -> None:
    """Write one Claude Code settings file into the workspace's .claude folder."""
    folder = workspace / ".claude"
    folder.mkdir(exist_ok=True)
    body = {}
    if hooks is not None:
        body["hooks"] = hooks
    if permissions is not None:
        body["permissions"] = permissions
    (folder / name).write_text(json.dumps(body, indent=2))


def on(event: str, command: str, matcher: str | None = "*", timeout=None) -> dict:
    """A hooks object with one command hook for one event."""
    hook = {"type": "command", "command": command}
    if timeout is not None:
        hook["timeout"] = timeout
    group = {"hooks": [hook]} if matcher is None else {"matcher": matcher, "hooks": [hook]}
    return {event: [group]}


def script(workspace: Path, name: str, body: str) -> str:
    """An executable hook script in .claude/hooks/; returns the command that runs it."""
    folder = workspace / ".claude" / "hooks"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return f"./.claude/hooks/{name}"


def answer(**fields) -> str:
    """A hook command that prints one JSON answer and exits 0."""
    return f"echo '{json.dumps(fields)}'"


def pre(decision: str, reason: str = "", **more) -> str:
    """A PreToolUse hook answering with hookSpecificOutput.permissionDecision."""
    return answer(hookSpecificOutput={"hookEventName": "PreToolUse",
                                      "permissionDecision": decision,
                                      "permissionDecisionReason": reason, **more})


ALLOW_BASH = {"allow": ["Bash"]}  # the rules let every command through...
GUARD = "echo 'rm is not allowed here: use git clean' >&2; exit 2"  # ...a hook does not


# --- exit codes ---------------------------------------------------------------------


def test_exit_2_blocks_and_the_model_gets_stderr(mod, workspace):
    """The first hook of the chapter: exit 2 on Bash blocks `rm`, even though an allow
    rule would have let it run. The file stays; the model reads the hook's stderr."""
    (workspace / "notes.txt").write_text("keep me\n")
    settings(workspace, on("PreToolUse", GUARD, "Bash"), ALLOW_BASH)
    output, is_error = call_tool(mod, "run_shell", command="rm notes.txt")
    assert is_error
    assert "rm is not allowed here: use git clean" in output
    assert (workspace / "notes.txt").exists()


def test_exit_2_ignores_stdout(mod, workspace):
    """With exit 2, stdout is not read: a JSON allow printed there does not count."""
    settings(workspace, on("PreToolUse", pre("allow", "ok") + "; echo 'no' >&2; exit 2"),
             ALLOW_BASH)
    output, is_error = call_tool(mod, "run_shell", command="touch made.txt")
    assert is_error and "no" in output
    assert not (workspace / "made.txt").exists()


def test_hooks_run_only_after_the_input_is_valid(mod, workspace):
    settings(workspace, on("PreToolUse", "echo fired >> fired.log"))
    _, is_error = call_tool(mod, "read_file", path="a.txt")  # wrong field name
    assert is_error
    _, is_error = call_tool(mod, "teleport", to="mars")
    assert is_error
    assert not (workspace / "fired.log").exists()


def test_exit_1_does_not_block(mod, workspace, capsys):
    """The most common mistake: exit 1 is a non-blocking error. The call runs anyway;
    only the user sees a notice (with stderr's first line), the model sees nothing."""
    (workspace / "notes.txt").write_text("gone soon\n")
    settings(workspace, on("PreToolUse", "echo 'BLOCKED: no rm' >&2; exit 1", "Bash"),
             ALLOW_BASH)
    output, is_error = call_tool(mod, "run_shell", command="rm notes.txt")
    assert not is_error
    assert not (workspace / "notes.txt").exists()
    assert "BLOCKED" not in output
    shown = capsys.readouterr().out
    assert "BLOCKED: no rm" in shown and "exit 1" in shown


def test_json_deny_counts_on_exit_1(mod, workspace):
    """Claude Code reads a hook's JSON on any exit code but 2 (measured by the
    fidelity suite): a deny printed before `exit 1` still denies."""
    (workspace / "notes.txt").write_text("kept\n")
    deny = json.dumps({"hookSpecificOutput": {
        "hookEventName": "PreToolUse", "permissionDecision": "deny",
        "permissionDecisionReason": "no rm here"}})
    settings(workspace, on("PreToolUse", f"echo '{deny}'; exit 1", "Bash"), ALLOW_BASH)
    output, is_error = call_tool(mod, "run_shell", command="rm notes.txt")
    assert is_error and "no rm here" in output
    assert (workspace / "notes.txt").read_text() == "kept\n"


def test_exit_0_plain_text_goes_to_the_user_only(mod, workspace, capsys):
    settings(workspace, on("PreToolUse", "echo 'checked by the audit hook'"))
    output, is_error = call_tool(mod, "run_shell", command="echo hi")
    assert not is_error and "hi" in output
    assert "checked by the audit hook" not in output
    assert "checked by the audit hook" in capsys.readouterr().out


@pytest.mark.parametrize("command", ["exit 3", "kill -9 $$"])
def test_other_failures_are_non_blocking(mod, workspace, command):
    settings(workspace, on("PreToolUse", command))
    output, is_error = call_tool(mod, "run_shell", command="echo still ran")
    assert not is_error and "still ran" in output


@pytest.mark.parametrize("command", ["./.claude/hooks/missing.sh", "not-a-program-xyz",
                                     "./.claude/hooks/plain.sh"])
def test_a_hook_that_cannot_start_is_a_non_blocking_error(mod, workspace, capsys, command):
    """Missing script, unknown program, a script without its executable bit."""
    (workspace / ".claude" / "hooks").mkdir(parents=True)
    (workspace / ".claude" / "hooks" / "plain.sh").write_text("exit 2\n")  # not executable
    settings(workspace, on("PreToolUse", command, "Bash"))
    output, is_error = call_tool(mod, "run_shell", command="echo still ran")
    assert not is_error and "still ran" in output
    assert "non-blocking" in capsys.readouterr().out


# --- JSON answers -------------------------------------------------------------------


def test_json_deny_blocks_even_in_bypass_mode(mod, workspace):
    """A hook's deny beats bypassPermissions and allow rules; its reason reaches the model."""
    settings(workspace, on("PreToolUse", pre("deny", "writes to config need review"), "Write"),
             {"defaultMode": "bypassPermissions", "allow": ["Write"]})
    output, is_error = call_tool(mod, "write_file", file_path="config.ini", content="x=1\n")
    assert is_error and "writes to config need review" in output
    assert not (workspace / "config.ini").exists()


def test_legacy_decision_block_means_deny(mod, workspace):
    settings(workspace, on("PreToolUse", answer(decision="block", reason="old style no")),
             ALLOW_BASH)
    output, is_error = call_tool(mod, "run_shell", command="touch made.txt")
    assert is_error and "old style no" in output
    assert not (workspace / "made.txt").exists()


def test_top_level_permission_decision_is_not_honoured(mod, workspace):
    """Only hookSpecificOutput.permissionDecision counts; a top-level one is ignored."""
    settings(workspace, on("PreToolUse", answer(permissionDecision="deny",
                                                permissionDecisionReason="no")), ALLOW_BASH)
    output, is_error = call_tool(mod, "run_shell", command="touch made.txt")
    assert not is_error
    assert (workspace / "made.txt").exists()


def test_hook_specific_output_for_another_event_is_ignored(mod, workspace):
    wrong = answer(hookSpecificOutput={"hookEventName": "PostToolUse",
                                       "permissionDecision": "deny"})
    settings(workspace, on("PreToolUse", wrong), ALLOW_BASH)
    _, is_error = call_tool(mod, "run_shell", command="touch made.txt")
    assert not is_error and (workspace / "made.txt").exists()


def test_broken_json_is_plain_text(mod, workspace):
    settings(workspace, on("PreToolUse", "echo '{\"decision\": \"block\"'"), ALLOW_BASH)
    _, is_error = call_tool(mod, "run_shell", command="touch made.txt")
    assert not is_error and (workspace / "made.txt").exists()


def test_additional_context_reaches_the_model(mod, workspace):
    hook = pre("allow", "fine", additionalContext="Remember: this repo uses tabs.")
    settings(workspace, on("PreToolUse", hook, "Read"))
    (workspace / "a.txt").write_text("hello\n")
    output, is_error = call_tool(mod, "read_file", file_path="a.txt")
    assert not is_error
    assert "hello" in output and "Remember: this repo uses tabs." in output


def test_injected_context_is_capped_with_a_note(mod, workspace):
    big = "python3 -c \"import json; print(json.dumps({'hookSpecificOutput': " \
          "{'hookEventName': 'PreToolUse', 'additionalContext': 'x' * 50000}}))\""
    settings(workspace, on("PreToolUse", big))
    (workspace / "a.txt").write_text("hello\n")
    output, _ = call_tool(mod, "read_file", file_path="a.txt")
    assert 10_000 <= output.count("x") <= 10_100
    assert "cut" in output


# --- hooks and the permission gate ------------------------------------------------


def test_hook_allow_skips_the_prompt(mod, workspace):
    """default mode would ask for `touch` (and, with no terminal, the answer is no);
    the hook's allow runs it without asking."""
    settings(workspace, on("PreToolUse", pre("allow", "touch is fine here"), "Bash"))
    output, is_error = call_tool(mod, "run_shell", command="touch made.txt")
    assert not is_error, output
    assert (workspace / "made.txt").exists()


def test_without_the_hook_the_same_call_is_denied(mod, workspace):
    output, is_error = call_tool(mod, "run_shell", command="touch made.txt")
    assert is_error and not (workspace / "made.txt").exists()


@pytest.mark.parametrize("rule_kind", ["deny", "ask"])
def test_hook_allow_never_beats_a_deny_or_ask_rule(mod, workspace, rule_kind):
    settings(workspace, on("PreToolUse", pre("allow", "hook says fine"), "Bash"),
             {rule_kind: ["Bash(touch *)"], "defaultMode": "bypassPermissions"})
    output, is_error = call_tool(mod, "run_shell", command="touch made.txt")
    assert is_error
    assert "Bash(touch *)" in output
    assert not (workspace / "made.txt").exists()


def test_hook_ask_forces_a_prompt(mod, workspace):
    """A read-only command runs unasked in default mode; a hook's ask makes it a
    question, and with no terminal to answer it, the call does not run."""
    settings(workspace, on("PreToolUse", pre("ask", "the hook wants a human"), "Bash"),
             {"defaultMode": "bypassPermissions"})
    output, is_error = call_tool(mod, "run_shell", command="echo hello")
    assert is_error
    assert "the hook wants a human" in output


def test_no_decision_leaves_the_normal_flow(mod, workspace):
    settings(workspace, on("PreToolUse", "true", "Bash"))
    _, is_error = call_tool(mod, "run_shell", command="touch made.txt")
    assert is_error  # default mode, no terminal: denied as in s03
    _, is_error = call_tool(mod, "run_shell", command="echo read-only")
    assert not is_error


def test_updated_input_is_what_runs(mod, workspace):
    rewrite = pre("allow", "", updatedInput={"command": "echo rewritten > out.txt"})
    settings(workspace, on("PreToolUse", rewrite, "Bash"))
    _, is_error = call_tool(mod, "run_shell", command="echo original > out.txt")
    assert not is_error
    assert (workspace / "out.txt").read_text() == "rewritten\n"


def test_updated_input_is_checked_by_the_rules(mod, workspace):
    """A hook rewrites a harmless command into one a deny rule names: denied."""
    rewrite = answer(hookSpecificOutput={"hookEventName": "PreToolUse",
                                         "updatedInput": {"command": "touch evil.txt"}})
    settings(workspace, on("PreToolUse", rewrite, "Bash"),
             {"allow": ["Bash(echo *)"], "deny": ["Bash(touch *)"]})
    output, is_error = call_tool(mod, "run_shell", command="echo hi")
    assert is_error and "Bash(touch *)" in output
    assert not (workspace / "evil.txt").exists()


def test_invalid_updated_input_is_refused(mod, workspace):
    rewrite = answer(hookSpecificOutput={"hookEventName": "PreToolUse",
                                         "updatedInput": {"cmd": "echo hi"}})
    settings(workspace, on("PreToolUse", rewrite, "Bash"))
    output, is_error = call_tool(mod, "run_shell", command="echo hi")
    assert is_error and "updatedInput" in output


# --- several hooks ----------------------------------------------------------------------


COMBINATIONS = [  # (answers of two hooks, does the call run?)
    ((pre("allow", "a"), pre("deny", "d")), False),
    ((pre("allow", "a"), GUARD), False),
    ((pre("ask", "q"), pre("allow", "a")), False),  # ask wins; no terminal: no
    ((pre("allow", "a"), "true"), True),
    ((pre("deny", "d"), pre("ask", "q")), False),
]


@pytest.mark.parametrize("order", ["forward", "reverse"])
@pytest.mark.parametrize("hooks,runs", COMBINATIONS)
def test_combined_decisions_do_not_depend_on_order(mod, workspace, hooks, runs, order):
    first, second = hooks if order == "forward" else hooks[::-1]
    settings(workspace, {"PreToolUse": [
        {"matcher": "Bash", "hooks": [{"type": "command", "command": first}]},
        {"matcher": "run_shell", "hooks": [{"type": "command", "command": second}]}]})
    _, is_error = call_tool(mod, "run_shell", command="touch made.txt")
    assert (workspace / "made.txt").exists() is runs
    assert is_error is not runs


def test_deny_reason_is_the_denying_hooks(mod, workspace):
    settings(workspace, {"PreToolUse": [
        {"hooks": [{"type": "command", "command": pre("allow", "allow-reason")}]},
        {"hooks": [{"type": "command", "command": pre("deny", "deny-reason")}]}]})
    output, _ = call_tool(mod, "run_shell", command="echo hi")
    assert "deny-reason" in output and "allow-reason" not in output


# --- matchers, settings files, de-duplication ------------------------------------------


MATCHERS = [  # (matcher, tool called, does the hook run?)
    (None, "read_file", True),
    ("", "read_file", True),
    ("*", "read_file", True),
    ("Read", "read_file", True),         # Claude Code's name
    ("read_file", "read_file", True),    # ours
    ("Edit|Read", "read_file", True),    # a list of exact names
    ("Edit|Write", "read_file", False),
    ("Rea", "read_file", False),         # exact, not a prefix
    ("read", "read_file", False),        # case-sensitive
    ("Re.*", "read_file", True),         # a regular expression, unanchored...
    ("ead", "read_file", False),         # ...but letters only: an exact name
    ("e.d", "read_file", True),
    ("^Bash$", "run_shell", True),
    ("^Bash$", "read_file", False),
    ("Bash(echo *)", "run_shell", False),  # permission-rule syntax: never a matcher
    ("Bash(*)", "run_shell", False),
    ("Write", "edit_file", False),
    ("Edit", "write_file", False),
    ("Write", "write_file", True),
]


@pytest.mark.parametrize("matcher,tool,fires", MATCHERS)
def test_matcher_forms(mod, workspace, matcher, tool, fires):
    settings(workspace, on("PreToolUse", "echo fired >> fired.log", matcher),
             {"defaultMode": "acceptEdits"})
    (workspace / "a.txt").write_text("a\n")
    calls = {"read_file": {"file_path": "a.txt"}, "run_shell": {"command": "echo hi"},
             "edit_file": {"file_path": "new.txt", "old_string": "", "new_string": "n\n"},
             "write_file": {"file_path": "new.txt", "content": "n\n"}}
    call_tool(mod, tool, **calls[tool])
    assert (workspace / "fired.log").exists() is fires


def test_settings_and_local_settings_are_merged(mod, workspace):
    settings(workspace, on("PreToolUse", "echo shared >> fired.log"))
    settings(workspace, on("PreToolUse", "echo local >> fired.log"), name="settings.local.json")
    call_tool(mod, "run_shell", command="echo hi")
    assert sorted((workspace / "fired.log").read_text().split()) == ["local", "shared"]


def test_the_same_command_runs_once_per_call(mod, workspace):
    command = "echo once >> fired.log"
    settings(workspace, {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": command}, {"type": "command", "command": command}]},
        {"matcher": "*", "hooks": [{"type": "command", "command": command}]}]})
    settings(workspace, on("PreToolUse", command), name="settings.local.json")
    call_tool(mod, "run_shell", command="echo hi")
    assert (workspace / "fired.log").read_text() == "once\n"


def test_a_broken_settings_file_is_reported_not_fatal(mod, workspace, capsys):
    (workspace / ".claude").mkdir()
    (workspace / ".claude" / "settings.json").write_text("{not json")
    output, is_error = call_tool(mod, "run_shell", command="echo hi")
    assert not is_error and "hi" in output


# --- running a hook: payload, environment, timeouts, leftovers ---------------------------


def test_the_stdin_payload(mod, workspace):
    """Claude Code's fields, the path made absolute, CLAUDE_PROJECT_DIR set, run in
    the workspace; PostToolUse adds the tool's response."""
    dump = script(workspace, "dump.sh", '#!/bin/sh\ncat > "$CLAUDE_PROJECT_DIR/$1.json"\n'
                  'pwd > "$1.cwd"\n')
    settings(workspace, {**on("PreToolUse", f"{dump} pre"), **on("PostToolUse", f"{dump} post")},
             {"defaultMode": "acceptEdits"})
    mod.execute_tool(tool_use_block("write_file", id="toolu_42", file_path="sub/x.txt",
                                    content="hi\n"), the_agent(mod))
    before = json.loads((workspace / "pre.json").read_text())
    assert before["hook_event_name"] == "PreToolUse"
    assert before["tool_name"] == "Write"
    assert before["tool_use_id"] == "toolu_42"
    assert before["tool_input"] == {"file_path": str(workspace / "sub" / "x.txt"),
                                    "content": "hi\n"}
    assert Path(before["cwd"]).resolve() == workspace.resolve()
    assert before["permission_mode"] == "acceptEdits"
    assert before["session_id"] and "transcript_path" in before
    assert Path((workspace / "pre.cwd").read_text().strip()).resolve() == workspace.resolve()
    after = json.loads((workspace / "post.json").read_text())
    assert after["hook_event_name"] == "PostToolUse"
    assert after["session_id"] == before["session_id"]
    assert "x.txt" in after["tool_response"]


def test_a_hook_never_sees_the_agents_key(mod, workspace, monkeypatch):
    """The agent's credentials reach no command it runs: a hook gets the environment
    a shell command gets (no ANTHROPIC_API_KEY, no ANTHROPIC_AUTH_TOKEN)."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret-key")
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "secret-token")
    settings(workspace, on("PreToolUse", "env > hook.env"))
    output, is_error = call_tool(mod, "run_shell", command="echo ran")
    seen = (workspace / "hook.env").read_text()
    assert not is_error and "ran" in output
    assert "PATH=" in seen and "secret" not in seen, seen


def test_a_hook_that_ignores_a_huge_payload_does_not_hang(mod, workspace, capsys):
    """The hook exits without reading its 3 MB of input: the call goes on at once,
    not after the hook's timeout."""
    settings(workspace, on("PreToolUse", "exit 0"), {"defaultMode": "acceptEdits"})
    _, is_error = call_tool(mod, "write_file", file_path="big.txt", content="x" * 3_000_000)
    assert not is_error and (workspace / "big.txt").stat().st_size == 3_000_000
    assert "timed out" not in capsys.readouterr().out


def test_a_hook_past_its_timeout_costs_only_the_timeout(mod, workspace, capsys):
    """It sleeps 960 s with a 3 s timeout: killed, with the child it started, and the
    call goes on (a timeout does not block). 3 s, not 1: time for bash to start its
    child on a busy machine; the sleeps outlast conftest's GUARD (gone = killed)."""
    settings(workspace, on("PreToolUse", "sleep 900 & echo $! > child.pid; "
                           "sleep 960; touch hook_ended", "Bash", timeout=3))
    output, is_error = call_tool(mod, "run_shell", command="echo still ran")
    assert not (workspace / "hook_ended").exists()  # the call did not wait for it
    assert not is_error and "still ran" in output
    assert "timed out" in capsys.readouterr().out
    assert_gone(int((workspace / "child.pid").read_text()))


def test_a_hook_leaves_no_background_process(mod, workspace):
    settings(workspace, on("PreToolUse", "sleep 900 & echo $! > child.pid; exit 0"))
    call_tool(mod, "run_shell", command="echo hi")
    assert_gone(int((workspace / "child.pid").read_text()))


def assert_gone(pid: int) -> None:
    """The process has exited (a zombie that no one has reaped yet counts as gone),
    waiting up to 30 s for a killed one to go: a guard against a hang."""
    def gone() -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        state = subprocess.run(["ps", "-o", "stat=", "-p", str(pid)],
                               capture_output=True, text=True).stdout.strip()
        return not state or state.startswith("Z")
    assert wait_until(gone), f"process {pid} is still running"


# --- after the call ------------------------------------------------------------------------


def test_post_tool_use_exit_2_feeds_back_but_the_write_stands(mod, workspace):
    lint = "echo 'line 1: missing final newline' >&2; exit 2"
    settings(workspace, on("PostToolUse", lint, "Write|Edit"), {"defaultMode": "acceptEdits"})
    output, is_error = call_tool(mod, "write_file", file_path="app.py", content="x = 1")
    assert (workspace / "app.py").read_text() == "x = 1"
    assert not is_error
    assert "Created" in output and "line 1: missing final newline" in output


def test_post_tool_use_decision_block_and_context(mod, workspace):
    said = answer(decision="block", reason="run the tests next",
                  hookSpecificOutput={"hookEventName": "PostToolUse",
                                      "additionalContext": "formatted with black"})
    settings(workspace, on("PostToolUse", said, "Write"), {"defaultMode": "acceptEdits"})
    output, is_error = call_tool(mod, "write_file", file_path="app.py", content="x = 1\n")
    assert not is_error and (workspace / "app.py").exists()
    assert "run the tests next" in output and "formatted with black" in output


def test_post_tool_use_failure_runs_on_a_failing_tool(mod, workspace):
    dump = script(workspace, "dump.sh", '#!/bin/sh\ncat > "$1.json"\n')
    failed = f"{dump} failed; echo 'try list_files' >&2; exit 2"
    settings(workspace, {**on("PostToolUse", f"{dump} ok"),
                         **on("PostToolUseFailure", failed, "Read")})
    output, is_error = call_tool(mod, "read_file", file_path="missing.txt")
    assert is_error and "not found" in output
    assert "try list_files" in output
    failed = json.loads((workspace / "failed.json").read_text())
    assert failed["hook_event_name"] == "PostToolUseFailure"
    assert "not found" in failed["error"]
    assert not (workspace / "ok.json").exists()


def test_post_tool_use_does_not_run_for_a_blocked_call(mod, workspace):
    settings(workspace, {**on("PreToolUse", GUARD, "Bash"),
                         **on("PostToolUse", "echo post >> fired.log"),
                         **on("PostToolUseFailure", "echo failure >> fired.log")})
    call_tool(mod, "run_shell", command="rm -f x")
    assert not (workspace / "fired.log").exists()
