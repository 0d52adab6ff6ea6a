#!/usr/bin/env python3
"""Benchmark (not a test): do `read_file` and `run_shell` stay flat in memory on 1 GB?

What it measures
    The peak resident memory (RSS high-water mark) of one fresh Python process per
    case, each of which imports a chapter's code.py and makes one tool call:
      baseline           only imports the module (what every case starts from)
      read_file end      a SIZE text file of 64-byte numbered lines, read with `offset`
                         ten lines before the end and `limit` 5 (streams past the rest)
      read_file 1 line   a SIZE file that is one single line: `limit` 5 (the line is cut
                         to MAX_LINE_CHARS and the rest skipped)
      run_shell          `yes abcdefghij | head -c SIZE`: the output goes to a temporary
                         file, its head and tail are returned and the whole of it is
                         copied to .tool-results/ (then deleted by this script)
      grep_search        (only with --with-grep) a pattern matching every line of the
                         SIZE text file; this one is NOT expected to be flat
    Peaks are read in the child itself from /proc/self/status (VmHWM: the Python
    process alone), and by the parent from os.wait4's rusage of that one child
    (ru_maxrss: also covers the child's own children, e.g. bash, yes and head), so
    cases never mix. Elapsed is the wall time of the tool call alone.

How to read it
    "above base" is the case's VmHWM minus the baseline's. Flat means it stays well
    under 100 MB whatever SIZE is: run with a smaller --size-mb and it should hardly
    change. "ok" checks that the tool returned what it should (the right line
    numbers, a cut line, a cut output and a saved file of the full size).

Disk
    Files go to a temporary directory under --dir (default: the system temporary
    directory; the shell's temporary files go there too, through TMPDIR). At most
    about 2 x SIZE is on disk at once; it is all removed at the end. Use a directory
    on disk, not a tmpfs (a tmpfs would take the 2 GB from RAM).

Run
    python benchmarks/memory_flat.py                    # SIZE 1024 MB, s02_tool_use
    python benchmarks/memory_flat.py --size-mb 256 --chapter s03_permissions
    python benchmarks/memory_flat.py --with-grep        # also grep_search (not flat)
"""
import argparse
import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
LINE_BYTES = 64  # each line of the text file: "%010d " + filler + "\n"
FILLER = b"the quick brown fox jumps over the lazy dog 0123456"  # 52 bytes


def vm_hwm_kb() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return -1


# ---------------------------------------------------------------- the child side
def child(args) -> None:
    """One measurement: import the chapter, make one call, print a JSON line."""
    os.chdir(args.workdir)  # the tools work inside the current working directory
    sys.path.insert(0, str(REPO_ROOT))
    module = importlib.import_module("offline.chapters").load_chapter(args.chapter)
    result, ok, start = "", True, time.perf_counter()
    if args.child == "read_end":
        lines = args.size_mb * (1 << 20) // LINE_BYTES
        offset = lines - 9
        result = module.read_file("text.txt", offset=offset, limit=5)
        rows = result.splitlines()
        ok = (len(rows) == 6 and rows[0].split("\t") == [f"{offset:>6}", f"{offset:010d} "
              + FILLER.decode()] and rows[-1].startswith("[... more lines follow"))
    elif args.child == "read_line":
        result = module.read_file("one_line.txt", offset=1, limit=5)
        ok = result.startswith("     1\taaaa") and "line cut" in result and len(result) < 3000
    elif args.child == "shell":
        size = args.size_mb * (1 << 20)
        result = module.run_shell(f"yes abcdefghij | head -c {size}")
        saved = list(Path(".tool-results").glob("*"))
        ok = ("bytes cut from the middle" in result and result.endswith("[exit code: 0]")
              and len(saved) == 1 and saved[0].stat().st_size == size
              and len(result) < 2 * module.MAX_OUTPUT_CHARS)
        shutil.rmtree(".tool-results", ignore_errors=True)
    elif args.child == "grep":
        result = module.grep_search("fox", "text.txt")
        ok = "more matching lines" in result
    elapsed = time.perf_counter() - start
    print(json.dumps({"hwm_kb": vm_hwm_kb(), "elapsed": elapsed, "ok": ok,
                      "chars": len(result), "preview": result[:160]}))


# ---------------------------------------------------------------- the parent side
def measure(case: str, args, workdir: Path) -> dict:
    cmd = [sys.executable, __file__, "--child", case, "--chapter", args.chapter,
           "--workdir", str(workdir), "--size-mb", str(args.size_mb)]
    env = {**os.environ, "TMPDIR": str(workdir)}  # run_shell's temporary files go here too
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    if proc.returncode != 0 or not stdout.strip():
        sys.exit(f"case {case} failed (exit {proc.returncode}):\n{stdout}\n{stderr}")
    row = json.loads(stdout.strip().splitlines()[-1])
    row["maxrss_kb"] = usage.ru_maxrss  # KB on Linux
    return row


def write_text_file(path: Path, size_mb: int) -> int:
    """SIZE of 64-byte lines, numbered from 1; returns the number of lines."""
    lines = size_mb * (1 << 20) // LINE_BYTES
    block = 1 << 14
    with path.open("wb") as f:
        for first in range(1, lines + 1, block):
            last = min(first + block, lines + 1)
            f.write(b"".join(b"%010d %s\n" % (n, FILLER) for n in range(first, last)))
    return lines


def write_one_line(path: Path, size_mb: int) -> None:
    chunk = b"a" * (1 << 20)
    with path.open("wb") as f:
        for _ in range(size_mb - 1):
            f.write(chunk)
        f.write(chunk[:-1] + b"\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size-mb", type=int, default=1024,
                        help="size of the files and of the shell output, in MiB (default 1024)")
    parser.add_argument("--chapter", default="s02_tool_use",
                        help="chapter package whose code.py to measure (default s02_tool_use)")
    parser.add_argument("--dir", default=tempfile.gettempdir(),
                        help="where to put the temporary files (default: the temp directory)")
    parser.add_argument("--with-grep", action="store_true",
                        help="also measure grep_search on the text file (not flat: uses GBs)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--workdir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return 0
    if not Path("/proc/self/status").exists():
        sys.exit("this benchmark reads /proc/self/status: it runs on Linux only")
    if not (REPO_ROOT / args.chapter / "code.py").is_file():
        sys.exit(f"no {args.chapter}/code.py in {REPO_ROOT}")

    need = 2 * args.size_mb * (1 << 20) + (256 << 20)
    free = shutil.disk_usage(args.dir).free
    if free < need:
        sys.exit(f"{args.dir} has {free / 2**30:.1f} GiB free; {need / 2**30:.1f} GiB needed. "
                 "Use --size-mb with a smaller size, or --dir elsewhere.")
    workdir = Path(tempfile.mkdtemp(prefix="memory-bench-", dir=args.dir))
    size = f"{args.size_mb:,} MiB"
    print(f"chapter {args.chapter}; SIZE {size}; Python {sys.version.split()[0]}; "
          f"work directory {workdir}")
    rows = []
    try:
        start = time.perf_counter()
        lines = write_text_file(workdir / "text.txt", args.size_mb)
        print(f"wrote text.txt: {lines:,} lines of {LINE_BYTES} bytes "
              f"in {time.perf_counter() - start:.1f}s")
        cases = [("baseline (import only)", "base"),
                 (f"read_file end of {size} ({lines:,} lines), limit 5", "read_end")]
        cases += [(f"grep_search 'fox' on {size} (every line)", "grep")] if args.with_grep else []
        for label, case in cases:
            rows.append((label, measure(case, args, workdir)))
        (workdir / "text.txt").unlink()
        write_one_line(workdir / "one_line.txt", args.size_mb)
        rows.append((f"read_file {size} single line, limit 5",
                     measure("read_line", args, workdir)))
        (workdir / "one_line.txt").unlink()
        rows.append((f"run_shell printing {size}", measure("shell", args, workdir)))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    base = rows[0][1]["hwm_kb"]
    print(f"\n{'case':<56} {'VmHWM MB':>9} {'above base':>10} {'maxrss MB':>9} "
          f"{'elapsed s':>9}  ok")
    print("-" * 101)
    for label, row in rows:
        diff = (row["hwm_kb"] - base) / 1024
        above = "" if row is rows[0][1] else f"{diff if abs(diff) >= 0.05 else 0.0:+.1f}"
        print(f"{label:<56} {row['hwm_kb'] / 1024:>9.1f} {above:>10} "
              f"{row['maxrss_kb'] / 1024:>9.1f} {row['elapsed']:>9.2f}  "
              f"{'yes' if row['ok'] else 'NO'}")
    print("\nMB = MiB. Flat = 'above base' well under 100 MB. Results (first characters):")
    for label, row in rows[1:]:
        print(f"  {label}: {row['chars']:,} chars: {row['preview'][:100]!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
