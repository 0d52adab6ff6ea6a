"""The checkers' seal (exercises/seal.py): an edited checker says so when it runs.

Apart from tests/test_exercises.py on purpose: that file's tests share one worker
(its fixtures run every checker once), and this one needs none of them.
"""

import os
import shutil
import subprocess
import sys

from test_exercises import EDITED, ROOT


def test_an_edited_checker_says_so(tmp_path):
    """In a copy of the course, a checker edited as an agent might (a line added) still
    passes the solution, and the run ends with one line saying it is not the course's
    check, naming the file; restored, nothing differs. A deleted checker, and a checker
    the course does not know, are named too."""
    from exercises import seal
    copy = tmp_path / "course"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")
    for name in ["exercises", "offline", *(p.name for p in ROOT.glob("s[0-9][0-9]_*"))]:
        shutil.copytree(ROOT / name, copy / name, ignore=ignore)
    shutil.copy(ROOT / "pyproject.toml", copy)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "PYTEST_", "EXERCISE_")) and k != "MODEL_ID"}
    env.update(EXERCISE_FILE="exercises/solutions/s01/ex1.py", NO_COLOR="1")

    def check() -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
             "exercises/s01/test_ex1.py"], cwd=copy, env=env, capture_output=True,
            text=True, timeout=300, stdin=subprocess.DEVNULL)

    checker = copy / "exercises" / "s01" / "test_ex1.py"
    original = checker.read_text(encoding="utf-8")
    checker.write_text(original + "\n# the agent made this pass\n", encoding="utf-8")
    run = check()
    assert run.returncode == 0, run.stdout[-3000:]
    said = [line for line in run.stdout.splitlines() if EDITED in line]
    assert len(said) == 1 and "exercises/s01/test_ex1.py (edited)" in said[0], run.stdout
    assert "git checkout -- exercises/s01/test_ex1.py" in said[0]
    checker.write_text(original, encoding="utf-8")
    assert seal.edited(copy) == []  # restored: what the check compares finds nothing
    (copy / "exercises" / "s02" / "test_ex2.py").unlink()
    (copy / "exercises" / "s02" / "test_ex9.py").write_text("def test_ok(): pass\n")
    assert seal.edited(copy) == ["exercises/s02/test_ex2.py (missing)",
                                 "exercises/s02/test_ex9.py (not the course's)"]
