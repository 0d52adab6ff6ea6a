#!/usr/bin/env python3
"""Benchmark (not a test): how much slower are the chapter's `grep_search` and
`list_files` than ripgrep itself?

What it measures
    Wall-clock time of a chapter's tool against ripgrep run directly on the same query,
    over a large tree: a copy of the installed Python standard library (without
    site-packages and __pycache__; `--in-place` searches the installed directory itself,
    site-packages included, which is much bigger). Each query runs once to warm the
    page cache; then the commands take turns, `--repeats` rounds, so that a change in
    the machine's load hits all of them alike; the median is shown.

    grep_search (times in milliseconds, medians):
      matches   matching lines that raw rg prints (grep_search shows at most 100 of them
                and counts the rest; "!" after it means grep_search counted a different
                total, e.g. a regex that ripgrep and Python read differently)
      rg        raw ripgrep, as a person would type it: `rg -n -e PATTERN [--glob INC] .`
                (every core, unsorted), its whole output read through a pipe
      sorted    the same with --sort=path: ripgrep then searches with one thread. It is
                what grep_search paid for a deterministic order before it sorted what
                it keeps itself.
      ours      grep_search through ripgrep (the module's RG)
      ours/rg, sorted/rg   the ratios

    list_files (times in milliseconds, medians):
      files     files that match the pattern
      rg        `rg --files --glob /PATTERN` (every core, unsorted): the same files
      newest    the same with --sortr=modified, newest first as list_files shows them
                (ripgrep sorts with one thread)
      ours      list_files(PATTERN)

How to read it
    ours/rg near 1 means the Python around ripgrep costs little. The goal is 1.3 at
    most. For queries with very many matches what remains is reading every line in
    Python (grep_search counts them all, and shows 100); for list_files it is the
    glob test and the modification time of every file, in Python. Absolute times
    depend on the machine and on the page cache; compare the ratios. Nothing here is
    asserted.

Run
    python benchmarks/grep_vs_rg.py                      # s02_tool_use
    python benchmarks/grep_vs_rg.py --chapter s06_concurrency
    python benchmarks/grep_vs_rg.py --repeats 15 --in-place
"""
import argparse
import importlib
import os
import re
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent

# (label, pattern, include): a literal and a regex, each with and without `include`, a
# query that matches nothing (pure scanning cost), one that matches very many lines and
# one that matches most lines of the tree (its output is some 50 MB).
QUERIES = [
    ("literal", "import os", None),
    ("literal+include", "TODO", "*.py"),
    ("regex", r"def test_\w+_(error|fail)", None),
    ("regex+include", r"raise \w+Error\(f?['\"]", "*.py"),
    ("no match", "zq_no_such_token_xj", None),
    ("many matches", r"self\.", "*.py"),
    ("most lines", "e", None),
]

# list_files patterns: every Python file, the top level only, a name pattern at any
# depth, every file, one directory, and nothing.
GLOBS = ["**/*.py", "*.py", "**/test_*.py", "**/*", "email/**", "**/*.nothing"]


def load_chapter(chapter: str):
    sys.path.insert(0, str(REPO_ROOT))
    try:
        module = importlib.import_module("offline.chapters").load_chapter(chapter)
    except ModuleNotFoundError as e:
        sys.exit(f"cannot import {chapter}/code.py: {e}")
    if not all(hasattr(module, name) for name in ("grep_search", "list_files", "RG")):
        sys.exit(f"{chapter}/code.py has no grep_search, list_files or RG")
    return module


def make_tree(in_place: bool) -> tuple[Path, Path | None]:
    """The directory to search, and a temporary directory to remove afterwards."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    if in_place:
        return stdlib, None
    tmp = Path(tempfile.mkdtemp(prefix="grep-bench-"))
    tree = tmp / "stdlib"
    shutil.copytree(stdlib, tree, symlinks=True,
                    ignore=shutil.ignore_patterns("site-packages", "__pycache__"))
    return tree, tmp


def tree_size(tree: Path) -> tuple[int, int, int]:
    """Files, bytes, and bytes in text files (no NUL in the first 8 KB, as rg sees it)."""
    files = size = text = 0
    for root, dirs, names in os.walk(tree):
        for name in names:
            path = os.path.join(root, name)
            try:
                n = os.lstat(path).st_size
                with open(path, "rb") as f:
                    binary = b"\0" in f.read(8192)
            except OSError:
                continue
            files, size, text = files + 1, size + n, text + (0 if binary else n)
    return files, size, text


def medians(commands: dict, repeats: int) -> tuple[dict, dict]:
    """Median seconds of each command, and its last result. One warm-up round, then
    `repeats` rounds in which the commands take turns."""
    results = {name: fn() for name, fn in commands.items()}
    times = {name: [] for name in commands}
    for _ in range(repeats):
        for name, fn in commands.items():
            start = time.perf_counter()
            results[name] = fn()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}, results


def reported_total(output: str) -> int:
    """The number of lines (matches or files) the tool says there are."""
    if output.startswith(("No matches for", "No files match")):
        return 0
    lines = output.splitlines()
    more = re.match(r"\[\.\.\. and (\d+) more", lines[-1])
    return len(lines) - 1 + int(more.group(1)) if more else len(lines)


def run(cmd: list) -> bytes:
    return subprocess.run(cmd, capture_output=True, stdin=subprocess.DEVNULL).stdout


def grep_table(module, rg: str, repeats: int) -> None:
    header = (f"{'grep_search':<16} {'matches':>9} {'rg':>8} {'sorted':>8} {'ours':>8} "
              f"{'ours/rg':>8} {'sorted/rg':>9}")
    print(header)
    print("-" * len(header))
    for label, pattern, include in QUERIES:
        raw = [rg, "-n", "-e", pattern, *(["--glob", include] if include else []), "."]
        t, out = medians({"rg": lambda raw=raw: run(raw),
                          "sorted": lambda raw=raw: run([*raw[:-1], "--sort=path", "."]),
                          "ours": lambda p=pattern, i=include: module.grep_search(p, ".", i)},
                         repeats)
        matches = out["rg"].count(b"\n")
        flag = "" if reported_total(out["ours"]) == matches else "!"
        print(f"{label:<16} {str(matches) + flag:>9} {t['rg'] * 1e3:>8.1f} "
              f"{t['sorted'] * 1e3:>8.1f} {t['ours'] * 1e3:>8.1f} "
              f"{t['ours'] / t['rg']:>8.2f} {t['sorted'] / t['rg']:>9.2f}")


def list_table(module, rg: str, repeats: int) -> None:
    header = (f"{'list_files':<16} {'files':>9} {'rg':>8} {'newest':>8} {'ours':>8} "
              f"{'ours/rg':>8} {'newest/rg':>9}")
    print(header)
    print("-" * len(header))
    for pattern in GLOBS:
        raw = [rg, "--files", "--glob", "/" + pattern]
        t, out = medians({"rg": lambda raw=raw: run(raw),
                          "newest": lambda raw=raw: run([*raw, "--sortr=modified"]),
                          "ours": lambda p=pattern: module.list_files(p)}, repeats)
        files = out["rg"].count(b"\n")
        flag = "" if reported_total(out["ours"]) == files else "!"
        print(f"{pattern:<16} {str(files) + flag:>9} {t['rg'] * 1e3:>8.1f} "
              f"{t['newest'] * 1e3:>8.1f} {t['ours'] * 1e3:>8.1f} "
              f"{t['ours'] / t['rg']:>8.2f} {t['newest'] / t['rg']:>9.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chapter", default="s02_tool_use",
                        help="chapter package whose code.py to benchmark (default s02_tool_use)")
    parser.add_argument("--repeats", type=int, default=9, help="timed rounds per query (default 9)")
    parser.add_argument("--in-place", action="store_true",
                        help="search the installed stdlib directory itself (with site-packages)")
    args = parser.parse_args()

    module = load_chapter(args.chapter)
    rg = module.RG
    if not rg:
        sys.exit("ripgrep not found (module RG is None): install it (pip install ripgrep)")
    version = subprocess.run([rg, "--version"], capture_output=True, text=True).stdout
    tree, tmp = make_tree(args.in_place)
    old_cwd = os.getcwd()
    try:
        files, size, text = tree_size(tree)
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
        print(f"chapter {args.chapter}; ripgrep {rg} ({version.split()[1]}); "
              f"Python {sys.version.split()[0]}; {os.cpu_count()} CPUs; load {load}")
        print(f"tree: {tree} ({files:,} files, {size / 1e6:,.0f} MB, "
              f"{text / 1e6:,.0f} MB of it in text files"
              f"{'; a copy without site-packages and __pycache__' if tmp else ''})")
        print(f"median of {args.repeats} rounds, after one warm-up round; times in ms\n")
        os.chdir(tree)  # the tools only search inside the current working directory
        grep_table(module, rg, args.repeats)
        print()
        list_table(module, rg, args.repeats)
        print("\npatterns: " + "; ".join(
            f"{label}: {pattern!r}" + (f" include {include!r}" if include else "")
            for label, pattern, include in QUERIES))
    finally:
        os.chdir(old_cwd)
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
