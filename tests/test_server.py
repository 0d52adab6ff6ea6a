"""The scripted server speaks the Messages API well enough for the real SDK."""

import json
import re

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


# --- strict: the API's rules for a request --------------------------------------------

from offline.server import (RULES, check_request, cut_off, error_event,  # noqa: E402
                            overloaded, rate_limited, refusal, server_error)

SAY = {"role": "user", "content": "hi"}
CALL = {"type": "tool_use", "id": "toolu_1", "name": "run_shell", "input": {"command": "ls"}}
ANSWER = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.txt"}
CALLED = {"role": "assistant", "content": [CALL]}
ANSWERED = {"role": "user", "content": [ANSWER]}

# 1x1 images of the four types the API takes (each decodes in a browser), and a BMP,
# which it does not take
IMAGES = {
    "image/jpeg": "/9j/4AAQSkZJRgABAQEASABIAAD/2wBDAP" + "/" * 86 + "wgALCAABAAEBAREA/8QAFBAB"
                  "AAAAAAAAAAAAAAAAAAAAAP/aAAgBAQABPxA=",
    "image/png": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhK"
                 "mMIQAAAABJRU5ErkJggg==",
    "image/gif": "R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw==",
    "image/webp": "UklGRhoAAABXRUJQVlA4TA0AAAAvAAAAEAcQERGIiP4HAA==",
}
BMP = "Qk06AAAAAAAAADYAAAAoAAAAAQAAAAEAAAABABgAAAAAAAQAAAAAAAAAAAAAAAAAAAAAAAAA////AA=="


def image(media_type: str, data: str) -> dict:
    return {"type": "image", "source": {"type": "base64", "media_type": media_type,
                                        "data": data}}


def answered_with(*blocks) -> dict:
    """The user message that answers CALL with these content blocks."""
    return {"role": "user", "content": [dict(ANSWER, content=list(blocks))]}

# (rule, the messages that break it, the words of the API's answer)
INVALID = [
    ("role", [{"role": "system", "content": "hi"}],
     "messages.0.role: Input should be 'user' or 'assistant'"),
    ("tool_input", [SAY, {"role": "assistant", "content": [dict(CALL, input=["ls"])]},
                    ANSWERED],
     "messages.1.content.0.tool_use.input: Input should be a valid dictionary"),
    ("empty_text", [{"role": "user", "content": [{"type": "text", "text": ""}]}],
     "messages: text content blocks must be non-empty"),
    ("blank_text", [SAY, {"role": "assistant", "content": [{"type": "text", "text": " \n"}]},
                    SAY],
     "messages: text content blocks must contain non-whitespace text"),
    ("empty_content", [SAY, {"role": "assistant", "content": []}, SAY],
     "messages.1: all messages must have non-empty content except for the optional "
     "final assistant message"),
    ("empty_content", [{"role": "user", "content": ""}],
     "messages.0: all messages must have non-empty content"),
    ("trailing_space", [SAY, {"role": "assistant", "content": "The answer is "}],
     "messages: final assistant content cannot end with trailing whitespace"),
    ("error_without_content", [SAY, CALLED, {"role": "user", "content": [
        dict(ANSWER, content="", is_error=True)]}],
     "messages.2.content.0.tool_result: content cannot be empty if `is_error` is true"),
    ("duplicate_tool_use_id", [SAY, CALLED, ANSWERED, CALLED, ANSWERED],
     "messages.3.content.0: `tool_use` ids must be unique"),
    ("tool_use_without_result", [SAY, CALLED, SAY],
     "messages.1: `tool_use` ids were found without `tool_result` blocks immediately "
     "after: toolu_1. Each `tool_use` block must have a corresponding `tool_result` "
     "block in the next message."),
    ("tool_use_without_result", [SAY, CALLED],  # a call left unanswered at the end
     "messages.1: `tool_use` ids were found without `tool_result` blocks"),
    ("tool_use_without_result",  # text before the results: they are not "immediately after"
     [SAY, CALLED, {"role": "user", "content": [{"type": "text", "text": "so"}, ANSWER]}],
     "immediately after: toolu_1."),
    ("unexpected_tool_result", [SAY, {"role": "assistant", "content": "ok"}, ANSWERED],
     "messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: "
     "toolu_1. Each `tool_result` block must have a corresponding `tool_use` block in "
     "the previous message."),
    # a tool_result's content holds text, image, document and search_result blocks:
    # audio (which an MCP server may send) is refused, at its index
    ("tool_result_block", [SAY, CALLED, answered_with(
        {"type": "text", "text": "a.txt"}, {"type": "audio", "data": "AAAA"})],
     "messages.2.content.0.tool_result.content.1: Input tag 'audio' found using 'type' "
     "does not match any of the expected tags: 'document', 'image', 'search_result', "
     "'text'"),
    ("image_media_type", [SAY, CALLED, answered_with(image("image/bmp", BMP))],
     "messages.2.content.0.tool_result.content.0.image.source.base64.media_type: Input "
     "should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'"),
]


@pytest.mark.parametrize("rule, messages, words", INVALID,
                         ids=[f"{r}-{i}" for i, (r, _, _) in enumerate(INVALID)])
def test_an_invalid_request_is_a_400_in_the_apis_words(server, client, rule, messages, words):
    """Each rule the API checks: a 400 invalid_request_error whose message is the API's,
    and no turn of the script is used up."""
    server.add(reply("unused"))
    with pytest.raises(anthropic.BadRequestError) as caught:
        client.messages.create(model="m", max_tokens=10, messages=messages)
    assert caught.value.body["error"]["type"] == "invalid_request_error"
    assert words in caught.value.body["error"]["message"]
    assert check_request({"max_tokens": 1, "messages": messages})[0] == rule
    assert server.remaining == 1 and server.rejected[0][0] == 0


def test_a_missing_max_tokens_is_a_field_required_400(server):
    """The SDK never sends a request without max_tokens; a raw one gets the API's words."""
    import urllib.error
    import urllib.request
    request = urllib.request.Request(f"{server.url}/v1/messages", method="POST",
                                     data=json.dumps({"model": "m", "messages": [SAY]}).encode())
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request)
    assert caught.value.code == 400
    assert json.loads(caught.value.read())["error"]["message"] == "max_tokens: Field required"


def test_duplicate_tool_names_and_too_many_breakpoints(server, client):
    tool = {"name": "t", "input_schema": {"type": "object"}}
    with pytest.raises(anthropic.BadRequestError, match="Tool names must be unique"):
        client.messages.create(model="m", max_tokens=10, messages=[SAY], tools=[tool, tool])
    for name in ("t" * 65, "mcp__s__a.b", ""):  # the API's rule for a tool's name
        with pytest.raises(anthropic.BadRequestError, match=r"tools\.1\.custom\.name"):
            client.messages.create(model="m", max_tokens=10, messages=[SAY],
                                   tools=[tool, dict(tool, name=name)])
    server.add(reply("fine"))
    client.messages.create(model="m", max_tokens=10, messages=[SAY],
                           tools=[dict(tool, name="t" * 64)])
    marked = [dict(tool, name=f"t{i}", cache_control={"type": "ephemeral"}) for i in range(5)]
    with pytest.raises(anthropic.BadRequestError, match="A maximum of 4 blocks"):
        client.messages.create(model="m", max_tokens=10, messages=[SAY], tools=marked)


VALID = {
    "a tool call answered": [SAY, CALLED, ANSWERED],
    "results first, then text": [SAY, CALLED, {"role": "user", "content": [
        ANSWER, {"type": "text", "text": "and go on"}]}],
    "two user messages in a row (merged)": [SAY, CALLED, ANSWERED, SAY],
    "results, then a second user message": [SAY, CALLED, ANSWERED,
                                            {"role": "user", "content": "next"}],
    "an empty final assistant message": [SAY, {"role": "assistant", "content": []}],
    "a first message from the assistant": [{"role": "assistant", "content": "Hi."}, SAY],
    "an error result with words": [SAY, CALLED, {"role": "user", "content": [
        dict(ANSWER, is_error=True, content="Error: no such file")]}],
    "an empty result that is not an error": [SAY, CALLED, {"role": "user", "content": [
        dict(ANSWER, content="")]}],
    "a result of text and an image of each type the API takes": [SAY, CALLED, answered_with(
        {"type": "text", "text": "a.txt"}, *[image(t, d) for t, d in IMAGES.items()])],
    "a result holding a document": [SAY, CALLED, answered_with(
        {"type": "document", "source": {"type": "text", "media_type": "text/plain",
                                        "data": "the notes"}})],
    "a result holding a search result": [SAY, CALLED, answered_with(
        {"type": "search_result", "source": "https://example.com/notes", "title": "Notes",
         "content": [{"type": "text", "text": "the notes"}]})],
}


@pytest.mark.parametrize("messages", VALID.values(), ids=VALID.keys())
def test_a_valid_request_is_answered(server, client, messages):
    """What the real API accepts, the server accepts."""
    server.add(reply("fine"))
    assert client.messages.create(model="m", max_tokens=10, messages=messages).content[0].text == "fine"
    assert not server.rejected


def test_every_rule_has_a_test():
    """Each of the server's rules is shown refusing in INVALID (or in a test of its own)."""
    tested = {rule for rule, _, _ in INVALID} | {"max_tokens", "duplicate_tool_name",
                                                 "cache_breakpoints", "messages",
                                                 "tool_name"}
    assert tested == set(RULES)


def test_audit_mode_checks_without_rejecting(tmp_path, monkeypatch):
    """SCRIPTED_SERVER_AUDIT=<file>: an invalid request is answered, and written down."""
    log = tmp_path / "audit.jsonl"
    monkeypatch.setenv("SCRIPTED_SERVER_AUDIT", str(log))
    with ScriptedServer([reply("one"), reply("two")]) as s:
        c = anthropic.Anthropic(api_key="k", base_url=s.url, max_retries=0)
        c.messages.create(model="m", max_tokens=10, messages=[SAY])
        c.messages.create(model="m", max_tokens=10, messages=[SAY, CALLED])  # invalid
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r["rule"] for r in rows] == [None, "tool_use_without_result"]
    assert rows[1]["test"].endswith("test_audit_mode_checks_without_rejecting")
    from offline.server import audit_summary
    assert audit_summary(str(log)).startswith("2 requests, 1 invalid")


# --- errors, as the API sends them ------------------------------------------------------


def test_error_bodies_are_the_apis(server, client):
    """The JSON body of an error: type error, the error's type and message, request_id."""
    server.add(overloaded(), rate_limited(), server_error())
    for kind, status in (("overloaded_error", 529), ("rate_limit_error", 429),
                         ("api_error", 500)):
        with pytest.raises(anthropic.APIStatusError) as caught:
            client.messages.create(model="m", max_tokens=10, messages=[SAY])
        assert caught.value.status_code == status
        assert caught.value.body["type"] == "error"
        assert caught.value.body["error"]["type"] == kind
        assert caught.value.body["request_id"].startswith("req_")


def test_the_sdk_retries_and_honours_retry_after(server):
    """A 429 with retry-after and a 529: the SDK waits as told, retries, and gets the reply."""
    import time
    server.add(rate_limited(retry_after=0.3), overloaded(retry_after=0.05), reply("at last"))
    c = anthropic.Anthropic(api_key="k", base_url=server.url, max_retries=2)
    t0 = time.monotonic()
    msg = c.messages.create(model="m", max_tokens=10, messages=[SAY])
    assert msg.content[0].text == "at last" and len(server.requests) == 3
    assert time.monotonic() - t0 >= 0.35


def test_an_error_event_mid_stream(server, client):
    """Status 200, some text, then an `error` event: the SDK raises it, with its type."""
    server.add(error_event("I will start by"))
    with pytest.raises(anthropic.APIStatusError) as caught:
        with client.messages.stream(model="m", max_tokens=10, messages=[SAY]) as stream:
            for _ in stream:
                pass
    assert caught.value.status_code == 200
    assert caught.value.body["error"] == {"type": "overloaded_error", "message": "Overloaded"}


def test_an_error_event_turn_asked_without_streaming_is_an_http_error(server, client):
    server.add(error_event())
    with pytest.raises(anthropic.APIStatusError) as caught:
        client.messages.create(model="m", max_tokens=10, messages=[SAY])
    assert caught.value.status_code == 529


# --- stop reasons -------------------------------------------------------------------------

BIG_CALL = tool_use("write_file", {"file_path": "notes.txt", "content": "line\n" * 40},
                    id="toolu_big")


def test_a_tool_call_cut_off_by_max_tokens(server, client):
    """The input JSON stops halfway: the SDK rebuilds what arrived, stop_reason max_tokens.
    Streamed or not, the client sees the same partial input."""
    server.add(cut_off("Writing it.", BIG_CALL, keep=0.5), cut_off("Writing it.", BIG_CALL, keep=0.5))
    plain = client.messages.create(model="m", max_tokens=10, messages=[SAY])
    with client.messages.stream(model="m", max_tokens=10, messages=[SAY]) as stream:
        streamed = stream.get_final_message()
    for msg in (plain, streamed):
        assert msg.stop_reason == "max_tokens"
        assert msg.content[0].text == "Writing it."
        assert msg.content[1].input == {"file_path": "notes.txt"}  # the cut string is dropped


def test_a_cut_that_leaves_a_complete_looking_input(server, client):
    """Cut one character before the end: the input looks whole, but the reply says
    max_tokens. Only stop_reason tells."""
    server.add(cut_off(tool_use("run_shell", {"command": "touch x", "timeout": 30}), keep=-1))
    msg = client.messages.create(model="m", max_tokens=10, messages=[SAY])
    assert msg.stop_reason == "max_tokens"
    assert msg.content[0].input == {"command": "touch x", "timeout": 30}


def test_a_refusal_with_stop_details(server, client):
    """stop_reason refusal with stop_details, in JSON and on the stream's message_delta."""
    details = dict(category="cyber", explanation="This request was declined.")
    server.add(refusal("I can", **details), refusal(**details), refusal(stop_details=False))
    plain = client.messages.create(model="m", max_tokens=10, messages=[SAY])
    with client.messages.stream(model="m", max_tokens=10, messages=[SAY]) as stream:
        streamed = stream.get_final_message()
    for msg in (plain, streamed):
        assert msg.stop_reason == "refusal"
        assert msg.stop_details.category == "cyber"
        assert msg.stop_details.explanation == "This request was declined."
    assert plain.content[0].text == "I can" and streamed.content == []
    bare = client.messages.create(model="m", max_tokens=10, messages=[SAY])
    assert bare.stop_reason == "refusal" and bare.stop_details is None


@pytest.mark.parametrize("reason", ["pause_turn", "model_context_window_exceeded",
                                    "stop_sequence", "end_turn"])
def test_any_stop_reason_and_an_empty_reply(server, client, reason):
    server.add(reply(stop_reason=reason))
    with client.messages.stream(model="m", max_tokens=10, messages=[SAY]) as stream:
        msg = stream.get_final_message()
    assert (msg.stop_reason, msg.content) == (reason, [])


# --- usage and prompt caching -----------------------------------------------------------

LONG_TOOL = {"name": "long", "description": "x" * 5000, "input_schema": {"type": "object"}}
SHORT_TOOL = {"name": "short", "description": "x" * 500, "input_schema": {"type": "object"}}
MARK = {"cache_control": {"type": "ephemeral"}}


def usage_of(client, tools, messages=(SAY,), model="claude-sonnet-5-5"):
    msg = client.messages.create(model=model, max_tokens=10, messages=list(messages),
                                 tools=tools)
    u = msg.usage
    return u.input_tokens, u.cache_creation_input_tokens, u.cache_read_input_tokens


def test_a_long_marked_prefix_is_written_once_then_read(server, client):
    """Tools past the model's minimum, marked: written by the first request, read by the
    next; the rest of the request is plain input both times."""
    server.add(reply("a"), reply("b"))
    first = usage_of(client, [dict(LONG_TOOL, **MARK)])
    second = usage_of(client, [dict(LONG_TOOL, **MARK)])
    assert first[1] >= 1024 and first[2] == 0          # written
    assert second[1] == 0 and second[2] == first[1]   # read
    assert first[0] == second[0] > 0                  # the messages after the mark


def test_a_short_prefix_is_silently_not_cached(server, client):
    """Below the minimum (1,024 tokens here; 4,096 for Opus 4.6): no error, no cache."""
    server.add(reply("a"), reply("b"), reply("c"))
    assert usage_of(client, [dict(SHORT_TOOL, **MARK)])[1:] == (0, 0)
    assert usage_of(client, [dict(SHORT_TOOL, **MARK)])[1:] == (0, 0)
    assert usage_of(client, [dict(LONG_TOOL, **MARK)], model="claude-opus-4-6")[1:] == (0, 0)


def test_no_mark_no_cache_and_a_changed_prefix_misses(server, client):
    server.add(reply("a"), reply("b"), reply("c"))
    assert usage_of(client, [LONG_TOOL])[1:] == (0, 0)
    usage_of(client, [dict(LONG_TOOL, **MARK)])
    changed = dict(LONG_TOOL, description="y" + LONG_TOOL["description"][1:], **MARK)
    assert usage_of(client, [changed])[2] == 0  # one byte differs: written anew, not read


def test_a_moving_mark_on_the_last_message_reads_the_conversation_so_far(server, client):
    """The last message marked in each request: the next request, one exchange longer,
    finds the previous prefix within the lookback and reads it; it writes the rest."""
    server.add(reply(tool_use("run_shell", {"command": "ls"}, id="toolu_1")), reply("b"))
    ask = {"role": "user", "content": [{"type": "text", "text": "hi", **MARK}]}
    _, wrote, _ = usage_of(client, [LONG_TOOL], [ask])
    answered = {"role": "user", "content": [dict(ANSWER, **MARK)]}
    _, wrote2, read2 = usage_of(client, [LONG_TOOL], [SAY, CALLED, answered])
    assert wrote > 1024 and read2 == wrote and wrote2 > 0


def test_automatic_caching_marks_the_last_block_as_the_conversation_grows(server, client):
    """cache_control at the top of the request: the last block is the breakpoint, so
    each request writes the conversation so far and the next one reads it back."""
    server.add(reply(tool_use("run_shell", {"command": "ls"}, id="toolu_1")), reply("b"))
    auto = {"cache_control": {"type": "ephemeral"}}
    first = client.messages.create(model="m", max_tokens=10, messages=[SAY],
                                   tools=[LONG_TOOL], extra_body=auto).usage
    second = client.messages.create(model="m", max_tokens=10, tools=[LONG_TOOL],
                                    messages=[SAY, CALLED, ANSWERED], extra_body=auto).usage
    assert first.cache_creation_input_tokens > 1024 and first.input_tokens == 0
    assert second.cache_read_input_tokens == first.cache_creation_input_tokens
    assert second.cache_creation_input_tokens > 0 and second.input_tokens == 0
    assert server.requests[0]["cache_control"] == {"type": "ephemeral"}


def test_whitespace_only_blocks_beside_other_content_pass(server, client):
    """A real web-search reply holds " " and "\\n\\n" text blocks between its other
    blocks; sent back unchanged, the API accepts them (tests/recordings)."""
    said = {"role": "assistant", "content": [{"type": "text", "text": "Found."},
                                             {"type": "text", "text": "\n\n"},
                                             {"type": "text", "text": "Two."}]}
    assert check_request({"max_tokens": 1, "messages": [SAY, said, SAY]}) is None
    assert check_request({"max_tokens": 1, "messages": [
        {"role": "user", "content": " "}]})[0] == "blank_text"


def test_a_retryable_error_says_x_should_retry_as_the_api_does(server):
    """429, 5xx, 529: `x-should-retry: true` (the SDK then retries whatever the
    status); a 400 carries no such header."""
    import urllib.error
    import urllib.request
    server.add(overloaded(), error(400, "invalid_request_error", "no"))
    seen = []
    for _ in range(2):
        request = urllib.request.Request(f"{server.url}/v1/messages", method="POST",
                                         data=b'{"max_tokens": 1, "messages": []}')
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(request)
        seen.append((caught.value.code, caught.value.headers.get("x-should-retry")))
    assert seen == [(529, "true"), (400, None)]


def test_a_context_window_answers_as_the_api_does(server, client):
    """A request past the server's window: the API's 400 'prompt is too long: N
    tokens > M maximum', and no turn is used."""
    server.context_window = 50
    server.add(reply("unused"))
    with pytest.raises(anthropic.BadRequestError) as caught:
        client.messages.create(model="m", max_tokens=10,
                               messages=[{"role": "user", "content": "x" * 400}])
    assert re.fullmatch(r"prompt is too long: \d+ tokens > 50 maximum",
                        caught.value.body["error"]["message"])
    assert server.remaining == 1
