"""s06: a fork's first request (subagents.py, fork_request) and the prompt cache it
earns: the parent's model, system, tools and every message it sent, then its own
reply with each call answered by a placeholder (its own: "you are that fork"),
and the directive; no fork inside a fork. Sent through
the real SDK to the scripted server, which reads from the cache what the parent's
request wrote, and not one token more when a byte of the prefix differs.

The builder is driven directly here; tests/test_s06_agent_modes.py starts forks
through code.py's loop.
"""

from __future__ import annotations

import copy
import json

import pytest

from offline.server import reply, tool_use
from s06_concurrency.subagents import (FORK_PLACEHOLDER, FORK_TAG, OTHER_PLACEHOLDER,
                                       ForkError, fork_request, is_fork)

AUTO_CACHE = {"cache_control": {"type": "ephemeral"}}  # as code.py sends it
SYSTEM = "You are a coding agent. " + "Keep the workspace tidy and say why. " * 200
TOOLS = [{"name": name, "description": f"The {name} tool.",
          "input_schema": {"type": "object", "properties": {
              "prompt": {"type": "string"}, "file_path": {"type": "string"}}}}
         for name in ("agent", "read_file", "run_shell")]
HISTORY = [
    {"role": "user", "content": "Find why total_value is wrong, and fix it."},
    {"role": "assistant", "content": [
        {"type": "text", "text": "Reading the file."},
        {"type": "tool_use", "id": "toolu_r1", "name": "read_file",
         "input": {"file_path": "inventory.py"}}]},
    {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_r1",
         "content": "     1\tdef total_value(items):\n     2\t    return 0\n"}]},
]


CALL = {"type": "tool_use", "id": "toolu_f1", "name": "agent",
        "input": {"description": "check the tests", "prompt": "Run the tests."}}
BESIDE = {"type": "tool_use", "id": "toolu_b1", "name": "read_file",
          "input": {"file_path": "report.py"}}
REPLY = [{"type": "text", "text": "Two things at once."}, BESIDE, CALL]


def parent_request(**extra) -> dict:
    """The keyword arguments of the parent's last model call and the reply it got,
    as code.py keeps them (agent.last_request)."""
    return {"model": "claude-sonnet-5-5", "max_tokens": 1000, "system": SYSTEM,
            "tools": TOOLS, "messages": copy.deepcopy(HISTORY),
            "extra_body": AUTO_CACHE, "reply": REPLY, **extra}


def sent(request: dict) -> dict:
    """What the SDK is called with: the request, without the reply kept beside it."""
    return {k: v for k, v in request.items() if k != "reply"}


def test_the_fork_repeats_its_parents_request_then_adds_two_messages():
    parent = parent_request()
    child = fork_request(parent, "toolu_f1", "Run the tests.")
    assert {k: v for k, v in child.items() if k != "messages"} == \
        {k: v for k, v in sent(parent).items() if k != "messages"}
    n = len(parent["messages"])
    assert json.dumps(child["messages"][:n]) == json.dumps(parent["messages"])
    assert child["messages"][n] == {"role": "assistant", "content": REPLY}
    other, result, directive = child["messages"][n + 1]["content"]
    assert child["messages"][n + 1]["role"] == "user"
    assert other == {"type": "tool_result", "tool_use_id": "toolu_b1",
                     "content": OTHER_PLACEHOLDER}
    assert result == {"type": "tool_result", "tool_use_id": "toolu_f1",
                      "content": FORK_PLACEHOLDER}
    assert directive["text"].startswith(FORK_TAG)
    assert directive["text"].endswith("Your directive: Run the tests.")
    assert is_fork(child["messages"]) and not is_fork(parent["messages"])


def test_the_fork_keeps_its_own_copy_as_the_parent_goes_on():
    """The parent's loop adds to its messages, and to its last user message (where
    notifications go): the fork's prefix stays what the parent sent."""
    parent = parent_request()
    child = fork_request(parent, "toolu_f1", "Run the tests.")
    before = json.dumps(child["messages"])
    parent["messages"][-1]["content"].append({"type": "text", "text": "later"})
    parent["messages"].append({"role": "assistant", "content": "more"})
    assert json.dumps(child["messages"]) == before


def test_a_fork_cannot_fork_again():
    child = fork_request(parent_request(), "toolu_f1", "Run the tests.")
    child["reply"] = [dict(CALL, id="toolu_f2")]
    with pytest.raises(ForkError, match="a fork cannot start another fork"):
        fork_request(child, "toolu_f2", "Split it further.")


def usage(client, request: dict):
    return client.messages.create(**sent(request))


def test_the_fork_reads_its_parents_prefix_from_the_cache(server, client):
    """Through the SDK: the parent's request writes its whole prompt to the cache
    (automatic caching); the fork's first request is valid to the API, starts with
    the same bytes, and reads all of it back; only its two new messages are written."""
    server.add(reply(tool_use("read_file", {"file_path": "report.py"}, id="toolu_r2"),
                     tool_use("agent", CALL["input"], id="toolu_f1")), reply("done"))
    parent = parent_request()
    answer = usage(client, parent)
    parent["reply"] = answer.content  # the SDK's blocks, as the loop has them
    fork = usage(client, fork_request(parent, "toolu_f1", "Run the tests."))
    assert server.rejected == []
    sent_parent, sent_fork = server.requests
    for key in ("model", "system", "tools", "max_tokens", "cache_control"):
        assert sent_fork[key] == sent_parent[key]
    n = len(sent_parent["messages"])
    assert sent_fork["messages"][:n] == sent_parent["messages"]
    assert sent_fork["messages"][n]["content"] == [
        {"type": "tool_use", "id": "toolu_r2", "name": "read_file",
         "input": {"file_path": "report.py"}},
        {"type": "tool_use", "id": "toolu_f1", "name": "agent", "input": CALL["input"]}]
    whole = (answer.usage.input_tokens + answer.usage.cache_creation_input_tokens
             + answer.usage.cache_read_input_tokens)
    assert answer.usage.cache_creation_input_tokens == whole  # the parent wrote it all
    assert fork.usage.cache_read_input_tokens == whole        # the fork reads it all
    assert 0 < fork.usage.cache_creation_input_tokens < whole / 10  # and adds a little


@pytest.mark.parametrize("change", [
    {"system": SYSTEM.replace("tidy", "tidy!", 1)},   # one byte of the system
    {"tool_choice": {"type": "any"}},                 # settings the messages depend on
    {"thinking": {"type": "enabled", "budget_tokens": 1024}},
])
def test_a_prefix_that_differs_reads_nothing_more(server, client, change):
    """No looser than the API: a fork whose request differs from its parent's reads
    at most what stands before the difference (here: no breakpoint there, so 0)."""
    server.add(reply(tool_use("agent", CALL["input"], id="toolu_f1")), reply("done"))
    parent = parent_request()
    parent["reply"] = usage(client, parent).content
    fork = usage(client, dict(fork_request(parent, "toolu_f1", "Run the tests."), **change))
    assert fork.usage.cache_read_input_tokens == 0


def test_a_general_purpose_child_reads_nothing_from_its_parent(server, client):
    """The fresh agent the course starts today: its own system prompt and one
    message; the parent's cache entry does not help it."""
    server.add(reply(tool_use("agent", CALL["input"], id="toolu_f1")), reply("done"))
    usage(client, parent_request())
    fresh = usage(client, parent_request(
        system="You are a general-purpose agent. " * 200,
        messages=[{"role": "user", "content": "Run the tests."}]))
    assert fresh.usage.cache_read_input_tokens == 0
