"""The scripted server speaks the Messages API well enough for the real SDK."""

import anthropic
import pytest

from offline.server import ScriptedServer, error, reply, text, tool_use

ASK = [{"role": "user", "content": "hi"}]


def test_plain_reply_and_recorded_request(server, client):
    """A JSON reply parses into SDK objects; the request body is recorded."""
    server.add(reply("hello", tool_use("run_shell", {"command": "ls"}, id="toolu_a")))
    msg = client.messages.create(model="m", max_tokens=10, messages=ASK, tools=[])
    assert msg.stop_reason == "tool_use"
    assert msg.content[0].text == "hello"
    assert (msg.content[1].id, msg.content[1].input) == ("toolu_a", {"command": "ls"})
    assert server.requests[0]["messages"] == ASK
    assert server.requests[0]["max_tokens"] == 10


def test_streaming_events_rebuild_the_same_message(server, client):
    """With stream: true the SDK rebuilds text and tool input from the deltas."""
    big_input = {"command": "echo " + "x" * 200, "timeout": 5}
    server.add(reply("streamed text " * 10, tool_use("run_shell", big_input)))
    with client.messages.stream(model="m", max_tokens=10, messages=ASK) as stream:
        pieces = list(stream.text_stream)
        final = stream.get_final_message()
    assert len(pieces) > 1  # it really arrived in several deltas
    assert "".join(pieces) == "streamed text " * 10
    assert final.content[1].input == big_input
    assert final.stop_reason == "tool_use"
    assert server.requests[0]["stream"] is True


def test_event_types_in_order(server, client):
    """The raw event stream follows the API's order."""
    server.add(reply("a", tool_use("t", {"k": 1})))
    stream = client.messages.create(model="m", max_tokens=10, messages=ASK, stream=True)
    kinds = [event.type for event in stream]
    assert kinds[0] == "message_start" and kinds[-2:] == ["message_delta", "message_stop"]
    assert kinds.count("content_block_start") == kinds.count("content_block_stop") == 2
    assert "content_block_delta" in kinds


def test_computed_turn_sees_the_request(server, client):
    """A callable turn is computed from the request it answers."""
    server.add(lambda request: reply(f"you said {request['messages'][-1]['content']}"))
    msg = client.messages.create(model="m", max_tokens=10, messages=ASK)
    assert msg.content[0].text == "you said hi"


def test_errors_and_exhausted_script(server, client):
    """API errors come back as the SDK's exceptions; running out of script is an error."""
    server.add(error(401, "authentication_error", "invalid x-api-key"))
    with pytest.raises(anthropic.AuthenticationError):
        client.messages.create(model="m", max_tokens=10, messages=ASK)
    with pytest.raises(anthropic.BadRequestError, match="no more turns"):
        client.messages.create(model="m", max_tokens=10, messages=ASK)


def test_unknown_model_is_404():
    """A server given a list of models answers 404 for any other, like the API."""
    with ScriptedServer([reply("x")], models=["good-model"]) as s:
        c = anthropic.Anthropic(api_key="k", base_url=s.url, max_retries=0)
        with pytest.raises(anthropic.NotFoundError):
            c.messages.create(model="bad-model", max_tokens=10, messages=ASK)


def test_slow_model_delays(server, client):
    """delay= holds the answer back (a slow model)."""
    import time
    server.add(reply("late", delay=0.3))
    t0 = time.monotonic()
    client.messages.create(model="m", max_tokens=10, messages=ASK)
    assert time.monotonic() - t0 >= 0.3


def test_text_helper():
    assert text("x") == {"type": "text", "text": "x"}
    assert reply("x")["stop_reason"] == "end_turn"
