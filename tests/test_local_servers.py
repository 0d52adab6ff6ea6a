"""Every chapter against a local model server (Ollama, llama.cpp's llama-server).

Such a server speaks the Messages API with gaps its own documentation lists: usage
without cache fields (it ignores cache_control), errors always as an HTTP status (no
`error` event in a stream), and a model that cannot use tools is refused in the
server's own words. The scripted server plays each gap (ScriptedServer(imitate=...),
offline/server.py's LOCAL_SERVERS); each chapter, run as a learner runs it (main(),
one task), finishes its task, or says in one line what to change.
"""

import pytest

from conftest import CHAPTERS, result_text, run_main, sent_tool_results, teaching_and_last
from offline.server import ScriptedServer, error_event, reply, tool_use

SERVERS = ["ollama", "llama-server"]


@pytest.fixture(params=teaching_and_last("s01"))
def chapter(request):
    return request.param


def live(server, model: str = "qwen3-coder") -> dict:
    """What the README tells a learner to set for a local server."""
    return dict(ANTHROPIC_API_KEY="ollama", ANTHROPIC_BASE_URL=server.url,
                MODEL_ID=model)


@pytest.mark.parametrize("imitate", SERVERS)
def test_a_task_with_a_tool_call_finishes(chapter, workspace, imitate):
    """No cache fields in usage, no prompt cache: the task still runs its call and
    ends with the model's answer, and nothing about the missing fields is printed."""
    with ScriptedServer(imitate=imitate) as server:
        server.add(reply(tool_use("run_shell", {"command": "echo local-ok"})),
                   reply("Done, locally."))
        proc = run_main(chapter, "say hi", cwd=workspace, **live(server))
    assert proc.returncode == 0, proc.stderr
    assert "Done, locally." in proc.stdout
    assert "Traceback" not in proc.stderr and "None" not in proc.stdout
    [result] = sent_tool_results(server.requests[1])
    assert "local-ok" in result_text(result) and not result.get("is_error")
    assert all(r["model"] == "qwen3-coder" for r in server.requests)
    if chapter >= "s05":  # the cache display: nothing cached, every token counted
        assert "0 read from the cache, 0 written to it" in proc.stdout
        assert " 0 uncached" not in proc.stdout


# llama-server's refusal is a 500, which waits out the SDK's back-off before the line:
# it runs in the first chapter and the last (explain() is the same in every chapter).
REFUSALS = ([pytest.param(c, "ollama", id=f"{c[:3]}-ollama") for c in CHAPTERS]
            + [pytest.param(c, "llama-server", id=f"{c[:3]}-llama-server")
               for c in (CHAPTERS[0], CHAPTERS[-1])])


@pytest.mark.parametrize("chapter, imitate", REFUSALS)
def test_a_model_that_cannot_use_tools_is_one_line(chapter, workspace, imitate):
    """The server refuses `tools` (Ollama: a 400; llama-server without --jinja: a 500,
    retried first as any 500): one line names the server's reason and what to set."""
    with ScriptedServer(imitate=imitate, tools=False) as server:
        proc = run_main(chapter, "say hi", cwd=workspace, **live(server, "gemma3"))
    assert proc.returncode == 1
    [line] = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert "Traceback" not in proc.stderr and "{'" not in line
    said = {"ollama": "gemma3 does not support tools",
            "llama-server": "tools param requires --jinja flag"}[imitate]
    assert "tools refused" in line and said in line, line
    assert "Set a MODEL_ID (or server flag) that allows tools." in line, line


def test_an_error_mid_stream_comes_as_a_status(workspace):
    """s06 streams; a local server sends a failure as an HTTP status, never as an
    `error` event in the stream: a 500 is retried like the API's, and the task ends."""
    with ScriptedServer(imitate="ollama") as server:
        server.add(error_event("Part", kind="api_error", message="model crashed"),
                   reply("Answered on the retry."))
        proc = run_main("s06_concurrency", "go", cwd=workspace, **live(server))
    assert proc.returncode == 0, proc.stderr
    assert "retrying" in proc.stderr and "Answered on the retry." in proc.stdout
    assert len(server.requests) == 2


def test_a_stop_reason_the_api_does_not_have_is_named(chapter, workspace):
    """A proxy that lets another API's word through (OpenAI's "stop"): the call in
    that reply is not run (its input may be cut short), and the task ends with one
    line that names the stop reason."""
    with ScriptedServer(imitate="ollama") as server:
        server.add(reply(tool_use("run_shell", {"command": "touch ran.txt"}),
                         stop_reason="stop"))
        proc = run_main(chapter, "go", cwd=workspace, **live(server))
    assert "Traceback" not in proc.stderr
    assert "[stopped: stop_reason 'stop' is one this agent does not know]" in proc.stdout
    assert not (workspace / "ran.txt").exists() and len(server.requests) == 1
