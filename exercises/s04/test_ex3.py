"""Checker for exercise s04 ex3 (stretch): a new hook event, UserPromptSubmit.

    pytest exercises/s04/test_ex3.py

It registers real UserPromptSubmit hooks in `.claude/settings.json`, calls your
`user_prompt_submit` on a prompt, then runs `run_task` against the scripted model:
a blocked prompt never reaches the model; context from hooks follows the prompt.
"""

import json
from pathlib import Path

from exercises.conftest import the_agent
from exercises.conftest import blocks, transcript_problem
from offline.server import reply


def register(*commands: str, event: str = "UserPromptSubmit") -> None:
    """Write .claude/settings.json with these hook commands for `event` (no matcher:
    Claude Code ignores matchers for UserPromptSubmit)."""
    Path(".claude").mkdir(exist_ok=True)
    Path(".claude/settings.json").write_text(json.dumps({"hooks": {event: [
        {"hooks": [{"type": "command", "command": c} for c in commands]}]}}))


def echo_json(**fields) -> str:
    return f"echo '{json.dumps(fields)}'"


HOOK_HINT = ("Did your hooks run at all? load_hooks reads only the events in HOOK_EVENTS, "
             "and hooks_for finds the commands of one event.")


def test_no_hooks_nothing_changes(mod):
    """No hooks registered: not blocked, no context."""
    got = mod.user_prompt_submit("fix the tests", the_agent(mod))
    assert got == {"blocked": None, "context": ""}, (
        f"with no hooks, user_prompt_submit should return "
        f"{{'blocked': None, 'context': ''}}, not {got!r}")


def test_the_hook_reads_the_prompt_on_stdin(mod):
    """A hook receives Claude Code's fields for this event, the prompt among them."""
    register("cat > payload.json")
    mod.user_prompt_submit("fix the tests", the_agent(mod))
    assert Path("payload.json").is_file(), f"the hook did not run. {HOOK_HINT}"
    payload = json.loads(Path("payload.json").read_text() or "{}")
    want = {"hook_event_name": "UserPromptSubmit", "prompt": "fix the tests",
            "cwd": str(Path.cwd()), "permission_mode": "default",
            "session_id": the_agent(mod).session_id, "transcript_path": ""}
    for key, value in want.items():
        assert payload.get(key) == value, (
            f"the hook's stdin should have {key}={value!r}; it had {payload.get(key)!r}. "
            f"All it got: {payload}")


BLOCKERS = {  # command -> what the reason must contain
    "echo 'no passwords in prompts' >&2; exit 2": "no passwords in prompts",
    echo_json(decision="block", reason="not during the release freeze"): "release freeze",
    echo_json(**{"continue": False, "stopReason": "the agent is switched off"}): "switched off",
}


def test_blocking_answers(mod):
    """Exit 2 (stderr), {"decision": "block"} and {"continue": false} block the prompt."""
    for command, why in BLOCKERS.items():
        register(command)
        got = mod.user_prompt_submit("deploy now, password hunter2", the_agent(mod))
        assert got.get("blocked") and why in got["blocked"], (
            f"the hook `{command}` should block the prompt, with a reason containing "
            f"{why!r}; user_prompt_submit returned {got!r}. {HOOK_HINT}")


def test_context_answers(mod):
    """Plain stdout and additionalContext become context; the JSON itself does not."""
    register("echo 'The team uses pnpm, not npm.'",
             echo_json(hookSpecificOutput={"hookEventName": "UserPromptSubmit",
                                           "additionalContext": "Today is release day."}))
    got = mod.user_prompt_submit("install the deps", the_agent(mod))
    assert got.get("blocked") is None, f"nothing here blocks: {got!r}"
    context = got.get("context", "")
    assert "The team uses pnpm, not npm." in context, (
        "for UserPromptSubmit, plain text a hook prints with exit 0 is context for the "
        f"model (unlike the tool events). Context was {context!r}. {HOOK_HINT}")
    assert "Today is release day." in context, (
        f"additionalContext (inside hookSpecificOutput) is context too: {context!r}")
    assert "hookSpecificOutput" not in context, (
        f"a JSON answer is read, not passed on as text: {context!r}")


def test_other_failures_change_nothing(mod):
    """Exit 1 is a non-blocking error: no block, and its stderr is not context."""
    register("echo 'hook broke' >&2; exit 1", "exit 7")
    got = mod.user_prompt_submit("hello", the_agent(mod))
    assert got == {"blocked": None, "context": ""}, (
        f"exit 1 and exit 7 are non-blocking errors: the prompt goes on as it is. "
        f"Got {got!r}")


def test_run_task_sends_context_after_the_prompt(mod, server, client, capsys):
    """run_task: the model receives the prompt, then the hooks' context in <hook-context>."""
    register("echo 'Today is release day: no risky changes.'")
    server.add(reply("Understood."))
    messages = []
    mod.run_task("tidy the repo", messages, the_agent(mod, client))
    assert server.requests, "run_task did not call the model"
    sent = blocks(server.requests[0]["messages"][-1])
    text = "".join(b.get("text", "") for b in sent)
    assert text.startswith("tidy the repo"), (
        f"the user message should start with the prompt: {text!r}")
    assert "<hook-context>" in text and "release day" in text, (
        "after the prompt, the hooks' context should follow, as hook_note('hook-context', "
        f"...) makes it. The model got: {text!r}")
    assert "Understood." in capsys.readouterr().out


def test_run_task_blocked_prompt_never_reaches_the_model(mod, server, client, capsys):
    """run_task: a blocked prompt is not sent, not kept, and the user is told why."""
    register("grep -q password && { echo 'no passwords in prompts' >&2; exit 2; }; exit 0")
    server.add(reply("Fine."))
    messages = []
    mod.run_task("my password is hunter2", messages, the_agent(mod, client))
    out = capsys.readouterr().out
    assert not server.requests, "the blocked prompt was sent to the model"
    assert messages == [], (
        f"the blocked prompt must not stay in the transcript either: {messages!r}")
    assert "[prompt blocked by a hook: no passwords in prompts]" in out, (
        f"tell the user: print '[prompt blocked by a hook: <reason>]'. Printed:\n{out}")
    mod.run_task("list the files", messages, the_agent(mod, client))
    assert len(server.requests) == 1, (
        f"the next prompt should go through as usual: the model was called "
        f"{len(server.requests)} times, once expected")
    assert transcript_problem(messages) is None, transcript_problem(messages)
