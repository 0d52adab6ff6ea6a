#!/usr/bin/env python3
"""Benchmark (not a test): how much tool time does s06 hide inside a streaming reply?

What it measures
    The scripted server streams one reply slowly: K read-only `sleep S` calls, each
    after a paragraph of text, so the tool_use blocks complete one by one over a few
    seconds. s06 starts each call as soon as its block is complete. The script
    records, through the chapter's own `execute_tool`, when each call started and
    ended, and the server records when the stream ended. It prints
      stream       seconds from the request to the end of the streamed reply
      tool time    the calls' summed running time
      hidden       the part of it that ran before the stream ended (and %)
      wait after   seconds from the end of the stream until every result was ready
    and, for comparison, the wait after the stream when no call may start early
    (the same chapter with early start switched off, as in a loop that does not stream).

Run
    python benchmarks/streaming_overlap.py            # K = 4, S = 1.5
    python benchmarks/streaming_overlap.py -k 6 -s 1
"""
import argparse
import contextlib
import importlib
import io
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import anthropic  # noqa: E402

from offline.server import ScriptedServer, reply, tool_use  # noqa: E402

PARAGRAPH = "Thinking about the next thing to look at, step by step. " * 3


def streamed_turns(k: int, seconds: float, event_delay: float) -> list:
    blocks = []
    for i in range(k):
        blocks += [PARAGRAPH, tool_use("run_shell", {"command": f"sleep {seconds}"})]
    return [reply(*blocks, event_delay=event_delay), reply("done")]


def run(mod, turns, early: bool) -> dict:
    spans, lock = [], threading.Lock()
    original = mod.execute_tool

    def timed(block):  # measure each call through the chapter's own pipeline
        start = time.perf_counter()
        try:
            return original(block)
        finally:
            with lock:
                spans.append((start, time.perf_counter()))

    mod.execute_tool = timed
    offer = mod.ToolRunner.offer
    if not early:
        mod.ToolRunner.offer = lambda self, block: setattr(self, "open", False)
    try:
        with ScriptedServer(turns) as server:
            client = anthropic.Anthropic(api_key="bench", base_url=server.url, max_retries=0)
            t0 = time.perf_counter()
            m0 = time.monotonic()
            with contextlib.redirect_stdout(io.StringIO()):
                mod.agent_loop([{"role": "user", "content": "go"}], client)
            stream_end = t0 + (server.finished[0] - m0)
    finally:
        mod.execute_tool = original
        mod.ToolRunner.offer = offer
    busy = sum(end - start for start, end in spans)
    hidden = sum(max(0.0, min(end, stream_end) - start) for start, end in spans)
    return {"stream": stream_end - t0, "busy": busy, "hidden": hidden,
            "after": max(end for _, end in spans) - stream_end}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-k", type=int, default=4, help="tool calls in the reply")
    ap.add_argument("-s", type=float, default=1.5, help="seconds each call runs")
    ap.add_argument("--event-delay", type=float, default=0.05, help="seconds between SSE events")
    args = ap.parse_args()
    os.chdir(tempfile.mkdtemp(prefix="bench-stream-"))
    mod = importlib.import_module("s06_concurrency.code")
    turns = lambda: streamed_turns(args.k, args.s, args.event_delay)  # noqa: E731
    early, late = run(mod, turns(), early=True), run(mod, turns(), early=False)
    print(f"K = {args.k} calls of {args.s:.2f} s, arriving over a streamed reply")
    print(f"stream             {early['stream']:6.2f} s")
    print(f"tool time          {early['busy']:6.2f} s (summed over the calls)")
    print(f"hidden in stream   {early['hidden']:6.2f} s ({100 * early['hidden'] / early['busy']:.0f}%)")
    print(f"wait after stream  {early['after']:6.2f} s with early start, "
          f"{late['after']:.2f} s without (saved {late['after'] - early['after']:.2f} s)")


if __name__ == "__main__":
    main()
