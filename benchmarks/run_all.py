#!/usr/bin/env python3
"""Run every benchmark, short, and keep what it printed in benchmarks/results.json.

    python benchmarks/run_all.py                 every benchmark (a few minutes)
    python benchmarks/run_all.py parallel_speedup memory_flat    only these

Each benchmark runs as its own process with the options in RUNS (smaller than its
defaults, so the whole set takes minutes; run a script alone with its defaults for
steadier figures). Its output, the command, the date and the machine (CPU model, core
count, memory, operating system, Python) go into results.json, which the benchmarks
page (benchmarks/README.md) is generated from: `python docs/_hooks/code_regions.py`
writes the page again (docs/_hooks/benchmarks_page.py picks the ratios and the lines
with the figures out of each output, and shows them first).
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results.json"

# script -> the options of a short run
RUNS = {
    "auto_mode_eval": ["--offline"],  # with a key it spends requests: run it alone
    "auto_mode_share": [],
    "bash_ladder": [],
    "classifier": [],
    "deferred_tools_size": [],
    "fork_cache": [],
    "grep_vs_rg": ["--repeats", "3"],
    "mcp_big_result": [],
    "memory_flat": ["--size-mb", "256"],
    "parallel_speedup": ["-n", "8", "-s", "0.5"],
    "protection_cost": [],
    "sandbox_cost": [],
    "streaming_overlap": [],
}
def machine() -> dict:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        mem = next(line for line in Path("/proc/meminfo").read_text().splitlines()
                   if line.startswith("MemTotal"))
        memory = f"{int(mem.split()[1]) / 1024 / 1024:.1f} GB"
    except (OSError, StopIteration):
        memory = "unknown"
    return {"cpu": cpu, "cores": os.cpu_count(), "memory": memory,
            "system": f"{platform.system()} {platform.release()}",
            "python": platform.python_version()}


def run(name: str) -> dict:
    command = ["python", f"benchmarks/{name}.py", *RUNS[name]]
    start = time.monotonic()
    proc = subprocess.run([sys.executable, *command[1:]], cwd=HERE.parent,
                          capture_output=True, text=True, timeout=1800)
    output = (proc.stdout + (proc.stderr if proc.returncode else "")).rstrip()
    return {"command": " ".join(command), "status": proc.returncode,
            "seconds": round(time.monotonic() - start), "output": output}


def main(argv: list[str]) -> int:
    names = argv or list(RUNS)
    results = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
    results.setdefault("benchmarks", {})
    for name in names:
        print(f"running {name} ...", flush=True)
        results["benchmarks"][name] = run(name)
        results["benchmarks"][name]["date"] = datetime.date.today().isoformat()
    results["machine"] = machine()
    RESULTS.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    print(f"wrote {RESULTS.relative_to(HERE.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
