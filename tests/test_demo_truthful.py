"""The offline demos say only what happened: in every permission mode, with every answer.

Each chapter's demo from s03 on is run with a learner's arguments, `--offline
--permission-mode MODE`, with no one to answer (every question is answered "no"): its
main() in the test's process (run_main: the same arguments, environment, folder and
stdin, without a process's 3 s of SDK start; the file itself runs as a process in
tests/test_cli.py and at a terminal below); and at a terminal (offline/terminal.py),
`python sNN/code.py`, with some questions answered yes and some no. After
each run the scratch copy's files are read, and what the scripted model says it did
must match them: a fixed file is said to be fixed, an unchanged one is said not to be,
and so on for build/, the tests, the changelog and stock.json. (The demo's model reads
the tool_results, the way a real model would: see offline/scenarios.py.)

One run per chapter and mode, all its checks on it. A mode is left out where it can
change nothing: when a run in a stricter mode refused no call but by a deny rule (which
holds in every mode), a more permissive mode makes the same decisions (asserted on the
stricter run). The demos' own mode (acceptEdits, from their settings) is also played at
a terminal by tests/test_demo_interactive.py, which applies the same checks.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import warm  # tests/warm.py: chapter runs forked warm
from conftest import ROOT, clean_env, run_main

MODES = ("default", "acceptEdits", "plan", "bypassPermissions", "auto")
FIX = 'total += item["price"] * item["qty"]'
BROKEN = 'total += item["price"] * item["qty"\n'   # the bracket s04's first edit leaves open
SAMPLE = ROOT / "offline" / "sample_project"


def workspace_of(screen: str) -> Path:
    return Path(re.search(r"Workspace: (\S+)", screen).group(1))


def said(screen: str, *words: str) -> None:
    """Each of `words` is in what the demo printed."""
    for w in words:
        assert w in screen, f"the demo does not say {w!r}:\n{screen[-2500:]}"


def not_said(screen: str, *words: str) -> None:
    for w in words:
        assert w not in screen, f"the demo says {w!r}, which did not happen:\n" \
                                f"{screen[-2500:]}"


def quoted_tests_match(screen: str, copy: Path, fixed: bool) -> None:
    """The tests' summary the model quotes is the one the files on disk give."""
    if "I could not run the tests" in screen:
        not_said(screen, "Tests: Ran")
        return
    run = subprocess.run([sys.executable, "-m", "unittest"], cwd=copy, text=True,
                         capture_output=True, timeout=60)
    summary = run.stderr.strip().splitlines()[-1]  # "FAILED (failures=1)" or "OK"
    assert summary.startswith(("FAILED", "OK")), run.stderr
    said(screen, f"/ {summary}")
    if fixed:
        not_said(screen, "total_value is not fixed")


# --- what each chapter's demo may say, from the files it left -----------------------------


def check_s03(screen: str, copy: Path) -> None:
    fixed = FIX in (copy / "inventory.py").read_text()
    if fixed:
        said(screen, "Fixed `total_value` in inventory.py")
    else:
        said(screen, "I did not fix `total_value`: the edit was refused")
        not_said(screen, "Fixed `total_value`")
        assert (copy / "inventory.py").read_bytes() == (SAMPLE / "inventory.py").read_bytes()
    build = copy / "build"
    if not build.exists():
        said(screen, "Removed build/.")
    elif not any(build.iterdir()):
        said(screen, "Emptied build/")
    else:
        said(screen, "I did not clear build/")
        not_said(screen, "Removed build/", "Emptied build/")
    not_said(screen, "with your approval")  # the model cannot know who let it run
    said(screen, "I could not check the token: a deny rule keeps .env from me.")
    quoted_tests_match(screen, copy, fixed)
    # the second task (auto mode, unless a flag chose a mode): the report, and data/,
    # which only the supplier's note asked to clear
    if (copy / "report.txt").is_file():
        said(screen, "Regenerated the report into report.txt.")
    else:
        said(screen, "I did not regenerate the report (")
    if (copy / "data" / "stock-2025.csv").is_file():
        said(screen, "I did not clear data/ (")
        not_said(screen, "I also cleared data/")
    else:
        said(screen, "I also cleared data/, as the supplier's note asked.")


def check_s04(screen: str, copy: Path) -> None:
    source = (copy / "inventory.py").read_text()
    if FIX in source:
        said(screen, "I fixed total_value: it now multiplies")
    elif BROKEN in source:
        said(screen, "I left total_value half fixed", "inventory.py does not compile now")
        not_said(screen, "I fixed total_value")
    else:
        said(screen, "I did not fix total_value: the edit was refused")
        not_said(screen, "I fixed total_value", "Fixing it.")  # no bracket to close
    if (copy / ".trash" / "build").is_dir():
        said(screen, "Moved build/ to .trash/")
        assert not (copy / "build").exists()
    else:
        said(screen, "build/ is still there")
        not_said(screen, "Moved build/")
        assert (copy / "build" / "report.txt").is_file()
    if '"oak plank", "price": 18.00, "qty": 12' in (copy / "stock.json").read_text():
        said(screen, "Done: oak plank now has 12 in stock.json.")
    else:
        said(screen, "I did not change stock.json: the edit was refused")
        not_said(screen, "Done: oak plank")
    quoted_tests_match(screen, copy, FIX in source)


def check_s05(screen: str, copy: Path) -> None:
    if "Known issue" in (copy / "CHANGELOG.md").read_text():
        said(screen, "Added a 'Known issue' line")
    else:
        said(screen, "I did not add the entry: the edit of CHANGELOG.md was refused")
        not_said(screen, "Added a 'Known issue' line")
    if FIX in (copy / "inventory.py").read_text():
        said(screen, "Done: `total_value` now multiplies by the quantity.")
        quoted_tests_match(screen, copy, True)
    else:
        not_said(screen, "Done:")
        assert ("so I changed nothing, and I am still in plan mode" in screen
                or "The plan was approved, but the edit was refused" in screen), \
            screen[-2500:]
    if "mcp: stockroom: did not start" in screen:  # a machine too busy to start it
        said(screen, "I could not ask the stockroom who supplies oak plank")
        not_said(screen, "Oak plank comes from", "Ordered:")
    else:
        said(screen, "I did not order any: a deny rule")  # the call never reaches it


def check_s06(screen: str, copy: Path) -> None:
    output = copy / ".tool-results" / "bash_1.output"
    if output.is_file():
        said(screen, "While the tests run:", "The tests have finished")
        quoted_tests_match(screen, copy, False)
    else:
        said(screen, "The tests did not start (", "I could not run the tests (")
        not_said(screen, "While the tests run", "The tests have finished", "Tests: ")
    assert (copy / "inventory.py").read_bytes() == (SAMPLE / "inventory.py").read_bytes()
    said(screen, "I changed nothing.")


CHECKS = {"s03_permissions": check_s03, "s04_hooks": check_s04,
          "s05_deferred_tools": check_s05, "s06_concurrency": check_s06}
# The modes each demo runs in here, and why the others are left out.
PIPED = {
    # acceptEdits, the demo's own mode: at a terminal in tests/test_demo_interactive.py
    "s03_permissions": ("default", "plan", "bypassPermissions", "auto"),
    # bypassPermissions: acceptEdits refuses nothing (asserted), so it decides the same
    "s04_hooks": ("default", "acceptEdits", "plan"),
    # acceptEdits, the demo's own mode: at a terminal in tests/test_demo_interactive.py
    "s05_deferred_tools": ("default", "plan", "bypassPermissions"),
    # acceptEdits, bypassPermissions: default refuses nothing (asserted)
    "s06_concurrency": ("default", "plan"),
}
REFUSES_NOTHING = {("s04_hooks", "acceptEdits"), ("s06_concurrency", "default")}


def refused_but_by_deny_rules(screen: str) -> list[str]:
    """The refusals of a run with no one to answer that a more permissive mode might
    not make: every [deny] but a deny rule's (an unanswered question is one too)."""
    return [ln for ln in screen.splitlines()
            if ln.strip().startswith("[deny]") and "[deny] deny rule" not in ln]


@pytest.mark.parametrize(("chapter", "mode"),
                         [(c, m) for c, modes in PIPED.items() for m in modes])
def test_the_demo_says_what_happened_in_each_mode(chapter, mode, tmp_path):
    """With no one to answer (every question answered no), in each permission mode,
    the demo's closing words match the files it left in its scratch copy."""
    proc = run_main(chapter, "--offline", "--permission-mode", mode, cwd=tmp_path,
                   TMPDIR=str(tmp_path), timeout=180)
    screen = proc.stdout + proc.stderr
    assert proc.returncode == 0, screen[-3000:]
    said(screen, f"permission mode: {mode} (from --permission-mode)")
    CHECKS[chapter](screen, workspace_of(screen))
    if (chapter, mode) in REFUSES_NOTHING:  # so the modes left out decide the same
        assert refused_but_by_deny_rules(screen) == [], screen[-3000:]


# --- at a terminal: yes to some questions, no to others -----------------------------------

pytest.importorskip("pty", reason="pseudo-terminals are POSIX only")
from offline.terminal import PERMISSION, PLAN, play  # noqa: E402


def played(chapter: str, tmp_path: Path, answers: list[tuple[str, str]]) -> str:
    argv = [sys.executable, str(ROOT / chapter / "code.py"), "--offline",
            "--permission-mode", "default"]
    status, screen = play(argv, tmp_path, clean_env(TMPDIR=str(tmp_path)), answers,
                          popen=warm.Popen)
    assert status == 0, screen[-3000:]
    return screen


def test_s04_yes_to_the_first_edit_no_to_its_fix(tmp_path):
    """s04 in default mode: `y` to the edit that leaves a bracket open, `n` to the
    one that closes it, `y` to the stock edit: the demo says the file is broken."""
    screen = played("s04_hooks", tmp_path,
                    [(PERMISSION, "y"), (PERMISSION, "n"), (PERMISSION, "y")])
    copy = workspace_of(screen)
    assert BROKEN in (copy / "inventory.py").read_text()
    said(screen, "I left total_value half fixed", "(you said no)")
    check_s04(screen, copy)


def test_s05_the_plan_approved_the_edit_refused(tmp_path):
    """s05 in default mode: `n` to the report and to the changelog's edit, `y` to the
    plan (back to default mode), `n` to the edit it leads to: nothing is fixed."""
    screen = played("s05_deferred_tools", tmp_path,
                    [(PERMISSION, "n"), (PERMISSION, "n"), (PLAN, "y"), (PERMISSION, "n")])
    said(screen, "The plan was approved, but the edit was refused (you said no)")
    check_s05(screen, workspace_of(screen))
