#!/usr/bin/env python3
"""Benchmark (not a test): how much faster is a reply of N slow independent calls in s06?

What it measures
    The wall time of one agent_loop run on a scripted reply of N calls plus a final
    answer, against the local scripted Messages API server, through the real SDK:
      shell      N read-only `sleep S` commands (s03's classifier proves them
                 read-only, so s06 runs them as one parallel batch), in the serial
                 chapter (s05 if it exists, else s03) and in s06.
      subagents  N `agent` calls whose scripted model answers after S seconds. The
                 serial chapters have no `agent` tool, so the serial figure is s06
                 itself with MAX_PARALLEL = 1 (one call at a time).
    Speedup = serial time / parallel time. The ideal is N up to MAX_PARALLEL (10);
    beyond it the calls run in waves of 10, so N / ceil(N / 10). What is left is the
    loop's own overhead (two model calls, process start-up).

Run
    python benchmarks/parallel_speedup.py               # N = 8, S = 1.0
    python benchmarks/parallel_speedup.py -n 10 -s 0.5
"""
import argparse
import contextlib
import importlib
import io
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import anthropic  # noqa: E402

from offline.server import ScriptedServer, reply, routed, tool_use  # noqa: E402


def serial_chapter() -> str:
    for name in ("s05_deferred_tools", "s03_permissions"):
        if (ROOT / name / "code.py").exists():
            return name
    raise SystemExit("no serial chapter (s05 or s03) found")


def timed_run(mod, turns, **loop_kwargs) -> float:
    """Seconds one agent_loop takes on `turns`; the chapter's printing is swallowed."""
    with ScriptedServer(turns) as server:
        client = anthropic.Anthropic(api_key="bench", base_url=server.url, max_retries=0)
        messages = [{"role": "user", "content": "go"}]
        start = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            mod.agent_loop(messages, client, **loop_kwargs)
        elapsed = time.perf_counter() - start
        assert server.remaining == 0, "the script was not played to the end"
    return elapsed


def shell_turns(n: int, seconds: float) -> list:
    calls = [tool_use("run_shell", {"command": f"sleep {seconds}"}) for _ in range(n)]
    return [reply(*calls), reply("done")]


def agent_turns(n: int, seconds: float) -> list:
    prompts = [f"Sub-task {i}: answer at once." for i in range(n)]
    calls = [tool_use("agent", {"description": f"task {i}", "prompt": p})
             for i, p in enumerate(prompts)]
    answers = {p: [reply(f"answer {i}", delay=seconds)] for i, p in enumerate(prompts)}
    return [reply(*calls), *routed(answers), reply("done")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=8, help="calls in the reply")
    ap.add_argument("-s", type=float, default=1.0, help="seconds each call waits")
    args = ap.parse_args()
    os.chdir(tempfile.mkdtemp(prefix="bench-parallel-"))
    serial_name = serial_chapter()
    serial, s06 = (importlib.import_module("offline.chapters").load_chapter(c) for c in (serial_name, "s06_concurrency"))
    waves = -(-args.n // s06.MAX_PARALLEL)  # batches of at most MAX_PARALLEL at once
    print(f"N = {args.n} calls of {args.s:.2f} s each; ideal speedup {args.n / waves:.1f}x")
    print(f"{'case':<12}{'serial':>24}{'s06 parallel':>16}{'speedup':>10}")

    t_serial = timed_run(serial, shell_turns(args.n, args.s))
    t_par = timed_run(s06, shell_turns(args.n, args.s))
    print(f"{'shell':<12}{f'{t_serial:.2f} s ({serial_name[:3]})':>24}{t_par:>14.2f} s{t_serial / t_par:>9.1f}x")

    limit = s06.MAX_PARALLEL
    s06.MAX_PARALLEL = 1  # s06 running one call at a time: the serial figure
    try:
        t_serial = timed_run(s06, agent_turns(args.n, args.s))
    finally:
        s06.MAX_PARALLEL = limit
    t_par = timed_run(s06, agent_turns(args.n, args.s))
    print(f"{'subagents':<12}{f'{t_serial:.2f} s (s06, 1 at once)':>24}{t_par:>14.2f} s{t_serial / t_par:>9.1f}x")


if __name__ == "__main__":
    main()
