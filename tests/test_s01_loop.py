"""The agent loop (s01) and everything later chapters must keep of it.

Each test runs against s01 and every later chapter: a mechanism, once taught, stays.
"""

import os
import re

import pytest

from conftest import (assert_no_process, load_chapter, result_text, run_agent,
                      sent_tool_results, teaching_and_last)
from conftest import the_agent
from offline.server import reply, tool_use


@pytest.fixture(params=teaching_and_last("s01"))
def mod(request):
    return load_chapter(request.param)


def test_every_tool_use_gets_one_result_in_order(mod, server, client):
    """Three calls in one reply: three tool_results, same ids, same order, nothing before them."""
    server.add(
        reply("Looking.", tool_use("run_shell", {"command": "echo one"}, id="toolu_a"),
              tool_use("run_shell", {"command": "echo two"}, id="toolu_b"),
              tool_use("run_shell", {"command": "echo three"}, id="toolu_c")),
        reply("All done."),
    )
    messages, final = run_agent(mod, client, "count")
    assert final == "All done."
    second = server.requests[1]
    results = sent_tool_results(second)
    assert [r["tool_use_id"] for r in results] == ["toolu_a", "toolu_b", "toolu_c"]
    assert second["messages"][-1]["content"] == results  # tool_results only, none missing
    assert ["one" in result_text(results[0]), "two" in result_text(results[1]),
            "three" in result_text(results[2])] == [True, True, True]
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant"]


def test_request_carries_system_tools_and_history(mod, server, client):
    """Each call sends the system prompt, the tool schemas and the whole history."""
    server.add(reply(tool_use("run_shell", {"command": "echo hi"})), reply("ok"))
    run_agent(mod, client, "say hi")
    first, second = server.requests
    assert "run_shell" in [t["name"] for t in first["tools"]]
    assert os.getcwd() in first["system"]
    assert first["messages"] == [{"role": "user", "content": "say hi"}]
    assert len(second["messages"]) == 3


def test_tool_use_runs_even_if_stop_reason_says_end_turn(mod, server, client):
    """The loop goes by the tool_use blocks, not by stop_reason."""
    server.add(reply(tool_use("run_shell", {"command": "echo ran"}, id="toolu_x"),
                     stop_reason="end_turn"),
               reply("finished"))
    _, final = run_agent(mod, client, "go")
    assert final == "finished"
    assert sent_tool_results(server.requests[1])[0]["tool_use_id"] == "toolu_x"


def test_no_tool_use_stops_even_if_stop_reason_says_tool_use(mod, server, client):
    """A reply without tool_use ends the task, whatever its stop_reason."""
    server.add(reply("just text", stop_reason="tool_use"))
    _, final = run_agent(mod, client, "go")
    assert final == "just text"
    assert len(server.requests) == 1


def test_turn_limit_ends_a_runaway_loop(mod, server, client):
    """A model that never stops calling tools is stopped after max_turns, cleanly."""
    server.add(*[reply(tool_use("run_shell", {"command": "echo again"})) for _ in range(5)])
    messages, final = run_agent(mod, client, "loop forever", max_turns=3)
    assert len(server.requests) == 3
    assert "3" in final and "max-turns" in final
    assert messages[-1]["role"] == "user"  # the last tool_use still got its result
    assert sent_tool_results({"messages": messages})


@pytest.mark.parametrize("bad_input, problem", [
    ({}, "command"),
    ({"command": 42}, "command"),
    ({"command": "echo x", "timeout": "soon"}, "timeout"),
])
def test_bad_input_is_an_error_result_not_a_crash(mod, server, client, bad_input, problem):
    """Missing or wrongly typed input gives an is_error result naming the field."""
    server.add(reply(tool_use("run_shell", bad_input, id="toolu_bad")), reply("recovered"))
    _, final = run_agent(mod, client, "go")
    assert final == "recovered"
    [result] = sent_tool_results(server.requests[1])
    assert result["is_error"] is True and problem in result_text(result)


def test_unknown_tool_is_an_error_result(mod, server, client):
    """A tool the agent does not have: is_error, and the loop goes on."""
    server.add(reply(tool_use("teleport", {"to": "mars"}, id="toolu_t"),
                     tool_use("run_shell", {"command": "echo still here"}, id="toolu_s")),
               reply("ok"))
    run_agent(mod, client, "go")
    unknown, shell = sent_tool_results(server.requests[1])
    assert unknown["tool_use_id"] == "toolu_t" and unknown["is_error"] is True
    assert "teleport" in result_text(unknown)
    assert shell["tool_use_id"] == "toolu_s" and "still here" in result_text(shell)


# --- run_shell --------------------------------------------------------------------


def test_run_shell_reports_stdout_stderr_and_exit_code(mod):
    """Both streams and the exit status reach the model; a non-zero exit raises
    CommandFailed with the same text, so the result is an error (as in Claude Code)."""
    with pytest.raises(mod.CommandFailed) as failed:
        mod.run_shell(the_agent(mod), "echo to-out; echo to-err >&2; exit 3")
    out = str(failed.value)
    assert "to-out" in out and "to-err" in out and "exit code: 3" in out
    out = mod.run_shell(the_agent(mod), "echo to-out; echo to-err >&2")
    assert "to-out" in out and "to-err" in out and "exit code: 0" in out


def test_a_failed_command_is_an_error_with_its_output(mod, server, client, workspace):
    """Through the loop: the tool_result of a non-zero exit is is_error, and holds the
    command's own output unchanged (no 'Error:' in front); exit 0 is not an error."""
    (workspace / "here.txt").write_text("fine\n")
    server.add(reply(tool_use("run_shell", {"command": "cat missing.txt"}),  # read-only:
                     tool_use("run_shell", {"command": "cat here.txt"})),    # no question
               reply("Done."))
    run_agent(mod, client, "try it")
    failed, fine = sent_tool_results(server.requests[1])
    assert failed["is_error"] is True
    assert result_text(failed) == ("--- stderr ---\ncat: missing.txt: No such file or "
                                   "directory\n[exit code: 1]")
    assert fine["is_error"] is False and result_text(fine) == "fine\n[exit code: 0]"


def test_exit_1_that_answers_is_not_an_error(mod, server, client, workspace):
    """Issue 30: grep with no match, two files that differ and a false test answer
    with exit 1, as in Claude Code: not is_error, the exit code and its meaning shown.
    `a && grep` stays an error (a's own failure may be the 1), and so does grep's 2."""
    (workspace / "a.txt").write_text("one\n")
    (workspace / "b.txt").write_text("two\n")
    commands = ["grep -n zzz a.txt", "diff a.txt b.txt", "test -f missing",
                "cat a.txt | grep -c zzz", "cat missing && grep x a.txt",
                "grep -n zzz nope.txt"]
    server.add(reply(*[tool_use("run_shell", {"command": c}) for c in commands]),
               reply("Done."))
    run_agent(mod, client, "look")
    results = sent_tool_results(server.requests[1])
    assert [r["is_error"] for r in results] == [False, False, False, False, True, True]
    texts = [result_text(r) for r in results]
    assert texts[0] == "(no output)\n[exit code: 1 (no match)]"
    assert texts[1].endswith("[exit code: 1 (files differ)]") and "> two" in texts[1]
    assert texts[2] == "(no output)\n[exit code: 1 (false)]"
    assert texts[3] == "0\n[exit code: 1 (no match)]"
    assert texts[4].endswith("[exit code: 1]") and texts[5].endswith("[exit code: 2]")


@pytest.mark.parametrize("command, program", [
    ("grep x a.txt", "grep"), ("cat a | sort | grep x", "grep"), ("[ -f a ]", "["),
    ("false || diff a b 2>&1", "diff"), ("a && grep x", None), ("grep x &", None),
    ("(grep x)", None), ("echo 'a\nb'\ngrep x", None), ("grep 'x", None),
    ("LC_ALL=C grep x", "LC_ALL=C")])
def test_last_program_is_the_first_word_of_the_last_command(mod, command, program):
    """The program whose exit the line returns; None when unsure (then exit 1 fails)."""
    assert mod.last_program(command) == program


def test_the_model_gets_clean_output(mod, server, client, workspace):
    """Issue 30: colour codes (CSI), a title (OSC) and other escapes never reach a
    tool_result; binary output (NUL bytes, or mostly undecodable) becomes a notice
    with its size; a long output names a saved file that holds the whole of it."""
    commands = [r"printf '\033[1;31mred\033[0m \033]0;title\007done\033(B\n'",
                r"printf 'a\000b\000c'", "cat noise.bin", "seq 1 20000"]
    (workspace / "noise.bin").write_bytes(bytes([0xFF, 0xFE, 0x80]) * 1000)
    server.add(reply(*[tool_use("run_shell", {"command": c}) for c in commands]),
               reply("Done."))
    run_agent(mod, client, "look")
    colours, nul, noise, long = [result_text(r) for r in
                                 sent_tool_results(server.requests[1])]
    assert colours == "red done\n[exit code: 0]"
    assert nul == "[binary output: 5 bytes, not shown]\n[exit code: 0]"
    assert noise == "[binary output: 3,000 bytes, not shown]\n[exit code: 0]"
    assert "\x1b" not in str(server.requests[1]) and "\\u0000" not in str(server.requests)
    saved = re.search(r"saved in (\.tool-results/[\w.-]+)", long)
    assert long.startswith("1\n2\n") and long.endswith("20000\n[exit code: 0]")
    assert saved and (workspace / saved[1]).read_text() == "".join(
        f"{i}\n" for i in range(1, 20001)), long[14_000:16_000]


def test_run_shell_says_when_there_is_no_output(mod):
    assert "(no output)" in mod.run_shell(the_agent(mod), "true")


def test_run_shell_cannot_wait_for_input(mod):
    """Stdin is closed and pagers are cat: nothing can sit waiting for a human."""
    out = mod.run_shell(the_agent(mod), "read line; echo \"read=$?\"; cat; echo \"pager=$PAGER git=$GIT_PAGER\"")
    assert "read=1" in out and "pager=cat git=cat" in out


def test_run_shell_runs_in_the_workspace(mod, workspace):
    assert str(workspace) in mod.run_shell(the_agent(mod), "pwd -P")


def test_run_shell_timeout_kills_the_whole_process_group(mod, workspace):
    """On timeout the command and everything it started are killed."""
    n = 100_000 + os.getpid() % 100_000  # unique: other workers run this test too
    with pytest.raises(mod.CommandFailed) as failed:
        mod.run_shell(the_agent(mod), f"sleep {n}1 & sleep {n}2", timeout=1000)  # milliseconds
    assert "timed out after 1s" in str(failed.value)
    # subtle: from s03 on the command runs in a sandbox with process IDs of its own,
    # so the background child is looked for by what it runs, not by its $!.
    assert_no_process(f"sleep {n}[12]")  # all of it is gone


def test_run_shell_timeout_is_capped(mod):
    """Timeouts are in milliseconds, as Claude Code's Bash takes them; the model
    cannot ask for more than MAX_TIMEOUT (ten minutes)."""
    assert mod.MAX_TIMEOUT == 600_000 and mod.DEFAULT_TIMEOUT == 120_000
    assert "exit code: 0" in mod.run_shell(the_agent(mod), "true", timeout=10_000_000)


def test_long_output_keeps_head_and_tail(mod):
    """Past the limit the middle is cut, with a marker saying how much."""
    limit = mod.MAX_OUTPUT_CHARS
    out = mod.run_shell(the_agent(mod), f"echo FIRST-LINE; head -c {limit * 3} /dev/zero | tr '\\0' x; echo; echo LAST-LINE")
    assert "FIRST-LINE" in out and "LAST-LINE" in out
    assert "bytes cut from the middle" in out
    assert len(out) < limit + 2000
