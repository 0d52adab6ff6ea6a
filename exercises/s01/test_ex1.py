"""Checker for exercise s01 ex1 (warm-up): count the tokens.

    pytest exercises/s01/test_ex1.py

It checks `usage_line(usages)` on its own, then that `agent_loop` prints its line
after every model call, with the numbers the (scripted) API reported.
"""

import re

from anthropic.types import Usage

from exercises.conftest import the_agent
from exercises.conftest import run_agent
from offline.server import reply, tool_use

TOKENS_LINE = re.compile(r"^\[tokens\] turn (\d+): ([\d,]+) in, ([\d,]+) out"
                         r" \| task so far: ([\d,]+) in, ([\d,]+) out$")


def turn(*blocks, input_tokens: int) -> dict:
    """A scripted reply that reports `input_tokens` in its usage, as the API does."""
    return dict(reply(*blocks), input_tokens=input_tokens)


def number(text: str) -> int:
    return int(text.replace(",", ""))


def test_usage_line_for_one_call(mod):
    """usage_line([one usage]): the turn and the task so far are the same numbers."""
    got = mod.usage_line([Usage(input_tokens=1200, output_tokens=87)])
    want = "[tokens] turn 1: 1,200 in, 87 out | task so far: 1,200 in, 87 out"
    assert got == want, f"usage_line returned\n    {got!r}\nbut should return\n    {want!r}"


def test_usage_line_adds_up_the_task(mod):
    """usage_line([two usages]): the latest turn's numbers, then the sums of both."""
    usages = [Usage(input_tokens=1200, output_tokens=87),
              Usage(input_tokens=1350, output_tokens=41)]
    got = mod.usage_line(usages)
    want = "[tokens] turn 2: 1,350 in, 41 out | task so far: 2,550 in, 128 out"
    assert got == want, f"usage_line returned\n    {got!r}\nbut should return\n    {want!r}"
    assert len(usages) == 2, "usage_line must not change the list it is given"


def test_loop_prints_one_line_per_model_call(mod, server, client, capsys):
    """Three model calls: agent_loop prints three [tokens] lines, with the API's numbers."""
    server.add(turn(tool_use("run_shell", {"command": "echo one"}), input_tokens=1000),
               turn(tool_use("run_shell", {"command": "echo two"}), input_tokens=1100),
               turn("Both ran.", input_tokens=1250))
    _, final = run_agent(mod, client, "run two commands")
    assert final == "Both ran.", f"agent_loop should still return the answer, not {final!r}"
    out = capsys.readouterr().out
    lines = [ln for ln in out.splitlines() if ln.startswith("[tokens]")]
    assert lines, ("agent_loop printed no line starting with '[tokens]'. Print "
                   f"usage_line(...) after every model call. It printed:\n{out}")
    assert len(lines) == len(server.requests) == 3, (
        f"the model was called {len(server.requests)} times, but agent_loop printed "
        f"{len(lines)} [tokens] line(s): one per call, the last one (the answer) included.")
    parsed = [TOKENS_LINE.match(ln) for ln in lines]
    assert all(parsed), ("a [tokens] line does not have the shape usage_line makes, "
                         "'[tokens] turn 1: 1,000 in, 24 out | task so far: 1,000 in, 24 out': "
                         f"{lines}")
    assert [int(m[1]) for m in parsed] == [1, 2, 3], f"turns should be numbered 1, 2, 3: {lines}"
    assert [number(m[2]) for m in parsed] == [1000, 1100, 1250], (
        f"the input tokens printed should be the API's 1,000, 1,100 and 1,250: {lines}")
    last = parsed[-1]
    assert number(last[4]) == 3350 and number(last[5]) == sum(number(m[3]) for m in parsed), (
        f"the last line's task total should add up all three calls: {lines[-1]}")


def test_line_comes_as_soon_as_the_reply_does(mod, server, client, capsys):
    """The [tokens] line of a call is printed before the tools that call asked for run."""
    server.add(turn(tool_use("run_shell", {"command": "echo ran"}), input_tokens=900),
               turn("Done.", input_tokens=950))
    run_agent(mod, client, "run it")
    out = capsys.readouterr().out.splitlines()
    first_tokens = next((i for i, ln in enumerate(out) if ln.startswith("[tokens] turn 1")), None)
    first_call = next((i for i, ln in enumerate(out) if ln.startswith("> run_shell")), None)
    assert first_tokens is not None, "no '[tokens] turn 1' line was printed:\n" + "\n".join(out)
    assert first_call is None or first_tokens < first_call, (
        "print the [tokens] line right after the model call, before running its tools; "
        f"it came after {out[first_call]!r}.")


def test_each_task_counts_from_zero(mod, server, client, capsys):
    """A second task on the same conversation starts again at turn 1."""
    server.add(turn("First.", input_tokens=500), turn("Second.", input_tokens=700))
    messages = [{"role": "user", "content": "one"}]
    mod.agent_loop(messages, the_agent(mod, client))
    messages.append({"role": "user", "content": "two"})
    mod.agent_loop(messages, the_agent(mod, client))
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("[tokens]")]
    assert lines[-1:] and lines[-1].startswith("[tokens] turn 1: 700 in"), (
        f"each call of agent_loop is one task, so its turns count from 1; got {lines}")
