"""What real API traffic showed (issue 23), each through the real SDK (s01 and later).

The real 429s and 529s carry `x-should-retry: true`, which changes the form of the
SDK's retry log; a long REPL session outgrows the model's context window; a paused
turn's text must be shown; consecutive text blocks are paragraphs; in s06 a call
started early stops when its reply fails.
"""

import os

import anthropic
import pytest

from conftest import the_agent
from conftest import (assert_no_process, chapter_params, load_chapter, run_main,
                      teaching_and_last)
from offline.server import (error_event, overloaded, prompt_tokens, refusal, reply,
                            tool_use)


@pytest.fixture(params=teaching_and_last("s01"))
def chapter(request):
    return request.param





def live(server, **extra):
    return dict(ANTHROPIC_API_KEY="test-key", ANTHROPIC_BASE_URL=server.url, **extra)


def prompts(request: dict) -> list:
    """The learner's prompts in a request (user messages of plain text)."""
    return [m["content"] for m in request["messages"]
            if m["role"] == "user" and isinstance(m["content"], str)]


def test_a_529_with_x_should_retry_is_named_by_status_and_type(chapter, server, workspace):
    """The server sends x-should-retry: true as the API does: the line still names
    the status and the error type, not 'API not reached'."""
    server.add(overloaded(retry_after=0.01), reply("Done."))
    proc = run_main(chapter, "do it", cwd=workspace, **live(server))
    assert proc.returncode == 0, proc.stderr
    [line] = proc.stderr.splitlines()
    assert line.startswith("[API error 529 overloaded_error · retrying in 0.0s")


def test_a_session_past_the_context_window_drops_its_oldest_exchanges(
        chapter, server, workspace):
    """The window holds about two exchanges: the fourth prompt is too long, the REPL
    says so in one line, drops the oldest exchanges, and the next prompt is answered
    from a conversation that starts with a prompt."""
    def first(body):  # the window: this request and about 1,500 tokens more
        server.context_window = prompt_tokens(body) + 1500
        return reply("a" * 2400)
    server.add(first, *[reply(c * 2400) for c in "bcde"])
    proc = run_main(chapter, cwd=workspace, input="one\ntwo\nthree\nfour\nfive\n",
                    **live(server))
    assert proc.returncode == 0, proc.stderr
    [line] = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert "outgrew the model's context window" in line and "oldest exchange" in line
    last = server.requests[-1]
    assert prompts(last)[-1] == "five" and "one" not in prompts(last)
    assert last["messages"][0]["role"] == "user"
    assert isinstance(last["messages"][0]["content"], str)
    assert proc.stdout.count(f"{chapter[:3]} >> ") == 6  # the REPL went on to the end
    assert not server.rejected


def test_clear_starts_over_and_a_full_window_is_announced_once(chapter, server, workspace):
    """A reply whose usage nears the window warns once; /clear empties the
    conversation."""
    full = reply("Big.")
    full["input_tokens"] = 190_000  # what the API counted for this request
    server.add(full, reply("Again."), reply("Fresh."))
    proc = run_main(chapter, cwd=workspace, input="one\ntwo\n/clear\nthree\n",
                    **live(server))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("[context window:") == 1
    assert "(conversation cleared)" in proc.stdout
    assert prompts(server.requests[-1]) == ["three"]


def test_a_paused_turns_text_is_shown_and_text_blocks_are_paragraphs(
        chapter, server, workspace):
    server.add(reply("Searching first.", stop_reason="pause_turn"),
               reply("Para one.", " ", "Para two."))
    proc = run_main(chapter, "go", cwd=workspace, **live(server))
    assert proc.returncode == 0, proc.stderr
    assert "Searching first." in proc.stdout
    assert "Para one.Para two." not in proc.stdout
    if chapter < "s06":  # s06 streams each block on its own line
        assert "Para one.\n\nPara two." in proc.stdout
    assert not server.rejected


@pytest.mark.parametrize("chapter", chapter_params("s06"))
def test_a_call_started_early_stops_when_the_reply_fails(chapter, server, workspace):
    """A safe, slow call starts while the reply streams; then the stream breaks off
    with an error event. The call is killed at once and its result is never sent."""
    mod = load_chapter(chapter)
    client = anthropic.Anthropic(api_key="test-key", base_url=server.url, max_retries=0)
    (workspace / "a.txt").write_text("alpha\n")
    sleep = f"sleep 30.{os.getpid()}"  # unique: other workers run this test too
    server.add(error_event(tool_use("run_shell", {"command": f"{sleep}; touch ended"}),
                           "More to say.", event_delay=0.05))
    with pytest.raises(anthropic.APIStatusError):
        mod.agent_loop([{"role": "user", "content": "go"}], the_agent(mod, client))
    assert not (workspace / "ended").exists()  # it did not wait for the command
    assert not the_agent(mod).running
    assert_no_process(sleep)  # killed, not left running
    assert len(server.requests) == 1  # no tool_result was sent


def test_a_refusals_reason_is_on_screen_plain_and_streamed(chapter, server, workspace):
    """s01-s05 ask without streaming, s06 streams: both show the category and the
    explanation (anthropic >= 0.98 carries stop_details in both modes)."""
    major, minor = (int(p) for p in anthropic.__version__.split(".")[:2])
    assert (major, minor) >= (0, 98), "requirements.txt pins anthropic>=0.98"
    server.add(refusal(category="cyber", explanation="It could enable cyber harm."))
    proc = run_main(chapter, "write malware", cwd=workspace, **live(server))
    assert proc.returncode == 1
    [line] = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert "Refused: the model declined" in line and "cyber: It could enable cyber harm." in line


@pytest.mark.parametrize("chapter", chapter_params("s06"))
def test_a_subagent_started_early_is_told_to_stop_when_the_reply_fails(
        chapter, server, workspace):
    """An `agent` call starts while the reply streams; the stream breaks off. The
    subagent stops at its next event: it makes no further request."""
    mod = load_chapter(chapter)
    client = anthropic.Anthropic(api_key="test-key", base_url=server.url, max_retries=0)
    (workspace / "a.txt").write_text("alpha\n")
    server.add(error_event(tool_use("agent", {"description": "look", "prompt": "read",
                                               "subagent_type": "general-purpose"}),
                           "More to say.", event_delay=0.05),
               reply(tool_use("read_file", {"file_path": "a.txt"}), delay=0.5),
               reply("Sub done."))
    with pytest.raises(anthropic.APIStatusError):
        mod.agent_loop([{"role": "user", "content": "go"}], the_agent(mod, client))
    assert len(server.requests) == 2 and server.remaining == 1
    assert (workspace / "a.txt").resolve() not in the_agent(mod).permissions.read
