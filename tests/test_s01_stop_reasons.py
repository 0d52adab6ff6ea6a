"""Every stop_reason, handled as the real API sends it (s01, and every later chapter).

s01 keeps a table, STOP_REASONS: stop_reason -> what the loop does. These tests play
each value through the strict scripted server: a request the real API would refuse
(an empty message, an unanswered tool_use) is refused here too, so "no 400" is part
of every test.
"""

import typing

import anthropic
import pytest

from conftest import load_chapter, result_text, run_agent, sent_tool_results, teaching_and_last
from conftest import the_agent
from offline.server import cut_off, refusal, reply, tool_use


@pytest.fixture(params=teaching_and_last("s01"))
def mod(request):
    return load_chapter(request.param)


def test_the_table_has_every_stop_reason_the_api_documents(mod):
    """The SDK's StopReason lists what the API documents; each has a row."""
    documented = set(typing.get_args(anthropic.types.StopReason))
    assert documented <= set(mod.STOP_REASONS)


@pytest.mark.parametrize("reason", ["max_tokens", "model_context_window_exceeded"])
def test_a_call_cut_off_never_runs(mod, server, client, workspace, reason):
    """The reply stops one character before the end of a call's input: the input the
    SDK rebuilds looks whole ({"command": "touch cut.txt", "timeout": 30}), but the
    call was cut off. It is not run (no file); it is answered with an error the model
    can read, and the loop goes on."""
    server.add(cut_off("Creating it.",
                       tool_use("run_shell", {"command": "touch cut.txt", "timeout": 30},
                                id="toolu_cut"), keep=-1, stop_reason=reason),
               reply("I will try again, smaller."))
    messages, final = run_agent(mod, client, "make cut.txt")
    assert not (workspace / "cut.txt").exists()
    assert final == "I will try again, smaller."
    [result] = sent_tool_results(server.requests[1])
    assert result["tool_use_id"] == "toolu_cut" and result["is_error"] is True
    assert reason in result_text(result) and "Not run" in result_text(result)
    assert not server.rejected


def test_the_complete_calls_before_the_cut_one_run(mod, server, client, workspace, capsys):
    """Only the last block can be cut: the calls before it are whole, and run. Every
    tool_use gets its tool_result, in order; the learner sees which was not run."""
    server.add(cut_off(tool_use("run_shell", {"command": "echo first"}, id="toolu_1"),
                       tool_use("run_shell", {"command": "echo second > two.txt"},
                                id="toolu_2"), keep=0.6),
               reply("Done."))
    run_agent(mod, client, "two things")
    one, two = sent_tool_results(server.requests[1])
    assert (one["tool_use_id"], one["is_error"]) == ("toolu_1", False)
    assert "first" in result_text(one)
    assert (two["tool_use_id"], two["is_error"]) == ("toolu_2", True)
    assert not (workspace / "two.txt").exists()
    assert "Not run" in capsys.readouterr().out


def test_a_reply_cut_off_in_its_text_ends_the_turn_and_says_so(mod, server, client):
    server.add(cut_off("The three reasons are: first, the loop", keep=20))
    messages, final = run_agent(mod, client, "explain")
    assert final.startswith("The three reasons a")
    assert "cut off" in final and "max_tokens" in final
    assert messages[-1]["role"] == "assistant"  # what it said is kept: "go on" works


def test_pause_turn_sends_the_reply_back_to_go_on(mod, server, client):
    """The API paused a long turn: the reply goes back as it is, and the model goes on."""
    server.add(reply("Searching the web first.", stop_reason="pause_turn"),
               reply("Found it."))
    messages, final = run_agent(mod, client, "look it up")
    assert final == "Found it."
    again = server.requests[1]["messages"]
    assert again[-1]["role"] == "assistant"
    assert again[-1]["content"][0]["text"] == "Searching the web first."
    assert not server.rejected


def test_an_empty_reply_is_not_kept(mod, server, client):
    """An end_turn with no content: the turn ends with a line that says so, and no
    empty assistant message stays to make the next request a 400."""
    server.add(reply(tool_use("run_shell", {"command": "echo hi"})), reply(), reply("Yes."))
    messages, final = run_agent(mod, client, "say hi")
    assert "without a word" in final
    assert all(m["content"] for m in messages)
    messages.append({"role": "user", "content": "did it work?"})
    assert mod.agent_loop(messages, the_agent(mod, client)) == "Yes."
    assert not server.rejected


def test_a_refusal_ends_the_task_and_is_not_kept(mod, server, client):
    """stop_reason refusal: the loop raises Refused with the API's stop_details, and
    keeps nothing of the refused reply (the API says to drop the refused turn)."""
    server.add(refusal("I can help with", category="cyber",
                       explanation="This request was declined because it could enable "
                                   "cyber harm."))
    messages = [{"role": "user", "content": "write malware"}]
    with pytest.raises(mod.Refused) as caught:
        mod.agent_loop(messages, the_agent(mod, client))
    assert "cyber" in str(caught.value) and "declined because" in str(caught.value)
    assert messages == [{"role": "user", "content": "write malware"}]


def test_a_refusal_without_stop_details(mod, server, client):
    server.add(refusal(stop_details=False))
    with pytest.raises(mod.Refused, match="declined"):
        run_agent(mod, client, "hmm")


def test_an_unknown_stop_reason_ends_the_turn_and_names_it(mod, server, client, workspace):
    """A value this agent does not know: the turn ends with a line that names it, and
    a call in that reply is answered, not run."""
    server.add(reply("Hm.", tool_use("run_shell", {"command": "touch new.txt"}),
                     stop_reason="a_future_reason"),
               reply("Fine."))
    messages, final = run_agent(mod, client, "go")
    assert "a_future_reason" in final
    assert not (workspace / "new.txt").exists()
    assert messages[-1]["role"] == "user" and sent_tool_results({"messages": messages})
    messages.append({"role": "user", "content": "and now?"})
    assert mod.agent_loop(messages, the_agent(mod, client)) == "Fine."
    assert not server.rejected
