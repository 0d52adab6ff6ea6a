#!/usr/bin/env python3
"""Benchmark (not a test): how much tool time does s06 hide inside a streaming reply,
and how much could any agent hide there?

What it measures
    The scripted server streams one reply slowly: tool_use blocks, each after a
    paragraph of text, complete one by one. s06 starts each safe call as soon as its
    block is complete. Two scenarios:
      burst    K = 4 `sleep 1.5` calls over a stream of about 3 s (the calls are
               longer than the gaps between them: much of their time cannot hide)
      spread   K = 12 `sleep 1` calls over a stream of about 15 s, as in real use:
               short calls spread over a long reply, nearly all of which can hide
    For each call the script records when the server sent its block's last event
    (content_block_stop), when s06's runner was offered the block, and when the call
    ran (through the chapter's own `execute_tool`). It prints
      stream       seconds from the request until the server sent message_stop
      tool time    the calls' summed running time
      hidden       the part of it that ran before the stream ended (and %)
      limit        the most any agent could hide: each call from the moment the server
                   sent its block's last event, for as long as it runs, until the end
                   of the stream. A call whose block completes at the end of the
                   stream cannot hide at all.
      of limit     hidden / limit: how close s06 comes (the goal: 90 % or more)
      lag          from the server sending a block's content_block_stop to s06's
                   runner being offered the block (median and worst): the time the
                   bytes take through the socket, the SDK and the loop
      start        from the offer to the call running (median and worst)
      wait after   seconds from the end of the stream until every result was ready,
                   with early start and without (the same chapter with offer()
                   switched off, as in a loop that does not stream)

Run
    python benchmarks/streaming_overlap.py                  # both scenarios
    python benchmarks/streaming_overlap.py --scenario spread --repeats 3
    python benchmarks/streaming_overlap.py -k 6 -s 1        # a custom burst
"""
import argparse
import contextlib
import importlib
import io
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import anthropic  # noqa: E402

import offline.server as scripted  # noqa: E402
from offline.server import ScriptedServer, reply, tool_use  # noqa: E402

SENTENCE = "Thinking about the next thing to look at, step by step. "  # 57 characters

# name -> (calls, seconds per call, sentences of text before each call)
SCENARIOS = {"burst": (4, 1.5, 3), "spread": (12, 1.0, 11)}


def streamed_turns(k: int, seconds: float, sentences: int, event_delay: float) -> list:
    blocks = []
    for _ in range(k):
        blocks += [SENTENCE * sentences, tool_use("run_shell", {"command": f"sleep {seconds}"})]
    return [reply(*blocks, event_delay=event_delay), reply("done")]


@contextlib.contextmanager
def recorded(mod, early: bool):
    """Record, on one clock (time.monotonic), when the server sent each event, when
    the runner was offered each block and when each call ran."""
    log = {"sent": [], "offered": {}, "ran": {}}
    lock = threading.Lock()
    events, execute, offer = scripted._events, mod.execute_tool, mod.ToolRunner.offer

    def sent_events(*args):  # the server writes each event as it is yielded
        for name, data in events(*args):
            log["sent"].append((time.monotonic(), name, data))
            yield name, data

    def timed_execute(block):  # each call, through the chapter's own pipeline
        start = time.monotonic()
        try:
            return execute(block)
        finally:
            with lock:
                log["ran"][block.id] = (start, time.monotonic())

    def timed_offer(self, block):
        log["offered"][block.id] = time.monotonic()
        if early:
            return offer(self, block)
        self.open = False  # as if the loop did not stream: every call waits

    scripted._events, mod.execute_tool, mod.ToolRunner.offer = (
        sent_events, timed_execute, timed_offer)
    try:
        yield log
    finally:
        scripted._events, mod.execute_tool, mod.ToolRunner.offer = events, execute, offer


def run(mod, turns: list, early: bool) -> dict:
    with recorded(mod, early) as log, ScriptedServer(turns) as server:
        client = anthropic.Anthropic(api_key="bench", base_url=server.url, max_retries=0)
        t0 = time.monotonic()
        with contextlib.redirect_stdout(io.StringIO()):
            mod.agent_loop([{"role": "user", "content": "go"}], client)
    first = [(t, data) for t, name, data in log["sent"] if data["type"] != "ping"]
    stream_end = next(t for t, data in first if data["type"] == "message_stop")
    blocks = {}  # tool_use id -> when the server sent its content_block_stop
    opened = {}  # content block index -> tool_use id
    for t, data in first:
        if data["type"] == "content_block_start" and data["content_block"]["type"] == "tool_use":
            opened[data["index"]] = data["content_block"]["id"]
        elif data["type"] == "content_block_stop" and data["index"] in opened:
            blocks.setdefault(opened.pop(data["index"]), t)
        if data["type"] == "message_stop":
            break
    calls = []
    for call_id, complete in blocks.items():
        start, end = log["ran"][call_id]
        calls.append({"complete": complete, "offered": log["offered"][call_id],
                      "start": start, "end": end})
    busy = sum(c["end"] - c["start"] for c in calls)
    hidden = sum(max(0.0, min(c["end"], stream_end) - c["start"]) for c in calls)
    # The most that could hide: each call, started the moment its block was sent.
    limit = sum(min(c["end"] - c["start"], max(0.0, stream_end - c["complete"]))
                for c in calls)
    return {"stream": stream_end - t0, "busy": busy, "hidden": hidden, "limit": limit,
            "after": max(c["end"] for c in calls) - stream_end, "calls": calls}


def spread(values: list) -> str:
    return f"{1e3 * statistics.median(values):6.1f} ms median, {1e3 * max(values):6.1f} ms worst"


def report(name: str, k: int, seconds: float, early: list, late: list) -> None:
    pick = lambda runs, key: statistics.median(r[key] for r in runs)  # noqa: E731
    busy, hidden, limit = pick(early, "busy"), pick(early, "hidden"), pick(early, "limit")
    calls = [c for r in early for c in r["calls"]]
    print(f"\n{name}: {k} calls of {seconds:.2f} s, arriving over a streamed reply"
          f" (median of {len(early)} runs)")
    print(f"  stream             {pick(early, 'stream'):6.2f} s")
    print(f"  tool time          {busy:6.2f} s (summed over the calls)")
    print(f"  hidden in stream   {hidden:6.2f} s ({100 * hidden / busy:.0f}% of tool time)")
    print(f"  limit              {limit:6.2f} s ({100 * limit / busy:.0f}% of tool time)")
    print(f"  of limit           {100 * hidden / limit:6.0f} %" if limit else
          "  of limit              - (nothing can hide)")
    print(f"  lag sent->offered  {spread([c['offered'] - c['complete'] for c in calls])}")
    print(f"  offered->running   {spread([c['start'] - c['offered'] for c in calls])}")
    print(f"  wait after stream  {pick(early, 'after'):6.2f} s with early start, "
          f"{pick(late, 'after'):.2f} s without")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", choices=[*SCENARIOS, "both"], default="both")
    ap.add_argument("-k", type=int, help="a custom burst: tool calls in the reply")
    ap.add_argument("-s", type=float, default=1.5, help="seconds each custom call runs")
    ap.add_argument("--event-delay", type=float, default=0.05, help="seconds between SSE events")
    ap.add_argument("--repeats", type=int, default=1, help="runs per scenario (median shown)")
    args = ap.parse_args()
    os.chdir(tempfile.mkdtemp(prefix="bench-stream-"))
    mod = importlib.import_module("offline.chapters").load_chapter("s06_concurrency")
    chosen = ({"custom": (args.k, args.s, 3)} if args.k else
              SCENARIOS if args.scenario == "both" else
              {args.scenario: SCENARIOS[args.scenario]})
    print(f"s06_concurrency; {os.cpu_count()} CPUs; event delay {args.event_delay:.3f} s")
    for name, (k, seconds, sentences) in chosen.items():
        script = (k, seconds, sentences, args.event_delay)
        early = [run(mod, streamed_turns(*script), early=True) for _ in range(args.repeats)]
        late = [run(mod, streamed_turns(*script), early=False) for _ in range(args.repeats)]
        report(name, k, seconds, early, late)


if __name__ == "__main__":
    main()
