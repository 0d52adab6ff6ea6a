"""The benchmarks page's results, written from benchmarks/results.json.

benchmarks/run_all.py runs the benchmarks and keeps their output there;
`python docs/_hooks/code_regions.py` writes this into the <!-- benchmarks --> region
of benchmarks/README.md: for each script what it measures (its docstring's first
line), the ratios first (RATIOS: one sentence read from its output), the lines with
its figures (HEADLINES), the command that made them, and the whole output folded.
"""

from __future__ import annotations

import ast
import json
import re
import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results.json"

# script -> the lines of its output that carry its figures
HEADLINES = {
    "bash_ladder": r"^\|",
    "classifier": r"commands/s",
    "deferred_tools_size": r"^saved:|deferral|^\s+tools",
    "grep_vs_rg": r"^(grep_search|list_files)\s|\d\.\d\d\s*$",
    "mcp_big_result": r"^the ",
    "memory_flat": r"^case|(yes|no)$",
    "parallel_speedup": r"speedup|\dx$",
    "protection_cost": r"^  |^the check",
    "sandbox_cost": r"^'|plain bash|sandboxed|policy",
    "streaming_overlap": r"^\w+:|hidden in stream|of limit",
}


def column(output: str, after: str, index: int) -> list[float]:
    """The numbers in column `index` of the table that follows the line `after`."""
    rows = output.split(after, 1)[1].split("\n\n")[0].splitlines()[2:]
    return [float(r.split()[index]) for r in rows if r.split()]


def ratio_sentence(name: str, output: str) -> str:
    """The benchmark's ratios, in one sentence (empty if its output has changed)."""
    try:
        if name == "grep_vs_rg":
            parts = []
            for tool in ("grep_search", "list_files"):
                r = column(output, f"\n{tool} ", -2)
                parts.append(f"`{tool}` takes {min(r):.2f}-{max(r):.2f} times raw "
                             f"ripgrep's time (median {statistics.median(r):.2f})")
            return "; ".join(parts) + "."
        if name == "parallel_speedup":
            ideal = re.search(r"ideal speedup ([\d.]+x)", output)[1]
            got = re.findall(r"^(shell|subagents)\s.*\s([\d.]+x)$", output, re.MULTILINE)
            return ("Speedup " + ", ".join(f"{x} ({case})" for case, x in got)
                    + f"; ideal {ideal}.")
        if name == "streaming_overlap":
            runs = re.findall(r"^(\w+): .*?hidden in stream\s+[\d.]+ s \((\d+)% .*?"
                              r"of limit\s+(\d+) %", output, re.MULTILINE | re.DOTALL)
            return "Tool time hidden inside the streamed reply: " + "; ".join(
                f"{pct}% in the {case} scenario ({lim}% of what any agent could)"
                for case, pct, lim in runs) + "."
        if name == "memory_flat":
            above = re.findall(r"\s\+([\d.]+)\s", output)
            size = re.search(r"SIZE ([\d.]+ \w+)", output)[1]
            return (f"Memory above the baseline with {size}: "
                    + ", ".join(f"+{a} MB" for a in above) + " (flat).")
        if name == "deferred_tools_size":
            m = re.search(r"saved: ([\d,]+) bytes per request \((\d+)%\)", output)
            return (f"Deferral saves {m[2]}% of the first request's tool definitions "
                    f"({m[1]} bytes).")
        if name == "bash_ladder":
            row = re.search(r"^\| \*\*all\*\* \| (\d+) \| (\d+) \| (\d+) \| (\d+) \|$",
                            output, re.MULTILINE)
            return (f"Of {row[1]} attacks, {row[2]} get through with the rules alone, "
                    f"{row[3]} with the classifier, {row[4]} with the sandbox.")
        if name == "sandbox_cost":
            ms = re.findall(r"\(([\d.]+x); \+([\d.]+) ms per call\)", output)
            return (f"The sandbox adds {ms[0][1]} ms to a typical read-only command "
                    f"({ms[0][0]} its time as plain bash)"
                    + (f" and {ms[1][1]} ms to one that writes" if len(ms) > 1 else "")
                    + "; the aim is under 20 ms.")
        if name == "protection_cost":
            files = re.search(r"a workspace of ([\d,]+) files", output)[1]
            check = re.search(r"the protection check\s+([\d.]+) ms", output)[1]
            share = re.search(r"the check is (\d+%) of a whole", output)[1]
            linked = re.search(r"check, link to /usr\s+([\d.]+) ms", output)[1]
            return (f"The protection check costs {check} ms per write on {files} "
                    f"files ({share} of a whole write_file call); {linked} ms with a "
                    "link to /usr in the workspace.")
        if name == "mcp_big_result":
            rows = re.findall(r"^the (course|SDK).*?([\d.]+) MB\s+([\d.]+) s$", output,
                              re.MULTILINE)
            return (f"A {rows[0][1]} MB result is read in {rows[0][2]} s through the "
                    f"course's pipe; the SDK's own reader took {rows[1][2]} s for "
                    f"{rows[1][1]} MB (it grows as the square of a line's length).")
        if name == "classifier":
            m = re.search(r"is_read_only_command ([\d,]+) commands/s, dangerous_reason "
                          r"([\d,]+) commands/s", output)
            return (f"{m[1]} commands a second through the read-only check, {m[2]} "
                    f"through the danger check.")
    except (AttributeError, IndexError, TypeError, ValueError):
        return ""
    return ""


def summary(path: Path) -> str:
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    first = " ".join(doc.split("\n\n")[0].split())
    first = first.removeprefix("Benchmark (not a test): ")
    return first[:1].upper() + first[1:]


def cleaned(output: str) -> str:
    """The output without this machine's folders (the page is the same anywhere)."""
    output = output.replace(str(ROOT) + "/", "")
    output = re.sub(r"/tmp/([a-z]+-bench-)\w+", r"/tmp/\1xxxxxxxx", output)
    output = re.sub(r"^-{72,}$", "-" * 72, output, flags=re.MULTILINE)  # rules fit a laptop
    return re.sub(r"(\S{60})\S+", r"\1...", output)  # so do the previews of results



def results() -> str:
    data = json.loads(RESULTS.read_text(encoding="utf-8")) if RESULTS.is_file() else {}
    runs, m = data.get("benchmarks", {}), data.get("machine", {})
    parts = []
    if m:
        parts.append(f"Last measured on {m['cpu']}, {m['cores']} cores, {m['memory']} "
                     f"of memory, {m['system']}, Python {m['python']}, with short runs "
                     f"(the options below). Figures from another machine will differ; "
                     f"the ratios travel better than the times. To measure again (a few "
                     f"minutes), then to write this page:")
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
        output = cleaned(run["output"])
        if sentence := ratio_sentence(path.stem, output):
            parts.append(f"**{sentence}**")
        lines = [ln for ln in output.splitlines()
                 if re.search(HEADLINES.get(path.stem, r"$^"), ln)]
        parts.append(f"Measured {run['date']} with `{run['command']}` "
                     f"({run['seconds']} s):")
        if lines and all(ln.startswith("|") for ln in lines):  # a Markdown table
            parts.append("\n".join(lines))
        elif lines:
            parts.append("```text\n" + "\n".join(lines) + "\n```")
        parts.append(f"<details>\n<summary>The whole output</summary>\n\n```text\n"
                     f"{output}\n```\n\n</details>")
    return "\n\n".join(parts) + "\n"
