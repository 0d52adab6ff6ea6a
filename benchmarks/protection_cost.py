#!/usr/bin/env python3
"""Benchmark (not a test): what does the protection check cost per write on a
10,000-file workspace?

What it measures
    Since issue 36, write_file and edit_file ask the same protected set as the sandbox
    (code.py's protected_target and protected_set: one walk of the workspace for the
    protected names, what git reads, the agent's programs), and write through no link
    (sandbox.py's write_unfollowed). In a git repository of 10,000 files in 500
    folders, with a nested repository and a venv, it times, median of N runs:
    - the check alone, for a path in the workspace (what the gate adds to a write);
    - the write alone (atomic_write: the no-link walk, a temporary file, fsync,
      rename);
    - a whole write_file call through execute_tool in acceptEdits (validation,
      read-before-edit, the gate, the write, the diff);
    and the check once more with a link to /usr in the workspace: the walk does not
    follow a link, so it should cost nothing.

Run
    python benchmarks/protection_cost.py
    python benchmarks/protection_cost.py --files 20000 --runs 50 --chapter s06_concurrency
"""
import argparse
import contextlib
import importlib
import io
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anthropic

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def medians_ms(actions: dict, runs: int) -> dict:
    """The median time of each action, in milliseconds, the actions taken in turn in
    each round (a busy machine slows them alike, not one more than another)."""
    times = {name: [] for name in actions}
    for _ in range(runs):
        for name, action in actions.items():
            t0 = time.perf_counter()
            action()
            times[name].append((time.perf_counter() - t0) * 1000)
    return {name: statistics.median(t) for name, t in times.items()}


def make_workspace(folder: Path, files: int) -> None:
    """A git repository with `files` files in folders of 20, a nested repository
    and a venv (pyvenv.cfg, bin/ on PATH, site-packages)."""
    subprocess.run(["git", "init", "-q"], cwd=folder, check=True)
    for i in range(files):
        sub = folder / "src" / f"pkg{i // 20:03d}"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"m{i}.py").write_text(f"x = {i}\n")
    subprocess.run(["git", "init", "-q", "vendor/lib"], cwd=folder, check=True)
    (folder / ".venv" / "bin").mkdir(parents=True)
    (folder / ".venv" / "lib" / "site-packages").mkdir(parents=True)
    (folder / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (folder / ".claude").mkdir()
    (folder / ".claude" / "settings.json").write_text(
        '{"permissions": {"defaultMode": "acceptEdits"}}\n')


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--chapter", default="s03_permissions")
    args = parser.parse_args()
    mod = importlib.import_module("offline.chapters").load_chapter(args.chapter)
    with tempfile.TemporaryDirectory(prefix="protection-bench-") as folder:
        os.chdir(folder)
        make_workspace(Path(folder), args.files)
        os.environ["PATH"] = f"{folder}/.venv/bin{os.pathsep}{os.environ['PATH']}"
        held = mod.protected_set()
        block = anthropic.types.ToolUseBlock(
            type="tool_use", id="toolu_bench", name="write_file",
            input={"file_path": "src/pkg001/new.py", "content": "y = 2\n"})
        with contextlib.redirect_stdout(io.StringIO()):
            ms = medians_ms({
                "check": lambda: mod.protected_target("src/pkg000/new.py"),
                "write": lambda: mod.atomic_write(Path(folder, "src", "w.py"), b"x\n"),
                "whole": lambda: mod.execute_tool(block)}, args.runs)
        Path(folder, "usr").symlink_to("/usr")  # 100,000s of files behind it
        ms |= medians_ms({"linked": lambda: mod.protected_target("src/pkg000/new.py")},
                         args.runs)
        with contextlib.redirect_stdout(io.StringIO()):
            out, error = mod.execute_tool(anthropic.types.ToolUseBlock(
                type="tool_use", id="toolu_bench2", name="write_file",
                input={"file_path": ".venv/lib/site-packages/x.pth", "content": "x\n"}))
    print(f"{args.chapter}: a workspace of {args.files:,} files in "
          f"{args.files // 20:,} folders (a git repository, a nested one, a venv); "
          f"median of {args.runs} runs; the protected set has {len(held)} entries")
    print(f"  the protection check   {ms['check']:7.1f} ms per write (walk, git, "
          "programs)")
    print(f"  the write itself       {ms['write']:7.1f} ms (no-link walk, fsync, "
          "rename)")
    print(f"  write_file, whole      {ms['whole']:7.1f} ms (execute_tool in "
          "acceptEdits)")
    print(f"  check, link to /usr    {ms['linked']:7.1f} ms (the same, with a link to "
          "/usr in the workspace: not followed)")
    print(f"the check is {ms['check'] / ms['whole']:.0%} of a whole write_file call; "
          "a write into the venv: "
          f"{'asked' if error and 'no one can answer' in out else out[:60]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
