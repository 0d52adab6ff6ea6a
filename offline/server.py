"""A scripted Messages API server for the real `anthropic` SDK.

It answers `POST /v1/messages` from a script of assistant turns, as JSON or, when the
request says `stream: true`, as server-sent events. It records every request body, so
tests can assert on exactly what the agent sent.

    with ScriptedServer([reply(tool_use("run_shell", {"command": "ls"})),
                         reply(text("Done."))]) as server:
        client = anthropic.Anthropic(api_key="test", base_url=server.url)
        ...
        server.requests  # -> list of request bodies (dicts), in order

A turn is a dict made by `reply()` or `error()`, or a callable that takes the
request body and returns one (a turn computed from what the agent sent). Requests
that arrive in no fixed order, such as parallel subagents, can take their turns
from `routed()`, which picks the next turn by the request's first message.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import deque
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
            "name": name, "input": input or {}}


def reply(*blocks: dict | str, stop_reason: str | None = None,
          delay: float = 0.0, event_delay: float | None = None) -> dict:
    """One assistant turn. Strings become text blocks; stop_reason is inferred.

    delay: seconds to wait before answering (a slow model).
    event_delay: seconds between streamed events (a slowly streaming model).
    """
    content = [text(b) if isinstance(b, str) else b for b in blocks]
    if stop_reason is None:
        has_tool = any(b["type"] == "tool_use" for b in content)
        stop_reason = "tool_use" if has_tool else "end_turn"
    turn = {"content": content, "stop_reason": stop_reason, "delay": delay}
    if event_delay is not None:
        turn["event_delay"] = event_delay
    return turn


def first_message(request: dict) -> str:
    """The text of a request's first user message: the prompt a (sub)agent started from."""
    content = request["messages"][0]["content"]
    if isinstance(content, list):
        content = "".join(b.get("text", "") for b in content if isinstance(b, dict))
    return content


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


def error(status: int, kind: str, message: str) -> dict:
    """An API error answer, e.g. error(529, "overloaded_error", "Overloaded")."""
    return {"status": status, "error": {"type": kind, "message": message}}


# --- the server ---------------------------------------------------------------


class ScriptedServer:
    """A local HTTP server that plays a script of assistant turns in order."""

    def __init__(self, turns: Iterable[Turn] = (), *, models: Iterable[str] | None = None,
                 event_delay: float = 0.0, chunk_size: int = 24):
        self.turns: deque[Turn] = deque(turns)
        self.requests: list[dict] = []        # every request body, in arrival order
        self.finished: list[float] = []       # time.monotonic() each message answer
                                              # (not an error) was fully sent, in order
        self.models = set(models) if models else None  # None: accept any model
        self.event_delay = event_delay        # default seconds between SSE events
        self.chunk_size = chunk_size          # characters per streamed delta
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None

    # -- lifecycle --
    def start(self) -> "ScriptedServer":
        handler = type("Handler", (_Handler,), {"scripted": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        # subtle: stop() waits until serve_forever next looks at its stop flag, which it
        # does every poll_interval (0.5 s by default): each test and demo paid that wait.
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01},
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

    @property
    def remaining(self) -> int:
        return len(self.turns)

    # -- answering --
    def next_turn(self, body: dict) -> dict:
        with self._lock:
            self.requests.append(body)
            if self.models is not None and body.get("model") not in self.models:
                return error(404, "not_found_error", f"model: {body.get('model')}")
            if not self.turns:
                return error(400, "invalid_request_error",
                             "scripted server: the script has no more turns")
            turn = self.turns.popleft()
        return turn(body) if callable(turn) else turn


def _message(turn: dict, model: str) -> dict:
    """The full Message object for a turn."""
    output = sum(len(json.dumps(b)) for b in turn["content"]) // 4 + 1
    return {
        "id": f"msg_{next(_ids):06d}", "type": "message", "role": "assistant",
        "model": model, "content": turn["content"],
        "stop_reason": turn["stop_reason"], "stop_sequence": None,
        "usage": {"input_tokens": turn.get("input_tokens", 0), "output_tokens": output},
    }


def _events(message: dict, chunk: int):
    """The SSE events of a streamed message, in the API's order."""
    head = dict(message, content=[], stop_reason=None)
    head["usage"] = dict(message["usage"], output_tokens=1)
    yield "message_start", {"type": "message_start", "message": head}
    for i, block in enumerate(message["content"]):
        if block["type"] == "text":
            start, body, kind, key = {"type": "text", "text": ""}, block["text"], "text_delta", "text"
        else:
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            body, kind, key = json.dumps(block["input"]), "input_json_delta", "partial_json"
        yield "content_block_start", {"type": "content_block_start", "index": i,
                                      "content_block": start}
        for j in range(0, len(body), chunk):
            yield "content_block_delta", {"type": "content_block_delta", "index": i,
                                          "delta": {"type": kind, key: body[j:j + chunk]}}
        yield "content_block_stop", {"type": "content_block_stop", "index": i}
    yield "message_delta", {"type": "message_delta",
                            "delta": {"stop_reason": message["stop_reason"],
                                      "stop_sequence": None},
                            "usage": {"output_tokens": message["usage"]["output_tokens"]}}
    yield "message_stop", {"type": "message_stop"}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    scripted: ScriptedServer  # set on the subclass made in start()

    def log_message(self, *args: Any) -> None:  # keep test output clean
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
        if "error" in turn:
            return self._json(turn["status"], {"type": "error", "error": turn["error"]})
        message = _message(turn, body.get("model", "scripted"))
        if body.get("stream"):
            self._stream(message, turn.get("event_delay", self.scripted.event_delay))
        else:
            self._json(200, message)
        self.scripted.finished.append(time.monotonic())

    def _json(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("request-id", f"req_{next(_ids):06d}")
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, message: dict, event_delay: float) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")  # the body ends when we close
        self.end_headers()
        self.close_connection = True
        try:
            for name, data in _events(message, self.scripted.chunk_size):
                self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
                self.wfile.flush()
                if event_delay:
                    time.sleep(event_delay)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client stopped reading (e.g. it was interrupted)
