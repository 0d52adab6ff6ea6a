"""An exercise file run with --offline plays its exercise's own short scenario.

`python exercises/sNN/exK.py --offline` (a starter) or
`python exercises/solutions/sNN/exK.py --offline` (a solution) plays the scenario of
exercises/offline/exercises_sNN.py that uses what the exercise adds. One test runs a
solution as a learner does, in a process of its own; the others call each made file's
main() in this process, with sys.argv[0] and the `offline` package as the stand-ins
make them when the file is run (a process per file would cost ~1.5 s of start-up).
"""

from __future__ import annotations

import io
import itertools
import os
import re
import shutil
import subprocess
import sys
import tempfile
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

import offline
from conftest import ROOT, clean_env
from exercises.make import chapter_of, make
from offline.chapters import load_file

# exercise -> (extra arguments, what a solution's run shows)
SOLUTION_SHOWS = {
    "s01/ex1": ([], ["[tokens] turn 3: 1,702 in"]),
    "s01/ex2": (["--token-budget", "150"], ["[stopped: the task spent"]),
    "s01/ex3": ([], ["[stopped: the model made the same call 3 times in a row"]),
    "s02/ex1": ([], ["docs: directory, 2 entries", "docs/logo.png: binary file"]),
    "s02/ex2": ([], ["found 2 time", "two matches each time, as I said"]),
    "s02/ex3": ([], ["edit 2 of 2 failed", "Renamed in both files"]),
    "s03/ex1": ([], ["`git stash drop` denied"]),
    "s03/ex2": ([], ["denied at once, without a question (dontAsk)"]),
    "s03/ex3": ([], ["`tar -tzf site.tgz` ran", "`tar tvzf site.tgz` ran",
                     "`tar -xzf site.tgz` denied"]),
    "s04/ex3": ([], ["[prompt blocked by a hook: no passwords in prompts",
                     "The project's hook says: \"Today is release day"]),
    "s05/ex1": ([], ["Since the backup: the hinges' price"]),
    "s05/ex2": ([], ["Skill 'changelog', file templates/entry.md", "Added the entry"]),
    "s05/ex3": ([], ["exit_plan_mode()", "| 1. `total_value` in inventory.py",
                     "The plan was not approved (no one was at the terminal"]),
    "s06/ex1": ([], ["[batches] list_files + grep_search | run_shell | read_file + read_file"]),
    "s06/ex2": ([], ["The four checks ended at"]),
    "s06/ex3": ([], ["Cancelled: run_shell(command='grep -n TODO inventory.py') failed"]),
}
_loaded = itertools.count(1)


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> Path:
    """Every starter and solution, freshly made, laid out like exercises/."""
    folder = tmp_path_factory.mktemp("made") / "exercises"
    assert make(into=folder, quiet=True) == 0, "python exercises/make.py --check"
    return folder


def run_file(path: Path, args: list[str], cwd: Path, monkeypatch) -> tuple[int, str]:
    """main(args) of an exercise file, in this process, as `python path args` runs it:
    sys.argv[0] is the file, and `offline` holds the exercises' scenarios too."""
    monkeypatch.setattr(sys, "argv", [str(path), *args])
    monkeypatch.setattr(offline, "__path__", [*offline.__path__,
                                              str(ROOT / "exercises" / "offline")])
    for key, value in clean_env(TMPDIR=str(cwd)).items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    monkeypatch.setattr(tempfile, "tempdir", str(cwd))  # tempfile read TMPDIR long ago
    # its chapter's modules (command_line.py ...): fresh copies of its own, as
    # exercises/conftest.py loads a file, so nothing leaks into the next file
    module = load_file(path, f"demo_{path.stem}_{next(_loaded)}", chapter_of(path).parent)
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(out):
        status = module.main(args)
    return status, out.getvalue()


@pytest.mark.parametrize("exercise", SOLUTION_SHOWS)
def test_a_solution_plays_its_exercise(exercise, made, workspace, monkeypatch):
    """A solution run with --offline plays its exercise's scenario, and what the
    exercise adds is at work in it."""
    args, shows = SOLUTION_SHOWS[exercise]
    if exercise == "s03/ex1" and not shutil.which("git"):
        shows = []
    status, out = run_file(made / "solutions" / f"{exercise}.py", ["--offline", *args],
                           workspace, monkeypatch)
    assert status == 0, out[-3000:]
    assert f"OFFLINE DEMO: exercise {exercise[-1]}" in out, out[:600]
    for text in shows:
        assert text in out, f"{exercise}: {text!r} not in\n{out[-3000:]}"
    if exercise == "s06/ex2":  # at most two commands at once: they end in two waves,
        # the second a whole second (a `sleep 1`) after the first. subtle: `date +%T`
        # counts whole seconds, so a wave may straddle one: compare first and last.
        ended = re.search(r"The four checks ended at (.*)\.", out)[1].split(", ")
        seconds = [int(h) * 3600 + int(m) * 60 + int(s)
                   for h, m, s in (t.split(":") for t in ended)]
        assert len(seconds) == 4 and max(seconds) - min(seconds) >= 1, ended


@pytest.mark.parametrize("exercise", [e for e in SOLUTION_SHOWS if e != "s01/ex2"])
def test_a_starter_plays_it_too(exercise, made, workspace, monkeypatch):
    """The untouched starter plays the same scenario: it runs, or stops at its stub
    with one line, never a traceback."""
    status, out = run_file(made / f"{exercise}.py", ["--offline"], workspace, monkeypatch)
    assert f"OFFLINE DEMO: exercise {exercise[-1]}" in out, out[:600]
    assert "Traceback" not in out
    assert status == 0 or (status == 1 and "NotImplementedError" in out), out[-2000:]


def test_a_solution_run_as_a_learner_runs_it(tmp_path):
    """`python exercises/solutions/s01/ex1.py --offline`, in a process: the stand-in
    `offline` package finds the exercise's scenario."""
    make(quiet=True)  # the made files in the repository, as a learner has them
    proc = subprocess.run(
        [sys.executable, str(ROOT / "exercises" / "solutions" / "s01" / "ex1.py"), "--offline"],
        cwd=tmp_path, env=clean_env(TMPDIR=str(tmp_path)), capture_output=True, text=True,
        timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    assert "OFFLINE DEMO: exercise 1: a [tokens] line" in proc.stdout
    assert "[tokens] turn 1: 1,184 in" in proc.stdout
    assert os.path.isdir(re.search(r"Workspace: (\S+)", proc.stdout)[1])
