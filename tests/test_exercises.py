"""The classroom exercises (exercises/): every checker is real, every copy is current.

For each exercise `exercises/sNN/exK.py` (the starter a learner edits):
- its checker `exercises/sNN/test_exK.py` passes on the reference solution
  `exercises/solutions/sNN/exK.py`, and fails on the untouched starter with a
  "Not done yet" message, so no checker is vacuous;
- the starter and the solution differ from the chapter's current code.py only inside
  their `# >>> EXERCISE` regions, and mark the same places (else: run
  `python exercises/refresh.py`); a standalone file (a hook script, marked
  `# standalone:` in its first lines) copies no chapter, but marks the same places;
- the exercise is posed in exercises/sNN/README.md with the command that checks it.

The checkers run as a learner runs them, `pytest exercises/sNN/test_exK.py` from the
repository root, in two subprocesses side by side: every checker on the solutions
(EXERCISE_DIR=exercises/solutions), and every checker on the starters.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from exercises.refresh import chapter_of, digest, drift, is_copy, parse, rebuild  # noqa: E402

STARTERS = sorted(ROOT.glob("exercises/s[0-9][0-9]/ex[0-9]*.py"))
IDS = [f"{p.parent.name}-{p.stem}" for p in STARTERS]


def solution_of(starter: Path) -> Path:
    return ROOT / "exercises" / "solutions" / starter.parent.name / starter.name


def checker_of(starter: Path) -> Path:
    return starter.with_name(f"test_{starter.name}")


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


# --- running every checker on every solution, and on every starter ----------------------

def run_checkers(folder: Path, report: Path) -> subprocess.CompletedProcess:
    """`pytest exercises/sNN/test_exK.py ...` from the repository root, as a learner runs
    a checker, on the files in `folder` (EXERCISE_DIR); one process for all checkers."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "PYTEST_", "EXERCISE_")) and k != "MODEL_ID"}
    env.update(EXERCISE_DIR=str(folder), NO_COLOR="1")
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}",
         *(rel(checker_of(s)) for s in STARTERS)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
        stdin=subprocess.DEVNULL)


def outcomes(report: Path) -> dict[str, list[tuple[str, str, str]]]:
    """checker module ("exercises.s01.test_ex1") -> [(test, "passed"|"failed"|"error", text)]."""
    found: dict[str, list[tuple[str, str, str]]] = {}
    for case in ET.parse(report).iter("testcase"):
        problem = next((c for c in case if c.tag in ("failure", "error", "skipped")), None)
        kind = {"failure": "failed", "error": "error", "skipped": "skipped"}.get(
            getattr(problem, "tag", ""), "passed")
        text = "" if problem is None else f"{problem.get('message', '')}\n{problem.text or ''}"
        found.setdefault(case.get("classname"), []).append((case.get("name"), kind, text))
    return found


@pytest.fixture(scope="module")
def checker_runs(tmp_path_factory):
    """"solution" | "starter" -> (CompletedProcess, outcomes); the two runs in parallel."""
    out = tmp_path_factory.mktemp("checkers")
    folders = {"solution": ROOT / "exercises" / "solutions", "starter": ROOT / "exercises"}
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = {kind: pool.submit(run_checkers, folder, out / f"{kind}.xml")
                for kind, folder in folders.items()}
        return {kind: (run.result(), outcomes(out / f"{kind}.xml")
                       if (out / f"{kind}.xml").exists() else {})
                for kind, run in runs.items()}


def module_of(starter: Path) -> str:
    return f"exercises.{starter.parent.name}.test_{starter.stem}"


def no_checks(starter: Path, run: subprocess.CompletedProcess) -> str:
    return (f"{rel(checker_of(starter))} ran no checks:\n"
            f"{run.stdout[-3000:]}\n{run.stderr[-2000:]}")


def test_there_are_exercises():
    """Every chapter that has an exercises folder has exercises in it."""
    assert STARTERS, "no exercises/sNN/exK.py found"
    for folder in sorted(ROOT.glob("exercises/s[0-9][0-9]")):
        assert list(folder.glob("ex[0-9]*.py")), f"{rel(folder)} holds no exercise"


@pytest.mark.parametrize("starter", STARTERS, ids=IDS)
def test_each_exercise_has_its_files(starter):
    """A starter comes with its checker and its solution."""
    checker, solution = checker_of(starter), solution_of(starter)
    assert checker.is_file(), f"{rel(starter)} has no checker {rel(checker)}"
    assert solution.is_file(), f"{rel(starter)} has no solution {rel(solution)}"


@pytest.mark.parametrize("starter", STARTERS, ids=IDS)
def test_checker_passes_on_the_solution(starter, checker_runs):
    """The reference solution passes every check of its checker."""
    run, results = checker_runs["solution"]
    mine = results.get(module_of(starter), [])
    assert mine, no_checks(starter, run)
    bad = [f"{name}: {kind}\n{text}" for name, kind, text in mine if kind != "passed"]
    assert not bad, (f"{rel(checker_of(starter))} fails on {rel(solution_of(starter))}:\n"
                     + "\n".join(bad)[-4000:])


@pytest.mark.parametrize("starter", STARTERS, ids=IDS)
def test_checker_fails_on_the_untouched_starter(starter, checker_runs):
    """The starter, as handed out, fails its checker, and says the work is not done yet."""
    run, results = checker_runs["starter"]
    mine = results.get(module_of(starter), [])
    assert mine, no_checks(starter, run)
    errors = [f"{name}: {text}" for name, kind, text in mine if kind == "error"]
    assert not errors, f"a check could not even run on the starter (a broken checker?):\n{errors}"
    failed = [text for _, kind, text in mine if kind == "failed"]
    assert failed, (
        f"{rel(checker_of(starter))} passes on the untouched {rel(starter)}: it checks nothing")
    assert any("Not done yet:" in text for text in failed), (
        "the starter's NotImplementedError stub should be reported as 'Not done yet':\n"
        + "\n".join(failed)[-3000:])


# --- the copies stay in step with their chapter ----------------------------------------

# Standalone exercise files (a hook script, marked `# standalone:`) copy no chapter.
COPIES = [p for s in STARTERS for p in (s, solution_of(s)) if p.is_file() and is_copy(p)]


@pytest.mark.parametrize("copy", COPIES, ids=[rel(p) for p in COPIES])
def test_copy_matches_its_chapter_outside_the_regions(copy):
    """Outside its marked regions, an exercise file is its chapter's current code.py."""
    chapter = chapter_of(copy)
    problem = drift(copy.read_text(encoding="utf-8"), chapter.read_text(encoding="utf-8"))
    assert problem is None, (
        f"{rel(copy)} is out of step with {rel(chapter)}: {problem}\n"
        f"Fix: python exercises/refresh.py   (then run this test file again)")


@pytest.mark.parametrize("starter", STARTERS, ids=IDS)
def test_starter_and_solution_mark_the_same_places(starter):
    """The starter and its solution have the same regions, standing in for the same lines."""
    def shape(path):
        return [(r.name, r.replaces, r.digest) for r in parse(path.read_text(encoding="utf-8"))[1]]
    assert shape(starter) == shape(solution_of(starter)), (
        f"{rel(starter)} and {rel(solution_of(starter))} mark different regions")
    assert is_copy(starter) == is_copy(solution_of(starter)), (
        f"one of {rel(starter)} and {rel(solution_of(starter))} is marked `# standalone:` "
        "and the other is not")
    names = [name for name, _, _ in shape(starter)]
    assert all(n == starter.stem or n.startswith(f"{starter.stem}-") for n in names), (
        f"region names in {rel(starter)} should be {starter.stem} or "
        f"{starter.stem}-<part>: {names}")


@pytest.mark.parametrize("starter", STARTERS, ids=IDS)
def test_exercise_is_posed_in_its_readme(starter):
    """exercises/sNN/README.md poses the exercise with the one command that checks it."""
    readme = starter.parent / "README.md"
    assert readme.is_file(), f"{rel(readme)} is missing"
    command = f"pytest {rel(checker_of(starter))}"
    assert command in readme.read_text(encoding="utf-8"), f"{rel(readme)} should name `{command}`"


def test_readme_snippets_exist():
    """Every `--8<-- "file:section"` in exercises/sNN/README.md (the text the chapter
    pages include) names a real file and section, so the strict docs build finds them."""
    for readme in sorted(ROOT.glob("exercises/s[0-9][0-9]/README.md")):
        for target in re.findall(r'--8<-- "([^"]+)"', readme.read_text(encoding="utf-8")):
            path, _, section = target.partition(":")
            assert (ROOT / path).is_file(), f"{rel(readme)} includes a missing file {path}"
            if section:
                text = (ROOT / path).read_text(encoding="utf-8")
                assert f"--8<-- [start:{section}]" in text and f"--8<-- [end:{section}]" in text, (
                    f"{rel(readme)} includes section {section!r}, which {path} does not mark")


# --- refresh.py does what it says --------------------------------------------------------

def test_refresh_follows_a_changed_chapter():
    """code.py gains lines above and below the regions and changes a line: the rebuilt
    copy matches the new code.py, keeps every region, and needs no human."""
    starter = ROOT / "exercises/s01/ex2.py"
    copy = starter.read_text(encoding="utf-8")
    code = chapter_of(starter).read_text(encoding="utf-8")
    lines = code.split("\n")
    lines.insert(lines.index("import argparse"), "import json")
    lines[lines.index("MAX_TOKENS = 8000")] = "MAX_TOKENS = 16000"
    changed = "\n".join(lines) + "\n# a new line at the end\n"
    assert drift(copy, changed) is not None, "the drift check should notice the change"
    new, warnings = rebuild(copy, changed)
    assert warnings == []
    assert drift(new, changed) is None
    assert [r.lines[1:] for r in parse(new)[1]] == [r.lines[1:] for r in parse(copy)[1]]


def test_refresh_flags_a_change_inside_a_replaced_span():
    """code.py changes a line that a region stands in for: refresh warns a human."""
    solution = ROOT / "exercises/solutions/s01/ex2.py"
    copy = solution.read_text(encoding="utf-8")
    code = chapter_of(solution).read_text(encoding="utf-8")
    changed = code.replace("max_turns: int = MAX_TURNS) -> str:",
                           "max_turns: int = MAX_TURNS, verbose: bool = False) -> str:")
    assert changed != code
    assert "changed the 2 line(s) that region ex2-signature stands in for" in drift(copy, changed)
    new, warnings = rebuild(copy, changed)
    assert any("ex2-signature" in w for w in warnings), warnings
    assert drift(new, changed) is None  # updated, but a human was told to look


def test_digest_is_what_the_markers_say():
    """A region's `(replaces N lines: hash)` describes code.py's lines (sanity of the format)."""
    assert digest(["a", "b"]) == digest(["a", "b"]) != digest(["a", "c"])
