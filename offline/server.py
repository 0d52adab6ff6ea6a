"""A scripted Messages API server for the real `anthropic` SDK, as strict as the real API.

It answers `POST /v1/messages` from a script of assistant turns, as JSON or, when the
request says `stream: true`, as server-sent events. It records every request body, so
tests can assert on exactly what the agent sent.

    with ScriptedServer([reply(tool_use("run_shell", {"command": "ls"})),
                         reply(text("Done."))]) as server:
        client = anthropic.Anthropic(api_key="test", base_url=server.url)
        ...
        server.requests  # -> list of request bodies (dicts), in order

A turn is a dict made by `reply()` or `error()` (or one of the helpers below), or a
callable that takes the request body and returns one (a turn computed from what the
agent sent). Requests that arrive in no fixed order, such as parallel subagents, can
take their turns from `routed()`, which picks the next turn by the request's first
message (or, with key=by_agent, a fork's by its directive: a fork's first message is
its parent's). An auto mode reviewer's requests (they force the tool `verdict`) take
theirs from `reviews=[...]`, apart: `verdict("block", "why")`, `review_by(policy)`.

What the real API does, the server does:
- It checks every request as the Messages API does (`check_request`) and answers an
  invalid one with a 400 `invalid_request_error` in the API's own words, without
  using a turn of the script: a tool_use with no tool_result right after it, empty
  content or a message of nothing but whitespace, duplicate ids, a missing
  `max_tokens`... (see RULES). With `context_window=N` a request past N tokens gets
  the API's 400 "prompt is too long: ... tokens > N maximum".
- `recorded()` replays a real recorded answer byte for byte, headers included.
  Set SCRIPTED_SERVER_AUDIT=<file> to check without rejecting: every request is
  answered and one JSON line per request (test, rule, message) is appended to
  <file>; `python -m offline.server <file>` sums it up.
- Errors as the API sends them: `error()` with its JSON body and a `retry-after`
  header (`overloaded()` 529, `rate_limited()` 429, `server_error()` 500), and
  `error_event()`, an `error` event in the middle of a stream.
- Every stop_reason: `cut_off()` (max_tokens in the middle of a block, a tool call's
  input JSON stopping halfway), `refusal()` (with `stop_details`), and any value
  through `reply(stop_reason=...)` (pause_turn, model_context_window_exceeded, ...).
- Usage, with prompt caching: a prefix that ends at a `cache_control` breakpoint (on
  a block, or at the top of the request for automatic caching) and is at least the
  model's minimum cacheable length is written to the cache the first time and read
  from it afterwards; a shorter one is silently not cached (see `cache_usage`).

What a local server leaves out, the server can leave out too: `imitate="ollama"` or
`imitate="llama-server"` (see LOCAL_SERVERS) answers as those servers document it:
usage with input and output tokens only (no cache fields: cache_control is ignored),
errors always as an HTTP status (no `error` event in a stream), and, with
`tools=False` (a model that cannot use tools), the server's own refusal of `tools`.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import re
import sys
import threading
import time
from collections import Counter, deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterable, Union

Turn = Union[dict, Callable[[dict], dict]]

_ids = itertools.count(1)


# --- building turns ---------------------------------------------------------


def text(value: str) -> dict:
    """A text content block."""
    return {"type": "text", "text": value}


def tool_use(name: str, input: dict | None = None, id: str | None = None) -> dict:
    """A tool_use content block; ids are unique unless you give one."""
    return {"type": "tool_use", "id": id or f"toolu_{next(_ids):04d}",
            "name": name, "input": {} if input is None else input}


def reply(*blocks: dict | str, stop_reason: str | None = None,
          delay: float = 0.0, event_delay: float | None = None) -> dict:
    """One assistant turn. Strings become text blocks; stop_reason is inferred.

    delay: seconds to wait before answering (a slow model).
    event_delay: seconds between streamed events (a slowly streaming model).
    No blocks at all is an empty `end_turn`, which the real API sends now and then.
    """
    content = [text(b) if isinstance(b, str) else b for b in blocks]
    if stop_reason is None:
        has_tool = any(b["type"] == "tool_use" for b in content)
        stop_reason = "tool_use" if has_tool else "end_turn"
    turn = {"content": content, "stop_reason": stop_reason, "delay": delay}
    if event_delay is not None:
        turn["event_delay"] = event_delay
    return turn


def cut_off(*blocks: dict | str, keep: float = 0.5,
            stop_reason: str = "max_tokens", **options) -> dict:
    """A reply that stops in the middle of its last block, as when it reaches
    max_tokens (or, with stop_reason="model_context_window_exceeded", fills the
    context window).

    keep: how much of the last block arrives: a fraction of its text or of its
    input's JSON (0.5), a number of characters (12), or a number cut from the end (-1).
    Streamed, its deltas stop there and the block is closed; as JSON, the block holds
    what the SDK rebuilds from those deltas (a tool_use's input parsed leniently: a
    string cut in half is dropped, a number cut short is kept short).
    """
    turn = reply(*blocks, stop_reason=stop_reason, **options)
    turn["keep"] = keep
    return turn


def refusal(*blocks: dict | str, category: str | None = None,
            explanation: str | None = None, stop_details: bool = True,
            **options) -> dict:
    """A reply the API's classifiers stopped: stop_reason "refusal", with whatever
    text came before, and `stop_details` ({"type": "refusal", category, explanation};
    set stop_details=False for an API version that sends none)."""
    turn = reply(*blocks, stop_reason="refusal", **options)
    if stop_details:
        turn["stop_details"] = {"type": "refusal", "category": category,
                                "explanation": explanation}
    return turn


def first_message(request: dict) -> str:
    """The text of a request's first user message: the prompt a (sub)agent started from."""
    content = request["messages"][0]["content"]
    if isinstance(content, list):
        content = "".join(b.get("text", "") for b in content if isinstance(b, dict))
    return content


FORK_DIRECTIVE = re.compile(r"^<fork-directive>.*Your directive: (.*)\Z", re.S)


def by_agent(request: dict) -> str:
    """The prompt a request's agent started from, forks told apart: a fork repeats
    its parent's messages, then adds its directive (s06's subagents.py writes it as
    "<fork-directive>... Your directive: <prompt>"); its key is that prompt. Any
    other request's key is its first message, as first_message()."""
    directives = [found[1] for message in request["messages"]
                  if message["role"] == "user" and isinstance(message["content"], list)
                  for block in message["content"] if isinstance(block, dict)
                  and (found := FORK_DIRECTIVE.match(block.get("text") or ""))]
    return directives[-1] if directives else first_message(request)


def routed(scripts: dict, key: Callable[[dict], str] = first_message) -> list:
    """Turns for requests that arrive in no fixed order, such as parallel subagents.

    `scripts` maps a key (by default a request's first user message) to the turns
    for the requests with that key, in order. Returns as many callable turns as there
    are turns in all the scripts; put them in the script where those requests come.
    Each one, whichever request takes it, answers with the next turn of the script
    its request belongs to (a request with no turn left gets an error answer).
    """
    queues = {k: deque(turns) for k, turns in scripts.items()}
    lock = threading.Lock()

    def turn(request: dict) -> dict:
        k = key(request)
        with lock:
            chosen = queues[k].popleft() if queues.get(k) else None
        if chosen is None:
            return error(400, "invalid_request_error",
                         f"scripted server: no routed turn left for {k!r:.80}")
        return chosen(request) if callable(chosen) else chosen

    return [turn] * sum(len(turns) for turns in scripts.values())


# --- the auto mode reviewer -------------------------------------------------------
# A chapter in auto mode sends a second kind of request: the reviewer's, which forces
# one tool, `verdict` (s03's auto_mode.py). A server made with `reviews=[...]` answers
# those from that script and the agent's requests from its own, so that a scenario
# says what the agent does and, apart, what the reviewer decides.
REVIEW_TOOL = "verdict"


def is_review(body: dict) -> bool:
    """Does this request force the reviewer's tool?"""
    choice = body.get("tool_choice")
    return isinstance(choice, dict) and choice.get("type") == "tool" \
        and choice.get("name") == REVIEW_TOOL


def reviewed(body: dict) -> dict:
    """What a reviewer request holds: its JSON document ({"transcript": [...],
    "action": {...}}) and `instruction`, the stage's last line."""
    blocks = _blocks(body["messages"][-1])
    texts = [b.get("text", "") for b in blocks if b.get("type") == "text"]
    return dict(json.loads(texts[0]), instruction=texts[-1])


def verdict(decision: str, reason: str, **options) -> dict:
    """The reviewer's answer: a call of `verdict` (decision "allow" or "block")."""
    return reply(tool_use(REVIEW_TOOL, {"decision": decision, "reason": reason}),
                 **options)


def review_by(policy: Callable[[dict], Any]) -> Turn:
    """A reviewer turn computed from the request: `policy(reviewed(body))` returns
    (decision, reason) or a whole turn (an error, a reply with no verdict ...)."""
    def turn(body: dict) -> dict:
        answer = policy(reviewed(body))
        return verdict(*answer) if isinstance(answer, tuple) else answer
    return turn


def error(status: int, kind: str, message: str, retry_after: float | None = None,
          delay: float = 0.0) -> dict:
    """An API error answer, e.g. error(529, "overloaded_error", "Overloaded").

    retry_after: seconds, sent as the `retry-after` header (the SDK waits that long
    before it retries; fractions are allowed, for fast tests).
    """
    turn = {"status": status, "error": {"type": kind, "message": message}, "delay": delay}
    if retry_after is not None:
        turn["retry_after"] = retry_after
    return turn


# The statuses the real API marks `x-should-retry: true` (its 429s, 5xx and 529s
# carry the header; the SDK then retries whatever the status).
RETRYABLE = (408, 409, 429, 500, 502, 503, 504, 529)

# Local servers that speak the Messages API, and how each refuses a request with tools
# for a model that cannot use them (status, body). Sources: Ollama's
# docs/api/anthropic-compatibility.mdx (0.14 on: usage holds input_tokens and
# output_tokens only; no prompt caching; errors return an HTTP status, never an event
# mid-stream) and its capability check (400, "... does not support tools");
# llama.cpp's llama-server, which answers "tools param requires --jinja flag" as a 500
# in OpenAI's error shape when it was started without --jinja.
LOCAL_SERVERS = {
    "ollama": (400, {"type": "error", "error": {
        "type": "invalid_request_error",
        "message": "registry.ollama.ai/library/{model} does not support tools"}}),
    "llama-server": (500, {"error": {"code": 500, "type": "server_error",
                                     "message": "tools param requires --jinja flag"}}),
}


def recorded(recording: dict) -> dict:
    """A turn that replays a recorded answer byte for byte: `recording` is
    {"status": int, "headers": {name: value}, "body": bytes} (see
    tests/recordings/README.md for where they come from)."""
    return {"recording": (recording["status"], recording["headers"],
                          recording["body"]), "delay": 0.0}


def overloaded(retry_after: float | None = None) -> dict:
    """529 overloaded_error, as the API answers when it is busy (the SDK retries it)."""
    return error(529, "overloaded_error", "Overloaded", retry_after)


def rate_limited(retry_after: float | None = 1) -> dict:
    """429 rate_limit_error with a retry-after header (the SDK retries it)."""
    return error(429, "rate_limit_error",
                 "This request would exceed your account's rate limit. "
                 "Please try again later.", retry_after)


def server_error(retry_after: float | None = None) -> dict:
    """500 api_error: something went wrong inside the API (the SDK retries it)."""
    return error(500, "api_error", "Internal server error", retry_after)


def error_event(*blocks: dict | str, kind: str = "overloaded_error",
                message: str = "Overloaded", **options) -> dict:
    """A streamed reply that breaks off: `blocks` stream in whole, then an `error`
    event arrives (HTTP status 200 was sent long ago) and the stream ends, as when the
    API becomes overloaded mid-reply. Asked without stream: true, the same turn is an
    HTTP error with that type (529 for overloaded_error, else 500)."""
    turn = reply(*blocks, **options)
    turn["error_event"] = {"type": kind, "message": message}
    return turn


# --- the API's rules for a request ----------------------------------------------
# What the Messages API checks before a model sees a request, in the order it checks,
# with the words of its 400 answers. (Checked against the API's answers as reported
# in public issues, 2024-2026.) Not checked, because today's API accepts them: two
# messages in a row with the same role (it merges them), a first message from the
# assistant, an empty final assistant message (a prefill), whitespace-only text
# blocks beside other content (real web-search replies hold them; tests/recordings).
RULES = {
    "max_tokens": "max_tokens: Field required",
    "messages": "messages: Field required",
    "role": "messages.{i}.role: Input should be 'user' or 'assistant'",
    "tool_input": "messages.{i}.content.{j}.tool_use.input: Input should be a valid "
                  "dictionary",
    "empty_text": "messages: text content blocks must be non-empty",
    "blank_text": "messages: text content blocks must contain non-whitespace text",
    "empty_content": "messages.{i}: all messages must have non-empty content except "
                     "for the optional final assistant message",
    "trailing_space": "messages: final assistant content cannot end with trailing "
                      "whitespace",
    "error_without_content": "messages.{i}.content.{j}.tool_result: content cannot be "
                             "empty if `is_error` is true",
    "duplicate_tool_use_id": "messages.{i}.content.{j}: `tool_use` ids must be unique",
    "tool_use_without_result": "messages.{i}: `tool_use` ids were found without "
                               "`tool_result` blocks immediately after: {ids}. Each "
                               "`tool_use` block must have a corresponding "
                               "`tool_result` block in the next message.",
    "unexpected_tool_result": "messages.{i}.content.{j}: unexpected `tool_use_id` found "
                              "in `tool_result` blocks: {ids}. Each `tool_result` block "
                              "must have a corresponding `tool_use` block in the "
                              "previous message.",
    "duplicate_tool_name": "tools: Tool names must be unique.",
    # the documented limit (the API's error text has quoted {1,128} since 2025)
    "tool_name": "tools.{i}.custom.name: String should match pattern "
                 "'^[a-zA-Z0-9_-]{{1,64}}$'",
    "cache_breakpoints": "A maximum of 4 blocks with cache_control may be provided. "
                         "Found {n}.",
    # what a tool_result's content may hold: text, images, documents, search results
    "tool_result_block": "messages.{i}.content.{j}.tool_result.content.{k}: Input tag "
                         "'{tag}' found using 'type' does not match any of the "
                         "expected tags: 'document', 'image', 'search_result', 'text'",
    "image_media_type": "messages.{i}.content.{j}.tool_result.content.{k}.image.source."
                        "base64.media_type: Input should be 'image/jpeg', 'image/png', "
                        "'image/gif' or 'image/webp'",
    # tool_choice (as reported in public issues: the first two in these words; the
    # API's text for a forced tool that is not in `tools` was not found: ours)
    "tool_choice_type": "tool_choice.type: Input should be 'auto', 'any', 'tool' or "
                        "'none'",
    "tool_choice_without_tools": "tool_choice may only be specified while providing "
                                 "tools.",
    "tool_choice_unknown_tool": "tool_choice.name: no tool named {name!r} in tools",
    "thinking_forced_tool": "Thinking may not be enabled when tool_choice forces tool "
                            "use.",
}
RESULT_BLOCKS = ("text", "image", "document", "search_result")
IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")


def prompt_tokens(body: dict) -> int:
    """What a request holds, in this server's estimated tokens (see cache_usage)."""
    size = sum(len(json.dumps([where, block], sort_keys=True, default=str))
               for where, block in _prefix_blocks(body))
    return (TOOL_USE_PROMPT_TOKENS if body.get("tools") else 0) + tokens(size)


def check_request(body: dict) -> tuple[str, str] | None:
    """The first rule `body` breaks, as (rule, the API's message); None if it is valid."""
    for check in (_check_fields, _check_blocks, _check_turns, _check_tools):
        broken = check(body)
        if broken:
            return broken
    return None


def _broken(rule: str, **where) -> tuple[str, str]:
    return rule, RULES[rule].format(**where)


def _blocks(message: dict) -> list:
    """A message's content as blocks (a string is one text block)."""
    content = message.get("content")
    if isinstance(content, str):
        return [text(content)] if content else []
    return list(content or [])


def _check_fields(body: dict):
    for field in ("max_tokens", "messages"):
        if field not in body:
            return _broken(field)
    for i, message in enumerate(body["messages"]):
        if message.get("role") not in ("user", "assistant"):
            return _broken("role", i=i)
    return None


def _check_blocks(body: dict):
    """Each block on its own: tool inputs are objects, texts have words."""
    messages = body["messages"]
    for i, message in enumerate(messages):
        for j, block in enumerate(_blocks(message)):
            if block.get("type") == "tool_use" and not isinstance(block.get("input"), dict):
                return _broken("tool_input", i=i, j=j)
            if block.get("type") == "tool_result" and block.get("is_error") \
                    and not block.get("content"):
                return _broken("error_without_content", i=i, j=j)
            inner = block.get("content") if block.get("type") == "tool_result" else None
            for b in [block] + (inner if isinstance(inner, list) else []):
                if b.get("type") == "text" and not b.get("text"):
                    return _broken("empty_text")
            for k, b in enumerate(inner if isinstance(inner, list) else []):
                if b.get("type") not in RESULT_BLOCKS:
                    return _broken("tool_result_block", i=i, j=j, k=k, tag=b.get("type"))
                source = b.get("source") or {}
                if b["type"] == "image" and source.get("type") == "base64" and \
                        source.get("media_type") not in IMAGE_TYPES:
                    return _broken("image_media_type", i=i, j=j, k=k)
        # subtle: a whitespace-only text block beside other content is fine (a real
        # web-search reply holds " " and "\n\n" between its blocks); only a message
        # with nothing but whitespace is refused.
        if _blocks(message) and all(b.get("type") == "text" and not b["text"].strip()
                                    for b in _blocks(message)):
            return _broken("blank_text")
    for i, message in enumerate(messages):
        final_assistant = i == len(messages) - 1 and message["role"] == "assistant"
        if not _blocks(message) and not final_assistant:
            return _broken("empty_content", i=i)
    last = _blocks(messages[-1]) if messages else []
    if messages and messages[-1]["role"] == "assistant" and last \
            and last[-1].get("type") == "text" and last[-1]["text"] != last[-1]["text"].rstrip():
        return _broken("trailing_space")
    return None


def _check_turns(body: dict):
    """Every tool_use is answered by a tool_result at the start of the next user
    message, and every tool_result answers a tool_use just before it. Messages in a
    row with the same role count as one, as the API merges them."""
    seen: set = set()
    turns: list[tuple[str, list]] = []  # (role, [(i, j, block)]), merged
    for i, message in enumerate(body["messages"]):
        blocks = [(i, j, b) for j, b in enumerate(_blocks(message))]
        for _, j, b in blocks:
            if b.get("type") == "tool_use":
                if b.get("id") in seen:
                    return _broken("duplicate_tool_use_id", i=i, j=j)
                seen.add(b.get("id"))
        if turns and turns[-1][0] == message["role"]:
            turns[-1][1].extend(blocks)
        else:
            turns.append((message["role"], blocks))
    for t, (role, blocks) in enumerate(turns):
        if role != "assistant":
            continue
        after = turns[t + 1][1] if t + 1 < len(turns) else []
        leading = []  # the tool_results that open the next user message
        for _, _, b in after:
            if b.get("type") != "tool_result":
                break
            leading.append(b.get("tool_use_id"))
        missing = [(i, b["id"]) for i, _, b in blocks
                   if b.get("type") == "tool_use" and b["id"] not in leading]
        if missing:
            return _broken("tool_use_without_result", i=missing[0][0],
                           ids=", ".join(id for _, id in missing))
    for t, (role, blocks) in enumerate(turns):
        before = turns[t - 1][1] if t and role == "user" else []
        asked = {b.get("id") for _, _, b in before if b.get("type") == "tool_use"}
        for i, j, b in blocks:
            if b.get("type") == "tool_result" and b.get("tool_use_id") not in asked:
                return _broken("unexpected_tool_result", i=i, j=j, ids=b.get("tool_use_id"))
    return None


def _check_tools(body: dict):
    names = [tool.get("name") for tool in body.get("tools") or []]
    for i, name in enumerate(names):
        if not re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", str(name)):
            return _broken("tool_name", i=i)
    if len(names) != len(set(names)):
        return _broken("duplicate_tool_name")
    if "tool_choice" in body:
        broken = _check_tool_choice(body["tool_choice"], names, body.get("thinking"))
        if broken:
            return broken
    marks = sum(1 for _, block in _prefix_blocks(body) if "cache_control" in block)
    marks += "cache_control" in body  # automatic caching takes a slot too
    if marks > 4:
        return _broken("cache_breakpoints", n=marks)
    return None


def _check_tool_choice(choice, names: list, thinking):
    """`tool_choice`: auto, any, tool (with a name among `tools`) or none; all but
    none need tools; a forced tool (any, tool) and extended thinking exclude each
    other (adaptive thinking is allowed to decide for itself)."""
    kind = choice.get("type") if isinstance(choice, dict) else None
    if kind not in ("auto", "any", "tool", "none"):
        return _broken("tool_choice_type")
    if kind != "none" and not names:
        return _broken("tool_choice_without_tools")
    if kind == "tool" and choice.get("name") not in names:
        return _broken("tool_choice_unknown_tool", name=choice.get("name"))
    if kind in ("any", "tool") and isinstance(thinking, dict) \
            and thinking.get("type") == "enabled":
        return _broken("thinking_forced_tool")
    return None


# --- usage and prompt caching -----------------------------------------------------
# Token counts are estimated, one token per CHARS_PER_TOKEN characters of the JSON
# sent: the rule of thumb for English text and code (JSON tokenizes worse, so the
# real count is higher). A request with tools also pays for the system prompt the API
# adds to enable tool use, before the tools: TOOL_USE_PROMPT_TOKENS (the tool use
# pricing docs: 346 tokens for current models, tool_choice auto). A prefix this server
# caches is therefore long enough for the real API too.
CHARS_PER_TOKEN = 4
TOOL_USE_PROMPT_TOKENS = 346
# The shortest prefix the API caches, in tokens, by model (the prompt caching docs);
# a shorter prefix is not cached, and the request says nothing about it.
CACHE_MINIMUM = {"claude-opus-4-5": 4096, "claude-opus-4-6": 4096,
                 "claude-haiku-4-5": 4096, "claude-sonnet-4-6": 2048,
                 "claude-3-5-haiku": 2048, "claude-3-haiku": 2048}
CACHE_MINIMUM_DEFAULT = 1024
# Request settings that change how the messages are processed: a change to one of
# them leaves the tools' and the system's entries valid and the messages' invalid
# (the prompt caching docs, "What invalidates the cache").
MESSAGE_SETTINGS = ("tool_choice", "thinking")
CACHE_TTL = 300.0           # seconds an entry lives after its last use (5 minutes)
CACHE_LOOKBACK = 20         # blocks before a breakpoint where an earlier entry is found


def cache_minimum(model: str) -> int:
    """The shortest prefix `model` caches, in tokens."""
    return next((n for prefix, n in CACHE_MINIMUM.items() if model.startswith(prefix)),
                CACHE_MINIMUM_DEFAULT)


def tokens(chars: int) -> int:
    return math.ceil(chars / CHARS_PER_TOKEN)


def _prefix_blocks(body: dict) -> list[tuple[str, dict]]:
    """The request in the order the API caches it: tools, then system, then messages,
    one (where, block) per tool and content block."""
    system = body.get("system") or []
    system = [text(system)] if isinstance(system, str) else system
    out = [("tools", t) for t in body.get("tools") or []]
    out += [("system", b) for b in system]
    for message in body.get("messages") or []:
        out += [(message.get("role", "?"), b) for b in _blocks(message)]
    return out


def cache_usage(body: dict, cache: dict, now: float) -> dict:
    """`usage` for a request, reading and writing `cache` ({prefix hash: expiry}).

    Each block boundary has a hash of everything up to it (a message's, of
    MESSAGE_SETTINGS too). A `cache_control` mark makes its boundary a breakpoint;
    one at the top of the request (automatic caching) marks the last block. Reading: the longest boundary with a live entry,
    looked for at each breakpoint and up to CACHE_LOOKBACK blocks before it. Writing:
    each breakpoint past what was read whose prefix is at least the model's minimum.
    input_tokens is what is left after the last breakpoint written or read.
    """
    model = str(body.get("model", ""))
    digest, size, ends = hashlib.sha256(model.encode()), 0, []  # ends: (tokens, hash)
    extra = TOOL_USE_PROMPT_TOKENS if body.get("tools") else 0
    marks, settings = [], json.dumps([body.get(k) for k in MESSAGE_SETTINGS],
                                     sort_keys=True, default=str)
    for n, (where, block) in enumerate(_prefix_blocks(body)):
        plain = {k: v for k, v in block.items() if k != "cache_control"}
        chunk = json.dumps([where, plain], sort_keys=True, default=str)
        if where not in ("tools", "system"):  # a message: what shapes messages too
            digest.update(settings.encode())
        digest.update(chunk.encode())
        size += len(chunk)
        ends.append((extra + tokens(size), digest.hexdigest()))
        if "cache_control" in block:
            marks.append(n)
    if "cache_control" in body and ends:  # automatic: the last block, wherever it is
        marks.append(len(ends) - 1)
    total = extra + tokens(size)
    read = 0
    for mark in marks:
        for n in range(mark, max(-1, mark - CACHE_LOOKBACK - 1), -1):
            if cache.get(ends[n][1], 0) > now:
                read = max(read, ends[n][0])
                cache[ends[n][1]] = now + CACHE_TTL
                break
    written = read
    for mark in marks:
        count, key = ends[mark]
        if count > read and count >= cache_minimum(model):
            cache[key] = now + CACHE_TTL
            written = max(written, count)
    return {"input_tokens": total - written, "cache_creation_input_tokens": written - read,
            "cache_read_input_tokens": read}


# --- the server ---------------------------------------------------------------


class ScriptedServer:
    """A local HTTP server that plays a script of assistant turns in order."""

    def __init__(self, turns: Iterable[Turn] = (), *, models: Iterable[str] | None = None,
                 event_delay: float = 0.0, chunk_size: int = 24,
                 context_window: int | None = None, imitate: str | None = None,
                 tools: bool = True, reviews: Iterable[Turn] | None = None):
        self.turns: deque[Turn] = deque(turns)
        # the auto mode reviewer's turns (see is_review); None: from `turns`, in order
        self.reviews: deque[Turn] | None = None if reviews is None else deque(reviews)
        self.requests: list[dict] = []        # every request body, in arrival order
        self.rejected: list[tuple[int, str]] = []  # (request index, the API's message)
        self.finished: list[float] = []       # time.monotonic() each message answer
                                              # (not an error) was fully sent, in order
        self.models = set(models) if models else None  # None: accept any model
        self.event_delay = event_delay        # default seconds between SSE events
        self.chunk_size = chunk_size          # characters per streamed delta
        self.cache: dict[str, float] = {}     # prompt cache: prefix hash -> expiry
        self.context_window = context_window  # tokens a request may hold (None: any)
        self.imitate = imitate                # a LOCAL_SERVERS name, or None: the API
        self.tools = tools                    # False: the model cannot use tools
        self.audit = os.environ.get("SCRIPTED_SERVER_AUDIT")  # file: check, reject none
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None

    # -- lifecycle --
    def start(self) -> "ScriptedServer":
        handler = type("Handler", (_Handler,), {"scripted": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, args=(0.05,),  # quick to stop
                         daemon=True).start()
        return self

    def stop(self) -> None:
        if self._httpd:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> "ScriptedServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def add(self, *turns: Turn) -> None:
        """Append turns to the script (e.g. between REPL inputs)."""
        with self._lock:
            self.turns.extend(turns)

    def add_reviews(self, *turns: Turn) -> None:
        """Append turns to the reviewer's script (made if there was none)."""
        with self._lock:
            self.reviews = (self.reviews or deque()) + deque(turns)

    @property
    def remaining(self) -> int:
        return len(self.turns)

    # -- answering --
    def next_turn(self, body: dict) -> dict:
        broken = check_request(body)
        with self._lock:
            self.requests.append(body)
            if self.audit:
                _record(self.audit, broken)
            elif broken:
                self.rejected.append((len(self.requests) - 1, broken[1]))
                return error(400, "invalid_request_error", broken[1])
            size = prompt_tokens(body) if self.context_window else 0
            if size > (self.context_window or 0):  # the API's words for it
                return error(400, "invalid_request_error", f"prompt is too long: "
                             f"{size} tokens > {self.context_window} maximum")
            if self.imitate and not self.tools and body.get("tools"):
                status, answer = LOCAL_SERVERS[self.imitate]
                data = json.dumps(answer).replace("{model}", str(body.get("model")))
                return {"recording": (status, {"Content-Type": "application/json"},
                                      data.encode()), "delay": 0.0}
            if self.models is not None and body.get("model") not in self.models:
                return error(404, "not_found_error", f"model: {body.get('model')}")
            script = self.turns
            if self.reviews is not None and is_review(body):
                script = self.reviews
            if not script:
                return error(400, "invalid_request_error", "scripted server: the "
                             f"script has no more {'review ' * (script is self.reviews)}"
                             "turns")
            turn = script.popleft()
        return turn(body) if callable(turn) else turn

    def usage(self, body: dict) -> dict:
        if self.imitate:  # no cache: every request is processed whole
            return {"input_tokens": prompt_tokens(body)}
        with self._lock:
            return cache_usage(body, self.cache, time.monotonic())


def _record(path: str, broken: tuple[str, str] | None) -> None:
    """Audit mode: one JSON line per request, appended (every process of a run adds)."""
    test = os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" (", 1)[0] \
        or f"{os.path.basename(sys.argv[0])} {' '.join(sys.argv[1:])}".strip()
    line = json.dumps({"test": test, "rule": broken and broken[0],
                       "message": broken and broken[1]})
    with open(path, "a", encoding="utf-8") as f:
        f.write(line + "\n")


def audit_summary(path: str) -> str:
    """What an audit file says: requests in all, invalid ones by rule and by test."""
    rows = [json.loads(line) for line in open(path, encoding="utf-8") if line.strip()]
    bad = [r for r in rows if r["rule"]]
    lines = [f"{len(rows)} requests, {len(bad)} invalid "
             f"({len({r['test'] for r in bad})} tests sent an invalid request)"]
    lines += [f"  {n:5}  {rule}" for rule, n in Counter(r["rule"] for r in bad).most_common()]
    by_test = Counter((r["test"], r["rule"]) for r in bad)
    lines += [f"    {n:3}  {rule:24} {test}" for (test, rule), n in sorted(by_test.items())]
    return "\n".join(lines)


def _partial(body: str) -> Any:
    """What the SDK rebuilds from a cut JSON text (jiter's partial mode, as it uses)."""
    from jiter import from_json  # a dependency of the anthropic SDK
    try:
        return from_json(body.encode(), partial_mode=True)
    except ValueError:
        return {}


def _kept(body: str, keep: float) -> str:
    """The part of `body` that arrives when a reply is cut (see cut_off)."""
    if isinstance(keep, float):
        return body[:int(len(body) * keep)]
    return body[:keep] if keep >= 0 else body[:len(body) + keep]


def _content(turn: dict) -> list:
    """The blocks as the client sees them: a cut reply's last block is cut short."""
    content = list(turn["content"])
    if "keep" in turn and content:
        last = content[-1]
        if last["type"] == "text":
            content[-1] = dict(last, text=_kept(last["text"], turn["keep"]))
        else:
            content[-1] = dict(last, input=_partial(_kept(json.dumps(last["input"]),
                                                          turn["keep"])))
    return content


def _message(turn: dict, model: str, usage: dict) -> dict:
    """The full Message object for a turn."""
    output = sum(len(json.dumps(b)) for b in turn["content"]) // 4 + 1
    message = {
        "id": f"msg_{next(_ids):06d}", "type": "message", "role": "assistant",
        "model": model, "content": _content(turn),
        "stop_reason": turn["stop_reason"], "stop_sequence": None,
        "usage": dict(usage, output_tokens=output),
    }
    if "input_tokens" in turn:  # a turn that says what it cost, as a test wants
        message["usage"].update(input_tokens=turn["input_tokens"],
                                cache_creation_input_tokens=0, cache_read_input_tokens=0)
    if "stop_details" in turn:
        message["stop_details"] = turn["stop_details"]
    return message


def _events(message: dict, turn: dict, chunk: int):
    """The SSE events of a streamed message, in the API's order."""
    head = dict(message, content=[], stop_reason=None)
    head.pop("stop_details", None)
    head["usage"] = dict(message["usage"], output_tokens=1)
    yield "message_start", {"type": "message_start", "message": head}
    for i, block in enumerate(turn["content"]):
        if block["type"] == "text":
            start, body, kind, key = {"type": "text", "text": ""}, block["text"], "text_delta", "text"
        else:
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            body, kind, key = json.dumps(block["input"]), "input_json_delta", "partial_json"
        if "keep" in turn and i == len(turn["content"]) - 1:
            body = _kept(body, turn["keep"])  # the reply stops here
        yield "content_block_start", {"type": "content_block_start", "index": i,
                                      "content_block": start}
        for j in range(0, len(body), chunk):
            yield "content_block_delta", {"type": "content_block_delta", "index": i,
                                          "delta": {"type": kind, key: body[j:j + chunk]}}
        yield "content_block_stop", {"type": "content_block_stop", "index": i}
    if "error_event" in turn:
        yield "error", {"type": "error", "error": turn["error_event"]}
        return
    delta = {"stop_reason": message["stop_reason"], "stop_sequence": None}
    if "stop_details" in message:
        delta["stop_details"] = message["stop_details"]
    if "safeguard_results" in turn:  # the API's own check of the calls (auto mode's)
        delta["safeguard_results"] = turn["safeguard_results"]
    yield "message_delta", {"type": "message_delta", "delta": delta,
                            "usage": {"output_tokens": message["usage"]["output_tokens"]}}
    yield "message_stop", {"type": "message_stop"}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # subtle: headers and body go out in two writes; with Nagle's algorithm on, the
    # second waits for the client's delayed ACK (about 40 ms on loopback) before it
    # leaves: every answer that is not streamed took some 50 ms, not 8.
    disable_nagle_algorithm = True
    scripted: ScriptedServer  # set on the subclass made in start()

    def log_message(self, *args: Any) -> None:  # keep test output clean
        pass

    def handle(self) -> None:
        try:
            super().handle()
        except (BrokenPipeError, ConnectionResetError):
            # subtle: a client may close a kept-alive connection while we wait for its
            # next request (the SDK does, between retries); the real API shrugs too,
            # and a traceback on stderr here would land in the chapter's output.
            pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            return self._json(400, {"type": "error", "error": {
                "type": "invalid_request_error", "message": "body is not JSON"}})
        if self.path.split("?")[0] != "/v1/messages":
            return self._json(404, {"type": "error", "error": {
                "type": "not_found_error", "message": f"no route {self.path}"}})
        turn = self.scripted.next_turn(body)
        time.sleep(turn.get("delay", 0.0))
        if "error_event" in turn and (self.scripted.imitate or not body.get("stream")):
            kind = turn["error_event"]["type"]
            turn = error(529 if kind == "overloaded_error" else 500, kind,
                         turn["error_event"]["message"])
        if "recording" in turn:
            return self._replay(*turn["recording"])
        if "error" in turn:
            headers = {"retry-after": str(turn["retry_after"])} if "retry_after" in turn else {}
            if turn["status"] in RETRYABLE:  # the real API says so on these answers
                headers["x-should-retry"] = "true"
            return self._json(turn["status"], {"type": "error", "error": turn["error"]},
                              headers)
        message = _message(turn, body.get("model", "scripted"), self.scripted.usage(body))
        if self.scripted.imitate:  # a turn's own input_tokens come with cache fields
            message["usage"] = {k: message["usage"][k]
                                for k in ("input_tokens", "output_tokens")}
        if body.get("stream"):
            self._stream(message, turn, turn.get("event_delay", self.scripted.event_delay))
        else:
            self._json(200, message)
        self.scripted.finished.append(time.monotonic())

    def _json(self, status: int, payload: dict, headers: dict | None = None) -> None:
        request_id = f"req_{next(_ids):06d}"
        if status >= 400:
            payload = dict(payload, request_id=request_id)
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("request-id", request_id)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _replay(self, status: int, headers: dict, data: bytes) -> None:
        """A recorded answer, as it was: its status, its headers, its body's bytes."""
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, message: dict, turn: dict, event_delay: float) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")  # the body ends when we close
        self.end_headers()
        self.close_connection = True
        try:
            for name, data in _events(message, turn, self.scripted.chunk_size):
                self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
                self.wfile.flush()
                if event_delay:
                    time.sleep(event_delay)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client stopped reading (e.g. it was interrupted)


if __name__ == "__main__":  # python -m offline.server AUDIT_FILE
    print(audit_summary(sys.argv[1]))
