"""s06: the `agent` tool runs subagents, each with its own conversation, side by side.

Subagents' requests reach the scripted server in no fixed order, so their turns are
routed by the request's first user message (the subagent's prompt): see
`offline.server.routed`.
"""

import threading

import pytest

from conftest import (chapter_params, load_chapter, call_tool, result_text, run_agent,
                      sent_tool_results)
from offline.server import error, reply, routed, tool_use


@pytest.fixture(params=chapter_params("s06"))
def mod(request):
    return load_chapter(request.param)


def agent_call(description, prompt, id=None, **extra):
    """A fresh (general-purpose) agent's call, unless `extra` names another kind."""
    return tool_use("agent", {"description": description, "prompt": prompt,
                              "subagent_type": "general-purpose", **extra}, id=id)


def test_subagents_run_in_parallel_each_with_its_own_messages(mod, server, client, workspace, capsys):
    """Two subagents: both first requests are in flight at once (a barrier only opens
    for two), each sees only its prompt, and their answers come back in call order."""
    (workspace / "a.txt").write_text("apples\n")
    (workspace / "b.txt").write_text("bananas\n")
    both = threading.Barrier(2, timeout=15)

    def together(turn):
        def wait_for_the_other(request):
            try:
                both.wait()
            except threading.BrokenBarrierError:
                return error(500, "api_error", "the subagents did not run at the same time")
            return turn
        return wait_for_the_other

    server.add(
        reply("Two helpers.", agent_call("read a", "Read a.txt and say what it holds.", id="toolu_a"),
              agent_call("read b", "Read b.txt and say what it holds.", id="toolu_b")),
        *routed({
            "Read a.txt and say what it holds.": [
                together(reply(tool_use("read_file", {"file_path": "a.txt"}))),
                reply("a.txt holds apples.")],
            "Read b.txt and say what it holds.": [
                together(reply(tool_use("read_file", {"file_path": "b.txt"}))),
                reply("b.txt holds bananas.")],
        }),
        reply("Both read."),
    )
    _, final = run_agent(mod, client, "what is in a and b?")
    assert final == "Both read."
    firsts = [r for r in server.requests if r["messages"][0]["content"].startswith("Read ")
              and len(r["messages"]) == 1]
    assert sorted(r["messages"][0]["content"][5] for r in firsts) == ["a", "b"]  # fresh, prompt only
    results = sent_tool_results(server.requests[-1])
    assert [r["tool_use_id"] for r in results] == ["toolu_a", "toolu_b"]
    assert result_text(results[0]) == "a.txt holds apples."
    assert result_text(results[1]) == "b.txt holds bananas."
    assert not any(r["is_error"] for r in results)
    out = capsys.readouterr().out
    assert "[read a] > read_file(file_path='a.txt')" in out  # labelled per subagent
    assert "[read b] > read_file(file_path='b.txt')" in out


def test_subagent_gets_only_the_tools_it_is_given(mod, server, client, workspace):
    (workspace / "a.txt").write_text("x\n")
    prompt = "Only read."
    server.add(reply(agent_call("reader", prompt, tools=["read_file"])),
               *routed({prompt: [reply(tool_use("run_shell", {"command": "ls"})),
                                 reply("could not list")]}),
               reply("ok"))
    run_agent(mod, client, "go")
    sub = [r for r in server.requests if r["messages"][0]["content"] == prompt]
    assert [t["name"] for t in sub[0]["tools"]] == ["read_file"]
    refused = sent_tool_results(sub[1])[0]
    assert refused["is_error"] and "not among this agent's tools" in result_text(refused)


def test_subagent_with_an_unknown_tool_is_an_error(mod, server, client):
    server.add(reply(agent_call("x", "p", tools=["teleport"])), reply("ok"))
    run_agent(mod, client, "go")
    result = sent_tool_results(server.requests[1])[0]
    assert result["is_error"] and "teleport" in result_text(result)
    assert len(server.requests) == 2  # no subagent was started


def test_depth_limit_stops_runaway_nesting(mod, server, client, monkeypatch):
    """At the depth limit an agent call is refused with a clear error, as data."""
    monkeypatch.setattr(mod, "MAX_AGENT_DEPTH", 1)
    server.add(reply(agent_call("outer", "Delegate again.")),
               *routed({"Delegate again.": [reply(agent_call("inner", "Go deeper.")),
                                            reply("I did it myself.")]}),
               reply("done"))
    _, final = run_agent(mod, client, "go")
    assert final == "done"
    sub = [r for r in server.requests if r["messages"][0]["content"] == "Delegate again."]
    refused = sent_tool_results(sub[1])[0]
    assert refused["is_error"] and "at most 1 deep" in result_text(refused)
    assert result_text(sent_tool_results(server.requests[-1])[0]) == "I did it myself."
    assert not any(r["messages"][0]["content"] == "Go deeper." for r in server.requests)


def test_subagent_turn_limit_is_a_clear_error(mod, server, client, monkeypatch):
    monkeypatch.setattr(mod, "SUBAGENT_MAX_TURNS", 2)
    prompt = "Loop forever."
    server.add(reply(agent_call("looper", prompt)),
               *routed({prompt: [reply(tool_use("run_shell", {"command": "echo again"}))] * 2}),
               reply("gave up"))
    _, final = run_agent(mod, client, "go")
    assert final == "gave up"
    result = sent_tool_results(server.requests[-1])[0]
    assert result["is_error"]
    assert "looper" in result_text(result) and "gave no final answer" in result_text(result)


def test_subagent_calls_pass_the_permission_gate(mod, server, client, workspace):
    """A subagent's write is asked like any other: with no terminal, it is denied."""
    prompt = "Write a file."
    server.add(reply(agent_call("writer", prompt)),
               *routed({prompt: [reply(tool_use("write_file", {"file_path": "x.txt", "content": "x"})),
                                 reply("it was denied")]}),
               reply("ok"))
    run_agent(mod, client, "go")
    sub = [r for r in server.requests if r["messages"][0]["content"] == prompt]
    denied = sent_tool_results(sub[1])[0]
    assert denied["is_error"] and "denied" in result_text(denied).lower()
    assert not (workspace / "x.txt").exists()


def test_agent_outside_a_loop_is_an_error(mod):
    output, is_error = call_tool(mod, "agent", description="d", prompt="p")
    assert is_error and "agent loop" in output
