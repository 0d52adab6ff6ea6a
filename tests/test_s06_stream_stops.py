"""s06: streaming meets the live API: cut-off calls and error events (and every later
chapter).

Streaming early start offers a tool_use to the runner as soon as it is known whole:
when another block follows it, or when the reply ends as it meant to. A block cut
off by max_tokens is closed like a whole one, so the last call of a reply waits for
its stop_reason. An `error` event in the middle of a stream is named as the error it
is, and the REPL goes on.
"""

from pathlib import Path

import pytest

from conftest import chapter_params, load_chapter, result_text, run_agent, run_main
from conftest import the_agent
from conftest import sent_tool_results
from offline.server import cut_off, error_event, reply, tool_use


@pytest.fixture(params=chapter_params("s06"))
def chapter(request):
    return request.param


@pytest.fixture
def mod(chapter):
    return load_chapter(chapter)


def was_read(mod, name: str) -> bool:
    """read_file remembers every file it read (s03's read-before-edit)."""
    return (Path.cwd() / name).resolve() in the_agent(mod).permissions.read


def test_a_call_cut_off_mid_stream_is_never_started(mod, server, client, workspace, capsys):
    """The reply stops one character before the end of a safe call: its block closes,
    its input looks whole, but stop_reason says max_tokens. It never starts."""
    (workspace / "a.txt").write_text("alpha\n")
    server.add(cut_off("Reading.", tool_use("read_file", {"file_path": "a.txt"},
                                            id="toolu_cut"), keep=-1, event_delay=0.01),
               reply("I will ask again."))
    _, final = run_agent(mod, client, "read a.txt")
    assert final == "I will ask again."
    assert not was_read(mod, "a.txt")
    [result] = sent_tool_results(server.requests[1])
    assert result["is_error"] and "Not run" in result_text(result)
    assert "max_tokens" in result_text(result)
    assert "started while it streamed" not in capsys.readouterr().out
    assert not server.rejected


def test_the_whole_calls_before_a_cut_one_start_early_and_run(mod, server, client, workspace):
    (workspace / "a.txt").write_text("alpha\n")
    (workspace / "b.txt").write_text("beta\n")
    server.add(cut_off(tool_use("read_file", {"file_path": "a.txt"}, id="toolu_a"),
                       tool_use("read_file", {"file_path": "b.txt"}, id="toolu_b"),
                       keep=-2, event_delay=0.01),
               reply("Half done."))
    run_agent(mod, client, "read both")
    a, b = sent_tool_results(server.requests[1])
    assert "alpha" in result_text(a) and not a["is_error"] and was_read(mod, "a.txt")
    assert b["is_error"] and not was_read(mod, "b.txt")


def test_the_last_call_of_a_whole_reply_still_starts(mod, server, client, workspace, capsys):
    """A reply that ends on tool_use: its last call starts as the stream ends."""
    (workspace / "a.txt").write_text("alpha\n")
    server.add(reply(tool_use("read_file", {"file_path": "a.txt"}), event_delay=0.01),
               reply("ok"))
    run_agent(mod, client, "read")
    assert was_read(mod, "a.txt")
    assert "[reply complete: read_file started while it streamed]" in capsys.readouterr().out


def test_an_error_event_mid_stream_is_named_and_the_repl_goes_on(chapter, server, workspace):
    """Status 200, text, then `error` overloaded_error: one line that says overloaded,
    not "the API answered 200"; the exchange is dropped; the next prompt is answered."""
    (workspace / "a.txt").write_text("alpha\n")
    server.add(error_event("Let me look.", tool_use("read_file", {"file_path": "a.txt"})),
               reply("Fine now."))
    proc = run_main(chapter, cwd=workspace, input="one\ntwo\n",
                    ANTHROPIC_API_KEY="k", ANTHROPIC_BASE_URL=server.url)
    assert proc.returncode == 0, proc.stderr
    [line] = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert "overloaded" in line and "mid-stream" in line and "200" not in line
    assert "{'" not in proc.stderr
    assert "Fine now." in proc.stdout
    assert server.requests[-1]["messages"] == [{"role": "user", "content": "two"}]
    assert not server.rejected


def test_a_one_shot_task_with_an_error_event_exits_non_zero(chapter, server, workspace):
    server.add(error_event("Starting", kind="api_error", message="Internal server error"))
    proc = run_main(chapter, "go", cwd=workspace,
                    ANTHROPIC_API_KEY="k", ANTHROPIC_BASE_URL=server.url)
    assert proc.returncode == 1
    assert "api_error, mid-stream" in proc.stderr and "Internal server error" in proc.stderr
