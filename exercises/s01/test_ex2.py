"""Checker for exercise s01 ex2 (core): a token budget.

    pytest exercises/s01/test_ex2.py

It runs your `agent_loop(..., token_budget=N)` against a scripted model and checks
when it stops, what it returns, what it ran, and that the transcript it leaves would
still be accepted by the API.
"""

import inspect
from pathlib import Path

from exercises.conftest import the_agent
from exercises.conftest import blocks, result_text, run_agent, transcript_problem
from offline.server import reply, tool_use


def output_tokens(server, client, turn: dict) -> int:
    """What the API will report as this reply's output tokens: ask it once."""
    server.add(turn)
    response = client.messages.create(model="calibrate", max_tokens=100,
                                      messages=[{"role": "user", "content": "hi"}])
    server.requests.clear()
    return response.usage.output_tokens


def test_token_budget_is_a_parameter(mod):
    """agent_loop takes token_budget, and it is None (no budget) unless given."""
    params = inspect.signature(mod.agent_loop).parameters
    assert "token_budget" in params, "agent_loop has no token_budget parameter."
    assert params["token_budget"].default is None, (
        "token_budget should default to None, so that a task without a budget runs as before.")


def test_no_budget_runs_as_before(mod, server, client):
    """Without a budget, the loop runs every tool and returns the answer, as in s01."""
    server.add(reply(tool_use("run_shell", {"command": "touch a.txt"})),
               reply(tool_use("run_shell", {"command": "touch b.txt"})),
               reply("Made two files."))
    _, final = run_agent(mod, client, "make files")
    assert final == "Made two files.", (
        f"without a budget the answer should come back, not {final!r}")
    missing = [f for f in ("a.txt", "b.txt") if not Path(f).exists()]
    assert not missing, f"both commands should have run, but {missing} was not made"


def test_stops_once_the_budget_is_spent(mod, server, client):
    """Budget = what the first two replies cost: the loop stops after the second one."""
    first = reply(tool_use("run_shell", {"command": "touch first.txt"}))
    second = reply(tool_use("run_shell", {"command": "touch second.txt"}, id="toolu_second"))
    budget = output_tokens(server, client, first) + output_tokens(server, client, second)
    server.add(first, second, reply(tool_use("run_shell", {"command": "touch third.txt"})),
               reply("Done."))
    messages, final = run_agent(mod, client, "make files", token_budget=budget)
    assert len(server.requests) == 2, (
        f"the first two replies spent the whole budget ({budget} output tokens), so the "
        f"model should have been called twice, not {len(server.requests)} times.")
    assert isinstance(final, str) and final.startswith("[stopped"), (
        f"when the budget stops the task, return a line that starts with '[stopped', not {final!r}")
    assert f"{budget:,}" in final, f"say what the budget was ({budget:,}) in {final!r}"
    assert Path("first.txt").exists(), (
        "the first reply's command was within budget and should run: first.txt is missing")
    assert not Path("second.txt").exists(), (
        "the reply that spent the budget asked for a command, and it ran. Answer it "
        "without running it: the model would never see its result.")
    problem = transcript_problem(messages)
    assert problem is None, f"the transcript you leave is invalid: {problem}"
    last = blocks(messages[-1])
    assert [b.get("tool_use_id") for b in last] == ["toolu_second"] and last[0].get("is_error"), (
        "the last message should hold one tool_result for the unrun call, with is_error "
        f"true; it holds {last}")
    assert "budget" in result_text(last[0]), (
        f"tell the model why its call was not run (mention the budget): {result_text(last[0])!r}")


def test_every_call_of_the_last_reply_is_answered(mod, server, client):
    """A budget of 1: the first reply spends it; both of its calls get a tool_result, none runs."""
    server.add(reply("Two at once.",
                     tool_use("run_shell", {"command": "touch x.txt"}, id="toolu_x"),
                     tool_use("run_shell", {"command": "touch y.txt"}, id="toolu_y")),
               reply("Done."))
    messages, final = run_agent(mod, client, "go", token_budget=1)
    assert len(server.requests) == 1, (
        "a budget of 1 is spent by the first reply: call the model once")
    ran = [f for f in ("x.txt", "y.txt") if Path(f).exists()]
    assert not ran, f"neither call should run, but {ran} was made"
    problem = transcript_problem(messages)
    assert problem is None, f"the transcript you leave is invalid: {problem}"
    assert final.startswith("[stopped"), f"return a '[stopped ...' line, not {final!r}"


def test_an_answer_that_spends_the_budget_is_still_returned(mod, server, client):
    """A reply with no tool_use is the answer: return it, even if it spent the budget."""
    server.add(reply(tool_use("run_shell", {"command": "echo hi"})),
               reply("Here is the answer."))
    _, final = run_agent(mod, client, "go", token_budget=1_000_000)
    assert final == "Here is the answer.", f"a generous budget changes nothing; got {final!r}"
    server.add(reply("Straight answer."))
    _, final = run_agent(mod, client, "go", token_budget=1)
    assert final == "Straight answer.", (
        f"the reply that spent the budget had no tool_use: it is the answer. Got {final!r}")


def test_the_conversation_can_go_on(mod, server, client):
    """After a stop, the next prompt continues the same transcript, and the API accepts it."""
    server.add(reply(tool_use("run_shell", {"command": "echo one"})), reply("unused"))
    messages, _ = run_agent(mod, client, "first", token_budget=1)
    server.turns.clear()
    messages.append({"role": "user", "content": "second"})
    server.add(reply("Carrying on."))
    final = mod.agent_loop(messages, the_agent(mod, client))
    assert final == "Carrying on.", f"the next task should run normally; got {final!r}"
    problem = transcript_problem(messages)
    assert problem is None, f"the transcript is invalid: {problem}"
