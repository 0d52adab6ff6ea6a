"""The checkers' seal: a digest of every file that decides whether an exercise passes.

A checker (exercises/sNN/test_exK.py) and the code it stands on (conftest.py, make.py,
this file, s06's fifos.py, the scenarios in offline/) belong to the course, not to the
learner: a green check means something only while they are as the course shipped
them. checkers.sha256 records the SHA-256 of each. Whenever a checker runs,
exercises/conftest.py compares them and, if one differs, is missing, or a checker
the course does not know has appeared, says so in one line at the end of the run.
Nothing is blocked: the line is there so that a learner, whose coding agent may have
"fixed" a checker until it passed, knows whether their green is real.

    python exercises/seal.py            record the digests anew (an author, after
                                        changing a checker on purpose)
    python exercises/seal.py --check    list what differs from the record
"""

from __future__ import annotations

import hashlib
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RECORD = "exercises/checkers.sha256"
STARTER = re.compile(r"ex\d+\.py")        # the learner's files: never sealed
CHECKER = re.compile(r"test_.*\.py|conftest\.py")  # what pytest would run or load


def sealed(root: Path = ROOT) -> list[str]:
    """Every Python file of exercises/ except the starters and the solutions."""
    folder = root / "exercises"
    return sorted(p.relative_to(root).as_posix() for p in folder.rglob("*.py")
                  if not STARTER.fullmatch(p.name) and "__pycache__" not in p.parts
                  and "solutions" not in p.relative_to(folder).parts)


def digest(path: Path) -> str:
    """SHA-256 of the file, line endings read as \\n (a checkout on Windows agrees)."""
    return hashlib.sha256(path.read_bytes().replace(b"\r\n", b"\n")).hexdigest()


def recorded(root: Path = ROOT) -> dict[str, str]:
    """path -> digest, as checkers.sha256 holds them (`sha256sum -c` reads it too)."""
    record = root / RECORD
    lines = record.read_text(encoding="utf-8").splitlines() if record.is_file() else []
    return {name: value for value, name in (line.split("  ", 1) for line in lines if line)}


def edited(root: Path = ROOT) -> list[str]:
    """What differs from the record: "path (edited | missing | not the course's)"."""
    known, found = recorded(root), []
    for name, value in known.items():
        path = root / name
        if not path.is_file():
            found.append(f"{name} (missing)")
        elif digest(path) != value:
            found.append(f"{name} (edited)")
    found += [f"{name} (not the course's)" for name in sealed(root)
              if name not in known and CHECKER.fullmatch(Path(name).name)]
    return found


def warning(found: list[str]) -> str:
    """The one line a run ends with when the checkers are not the course's."""
    ours = [item.split(" (", 1)[0] for item in found if "not the course's" not in item]
    restore = f"; `git checkout -- {' '.join(ours)}` restores the course's" if ours else ""
    return (f"NOT THE COURSE'S CHECK: {', '.join(found)}: the checkers differ from "
            f"{RECORD}, so this result does not say whether your code works "
            f"(`git status exercises/` shows what changed{restore}).")


def write(root: Path = ROOT) -> None:
    lines = [f"{digest(root / name)}  {name}" for name in sealed(root)]
    (root / RECORD).write_text("\n".join(lines) + "\n", encoding="utf-8")


def main(argv: list[str]) -> int:
    if "--check" in argv:
        found = edited()
        print("\n".join(found) or "every checker is as recorded")
        return 1 if found else 0
    write()
    print(f"recorded {len(sealed())} files in {RECORD}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
