"""The classroom exercises (exercises/): every checker is real, every copy is current.

For each exercise `exercises/sNN/exK.py` (the starter a learner edits):
- its checker `exercises/sNN/test_exK.py` passes on the reference solution
  `exercises/solutions/sNN/exK.py`, and fails on the untouched starter with a
  "Not done yet" message, so no checker is vacuous;
- the starter and the solution are made from the chapter's current code.py and a
  patch (`exercises/make.py`); every patch still fits its chapter, and starter and
  solution mark the same places; a standalone file (a hook script, marked
  `# standalone:` in its first lines) copies no chapter, but marks the same places;
- the exercise is posed in exercises/sNN/README.md with the command that checks it.

The checkers run as a learner runs them, `pytest exercises/sNN/test_exK.py` from the
repository root, in two subprocesses side by side: every checker on the solutions,
and every checker on the untouched starters, both freshly made into a scratch folder.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from exercises.make import (  # noqa: E402

    MODULES, WRITTEN_IN, PatchError, apply_patch, build, chapter_of, chapter_text,
    exercise_key, make, make_patch, patches, regions, unlocated, without_imports_of,
    written_in)

# One worker runs this file: its module fixtures build once (pytest -n, --dist loadgroup).
pytestmark = pytest.mark.xdist_group("exercises")

# The starters, named after their checkers: most are made from a patch (exK.patch),
# a standalone one is kept as a file.
STARTERS = [c.with_name(c.name.removeprefix("test_"))
            for c in sorted(ROOT.glob("exercises/s[0-9][0-9]/test_ex[0-9]*.py"))]
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
    # TMPDIR: the scratch copies a checker's demo makes stay with this test's files
    env.update(EXERCISE_DIR=str(folder), NO_COLOR="1", TMPDIR=str(report.parent))
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
def made(tmp_path_factory) -> Path:
    """Every starter and solution, freshly made from code.py and the patches, in a
    folder laid out like exercises/ (the standalone files copied as they are)."""
    folder = tmp_path_factory.mktemp("made") / "exercises"
    assert make(into=folder, quiet=True) == 0, "a patch does not fit: python exercises/make.py --check"
    for path in STARTERS + [solution_of(s) for s in STARTERS]:
        target = folder / path.relative_to(ROOT / "exercises")
        if not target.exists() and path.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, target)
    for stand_in in (folder / "offline", folder / "solutions" / "offline"):
        stand_in.mkdir(parents=True, exist_ok=True)  # `offline` beside the copies' folders
        (stand_in / "__init__.py").write_text(  # the course's package, and the exercises'
            f"__path__ = {[str(ROOT / 'offline'), str(ROOT / 'exercises' / 'offline')]!r}\n")
    return folder


@pytest.fixture(scope="module")
def checker_runs(made, tmp_path_factory):
    """"solution" | "starter" -> (CompletedProcess, outcomes); the two runs in parallel."""
    out = tmp_path_factory.mktemp("checkers")
    folders = {"solution": made / "solutions", "starter": made}
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
    """Every chapter that has an exercises folder has exercises in it: checkers, whose
    starters come from a patch or a file (on a fresh clone nothing is made yet)."""
    assert STARTERS, "no exercises/sNN/test_exK.py found"
    for folder in sorted(ROOT.glob("exercises/s[0-9][0-9]")):
        assert list(folder.glob("test_ex[0-9]*.py")), f"{rel(folder)} holds no exercise"


@pytest.mark.parametrize("starter", STARTERS, ids=IDS)
def test_each_exercise_has_its_files(starter):
    """A checker comes with its starter and its solution: a patch each, or a file."""
    for path in (starter, solution_of(starter)):
        assert path.with_suffix(".patch").is_file() or path.is_file(), (
            f"{rel(checker_of(starter))} has no {rel(path.with_suffix('.patch'))}")


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


@pytest.mark.parametrize("patch", patches(), ids=[rel(p) for p in patches()])
def test_patch_fits_its_chapter(patch):
    """Every patch still finds its place in its chapter's current code.py."""
    try:
        build(patch)
    except PatchError as e:
        pytest.fail(f"{e}\nFix: make the file, correct it, then "
                    f"python exercises/make.py --save <file>", pytrace=False)


def top_level_bindings(text: str, folder: Path) -> dict[str, list[str]]:
    """name -> what binds it at a module's top level, in order: a def or a class (its
    AST), an assignment (its AST), an import (what it imports). Inside a top-level if,
    try or with too, but for the imports of the modules beside it in `folder`."""
    found = {}
    def walk(nodes):
        for node in nodes:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                found.setdefault(node.name, []).append(ast.dump(node))
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:  # a name, or names unpacked; not x[k] or x.a
                    for name in ([target] if isinstance(target, ast.Name) else
                                 getattr(target, "elts", [])):
                        if isinstance(name, ast.Name):
                            found.setdefault(name.id, []).append(ast.dump(node))
            elif isinstance(node, ast.Import):  # `import urllib.parse` binds urllib
                for alias in node.names:
                    bound = alias.asname or alias.name.split(".")[0]
                    found.setdefault(bound, []).append(
                        f"import {alias.name if alias.asname else bound}")
            elif isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    found.setdefault(alias.asname or alias.name, []).append(
                        f"from {'.' * node.level}{node.module} import {alias.name}")
            if isinstance(node, (ast.If, ast.Try, ast.With, ast.ExceptHandler)):
                for block in ("body", "orelse", "finalbody", "handlers"):
                    walk(getattr(node, block, []))
    walk(ast.parse("\n".join(without_imports_of(text, folder, MODULES)[0])).body)
    return found


# Names that two pasted files define differently on purpose, and why that is harmless.
SAME_MEANING = {
    "is_inside": "bash_safety.py's and code.py's: the same test (a path inside the "
                 "workspace), written twice",
}
PASTED = sorted(WRITTEN_IN)  # the exercises that have a module written in


@pytest.mark.parametrize("exercise", PASTED)
def test_the_modules_written_in_shadow_no_name(exercise):
    """An exercise file whose work is in a module has it written in (make.py's
    WRITTEN_IN), with the modules that import it: one namespace with code.py. A
    top-level name that two of those files bind differently would be the later one's
    everywhere, also in the earlier file's functions (when every module was pasted,
    mcp_client.py's processes() replaced sandbox.py's, and s06 ex2's commands failed).
    The other modules are imported, each in a namespace of its own."""
    code = chapter_of(ROOT / "exercises" / f"{exercise}.patch")
    files = [code.with_name(m) for m in written_in(code, WRITTEN_IN[exercise])] + [code]
    bindings = {}  # name -> {file name: its bindings}
    for file in files:
        for name, bound in top_level_bindings(file.read_text(encoding="utf-8"),
                                              code.parent).items():
            bindings.setdefault(name, {})[file.name] = bound
    clashes = {name: sorted(where) for name, where in bindings.items()
               if len(where) > 1 and len({tuple(b) for b in where.values()}) > 1
               and name not in SAME_MEANING}
    assert not clashes, (
        f"{exercise}: written into one exercise file, these names would shadow each "
        f"other (name: the files that bind it): {clashes}; rename one")


def test_an_exercise_file_holds_its_chapter_and_imports_the_rest():
    """A starter is code.py and its exercise, not the modules beside code.py: those
    it imports from the chapter's folder (but what WRITTEN_IN writes in), so a starter
    is about as long as its chapter's code.py."""
    for patch in patches():
        code = chapter_of(patch)
        text = build(patch)
        pasted = written_in(code, WRITTEN_IN.get(exercise_key(patch), ()))
        extra = sum(len(code.with_name(m).read_text(encoding="utf-8").split("\n"))
                    for m in pasted)
        size = len(code.read_text(encoding="utf-8").split("\n"))
        assert len(text.split("\n")) < size + extra + 400, rel(patch)
        for module in {m for m in MODULES if code.with_name(m).is_file()} - set(pasted):
            first = code.with_name(module).read_text(encoding="utf-8").split("\n")[0]
            assert f"from {module.removesuffix('.py')} import" in text, rel(patch)
            assert first not in text, f"{rel(patch)} should import {module}, not hold it"


@pytest.mark.parametrize("starter", STARTERS, ids=IDS)
def test_starter_and_solution_mark_the_same_places(starter, made):
    """The starter and its solution have the same regions, named after the exercise."""
    def names(path):
        return [name for name, _ in regions(path.read_text(encoding="utf-8"))]
    mine = made / starter.relative_to(ROOT / "exercises")
    theirs = made / solution_of(starter).relative_to(ROOT / "exercises")
    assert names(mine) == names(theirs), f"{rel(starter)} and its solution mark different regions"
    assert names(mine) and all(n == starter.stem or n.startswith(f"{starter.stem}-")
                               for n in names(mine)), (
        f"region names in {rel(starter)} should be {starter.stem} or {starter.stem}-<part>: "
        f"{names(mine)}")


@pytest.mark.parametrize("starter", STARTERS, ids=IDS)
def test_exercise_is_posed_in_its_readme(starter):
    """exercises/sNN/README.md poses the exercise with the one command that checks it,
    and says, under its heading, how long it takes (the chapter page sums the times)."""
    readme = starter.parent / "README.md"
    assert readme.is_file(), f"{rel(readme)} is missing"
    text = readme.read_text(encoding="utf-8")
    command = f"pytest {rel(checker_of(starter))}"
    assert command in text, f"{rel(readme)} should name `{command}`"
    number = starter.stem.removeprefix("ex")
    section = re.search(rf"^### Exercise {number} · .*\n\n(?P<first>.*)", text, re.M)
    assert section and re.fullmatch(r"\*\*Time\.\*\* About \d+ minutes\.", section["first"]), (
        f"{rel(readme)}: exercise {number} should open with '**Time.** About N minutes.'")


def test_readmes_show_the_exercise_code_as_it_is():
    """The code each exercises/sNN/README.md shows is written from the exercise files
    by docs/_hooks/code_regions.py (from their patches) and is up to date; no include
    line that only the site understands is left."""
    sys.path.insert(0, str(ROOT / "docs" / "_hooks"))
    import code_regions
    readmes = sorted(ROOT.glob("exercises/s[0-9][0-9]/README.md"))
    assert code_regions.stale(readmes) == []
    for readme in readmes:
        text = readme.read_text(encoding="utf-8")
        assert "--8<--" not in text, f"{rel(readme)} still has an include line"
        assert "<!-- code exercises/" in text, f"{rel(readme)} shows no exercise code"


# --- make.py does what it says -------------------------------------------------------------

CODE = "\n".join(f"line {i}" for i in range(1, 41))
COPY = CODE.replace("line 20", "line 20\n# >>> EXERCISE ex1\nnew work\n# <<< EXERCISE ex1")


def test_patch_round_trip():
    """A patch made from a copy turns code.py back into exactly that copy."""
    assert apply_patch(CODE, make_patch(CODE, COPY, "ex1.py")) == COPY


def test_patch_follows_a_chapter_that_changed_elsewhere():
    """code.py gains lines above and below the region: the patch still fits."""
    changed = "header\n" + CODE.replace("line 5", "line 5\nmore") + "\nfooter"
    made = apply_patch(changed, make_patch(CODE, COPY, "ex1.py"))
    assert "line 20\n# >>> EXERCISE ex1\nnew work" in made and made.startswith("header")
    assert made.endswith("footer") and "line 5\nmore" in made


def test_patch_refuses_a_chapter_that_changed_beside_the_region():
    """code.py changes a line the patch stands on: it says so rather than guess."""
    changed = CODE.replace("line 19", "line nineteen")
    with pytest.raises(PatchError, match="no longer fits"):
        apply_patch(changed, make_patch(CODE, COPY, "ex1.py"))


def test_make_keeps_a_learners_starter(tmp_path):
    """make.py makes a missing starter but never overwrites one that exists."""
    folder = tmp_path / "exercises"
    make(into=folder, quiet=True)
    starter = folder / "s01" / "ex1.py"
    starter.write_text("my work\n")
    make(into=folder, quiet=True)
    assert starter.read_text() == "my work\n"
    solution = folder / "solutions" / "s01" / "ex1.py"
    assert solution.read_text() == build(
        ROOT / "exercises" / "solutions" / "s01" / "ex1.patch", solution)


def test_make_says_what_it_made_and_where(tmp_path, capsys):
    """`python exercises/make.py` names each file it writes, then sums up; run again,
    it says that all is current and which starters it kept."""
    from exercises.make import main
    folder = tmp_path / "exercises"
    assert main(["--into", str(folder)]) == 0
    lines = capsys.readouterr().out.splitlines()
    made = sorted(folder.rglob("*.py"))
    assert sorted(ln.removeprefix("made ") for ln in lines[:-1]) == sorted(map(str, made))
    assert lines[-1].startswith(f"{len(made)} made, 0 already current, 0 starters kept")
    assert lines[-1].endswith(f"in {folder}")
    assert main(["--into", str(folder)]) == 0
    [line] = capsys.readouterr().out.splitlines()
    starters = [p for p in made if "solutions" not in p.parts]
    assert line.startswith(f"0 made, {len(made) - len(starters)} already current, "
                           f"{len(starters)} starters kept")


@pytest.mark.parametrize("patch", [pytest.param(p, id=p.relative_to(ROOT).as_posix())
                                   for p in patches()[:1] + patches()[-1:]])
def test_a_copy_reads_the_courses_root_env(patch):
    """A starter or a solution reads the same .env as the chapters, at the course's
    root (its banner says so), not one in exercises/; its patch does not hold that
    line, so --save gives back the same patch."""
    text = build(patch)
    line = next(ln.strip() for ln in text.split("\n") if ln.strip().startswith("env_file ="))
    where = eval(line.split("=", 1)[1].split("#")[0],  # noqa: S307  (our own line)
                 {"Path": Path, "__file__": str(patch.with_suffix(".py"))})
    assert where == ROOT / ".env", where
    assert unlocated(text) == apply_patch(chapter_text(chapter_of(patch)),
                                          patch.read_text(encoding="utf-8"))


# --- a learner's green is real: the checkers' seal ----------------------------------------

EDITED = "NOT THE COURSE'S CHECK"  # how exercises/seal.py's line starts


def test_the_checkers_are_as_recorded(checker_runs):
    """exercises/checkers.sha256 holds the digest of every checker and of the code it
    stands on, as they are now (an author who changes one runs
    `python exercises/seal.py`); so no learner's run ends with the warning."""
    from exercises import seal
    assert seal.edited() == [], (
        "a checker changed since its digest was recorded: if on purpose, run "
        "`python exercises/seal.py` and commit exercises/checkers.sha256")
    assert set(seal.recorded()) == set(seal.sealed())
    for run, _ in checker_runs.values():
        assert EDITED not in run.stdout, run.stdout[-2000:]


# --- a failed check in plain words ------------------------------------------------------


def test_a_wrong_hook_is_told_in_plain_words(tmp_path):
    """s04 ex1's checker on a hook with two mistakes (its reason names the wrong line;
    it prints on a valid file): each failure shows the checker's message and nothing of
    the machinery (no internal marker, no half of an `a == b and c` that held)."""
    hook = (ROOT / "exercises" / "solutions" / "s04" / "ex1.py").read_text()
    wrong = hook.replace("{e.lineno}:{e.colno}", "{e.lineno + 1}:{e.colno}").replace(
        "    return 0  # the answer",
        "    if not problem and path.endswith('.json'):\n        print('checked')\n"
        "    return 0  # the answer")
    assert wrong.count("checked") == 1 and "e.lineno + 1" in wrong
    (tmp_path / "ex1.py").write_text(wrong)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "PYTEST_", "EXERCISE_")) and k != "MODEL_ID"}
    env.update(EXERCISE_FILE=str(tmp_path / "ex1.py"), NO_COLOR="1", TMPDIR=str(tmp_path))
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "exercises/s04/test_ex1.py"], cwd=ROOT, env=env, text=True,
                         capture_output=True, timeout=300, stdin=subprocess.DEVNULL, check=False)
    out = run.stdout
    assert run.returncode == 1 and "3 failed" in out, out[-3000:]
    assert "got exit 0 and 'checked'" in out  # the checkers' own words
    assert "with stock.json:3:... in it" in out and "stock.json:4:3: Expecting" in out
    assert "<<" not in out, out[-3000:]
    assert not re.search(r"^(Got|In|Expected)\b.* (and|or) ", out, re.MULTILINE), out[-3000:]


# --- a coding agent at the root knows the rules too ---------------------------------------

RULES = ("Never write the exercise for them", "Never read the solutions", "Never edit a checker")


def test_an_agent_started_at_the_root_finds_the_coaching_rules():
    """The root's AGENTS.md (and CLAUDE.md, which imports it) holds the three rules in
    exercises/AGENTS.md's own words, and sends a learner's agent there, a contributor's
    to CONTRIBUTING.md; every path it names exists."""
    root, coach = ((ROOT / p / "AGENTS.md").read_text() for p in (".", "exercises"))
    for rule in RULES:
        assert f"**{rule}" in coach and f"**{rule}" in root, rule
    assert "`exercises/AGENTS.md`" in root and "`CONTRIBUTING.md`" in root
    assert "\n@AGENTS.md\n" in (ROOT / "CLAUDE.md").read_text()
    for named in re.findall(r"`((?:[\w.-]+/)*[\w.-]+(?:\.\w+|/))`", root):
        if "/" in named and "sNN" not in named:  # a path, not a file of each chapter
            assert (ROOT / named).exists(), f"AGENTS.md names {named}, which does not exist"
