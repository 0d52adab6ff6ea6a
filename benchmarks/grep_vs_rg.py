#!/usr/bin/env python3
"""Benchmark (not a test): how much slower is the chapter's `grep_search` than raw `rg`?

What it measures
    Wall-clock time of a chapter's `grep_search(pattern, ".", include)` against ripgrep
    run directly on the same query, over a large tree: a copy of the installed Python
    standard library (without site-packages and __pycache__; `--in-place` searches the
    installed directory itself, site-packages included, which is much bigger). Each
    query runs once to warm the page cache, then `--repeats` times; the median is shown.

    columns (times in milliseconds, medians):
      matches   matching lines that raw rg prints (grep_search shows at most 100 of them
                and counts the rest; "!" after it means grep_search counted a different
                total, e.g. a regex that ripgrep and Python read differently)
      rg        raw ripgrep, as a person would type it: `rg -n -e PATTERN [--glob INC] .`
                (all cores, unsorted), its whole output read through a pipe
      rg-same   ripgrep with exactly the arguments grep_search gives it (--sort=path,
                which makes ripgrep single-threaded, --max-columns=300, ...)
      ours      grep_search through ripgrep (the module's RG)
      ours/rg, ours/same   the ratios

How to read it
    ours/same near 1 means the Python wrapper costs little: the time is ripgrep's own.
    ours/rg above 1 is mostly the price of --sort=path (deterministic output, one
    thread), and, for queries with many matches, of reading and splitting every
    matching line in Python although only 100 are shown. Absolute times depend on the machine and on the page
    cache; compare the ratios. Nothing here is asserted.

Run
    python benchmarks/grep_vs_rg.py                      # s02_tool_use
    python benchmarks/grep_vs_rg.py --chapter s03_permissions
    python benchmarks/grep_vs_rg.py --repeats 9 --in-place
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
# query that matches nothing (pure scanning cost) and one that matches very many lines.
QUERIES = [
    ("literal", "import os", None),
    ("literal+include", "TODO", "*.py"),
    ("regex", r"def test_\w+_(error|fail)", None),
    ("regex+include", r"raise \w+Error\(f?['\"]", "*.py"),
    ("no match", "zq_no_such_token_xj", None),
    ("many matches", r"self\.", "*.py"),
]


def load_chapter(chapter: str):
    sys.path.insert(0, str(REPO_ROOT))
    try:
        module = importlib.import_module(f"{chapter}.code")
    except ModuleNotFoundError as e:
        sys.exit(f"cannot import {chapter}/code.py: {e}")
    if not hasattr(module, "grep_search") or not hasattr(module, "RG"):
        sys.exit(f"{chapter}/code.py has no grep_search or no RG global")
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


def median_time(fn, repeats: int) -> tuple[float, object]:
    result = fn()  # warm-up: page cache, imports, regex cache
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def reported_total(output: str) -> int:
    """The number of matching lines grep_search says there are."""
    if output.startswith("No matches for"):
        return 0
    lines = output.splitlines()
    more = re.match(r"\[\.\.\. and (\d+) more matching lines", lines[-1])
    return len(lines) - 1 + int(more.group(1)) if more else len(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chapter", default="s02_tool_use",
                        help="chapter package whose code.py to benchmark (default s02_tool_use)")
    parser.add_argument("--repeats", type=int, default=9, help="timed runs per query (default 9)")
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
        print(f"chapter {args.chapter}; ripgrep {rg} ({version.split()[1]}); "
              f"Python {sys.version.split()[0]}; {os.cpu_count()} CPUs")
        print(f"tree: {tree} ({files:,} files, {size / 1e6:,.0f} MB, "
              f"{text / 1e6:,.0f} MB of it in text files"
              f"{'; a copy without site-packages and __pycache__' if tmp else ''})")
        print(f"median of {args.repeats} runs, after one "
              "warm-up run; times in ms\n")
        os.chdir(tree)  # grep_search only searches inside the current working directory
        header = (f"{'query':<16} {'matches':>9} {'rg':>8} {'rg-same':>8} {'ours':>8} "
                  f"{'ours/rg':>8} {'ours/same':>9}")
        print(header)
        print("-" * len(header))
        for label, pattern, include in QUERIES:
            raw = [rg, "-n", "-e", pattern] + (["--glob", include] if include else []) + ["."]
            same = [rg, "--line-number", "--with-filename", "--no-heading", "--color=never",
                    "--sort=path", "--max-columns=300", "--max-columns-preview", "-e", pattern]
            same += ["--glob", include] if include else []

            def run(cmd):
                return subprocess.run(cmd, capture_output=True, stdin=subprocess.DEVNULL).stdout

            t_raw, raw_out = median_time(lambda: run(raw), args.repeats)
            t_same, _ = median_time(lambda: run(same), args.repeats)
            t_ours, ours_out = median_time(
                lambda: module.grep_search(pattern, ".", include), args.repeats)
            matches = raw_out.count(b"\n")
            flag = "" if reported_total(ours_out) == matches else "!"
            print(f"{label:<16} {str(matches) + flag:>9} {t_raw * 1e3:>8.1f} {t_same * 1e3:>8.1f} "
                  f"{t_ours * 1e3:>8.1f} {t_ours / t_raw:>8.2f} {t_ours / t_same:>9.2f}")
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
