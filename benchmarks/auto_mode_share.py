#!/usr/bin/env python3
"""Benchmark (not a test): what share of an agent's calls reaches auto mode's reviewer?

What it measures
    Each reviewed call costs a request (two when the first look blocks), so the
    share of calls that reach the reviewer is auto mode's running cost. This script
    puts calls to the chapter's own gate in mode "auto" (decide_permission, the
    decision before anyone is asked) and sorts them: runs at once (the fast path, an
    allow rule), denied (a deny rule, an unknown tool), asks you (what asks in every
    mode: protected paths, dangerous commands, leaving the sandbox) and reviewed
    (what default mode would ask you about). The calls are the fidelity suite's
    (tests/fidelity/cases.py): the file tools' and the shell's cases and the everyday
    and hand-picked command lists, each in a workspace holding the case's files and
    no permission rules; a call met twice is counted once. No key, no request: the
    reviewer itself is not asked (benchmarks/auto_mode_eval.py asks it).

Run
    python benchmarks/auto_mode_share.py
    python benchmarks/auto_mode_share.py --chapter s06_concurrency --show
"""
import argparse
import json
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "fidelity")]

from offline.chapters import load_chapter  # noqa: E402


def fidelity_calls() -> list:
    """(case files, Claude Code tool, input) of the rule-free cases, each call once."""
    import cases
    chosen = [*cases.FILE_TOOLS, *cases.SHELL, cases.EVERYDAY, cases.EXTRA_VERDICTS]
    seen, calls = set(), []
    for case in chosen:
        if case.settings.get("permissions"):
            continue
        for tool, tool_input in case.calls:
            key = json.dumps([tool, tool_input], sort_keys=True)
            if key not in seen:
                seen.add(key)
                calls.append((case.files, tool, tool_input))
    return calls


def sort_call(mod, files: dict, tool: str, tool_input: dict) -> tuple[str, str]:
    """Where the gate in mode auto sends one call, in a workspace of its own."""
    with tempfile.TemporaryDirectory() as workspace:
        for name, text in files.items():
            path = Path(workspace, name)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(text if isinstance(text, bytes) else text.encode())
        here = os.getcwd()
        os.chdir(workspace)
        try:
            call = mod.Call(tool, tool_input, "toolu_share", mod.Agent(None))
            decision = mod.decide_permission(call, "auto", mod.load_settings())
        finally:
            os.chdir(here)
    if decision.behavior == "ask":
        reviewed = decision.source in mod.REMEMBERED
        return ("reviewed" if reviewed else "asks you"), decision.reason
    return {"allow": "runs at once", "deny": "denied"}[decision.behavior], decision.reason


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--chapter", default="s03_permissions")
    p.add_argument("--show", action="store_true", help="print each call's place")
    args = p.parse_args(argv)
    mod = load_chapter(args.chapter)
    counts, rows = Counter(), []
    for files, tool, tool_input in fidelity_calls():
        place, reason = sort_call(mod, files, tool, tool_input)
        counts[place] += 1
        rows.append((place, tool, json.dumps(tool_input)[:70], reason[:60]))
    if args.show:
        for row in sorted(rows):
            print(" | ".join(row))
    total = sum(counts.values())
    print(f"{total} distinct calls of the fidelity cases, the gate of {args.chapter} "
          "in mode auto:")
    for place in ("runs at once", "reviewed", "asks you", "denied"):
        print(f"  {place:13} {counts[place]:4}  ({counts[place] / total:.1%})")
    print(f"reviewer share: {counts['reviewed']} of {total} calls "
          f"({counts['reviewed'] / total:.1%}) cost a reviewer request (two on a block)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
