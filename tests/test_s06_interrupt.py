"""s06: Ctrl-C while tools run in parallel.

The chapter runs in a subprocess (its REPL, live against the scripted server), and
gets a real SIGINT while two slow commands run side by side. Their processes must be
gone, every call must still get a tool_result, and the REPL must go on.
"""

import os
import re
import signal
import subprocess
import sys

import warm  # tests/warm.py: chapter runs forked warm

import pytest

from conftest import (GUARD, ROOT, chapter_params, clean_env, command_lines,
                      result_text, sent_tool_results, wait_until)
from offline.server import reply, tool_use


# subtle: the processes are found with `ps`, which sees the whole machine; a tag of
# this test run's own makes sure another run's sleeps are never mistaken for ours.
TAG = f"{os.getpid() % 100_000:05d}"


@pytest.fixture(params=chapter_params("s06"))
def chapter(request):
    return request.param


def running(marker: str) -> list[str]:
    """Command lines of the processes that contain `marker`."""
    return command_lines(re.escape(marker))


def wait_for(condition, proc=None):
    """An event: `condition()` holds (True), or the chapter's process has ended and
    it never will (False). The sleeps run longer than conftest's GUARD, so that one
    gone can only have been killed."""
    return wait_until(condition, unless=lambda: proc is not None and proc.poll() is not None)


def test_ctrl_c_kills_running_calls_and_every_call_gets_a_result(chapter, server, workspace):
    server.add(
        reply(tool_use("run_shell", {"command": f"sleep 937.25{TAG}"}, id="toolu_1"),
              tool_use("run_shell", {"command": f"sleep 937.5{TAG}"}, id="toolu_2"),
              tool_use("write_file", {"file_path": "late.txt", "content": "x"}, id="toolu_3")),
        reply("Understood, stopping there."),
    )
    proc = warm.Popen(
        [sys.executable, str(ROOT / chapter / "code.py")], cwd=workspace,
        env=clean_env(ANTHROPIC_API_KEY="test-key", ANTHROPIC_BASE_URL=server.url),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        proc.stdin.write("wait for me\n")
        proc.stdin.flush()
        both = wait_for(lambda: running(f"sleep 937.25{TAG}") and running(f"sleep 937.5{TAG}"), proc)
        assert both, "the two read-only sleeps should run at the same time"
        proc.send_signal(signal.SIGINT)
        gone = wait_for(lambda: not running(f"sleep 937.25{TAG}") and not running(f"sleep 937.5{TAG}"))
        assert wait_for(lambda: len(server.requests) >= 1, proc)
        # the REPL goes on: the next prompt is answered with the whole history
        out, err = proc.communicate("what happened?\nexit\n", timeout=GUARD)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert gone, "Ctrl-C must kill the running commands"
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    assert "[interrupted" in out
    results = [r for m in server.requests[1]["messages"] if m["role"] == "user"
               and isinstance(m["content"], list) for r in m["content"]]
    assert [r["tool_use_id"] for r in results] == ["toolu_1", "toolu_2", "toolu_3"]
    assert all(r["is_error"] for r in results)
    assert "Interrupted" in result_text(results[0]) and "Interrupted" in result_text(results[1])
    assert "Not run" in result_text(results[2])
    assert server.requests[1]["messages"][-1]["content"] == "what happened?"
    assert not (workspace / "late.txt").exists()


def start_repl(chapter, server, workspace):
    proc = warm.Popen(
        [sys.executable, str(ROOT / chapter / "code.py")], cwd=workspace,
        env=clean_env(ANTHROPIC_API_KEY="test-key", ANTHROPIC_BASE_URL=server.url),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc.stdin.write("start\n")
    proc.stdin.flush()
    return proc


def test_ctrl_c_while_streaming_stops_the_early_call_and_drops_the_turn(chapter, server, workspace):
    """A safe call started mid-stream is killed with the stream; the cut-off turn is
    dropped, so the next prompt starts from a valid transcript."""
    server.add(reply(tool_use("run_shell", {"command": f"sleep 937.75{TAG}"}),
                     tool_use("write_file", {"file_path": "x.txt", "content": "y" * 3000}),
                     event_delay=0.2),  # the second block takes half a minute to stream
               reply("fresh start"))
    proc = start_repl(chapter, server, workspace)
    try:
        assert wait_for(lambda: running(f"sleep 937.75{TAG}"), proc), "the safe call should start mid-stream"
        proc.send_signal(signal.SIGINT)
        gone = wait_for(lambda: not running(f"sleep 937.75{TAG}"))
        out, err = proc.communicate("again\nexit\n", timeout=GUARD)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert gone and proc.returncode == 0, err
    assert "Traceback" not in err and "fresh start" in out
    assert server.requests[1]["messages"] == [{"role": "user", "content": "again"}]
    assert not (workspace / "x.txt").exists()


def test_ctrl_c_during_an_unsafe_call_kills_it_and_skips_the_rest(chapter, server, workspace):
    """An unsafe call runs alone in the main thread; Ctrl-C kills it there."""
    (workspace / ".claude").mkdir()
    (workspace / ".claude" / "settings.json").write_text(
        '{"permissions": {"allow": ["Bash(touch:*)", "Bash(sleep:*)"]}}')
    server.add(reply(tool_use("run_shell", {"command": f"touch started && sleep 938.25{TAG}"}, id="toolu_1"),
                     tool_use("run_shell", {"command": "ls"}, id="toolu_2")),
               reply("ok"))
    proc = start_repl(chapter, server, workspace)
    try:
        assert wait_for(lambda: running(f"sleep 938.25{TAG}"), proc)
        proc.send_signal(signal.SIGINT)
        gone = wait_for(lambda: not running(f"sleep 938.25{TAG}"))
        out, err = proc.communicate("and now?\nexit\n", timeout=GUARD)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert gone and proc.returncode == 0, err
    first, second = sent_tool_results({"messages": server.requests[1]["messages"][:-1]})
    assert first["is_error"] and "Interrupted" in result_text(first)
    assert second["is_error"] and "Not run" in result_text(second)
