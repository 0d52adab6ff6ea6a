"""The differential suite: the same tool calls played to Claude Code and to the
chapters that have the mechanism; every difference must be one we know and explain.

Each test is one mechanism. Claude Code's answers come from recorded/<mechanism>.json
(the pinned version's, keyed by each case's inputs); the chapters are played live.
With Claude Code installed, every case with no recording is played to it and recorded,
and a few recorded cases drawn at random are played to it again and must come out as
recorded (harness.py, "the recordings"). Without it the recordings alone are the
oracle; with CI set, a missing Claude Code fails. A test writes its figures to
results/<mechanism>.json, from which page.py writes the figures into this folder's
README (the book's fidelity page); test_the_readme_shows_the_last_run fails when the
two differ.
"""

from __future__ import annotations

import json
import os
import random
from concurrent.futures import ThreadPoolExecutor

import pytest

import harness
import page
from cases import (AGENT_MODES, AUTO, AUTO_PROBES, DANGEROUS, EVERYDAY, EXTRA_VERDICTS,
                   FILE_PROBES, FILE_TOOLS, HOOK_PROBES, HOOKS, MCP, RULES, SHELL,
                   SHELL_PROBES, TASK_LIST, TASK_PROBES, corpus_case)
from conftest import chapters_from, load_chapter
from known import KNOWN

RESULTS = harness.HERE / "results"
# One worker runs this file: each test writes its results/*.json and the README's
# region from all of them, and the last test reads that region; on two workers one
# read a results file another was writing (a CI run failed on it).
pytestmark = pytest.mark.xdist_group("fidelity")

# name -> (owning chapter, first chapter compared, cases, compared fields, probes)
MECHANISMS = {
    "file tools": ("s02", "s02", lambda: FILE_TOOLS, ("error", "files"), FILE_PROBES),
    "run_shell": ("s01", "s02", lambda: SHELL, ("error",), SHELL_PROBES),
    "permission rules and modes": ("s03", "s03", lambda: RULES, ("decision",), {}),
    "bash read-only verdicts": ("s03", "s03", lambda: [corpus_case(), EXTRA_VERDICTS,
                                                       EVERYDAY], ("decision",), {}),
    "dangerous commands": ("s03", "s03", lambda: [DANGEROUS], ("decision",), {}),
    "auto mode": ("s03", "s03", lambda: AUTO, ("decision", "error", "rules"),
                  AUTO_PROBES),
    "hook protocol": ("s04", "s04", lambda: HOOKS, ("error", "files"), HOOK_PROBES),
    "MCP servers": ("s05", "s05", lambda: MCP, ("decision", "error"), {}),
    "task list": ("s06", "s06", lambda: TASK_LIST, ("error",), TASK_PROBES),
    "agent modes": ("s06", "s06", lambda: AGENT_MODES, ("error", "child"), {}),
}


@pytest.fixture(scope="module")
def live() -> bool:
    """Whether Claude Code can be played here: the pinned version is installed."""
    if not harness.installed():
        if os.environ.get("CI"):
            pytest.fail(f"CI plays Claude Code live: {harness.INSTALL}")
        return False
    if harness.version() != harness.PINNED:  # known.py explains the pinned version
        pytest.fail(f"Claude Code {harness.version()} is installed, the suite measures "
                    f"{harness.PINNED} (package.json): {harness.INSTALL}")
    return True


@pytest.fixture(scope="module")
def claude_code(live) -> str:
    """For the tests that need Claude Code itself: they skip without it."""
    if not live:
        pytest.skip(f"Claude Code is not installed: {harness.INSTALL}")
    return harness.version()


def row_name(case, index: int, call) -> str:
    name, tool_input = call
    if len(case.calls) == 1:
        return case.id
    if name.startswith("Task"):  # the task list: the step, the call and its fields
        fields = " ".join(f"{k}={','.join(v) if isinstance(v, list) else v}"
                          for k, v in tool_input.items()
                          if k not in ("taskId", "description"))
        task = f" #{tool_input['taskId']}" if "taskId" in tool_input else ""
        return f"{case.id}: {index + 1}. {name}{task} {fields}".rstrip()
    if name == "Agent":
        return f"{case.id}: Agent {tool_input.get('subagent_type', '(no type)')}"
    what = tool_input.get("command") or f"{name} {tool_input.get('file_path', '')}"
    return f"{case.id}: {what}"


def chapters_played(first: str, cases: list, every: bool) -> list[str]:
    """The first chapter, each chapter where a known difference of the mechanism's
    calls starts or ends, and the last; the chapters between carry the code of the
    one before them for this mechanism (`pytest --every-chapter` plays them too)."""
    chapters = chapters_from(first)
    rows = {row_name(case, i, call) for case in cases for i, call in enumerate(case.calls)}
    starts = {KNOWN[r][k] for r in rows & set(KNOWN) for k in ("since", "until")
              if k in KNOWN[r]}
    return [c for c in chapters
            if every or c in (chapters[0], chapters[-1]) or c[:3] in starts]


def judged(case, result: dict, probes: dict) -> list:
    """Everything the suite judges of an answer: each call's decision, error,
    probe and (auto mode) the autoMode rules its check read, and the files after."""
    probe = probes.get(case.id)
    return [outcome(result, i, ("decision", "error", "rules"), probe)
            for i in range(len(case.calls))] + [result["files"]]


def oracle(mechanism: str, cases: list, probes: dict, live: bool) -> list[dict]:
    """Claude Code's answer to each case: its recording; with Claude Code here, each
    missing one played and recorded, and a few recorded ones played again, which must
    agree with their recording."""
    book, keys = harness.recorded(mechanism), [case.key() for case in cases]
    missing = [c for c, k in zip(cases, keys) if k not in book]
    if not live:
        assert not missing, (
            f"{len(missing)} {mechanism} case(s) have no recording for Claude Code "
            f"{harness.PINNED} ({', '.join(c.id for c in missing[:5])}): install it "
            f"({harness.INSTALL}) and run the suite, which records them")
        return [book[k] for k in keys]
    seed = int(os.environ.get("FIDELITY_SEED") or random.randrange(10**6))
    again = harness.drawn([c for c in cases if c not in missing], seed)
    with ThreadPoolExecutor(3) as pool:
        played = dict(zip([c.key() for c in missing + again],
                          pool.map(harness.run_claude, missing + again)))
    if missing or set(book) - set(keys):  # answers to add, or stale ones to drop
        harness.record(mechanism, {k: book.get(k) or played[k] for k in keys})
    drift = [c.id for c in again
             if judged(c, played[c.key()], probes) != judged(c, book[c.key()], probes)]
    assert not drift, (
        f"Claude Code {harness.PINNED} no longer answers as recorded: {drift} (seed "
        f"{seed}). Delete {harness.recording(mechanism).relative_to(harness.ROOT)} and "
        "run the suite again to record every case afresh, then explain what changed "
        "in known.py")
    return [book.get(k) or played[k] for k in keys]


def outcome(result: dict, i: int, fields, probe) -> dict:
    call = result["calls"][i]
    seen = {f: call.get(f) for f in fields if f != "files"}  # (rules: auto mode's)
    if probe:
        seen["probe"] = probe(call["text"])
    return seen


def compare(cases, fields, probes, claude: list, course: list) -> list[dict]:
    """One row per call: Claude Code's outcome, the chapter's, and whether they agree.
    Files are compared once per case, on its last call's row."""
    rows = []
    for case, ours, theirs in zip(cases, course, claude):
        for i, call in enumerate(case.calls):
            probe = probes.get(case.id)
            a, b = outcome(theirs, i, fields, probe), outcome(ours, i, fields, probe)
            if "files" in fields and i == len(case.calls) - 1:
                a["files"], b["files"] = theirs["files"], ours["files"]
            rows.append({"row": row_name(case, i, call), "claude_code": a, "course": b,
                         "agree": a == b})
    return rows


def short(outcome: dict) -> str:
    """An outcome in a few words, for the page."""
    parts = [outcome.get("decision", "")]
    if "error" in outcome:
        parts.append("error" if outcome["error"] else "ok")
    if "probe" in outcome:
        parts.append(f"probe={outcome['probe']}")
    if outcome.get("rules") is not None:
        parts.append("autoMode read: " + (", ".join(outcome["rules"]) or "none"))
    if outcome.get("child"):
        child = outcome["child"]
        parts.append(f"child: system {child['system']}, tools {child['tools']}, "
                     f"repeats {child['repeats']}, then " + " / ".join(child["then"]))
    if "files" in outcome:
        parts.append("files: " + ", ".join(f"{k}={v[:20]!r}" for k, v in
                                           sorted(outcome["files"].items())) or "none")
    return "; ".join(p for p in parts if p)


@pytest.mark.parametrize("mechanism", list(MECHANISMS))
def test_claude_code_and_the_course_agree_but_for_known_reasons(mechanism, live, request):
    owner, first, make_cases, fields, probes = MECHANISMS[mechanism]
    cases = make_cases()
    claude = oracle(mechanism, cases, probes, live)
    figures, differences, unexpected = {}, {}, []
    every = request.config.getoption("--every-chapter")
    for chapter in chapters_played(first, cases, every):
        mod = load_chapter(chapter)
        course = [harness.run_chapter(mod, case) for case in cases]
        rows = compare(cases, fields, probes, claude, course)
        figures[chapter[:3]] = {"cases": len(rows),
                                "agree": sum(r["agree"] for r in rows)}
        for r in rows:
            known = KNOWN.get(r["row"])
            expected = bool(known) and known["since"] <= chapter[:3] < known.get(
                "until", "s99")
            pinned = known.get("course") if expected else None  # known.py may pin it
            if r["agree"] == expected or pinned not in (None, short(r["course"])):
                unexpected.append((chapter[:3], r["row"], short(r["claude_code"]),
                                   short(r["course"])))
            if not r["agree"]:
                entry = differences.setdefault(r["row"], {
                    "row": r["row"], "claude_code": short(r["claude_code"]),
                    "course": short(r["course"]), "chapters": [],
                    **(known or {"reason": "NOT EXPLAINED", "owner": owner})})
                entry["chapters"].append(chapter[:3])
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{mechanism.replace(' ', '-')}.json").write_text(json.dumps({
        "mechanism": mechanism, "owner": owner, "claude_code": harness.PINNED,
        "first": first, "chapters": figures, "differences": list(differences.values())},
        indent=1, ensure_ascii=False) + "\n")
    page.write()  # the README (and so the book) shows this run
    assert not unexpected, "\n".join(
        f"{c} {row!r}: Claude Code {a} | course {b}" for c, row, a, b in unexpected)


def test_the_readme_shows_the_last_run():
    """The README's figures are those of results/*.json (no Claude Code needed): a
    run that changed the results and a README left behind cannot both be committed."""
    text = (harness.HERE / "README.md").read_text()
    assert page.replace_region(text, page.render(page.load(), page.ran())) == text, (
        "tests/fidelity/README.md is stale: run python tests/fidelity/page.py")


def test_the_claude_code_that_ran_is_recorded(claude_code):
    """results/claude_code.json records the Claude Code the suite ran: its version
    (the pinned one), the permission modes its --help lists, and the mode a run with
    -p and no --permission-mode starts in. s03's note says what this finds: auto and
    the `manual` alias exist, and such a run starts in Manual (`default`)."""
    record = harness.probe()
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "claude_code.json").write_text(json.dumps(record, indent=1) + "\n")
    page.write()
    assert record["claude_code"] == record["reports_version"] == harness.PINNED, record
    assert {"auto", "manual", "dontAsk"} <= set(record["permission_modes"]), record
    assert record["print_mode_starts_in"] == "default", (
        f"claude -p now starts in {record['print_mode_starts_in']!r}: update the note on "
        "modes in s03_permissions/README.md, then this line")


def test_claude_code_in_the_exercises_reads_the_coaching_rules(claude_code):
    """Claude Code started in exercises/ sends the model exercises/CLAUDE.md and the
    AGENTS.md it imports (`@AGENTS.md`): the rules that keep it from reading the
    solutions and editing the checkers are in its context."""
    folder = harness.ROOT / "exercises"
    files = {name: (folder / name).read_text() for name in ("CLAUDE.md", "AGENTS.md")}
    _, requests = harness.run_once(files, ["-p", "Do exercise 2 of s03 for me.",
                                           "--tools", "Read"])
    sent = json.dumps(requests)
    for rule in ("Never write the exercise for them", "Never read the solutions",
                 "Never edit a checker"):
        assert rule in sent, f"Claude Code did not send {rule!r} to the model"


def test_what_ran_is_the_pinned_version():
    """Every figure in results/ was measured on the version package.json pins (no
    Claude Code needed), and s03's note names that version."""
    records = [json.loads(p.read_text()) for p in sorted(RESULTS.glob("*.json"))]
    ran = {r.get("claude_code") for r in records}
    assert ran == {harness.PINNED}, (
        f"results/ holds runs of {sorted(ran)}, package.json pins {harness.PINNED}: "
        "run the suite again with the pinned version")
    assert page.ran(), "no results/claude_code.json: run the suite with Claude Code"
    note = (harness.ROOT / "s03_permissions" / "README.md").read_text()
    assert f"Claude Code {harness.PINNED}" in note
