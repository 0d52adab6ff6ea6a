#!/usr/bin/env python3
"""Benchmark (not a test): what does run_shell's sandbox cost per command?

What it measures
    The time of a typical read-only command (`git status; ls; cat notes.txt`) and of
    one that writes (`echo more >> notes.txt; git status --short`), run the way
    run_shell runs them, in a small git repository: once as plain `bash -c`, once
    inside the sandbox (bubblewrap on Linux, Seatbelt on macOS) with the policy
    code.py builds for it (confine: home and a Read-denied file hidden, protected
    paths read-only, missing ones held by placeholders, memory and processes
    limited). It prints the median of each, their ratio, and the milliseconds the
    sandbox adds per call (the aim is under 20 ms); and what building the policy
    costs (the classifier's verdict, the settings, the walk for protected and
    Read-denied paths, the placeholders made and removed), since run_shell pays
    that too.

Run
    python benchmarks/sandbox_cost.py
    python benchmarks/sandbox_cost.py --runs 50 --chapter s06_concurrency
"""
import argparse
import importlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
COMMAND = "git status --short; ls; cat notes.txt"           # read-only
WRITES = "echo more >> notes.txt; git status --short"        # writes the workspace


def timed(argv: list, runs: int) -> float:
    """The median wall time of running argv, in milliseconds."""
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       check=False)
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--chapter", default="s03_permissions")
    args = parser.parse_args()
    mod = importlib.import_module("offline.chapters").load_chapter(args.chapter)
    if missing := mod.sandbox_missing(mod.sandbox_settings([])):
        print(f"no sandbox on this machine: {missing}")
        return 1
    with tempfile.TemporaryDirectory() as folder:
        os.chdir(folder)
        subprocess.run(["git", "init", "-q"], check=True)
        Path("notes.txt").write_text("hello\n")
        Path("private.txt").write_text("secret\n")
        Path(".claude").mkdir()
        Path(".claude/settings.json").write_text(
            '{"permissions": {"deny": ["Read(private.txt)"]}}')
        print(f"median of {args.runs} runs ({args.chapter}):")
        for command in (COMMAND, WRITES):
            t0 = time.perf_counter()
            for _ in range(args.runs):
                with mod.confine(command):
                    pass
            policy = (time.perf_counter() - t0) * 1000 / args.runs
            plain = timed(["bash", "-c", command], args.runs)
            with mod.confine(command) as argv:  # the policy built once, then run
                boxed = timed(argv, args.runs)
            print(f"{command!r}:")
            print(f"  plain bash  {plain:7.1f} ms")
            print(f"  sandboxed   {boxed:7.1f} ms   ({boxed / plain:.1f}x; "
                  f"+{boxed - plain:.1f} ms per call)")
            print(f"  the policy  {policy:7.1f} ms per call (verdict, settings, the walk"
                  " for protected and Read-denied paths, placeholders)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
