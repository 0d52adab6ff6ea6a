"""The scripted server's helpers that s06's tests need: routed turns and `finished`.

Support code, not a chapter: these tests are not parametrised.
"""

import anthropic
import pytest

from offline.server import reply, routed

ASK_A = [{"role": "user", "content": "prompt A"}]
ASK_B = [{"role": "user", "content": "prompt B"}]


def test_routed_turns_follow_the_first_message_whatever_the_arrival_order(server, client):
    server.add(*routed({"prompt A": [reply("A1"), reply("A2")], "prompt B": [reply("B1")]}))
    assert server.remaining == 3
    said = [client.messages.create(model="m", max_tokens=5, messages=ask).content[0].text
            for ask in (ASK_B, ASK_A, ASK_A)]
    assert said == ["B1", "A1", "A2"]


def test_a_routed_request_with_no_turn_left_gets_an_error(server, client):
    """A request whose script is used up (or has no script) is told so, clearly."""
    server.add(*routed({"prompt A": [reply("A1")], "prompt B": [reply("B1")]}))
    client.messages.create(model="m", max_tokens=5, messages=ASK_A)
    with pytest.raises(anthropic.BadRequestError, match="no routed turn left"):
        client.messages.create(model="m", max_tokens=5, messages=ASK_A)


def test_finished_records_when_each_answer_was_sent(server, client):
    server.add(reply("one"), reply("two", event_delay=0.01))
    client.messages.create(model="m", max_tokens=5, messages=ASK_A)
    with client.messages.stream(model="m", max_tokens=5, messages=ASK_A) as stream:
        stream.get_final_message()
    assert len(server.finished) == 2 and server.finished[0] <= server.finished[1]


def test_by_agent_tells_a_fork_from_its_parent(server, client):
    """A fork's request starts with its parent's messages: routed by its first
    message it would take the parent's turns; by_agent keys it by its directive."""
    from offline.server import by_agent
    from s06_concurrency.subagents import fork_request
    parent = {"model": "m", "max_tokens": 5, "messages": ASK_A}
    call = {"type": "tool_use", "id": "toolu_f", "name": "agent", "input": {}}
    fork = fork_request({**parent, "reply": [call]}, "toolu_f", "prompt F")
    server.add(*routed({"prompt A": [reply("A1")], "prompt F": [reply("F1")]},
                       key=by_agent))
    said = [client.messages.create(**ask).content[0].text for ask in (fork, parent)]
    assert said == ["F1", "A1"]
    assert by_agent(fork) == "prompt F" and by_agent(parent) == "prompt A"
