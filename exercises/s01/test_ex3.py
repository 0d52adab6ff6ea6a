"""Checker for exercise s01 ex3 (stretch): stop a model that repeats itself.

    pytest exercises/s01/test_ex3.py

It checks `same_call_streak(calls)` on its own, then that `agent_loop` stops a task at
the MAX_REPEATS-th identical call in a row, without running it, and leaves a
transcript in which every tool_use still has its tool_result.
"""

from pathlib import Path

from exercises.conftest import the_agent
from exercises.conftest import blocks, result_text, run_agent, transcript_problem
from offline.server import reply, tool_use

LS = ("run_shell", {"command": "ls"})
PWD = ("run_shell", {"command": "pwd"})


def test_same_call_streak(mod):
    """same_call_streak counts the identical calls at the end of the list."""
    cases = [([], 0), ([LS], 1), ([LS, LS], 2), ([PWD, LS, LS, LS], 3),
             ([LS, LS, PWD], 1), ([LS, PWD, LS], 1),
             ([("run_shell", {"command": "ls", "timeout": 5000}),
               ("run_shell", {"timeout": 5000, "command": "ls"})], 2),
             ([("run_shell", {"command": "ls"}), ("read_file", {"command": "ls"})], 1)]
    for calls, want in cases:
        got = mod.same_call_streak(list(calls))
        assert got == want, f"same_call_streak({calls}) returned {got}, not {want}"


def test_max_repeats_is_three(mod):
    """MAX_REPEATS, a setting beside MAX_TURNS, is 3."""
    assert getattr(mod, "MAX_REPEATS", None) == 3, "set MAX_REPEATS = 3 with the other settings"


def test_third_identical_call_stops_the_task(mod, server, client):
    """The same command in three turns: two run, the third is answered but not run."""
    again = {"command": "echo tick >> log.txt"}
    server.add(reply(tool_use("run_shell", again)), reply(tool_use("run_shell", again)),
               reply(tool_use("run_shell", again, id="toolu_third")),
               reply(tool_use("run_shell", again)), reply("Done."))
    messages, final = run_agent(mod, client, "tick")
    ticks = Path("log.txt").read_text().split() if Path("log.txt").exists() else []
    assert len(ticks) == 2, (
        f"the command ran {len(ticks)} time(s): the first two calls should run, and the "
        "third identical one in a row should not.")
    assert len(server.requests) == 3, (
        f"after the third identical call the task stops: the model should be called 3 "
        f"times, not {len(server.requests)}.")
    assert isinstance(final, str) and final.startswith("[stopped"), (
        f"return a line that starts with '[stopped' when the model is stuck, not {final!r}")
    assert "echo tick" in final, f"say which call was repeated, in {final!r}"
    problem = transcript_problem(messages)
    assert problem is None, f"the transcript you leave is invalid: {problem}"
    last = blocks(messages[-1])
    assert last[0].get("tool_use_id") == "toolu_third" and last[0].get("is_error"), (
        f"the unrun call needs a tool_result with is_error true; the last message is {last}")
    assert "not run" in result_text(last[0]), (
        f"tell the model its call was not run ('not run: ...'): {result_text(last[0])!r}")


def test_repeats_within_one_reply_count(mod, server, client):
    """Three identical calls in one reply, then another: two run; the rest are answered, unrun."""
    again = {"command": "echo tick >> log.txt"}
    server.add(reply(tool_use("run_shell", again, id="toolu_1"),
                     tool_use("run_shell", again, id="toolu_2"),
                     tool_use("run_shell", again, id="toolu_3"),
                     tool_use("run_shell", {"command": "touch after.txt"}, id="toolu_4")),
               reply("Done."))
    messages, final = run_agent(mod, client, "tick")
    ticks = Path("log.txt").read_text().split() if Path("log.txt").exists() else []
    assert len(ticks) == 2, f"the repeated command ran {len(ticks)} time(s), not 2"
    assert not Path("after.txt").exists(), (
        "a call after the stuck one, in the same reply, ran. Once the task is stopped, "
        "answer the remaining calls without running them.")
    assert [b.get("tool_use_id") for b in blocks(messages[-1])] == [
        "toolu_1", "toolu_2", "toolu_3", "toolu_4"], (
        "every tool_use needs its tool_result, in order")
    problem = transcript_problem(messages)
    assert problem is None, f"the transcript you leave is invalid: {problem}"
    assert final.startswith("[stopped"), f"return a '[stopped ...' line, not {final!r}"


def test_a_different_call_breaks_the_streak(mod, server, client):
    """ls, ls, pwd, ls, ls: never three in a row, so everything runs to the answer."""
    turns = [LS, LS, PWD, LS, LS]
    server.add(*[reply(tool_use(name, dict(args))) for name, args in turns], reply("Fine."))
    _, final = run_agent(mod, client, "look around")
    assert final == "Fine.", (
        f"the same call twice, a different one, then twice again is not stuck; got {final!r}")
    assert len(server.requests) == 6, "every turn should have run"


def test_a_fresh_task_starts_a_fresh_count(mod, server, client):
    """Two calls at the end of one task and one at the start of the next are not a streak."""
    server.add(reply(tool_use(*LS)), reply(tool_use(*LS)), reply("First done."))
    messages = [{"role": "user", "content": "one"}]
    assert mod.agent_loop(messages, the_agent(mod, client)) == "First done."
    server.add(reply(tool_use(*LS)), reply("Second done."))
    messages.append({"role": "user", "content": "two"})
    final = mod.agent_loop(messages, the_agent(mod, client))
    assert final == "Second done.", (
        "count the calls of the current task only (keep the list inside agent_loop); "
        f"got {final!r}")
