"""The fidelity page's figures, from the suite's last run (results/*.json).

    python tests/fidelity/page.py     # rewrites the <!-- fidelity --> region of
                                      # tests/fidelity/README.md

The book's hook (docs/_hooks/chapters.py) renders the same region when the site is
built, so the site always shows the last run; this script keeps the README, as read
on GitHub, in step.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from known import KINDS  # noqa: E402

ORDER = ["file tools", "run_shell", "permission rules and modes",
         "bash read-only verdicts", "dangerous commands", "auto mode", "hook protocol",
         "MCP servers", "task list", "agent modes"]


def load(results: Path = HERE / "results") -> list[dict]:
    found = {d["mechanism"]: d for d in
             (json.loads(p.read_text()) for p in sorted(results.glob("*.json")))
             if "mechanism" in d}
    return [found[m] for m in ORDER if m in found]


def ran(results: Path = HERE / "results") -> dict | None:
    """What the suite recorded of the Claude Code it ran (harness.probe), if it did."""
    path = results / "claude_code.json"
    return json.loads(path.read_text()) if path.exists() else None


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", "\\n")


def render(results: list[dict], record: dict | None = None) -> str:
    if not results:
        return "No run recorded yet: run the suite with Claude Code installed."
    versions = sorted({r["claude_code"] for r in results})
    chapters = sorted({c for r in results for c in r["chapters"]})
    started = "" if not record else (
        f" Its `--help` lists the permission modes "
        f"{', '.join(f'`{m}`' for m in record['permission_modes'])}; a run with `-p` "
        f"and no `--permission-mode` starts in `{record['print_mode_starts_in']}`.")
    out = [f"Measured against Claude Code **{', '.join(versions)}**.{started} Each cell: "
           "calls on which the chapter and Claude Code agree, of all calls played; "
           "· where the chapter carries the code of the chapter before it for that "
           "mechanism and is not played (`pytest --every-chapter` plays it).", "",
           "| mechanism | owner | " + " | ".join(chapters) + " |",
           "|---|---|" + "---|" * len(chapters)]
    for r in results:
        cells = []
        for c in chapters:
            f = r["chapters"].get(c)
            cells.append(f"{f['agree']}/{f['cases']} ({100 * f['agree'] / f['cases']:.1f} %)"
                         if f else "·" if c >= r.get("first", "s99") else "n/a")
        anchor = re.sub(r"[^\w-]", "", r["mechanism"].lower().replace(" ", "-"))
        out.append(f"| [{r['mechanism']}](#{anchor}) | {r['owner']} | "
                   + " | ".join(cells) + " |")
    out += ["", "What each kind of difference means:", ""]
    out += [f"- **{kind}**: {text}" for kind, text in KINDS.items()]
    for r in results:
        out += ["", f"### {r['mechanism']}", ""]
        if not r["differences"]:
            out.append("No difference.")
            continue
        out += ["| call | Claude Code | course | kind | owner | why |",
                "|---|---|---|---|---|---|"]
        for d in r["differences"]:
            since = d["chapters"][0] + ("+" if len(d["chapters"]) > 1 else "")
            out.append(f"| `{cell(d['row'])}` | {cell(d['claude_code'])} | "
                       f"{cell(d['course'])} ({since}) | {d.get('kind', '?')} | "
                       f"{d['owner']} | {cell(d['reason'])} |")
    return "\n".join(out)


def replace_region(markdown: str, content: str) -> str:
    return re.sub(r"(<!-- fidelity -->\n).*?(<!-- /fidelity -->)",
                  lambda m: m[1] + content + "\n" + m[2], markdown, flags=re.S)


def write(readme: Path = HERE / "README.md") -> None:
    """The README's region, from the results as they are now."""
    readme.write_text(replace_region(readme.read_text(), render(load(), ran())))


if __name__ == "__main__":
    write()
