"""The benchmarks page's results, written from benchmarks/results.json.

benchmarks/run_all.py runs the benchmarks and keeps their output there;
`python docs/_hooks/code_regions.py` writes this into the <!-- benchmarks --> region
of benchmarks/README.md: for each script what it measures (its docstring's first
line), its headline figures (the ratios) first, the command that made them, and the
whole output folded.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results.json"


def summary(path: Path) -> str:
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    first = " ".join(doc.split("\n\n")[0].split())
    return first.removeprefix("Benchmark (not a test): ")


def results() -> str:
    data = json.loads(RESULTS.read_text(encoding="utf-8")) if RESULTS.is_file() else {}
    runs, m = data.get("benchmarks", {}), data.get("machine", {})
    parts = []
    if m:
        parts.append(f"Last measured on {m['cpu']}, {m['cores']} cores, {m['memory']} "
                     f"of memory, {m['system']}, Python {m['python']}. Figures from "
                     f"another machine will differ; the ratios travel better than the "
                     f"times. To measure again (a few minutes), then to write this page:")
        parts.append("```bash\npython benchmarks/run_all.py\n"
                     "python docs/_hooks/code_regions.py\n```")
    for path in sorted((ROOT / "benchmarks").glob("*.py")):
        if path.stem == "run_all":
            continue
        run = runs.get(path.stem)
        parts.append(f"### {path.name}\n\n{summary(path)}")
        if not run:
            parts.append(f"Not measured yet: `python benchmarks/run_all.py {path.stem}`.")
            continue
        lines = run["headlines"] or ["(no headline: see the whole output)"]
        parts.append(f"Measured {run['date']} with `{run['command']}` "
                     f"({run['seconds']} s):")
        parts.append("```text\n" + "\n".join(lines) + "\n```")
        parts.append(f"<details>\n<summary>The whole output</summary>\n\n```text\n"
                     f"{run['output']}\n```\n\n</details>")
    return "\n\n".join(parts) + "\n"
