"""Real recorded Messages API answers, replayed through the server to every chapter.

Each file in tests/recordings/ is a public test cassette, kept as it was (origins in
tests/recordings/README.md). Every answer in it is replayed byte for byte, headers
included, to every chapter it applies to: a JSON answer to the chapters that call
`messages.create` (s01-s05), an event stream to the one that streams (s06), an error
to all. What the chapter does next is checked against the transcript rules: every
tool_use answered in order, thinking blocks sent back unchanged, the next request
valid by the server's rules, the error named in one line.
"""

import copy
import functools
import gzip
import json
from pathlib import Path

import anthropic
import pytest
import yaml

from conftest import CHAPTERS, load_chapter, run_main
from conftest import the_agent
from offline.server import recorded, reply

HERE = Path(__file__).parent / "recordings"
DROPPED = ("content-length", "transfer-encoding", "connection")  # the server's own


@functools.cache
def cassette(path: Path) -> dict:
    """A cassette, parsed once a process (1.6 MB of YAML: libyaml's parser where
    there is one, which reads them alike, else PyYAML's own)."""
    return yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def answers(path: Path) -> list[dict]:
    """Every response of a cassette as {"status", "headers", "body"}: the body's
    bytes as recorded (vcrpy keeps them; pydantic-ai keeps a JSON body parsed, so
    that one is serialised again, and its content-encoding no longer applies)."""
    out = []
    for interaction in copy.deepcopy(cassette(path))["interactions"]:
        r = interaction["response"]
        body = (r.get("body") or {}).get("string")
        parsed = body is None or isinstance(body, str)
        data = (json.dumps(r["parsed_body"]).encode() if body is None
                else body.encode() if isinstance(body, str) else body)
        headers = {k.lower(): ", ".join(v) for k, v in r["headers"].items()
                   if k.lower() not in DROPPED
                   and not (parsed and k.lower() == "content-encoding")}
        out.append({"status": r["status"]["code"], "headers": headers, "body": data})
    return out


def decoded(answer: dict) -> bytes:
    gz = "gzip" in answer["headers"].get("content-encoding", "")
    return gzip.decompress(answer["body"]) if gz else answer["body"]


def is_stream(answer: dict) -> bool:
    return decoded(answer).lstrip().startswith(b"event:")


def message(answer: dict) -> dict:
    """The recorded message, rebuilt (from the events, for a stream)."""
    text = decoded(answer).decode()
    if not is_stream(answer):
        return json.loads(text)
    msg, blocks = None, {}
    for line in text.splitlines():
        if not line.startswith("data:"):
            continue
        event = json.loads(line[5:])
        if event["type"] == "message_start":
            msg = event["message"]
        elif event["type"] == "content_block_start":
            blocks[event["index"]] = dict(event["content_block"])
        elif event["type"] == "content_block_delta":
            delta, block = event["delta"], blocks[event["index"]]
            for kind, key in (("text_delta", "text"), ("thinking_delta", "thinking"),
                              ("signature_delta", "signature")):
                if delta["type"] == kind:
                    block[key] = block.get(key, "") + delta[key]
        elif event["type"] == "message_delta":
            msg["stop_reason"] = event["delta"].get("stop_reason")
    msg["content"] = [blocks[i] for i in sorted(blocks)]
    return msg


CASES = []  # (case id, chapter, file, answer number)
for _file in sorted(HERE.glob("*.yaml")):
    for _n, _answer in enumerate(answers(_file)):
        _fits = (CHAPTERS if _answer["status"] >= 400
                 else CHAPTERS[-1:] if is_stream(_answer) else CHAPTERS[:-1])
        CASES += [pytest.param(c, _file.name, _n, id=f"{c[:3]}-{_file.stem}-{_n}")
                  for c in _fits]


def test_there_are_ten_to_twenty_recordings_and_each_has_its_origin():
    files = sorted(HERE.glob("*.yaml"))
    readme = (HERE / "README.md").read_text()
    assert 10 <= len(files) <= 20
    assert all(f.name in readme for f in files)


@pytest.mark.parametrize("chapter, name, n", CASES)
def test_a_recorded_answer_through_the_chapter(chapter, name, n, server, workspace):
    answer = answers(HERE / name)[n]
    if answer["status"] >= 400:
        return check_error(chapter, answer, server, workspace)
    mod, sent = load_chapter(chapter), message(answer)
    client = anthropic.Anthropic(api_key="test-key", base_url=server.url, max_retries=0)
    server.add(recorded(answer), reply("Done."))
    messages = [{"role": "user", "content": "go"}]
    final = mod.agent_loop(messages, the_agent(mod, client))
    assert not server.rejected, server.rejected  # what it sent back is valid
    calls = [b["id"] for b in sent["content"] if b["type"] == "tool_use"]
    if sent["stop_reason"] in ("tool_use", "pause_turn"):
        assert len(server.requests) == 2 and final == "Done."
        nxt = server.requests[1]["messages"]
        back = nxt[1] if not calls else nxt[-2]
        assert back["role"] == "assistant"
        # thinking blocks go back exactly as they came
        thought = [b for b in sent["content"] if "thinking" in b["type"]]
        assert [b for b in back["content"] if "thinking" in b["type"]] == thought
        if calls:  # every tool_use answered, in order, before anything else
            results = nxt[-1]["content"]
            assert [r["tool_use_id"] for r in results] == calls
    else:
        assert len(server.requests) == 1
        said = [b["text"] for b in sent["content"] if b["type"] == "text"]
        assert said[-1].strip() in final
        # the next prompt sends the answer back as it came: the API accepts it
        messages.append({"role": "user", "content": "and then?"})
        assert mod.agent_loop(messages, the_agent(mod, client)) == "Done."
        assert not server.rejected, server.rejected


def check_error(chapter, answer, server, workspace):
    """An error answer: one line naming its type, exit status 1, no traceback."""
    server.add(recorded(answer))
    kind = json.loads(decoded(answer))["error"]["type"]
    proc = run_main(chapter, "go", cwd=workspace, ANTHROPIC_API_KEY="test-key",
                    ANTHROPIC_BASE_URL=server.url)
    assert proc.returncode == 1
    [line] = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert kind in line and "Traceback" not in proc.stderr



def replayed_usage(chapter, client, server, name):
    """The usage of a recorded answer as the chapter's SDK call parses it."""
    server.add(recorded(answers(HERE / name)[0]))
    ask = {"model": "claude-sonnet-4-6", "max_tokens": 100,
           "messages": [{"role": "user", "content": "go"}]}
    if chapter == CHAPTERS[-1]:  # s06 streams
        with client.messages.stream(**ask) as stream:
            return stream.get_final_message().usage
    return client.messages.create(**ask).usage


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_the_window_is_what_the_next_request_carries(chapter, server, capsys):
    """Real replies whose server tools sampled several times: the window is the last
    sampling (usage.iterations), never the sum of them all, which told a paused web
    search "context window: 402,260 of 200,000 tokens used"."""
    mod = load_chapter(chapter)
    client = anthropic.Anthropic(api_key="test-key", base_url=server.url, max_retries=0)
    paused = ("pydantic-ai__test_pause_turn_web_search_streaming_vcr.yaml"
              if chapter == CHAPTERS[-1]
              else "pydantic-ai__test_pause_turn_web_search_vcr.yaml")
    usage = replayed_usage(chapter, client, server, paused)
    assert usage.input_tokens > 400_000  # ten searches' samplings, summed, no list
    assert mod.window_tokens(usage) is None
    # the advisor reply lists its samplings: the last one is what goes on
    advisor = message(answers(HERE / "pydantic-ai__test_anthropic_advisor_tool.yaml")[0])
    usage = anthropic.types.Usage.model_validate(advisor["usage"])
    last = advisor["usage"]["iterations"][-1]
    window = sum(last[k] for k in ("input_tokens", "output_tokens",
                                   "cache_read_input_tokens", "cache_creation_input_tokens"))
    assert window == 1262 + 11 < usage.input_tokens + usage.output_tokens
    assert mod.window_tokens(usage) == window
    mod.count_tokens(usage, mod.Agent(None, window=window + 100))  # 80 %: below it
    assert capsys.readouterr().err == (
        f"[context window: {window:,} of {window + 100:,} tokens used; when it is full "
        "the oldest exchanges go, or type /clear]\n")
    # the paused reply, through the loop: no warning, the turn goes on
    server.add(recorded(answers(HERE / paused)[0]), reply("Done."))
    assert mod.agent_loop([{"role": "user", "content": "go"}],
                          the_agent(mod, client)) == "Done."
    assert "[context window:" not in capsys.readouterr().err
    assert not server.rejected, server.rejected
