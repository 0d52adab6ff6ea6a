"""s06: commands in the background: run_in_background, task_stop, the notification.

Each test runs against s06 and every later chapter, through the real loop and the real
SDK. Nothing here asserts a speed: the scripted model's turns are functions that look
at the workspace when a request arrives, so each test asserts the ORDER of events (the
tool_result came back while the command still ran, the next request went on, the file
appeared, then the notification came in a later request).
"""

import os
import time
from pathlib import Path

import pytest

import conftest
from conftest import concurrency_safe
from conftest import (assert_no_process, chapter_params, load_chapter, result_text,
                      run_agent, run_main, sent_tool_results, write_settings)
from conftest import the_agent
from offline.server import reply, tool_use


@pytest.fixture(params=chapter_params("s06"))
def mod(request):
    return load_chapter(request.param)


def wait_until(check) -> None:
    """Wait for the event (conftest's GUARD: a guard against a hang)."""
    assert conftest.wait_until(check), "never happened"


def held(workspace: Path) -> tuple[str, callable]:
    """A command that waits for the test, and the test's go: `cat` reads a FIFO of
    the workspace until the test opens it, so a background command runs exactly as
    long as the test needs it to, however busy the machine (cat only reads: the
    gate lets it run)."""
    os.mkfifo(workspace / "hold.fifo")
    return "cat hold.fifo > /dev/null", lambda: open(workspace / "hold.fifo", "w").close()


def background(command: str) -> dict:
    return tool_use("run_shell", {"command": command, "run_in_background": True})


def notices(request: dict) -> list[str]:
    """The text blocks of the request's last user message (where notices go)."""
    content = request["messages"][-1]["content"]
    return [b["text"] for b in content if isinstance(content, list) and b["type"] == "text"]


def group_alive(pgid: int) -> bool:
    """Whether a live process is in the group. subtle: a zombie is dead, and this
    machine's PID 1 may never reap the one bwrap leaves, so /proc, not killpg(0)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            state, _, group = stat.read_text().rsplit(")", 1)[1].split()[:3]
        except OSError:  # it ended while we looked
            continue
        if int(group) == pgid and state != "Z":
            return True
    return False


def test_a_background_command_returns_at_once_and_the_model_is_told_later(
        mod, server, client, trusted):
    """`<wait>; echo done > bg.txt` in the background: its tool_result comes back while
    it still runs, the next request goes on, bg.txt appears, then a <task-notification>
    arrives in a later request, after that request's tool_results."""
    seen = {}
    wait, go = held(trusted)

    def while_it_runs(request):
        task = the_agent(mod).tasks["bash_1"]
        seen.update(running=task["proc"].poll() is None, file=Path("bg.txt").exists(),
                    notices=notices(request))
        return reply(tool_use("run_shell", {"command": "echo other work"}))

    def once_it_ended(request):
        seen.update(before=notices(request))  # sent while it still ran
        go()  # now it may end
        wait_until(lambda: the_agent(mod).tasks["bash_1"]["status"] != "running")
        seen.update(ended_file=Path("bg.txt").read_text())
        return reply(tool_use("run_shell", {"command": "echo more work"}))

    server.add(reply(background(f"{wait}; echo done > bg.txt; echo finished")),
               while_it_runs, once_it_ended,
               reply(tool_use("read_file", {"file_path": ".tool-results/bash_1.output"})),
               reply("It finished."))
    run_agent(mod, client, "start it, then go on")
    assert not server.rejected, server.rejected  # the transcript rules hold
    [started] = sent_tool_results(server.requests[1])
    assert not started["is_error"], result_text(started)
    assert "bash_1" in result_text(started) and ".tool-results/bash_1.output" in \
        result_text(started)
    assert seen["running"] and not seen["file"], "the call waited for the command"
    assert seen["notices"] == [] and seen["before"] == [], "told before it ended"
    assert seen["ended_file"] == "done\n"
    told = server.requests[3]["messages"][-1]["content"]
    assert [b["type"] for b in told] == ["tool_result", "text"], "results, then the notice"
    assert "<task-id>bash_1</task-id>" in told[1]["text"]
    assert "<status>completed</status>" in told[1]["text"]
    assert "completed (exit code 0)" in told[1]["text"]
    assert ".tool-results/bash_1.output" in told[1]["text"]
    [read] = sent_tool_results(server.requests[4])
    assert "finished" in result_text(read) and not read["is_error"]
    assert all("task-notification" not in t for t in notices(server.requests[4]))


def test_a_failing_background_command_is_told_with_its_exit_code(mod, server, client,
                                                                 trusted):
    """A command that fails in the background: status failed, its exit code, on the
    first request after it ended (here the next prompt's, a string made blocks)."""
    # subtle: it waits for the test's go, so that it cannot end before the request
    # that follows its start (that request would carry the notice instead)
    wait, go = held(trusted)
    server.add(reply(background(f"{wait}; ls no-such-file")), reply("Started."))
    messages, _ = run_agent(mod, client, "start it")
    go()
    wait_until(lambda: the_agent(mod).tasks["bash_1"]["status"] != "running")
    messages.append({"role": "user", "content": "and?"})
    server.add(reply("It failed."))
    mod.agent_loop(messages, the_agent(mod, client))
    assert not server.rejected, server.rejected
    prompt, notice = server.requests[2]["messages"][-1]["content"]
    assert prompt == {"type": "text", "text": "and?"}
    assert "<status>failed</status>" in notice["text"]
    assert "failed with exit code 2" in notice["text"]
    assert "no-such-file" in Path(".tool-results/bash_1.output").read_text()  # stderr


def test_task_stop_ends_another_for_good(mod, server, client, trusted):
    """task_stop (TaskStop) of a running task kills its whole process group: its file
    never appears, no notification follows; stopping it again, or an unknown id, is
    an is_error result the model can act on."""
    server.add(reply(background("sleep 912.71828; echo late > stopped.txt")),
               reply(tool_use("task_stop", {"task_id": "bash_1"})),
               reply(tool_use("task_stop", {"task_id": "bash_1"}),
                     tool_use("task_stop", {"task_id": "bash_9"})),
               reply("Stopped."))
    run_agent(mod, client, "start it, then stop it")
    assert not server.rejected, server.rejected
    [stopped] = sent_tool_results(server.requests[2])
    assert not stopped["is_error"] and "Stopped task bash_1" in result_text(stopped)
    again, unknown = sent_tool_results(server.requests[3])
    assert again["is_error"] and "'bash_1' is not running (status: killed)" in \
        result_text(again)
    assert unknown["is_error"] and "'bash_9' is not running (status: unknown)" in \
        result_text(unknown)
    pid = the_agent(mod).tasks["bash_1"]["proc"].pid
    wait_until(lambda: not group_alive(pid))  # killed: gone in a moment
    assert_no_process("sleep 912.71828")  # gone: stopped.txt can never be written
    assert not Path("stopped.txt").exists(), "the stopped command went on"
    assert all("task-notification" not in t for r in server.requests for t in notices(r))


def test_taskstop_answers_to_its_claude_code_name_in_rules(mod, server, client, workspace):
    """A deny rule on TaskStop, as in Claude Code's settings, denies task_stop."""
    write_settings(workspace, {"defaultMode": "acceptEdits", "deny": ["TaskStop"]})
    server.add(reply(tool_use("task_stop", {"task_id": "bash_1"})), reply("No."))
    run_agent(mod, client, "stop it")
    [denied] = sent_tool_results(server.requests[1])
    assert denied["is_error"] and "deny rule TaskStop" in result_text(denied)


def test_a_background_command_is_asked_about_and_confined_like_any_other(
        mod, server, client, workspace):
    """In default mode with no terminal, a writing background command is refused, as a
    foreground one is: nothing starts."""
    server.add(reply(background("echo x > made.txt")), reply("Refused."))
    run_agent(mod, client, "write it")
    [refused] = sent_tool_results(server.requests[1])
    assert refused["is_error"] and "bash_1" not in result_text(refused)
    assert the_agent(mod).tasks == {}
    time.sleep(0.5)
    assert not Path("made.txt").exists()


def test_a_background_read_runs_beside_reads_a_background_write_alone(mod):
    """Batching is unchanged: in the background too, a command is concurrency-safe only
    if it only reads."""
    assert concurrency_safe(mod, "run_shell", {"command": "ls",
                                                 "run_in_background": True})
    assert not concurrency_safe(mod, "run_shell", {"command": "make > log",
                                                     "run_in_background": True})
    assert not concurrency_safe(mod, "task_stop", {"task_id": "bash_1"})


@pytest.mark.parametrize("how", ["exit", "end of input", "one task"])
def test_no_background_command_outlives_the_agent(chapter_name, how, server, trusted):
    """`exit`, the end of input and the end of a one-task run stop every background
    command: no process of the workspace remains."""
    # long enough that a slow start of the agent (a loaded machine) cannot outlast it
    marker = {"exit": "913.14159", "end of input": "912.71829", "one task": "911.41421"}[how]
    server.add(reply(background(f"sleep {marker}0; echo late > late.txt")),
               reply("Started it."))
    args, stdin = (("go",), None) if how == "one task" else \
        ((), "go\nexit\n" if how == "exit" else "go\n")
    proc = run_main(chapter_name, *args, cwd=trusted, input=stdin,
                    ANTHROPIC_API_KEY="k", ANTHROPIC_BASE_URL=server.url)
    assert proc.returncode == 0, proc.stderr
    assert "Started it." in proc.stdout
    assert_no_process(f"sleep {marker}0")
    time.sleep(0.2)
    assert not (trusted / "late.txt").exists()


@pytest.fixture(params=chapter_params("s06"))
def chapter_name(request):
    return request.param


def test_a_one_task_cli_run_leaves_no_process(server, trusted):
    """The file run as a learner runs it: a one-task run that started a background
    command exits, and the command is gone with it."""
    from conftest import run_cli
    # a sleep longer than the run may take (its timeout), so it cannot end on its own
    server.add(reply(background("sleep 961.73205; echo late > late.txt")),
               reply("Started it."))
    proc = run_cli("s06_concurrency", "go", cwd=trusted, timeout=conftest.GUARD,
                   ANTHROPIC_API_KEY="k", ANTHROPIC_BASE_URL=server.url)
    assert proc.returncode == 0, proc.stderr
    assert_no_process("sleep 961.73205")  # killed at exit: it outlasts GUARD
    assert not (trusted / "late.txt").exists()
