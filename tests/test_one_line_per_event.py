"""One line per event: what the learner sees says each thing once.

- Every chapter's offline demo: a decision is printed once, whole, with its reason;
  the refusal the model gets is not echoed; no hook that passed without a word is
  listed per call; a loaded tool reads as its name and a sentence; a call line fits
  one line; s06 names its early calls on their own line, marks its batches, and shows
  each subagent's answer once.
- The rules behind those lines, one scenario each: an answered question prints the
  answer, not the reason again (s03 on); silent hooks summed up once per task, events
  the chapter does not run named at start, a cut hook text said so (s04 on); s06's
  batch line times each call and the batch against their sum.

The demos run in this process (run_main), as `code.py --offline` without a terminal.
"""

from __future__ import annotations

import json
import re
import sys

import pytest

from conftest import (at_a_terminal, call_tool, chapter_params, load_chapter,
                      result_text, run_agent,
                      run_main, sent_tool_results, write_settings)
from offline.server import reply, tool_use


@pytest.fixture
def mod(request):
    return load_chapter(request.param)


def demo_output(chapter: str, workspace, tmp_path) -> str:
    proc = run_main(chapter, "--offline", cwd=workspace, TMPDIR=str(tmp_path))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    return proc.stdout


@pytest.mark.parametrize("chapter", chapter_params("s01"))
def test_every_demo_says_each_thing_once(chapter, workspace, tmp_path):
    """A chapter's demo, line by line: no event is printed twice, none is cut short."""
    out = demo_output(chapter, workspace, tmp_path)
    lines = out.splitlines()
    assert not [ln for ln in lines if ln.startswith(("! Permission denied",
                                                     "! Blocked by a PreToolUse hook"))]
    for i, line in enumerate(lines):
        if re.match(r"  \[(allow|deny)\] ", line):
            reason = line.split("] ", 1)[1]
            assert not reason.endswith("..."), f"a decision cut short: {line}"
            assert len(reason) < 30 or reason[:40] not in lines[i + 1], f"twice: {line}"
    assert not [ln for ln in lines if re.fullmatch(r"  ~ .*: exit 0", ln)]
    assert not re.search(r'\{"name": "\w+", "description"', out)  # raw definitions
    assert "(from the default)" not in out
    assert all(len(ln) <= 200 for ln in lines if ln.startswith("> ")), "a call line wraps"
    if chapter[:3] in ("s03", "s05"):  # their demos ask, and no one answers here
        assert re.search(r"^  \[deny\] .*no one can answer", out, re.M)
    if chapter[:3] == "s04":
        assert "hooks that passed without a word: audit_log.py x" in out
        assert out.count("rm is blocked in this project") == 1
    if chapter[:3] == "s05":
        assert "  enter_plan_mode: Switch to plan mode" in out


@pytest.mark.parametrize("chapter", [p for p in chapter_params("s06") if p.id == "s06"])
def test_the_s06_demo_shows_batches_early_calls_and_answers_once(chapter, workspace,
                                                                 tmp_path):
    """s06's demo: the early start on its own line, a line after each batch, and
    each subagent's answer once (as its agent call's result)."""
    out = demo_output(chapter, workspace, tmp_path)
    lines = out.splitlines()
    early = next(i for i, ln in enumerate(lines) if "[reply complete: " in ln)
    assert lines[early] == ("  [reply complete: list_files, grep_search, run_shell "
                            "started while it streamed]")
    assert lines[early + 1].startswith("> run_shell(command='sleep 1")  # not inside one
    assert re.search(r"^  batch 1 · 3 calls in parallel: [\d.]+ s" + HEAD_START +
                     r", against [\d.]+ s one "
                     r"after another \(list_files [\d.]+ s, grep_search [\d.]+ s, "
                     r"run_shell [\d.]+ s\)$", out, re.M)
    assert re.search(r"^  batch 2 · run_shell [\d.]+ s, alone$", out, re.M)  # background
    # each background task (the tests, the agent of issue 41) told once
    told = [ln for ln in lines if ln.endswith("the model is told]")]
    assert sorted(ln.split()[1] for ln in told) == ["agent_1", "bash_1"], told
    # the fork's answer once, as its agent call's result (the background agent's
    # answer reaches the model in its notification)
    shown = [ln for ln in lines if ln.endswith("the quantity its docstring promises.")]
    assert len(shown) == 1 and shown[0].startswith("  "), shown
    assert "say how to go on" not in out
    # a subagent's token counts carry its label, as everything else it prints does
    usage = [ln for ln in lines if "[input tokens: " in ln]
    assert sum(ln.startswith("[check report] ") for ln in usage) >= 1, usage
    assert sum(ln.startswith("[check total_value] ") for ln in usage) >= 1, usage


# --- s03 on: a question, and its answer --------------------------------------------------


@pytest.mark.parametrize("mod", chapter_params("s03"), indirect=True)
def test_an_answered_question_prints_the_answer_not_the_reason_again(mod, workspace,
                                                                     monkeypatch, capsys):
    """Someone at the terminal says no: the question gives the reason, the decision
    line only the answer; the model still gets both."""
    at_a_terminal(monkeypatch, mod)
    monkeypatch.setattr("builtins.input", lambda prompt="": "n")
    output, is_error = call_tool(mod, "run_shell", command="touch made.txt")
    shown = capsys.readouterr().out
    assert is_error and "'touch made.txt' is not read-only" in output
    assert "the user said no" in output
    assert shown.count("'touch made.txt' is not read-only") == 1  # in the question
    assert "  [deny] the user said no\n" in shown
    assert "Permission denied" not in shown


# --- s04 on: hooks -------------------------------------------------------------------------


def hooks(workspace, **events) -> None:
    """A settings file registering one command hook per event: events={name: command}."""
    folder = workspace / ".claude"
    folder.mkdir(exist_ok=True)
    (folder / "settings.json").write_text(json.dumps({"hooks": {
        event: [{"hooks": [{"type": "command", "command": command}]}]
        for event, command in events.items()}}))


@pytest.mark.parametrize("mod", chapter_params("s04"), indirect=True)
def test_silent_hooks_are_summed_up_once_per_task(mod, trusted, trusted_folder, server, client, capsys):
    """A log-only hook on every call: no line per call, one line after the task."""
    hooks(trusted, PreToolUse="true", PostToolUse="true")
    server.add(reply(tool_use("run_shell", {"command": "echo one"})),
               reply(tool_use("run_shell", {"command": "echo two"})),
               reply("Both ran."))
    mod.run_task("run two commands", [], mod.Agent(client))
    out = capsys.readouterr().out
    assert ": exit 0" not in out
    assert out.count("hooks that passed without a word: `true` x4") == 1
    assert out.rstrip().endswith("hooks that passed without a word: `true` x4")


@pytest.mark.parametrize("mod", chapter_params("s04"), indirect=True)
def test_hook_events_the_chapter_does_not_run_are_named_at_start(mod, workspace):
    """Settings with Stop and UserPromptSubmit hooks: the first line names them."""
    hooks(workspace, PreToolUse="true", Stop="true", UserPromptSubmit="true")
    line = mod.hooks_summary()
    assert "1 PreToolUse" in line
    assert "1 Stop (not run by this chapter)" in line
    assert "1 UserPromptSubmit (not run by this chapter)" in line


@pytest.mark.parametrize("mod", chapter_params("s04"), indirect=True)
def test_a_huge_hook_context_is_cut_and_said_so(mod, trusted, trusted_folder, capsys):
    """A PostToolUse hook adds 3 MB of context: the model gets 10,000 characters and a
    note; the user sees a line saying so. Nothing vanishes in silence."""
    script = trusted / "big.py"
    script.write_text("import json\nprint(json.dumps({'hookSpecificOutput': {"
                      "'hookEventName': 'PostToolUse', 'additionalContext': 'x' * 3_000_000"
                      "}}))\n")
    hooks(trusted, PostToolUse=f"{sys.executable} {script}")
    (trusted / "a.txt").write_text("hello\n")
    output, is_error = call_tool(mod, "read_file", file_path="a.txt")
    shown = capsys.readouterr().out
    assert not is_error and "hello" in output
    assert "characters cut: hooks may add at most 10,000" in output
    assert "hook text cut to 10,000 characters of 3,000,000" in shown


@pytest.mark.parametrize("mod", chapter_params("s04"), indirect=True)
def test_a_hook_output_over_the_cap_is_said_so(mod, trusted, trusted_folder, capsys):
    """A hook writes more than MAX_HOOK_OUTPUT: its line says the output was cut."""
    script = trusted / "flood.py"
    script.write_text(f"import sys\nsys.stdout.write('x' * {mod.MAX_HOOK_OUTPUT + 10})\n")
    hooks(trusted, PreToolUse=f"{sys.executable} {script}")
    (trusted / "a.txt").write_text("hello\n")
    output, is_error = call_tool(mod, "read_file", file_path="a.txt")
    assert not is_error and "hello" in output  # a notice, not a block
    assert "flood.py: exit 0, output too long, cut" in capsys.readouterr().out


# --- s05 on: tool_search -------------------------------------------------------------------


@pytest.mark.parametrize("mod", chapter_params("s05"), indirect=True)
def test_loaded_tools_read_as_names_and_a_sentence(mod, workspace, server, client, capsys):
    """tool_search's result: the model gets whole definitions, the user one line each."""
    server.add(reply(tool_use("tool_search", {"query": "select:web_fetch"})),
               reply("Loaded."))
    run_agent(mod, client, "load web_fetch")
    shown = capsys.readouterr().out
    assert '"input_schema"' in result_text(sent_tool_results(server.requests[1])[0])
    assert "  web_fetch: " in shown and '{"name"' not in shown


# the batch that holds calls started while the reply streamed says so (its time runs
# from the end of the reply)
HEAD_START = r"(?: after the reply ended \(with a head start while it streamed\))?"


# --- s06: batches -----------------------------------------------------------------------------


@pytest.mark.parametrize("mod", chapter_params("s06"), indirect=True)
def test_a_batch_line_times_each_call_and_the_batch(mod, workspace, server, client,
                                                    capsys):
    """Three 0.3 s commands side by side: each shown whole, then one line with each
    call's time and the batch's, well under their sum."""
    server.add(reply(*[tool_use("run_shell", {"command": f"sleep 0.3; echo call-{i}"})
                       for i in range(3)]),
               reply("done"))
    run_agent(mod, client, "three at once")
    out = capsys.readouterr().out
    found = re.search(r"batch 1 · 3 calls in parallel: ([\d.]+) s" + HEAD_START +
                      r", against ([\d.]+) s "
                      r"one after another \(run_shell ([\d.]+) s, run_shell ([\d.]+) s, "
                      r"run_shell ([\d.]+) s\)", out)
    assert found, out
    batch, total, *each = map(float, found.groups())
    assert all(t >= 0.3 for t in each) and abs(total - sum(each)) < 0.02
    assert batch < total * 0.8  # side by side, not one after another
    for i in range(3):  # each call's lines together: its call, its decision, its result
        call = out.index(f"> run_shell(command='sleep 0.3; echo call-{i}')")
        assert out[call:].split("\n")[1:3] == ["  [allow] read-only command", f"  call-{i}"]
