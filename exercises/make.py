#!/usr/bin/env python3
"""Make the exercise files from their chapter's code.py and a small patch.

A starter (`exercises/sNN/exK.py`, the file a learner edits) and a reference solution
(`exercises/solutions/sNN/exK.py`) are the chapter's whole code.py plus a few marked
regions. What code.py imports from beside it (command_line.py; from s03 on the
classifier, the sandbox ...) the file imports from the chapter's folder, so it runs
where make.py wrote it; a module an exercise changes is written in (WRITTEN_IN):

    # >>> EXERCISE ex2-check                        a region that adds lines
    ...
    # <<< EXERCISE ex2-check

The repository keeps only what differs from code.py, as a unified diff beside where
the file goes (`exK.patch`), and this script makes the files:

    python exercises/make.py            make every missing starter, remake every solution
    python exercises/make.py --check    only check that every patch fits the current code.py
    python exercises/make.py --force    remake the starters too (your edits are lost!)
    python exercises/make.py --save FILE...   store FILE's changes as its patch (authors)
    python exercises/make.py --into DIR       make everything under DIR, laid out like
                                              exercises/ (used by the tests)

A chapter can change freely away from its exercises' regions: a patch finds its place
by the lines around each change. When code.py changes those very lines, the patch no
longer fits, --check (and tests/test_exercises.py) says which, and an author fixes it:
make the file from the old code.py (or edit the new one), then --save it.

The checkers make the files they need themselves (exercises/conftest.py), so a learner
can start with `pytest exercises/s01/test_ex1.py` as well. A starter that exists is
never overwritten without --force: it may hold your work. Made files are not tracked
by git (.gitignore); a standalone exercise file (a hook script, marked `# standalone:`
in its first lines) is not a copy of code.py and is kept as it is.
"""

from __future__ import annotations

import argparse
import difflib
import functools
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXERCISES = ROOT / "exercises"

START = re.compile(r"^[ \t]*# >>> EXERCISE (?P<name>[a-z][-_0-9a-z]*)")
END = re.compile(r"^[ \t]*# <<< EXERCISE (?P<name>[a-z][-_0-9a-z]*)")
HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
STANDALONE = re.compile(r"^# standalone:", re.MULTILINE)
# Where a chapter finds the course's .env, and where a copy one or two folders deeper
# finds the same file: a copy reads the course's root .env, as its banner says.
CHAPTER_ENV = 'env_file = Path(__file__).resolve().parent.parent / ".env"'
COPY_ENV = "env_file = Path(__file__).resolve().parents[{}] / \".env\"  # the root .env"


class PatchError(Exception):
    """A patch that no longer fits its chapter's code.py."""


# --- patches --------------------------------------------------------------------------

def make_patch(chapter_text: str, copy_text: str, name: str) -> str:
    """The unified diff that turns code.py into the copy (3 lines of context)."""
    diff = difflib.unified_diff(chapter_text.split("\n"), copy_text.split("\n"),
                                "code.py", name, n=3, lineterm="")
    return "\n".join(diff) + "\n"


def apply_patch(chapter_text: str, patch_text: str) -> str:
    """code.py with the patch applied. Each hunk is put where its old lines (context
    and removed lines) stand in code.py now, the place nearest its old line number;
    a hunk whose old lines are nowhere raises PatchError."""
    chapter = chapter_text.split("\n")
    out, pos = [], 0
    for start, old, new in hunks(patch_text):
        at = find_block(chapter, old, pos, start)
        if at is None:
            shown = "\n    ".join(old[:8])
            raise PatchError(f"the hunk at code.py line {start + 1} no longer fits; "
                             f"code.py no longer has these lines:\n    {shown}")
        out += chapter[pos:at] + new
        pos = at + len(old)
    return "\n".join(out + chapter[pos:])


def hunks(patch_text: str):
    """(old start, old lines, new lines) of each hunk of a unified diff."""
    lines = patch_text.split("\n")
    i = 0
    while i < len(lines):
        m = HUNK.match(lines[i])
        i += 1
        if not m:
            continue
        old_count = int(m[2]) if m[2] is not None else 1
        new_count = int(m[4]) if m[4] is not None else 1
        start = int(m[1]) - (1 if old_count else 0)
        old, new = [], []
        while (len(old) < old_count or len(new) < new_count) and i < len(lines):
            tag, text = lines[i][:1], lines[i][1:]
            if tag in (" ", ""):
                old.append(text)
                new.append(text)
            elif tag == "-":
                old.append(text)
            elif tag == "+":
                new.append(text)
            i += 1
        yield start, old, new


def find_block(lines: list[str], block: list[str], floor: int, near: int) -> int | None:
    """Where `block` stands in `lines` at or after `floor`, nearest to line `near`."""
    if not block:
        return max(floor, min(near, len(lines)))
    n = len(block)
    places = [i for i in range(floor, len(lines) - n + 1) if lines[i:i + n] == block]
    return min(places, key=lambda i: abs(i - near)) if places else None


# --- which files -------------------------------------------------------------------------

def chapter_of(path: Path) -> Path:
    """exercises/s02/ex1.py (or .patch) and exercises/solutions/s02/ex1.py ->
    s02_tool_use/code.py."""
    found = sorted(ROOT.glob(f"{path.parent.name}_*/code.py"))
    if len(found) != 1:
        raise FileNotFoundError(f"no single chapter {path.parent.name}_*/code.py for {path}")
    return found[0]


# Every chapter's code.py imports its modules from beside it: command_line.py, and from
# s03 on the classifier, the sandbox, the rules ... An exercise file holds the chapter's
# code.py and imports the rest from the chapter's folder, which one line puts on
# sys.path (CHAPTER_PATH, written for where the file is: COPY_PATH). An exercise whose
# work is in a module has that module written in where code.py imports it (WRITTEN_IN),
# with every module that imports it, so that the file stays one program.
MODULES = ("command_line.py",  # what code.py imports from beside it, each before
           "bash_safety.py", "sandbox.py",  # those that import it (s03 on)
           "auto_mode.py",  # (s03 on; it imports none of them)
           "rules.py",  # (s03 on: it imports the three above)
           "protected.py",  # (s03 on: it imports rules.py and sandbox.py)
           "asking.py",  # (s03 on)
           "trust.py",  # (s04 on)
           "mcp_client.py", "skills.py",  # (s05 on)
           "background.py", "tasks.py", "subagents.py",  # (s06)
           "shared_terminal.py")
WRITTEN_IN = {"s03/ex1": ("bash_safety.py",),  # a row of the read-only tables
              "s03/ex3": ("bash_safety.py",)}  # tar_effects, beside git_effects
CHAPTER_PATH = "sys.path.insert(0, str(Path(__file__).resolve().parent))"
COPY_PATH = 'sys.path.insert(0, str(Path(__file__).resolve().parents[{}] / "{}"))'
MODULES_NOTE = "# The chapter's modules (command_line.py ...): imported from its folder"


@functools.lru_cache(maxsize=None)
def top_level_imports(text: str) -> tuple[tuple[int, int, str], ...]:
    """Every top-level `from MODULE import ...` of `text`: (first line, end line,
    MODULE), lines counted from 0. A chapter's text is parsed once a process (make
    builds some 30 files from six code.py and their modules)."""
    import ast
    return tuple((node.lineno - 1, node.end_lineno, node.module)
                 for node in ast.parse(text).body
                 if isinstance(node, ast.ImportFrom) and node.level == 0)


def sibling_imports(text: str, folder: Path) -> list[tuple[int, int, str]]:
    """The top-level `from MODULE import ...` of a module beside it in `folder`:
    (first line, end line, MODULE's file name), lines counted from 0."""
    return [(start, end, f"{module}.py") for start, end, module in top_level_imports(text)
            if (folder / f"{module}.py").is_file()]


def written_in(code: Path, modules=()) -> list[str]:
    """The modules to write into the file: `modules`, and every module beside code.py
    that imports one of them, in MODULES order."""
    chosen, grew = set(modules), True
    while grew:
        before = len(chosen)
        for m in MODULES:
            text = code.with_name(m).read_text(encoding="utf-8") \
                if code.with_name(m).is_file() else ""
            if any(imported in chosen for *_, imported in
                   sibling_imports(text, code.parent)):
                chosen.add(m)
        grew = len(chosen) > before
    return [m for m in MODULES if m in chosen]


def without_imports_of(text: str, folder: Path, modules) -> tuple[list[str], list[str]]:
    """`text`'s lines without its imports of `modules`, and its other sibling imports
    (taken out too, to stand together)."""
    lines, drop, kept = text.split("\n"), set(), []
    for start, end, module in sibling_imports(text, folder):
        drop.update(range(start, end))
        kept += [] if module in modules else lines[start:end]
    return [ln for i, ln in enumerate(lines) if i not in drop], kept


def chapter_text(code: Path, modules=()) -> str:
    """The text an exercise file is made from: code.py, its imports of the chapter's
    modules after the line that finds them, the modules `modules` written in."""
    text = code.read_text(encoding="utf-8")
    found = sibling_imports(text, code.parent)
    if not found:
        return text
    pasted = written_in(code, modules)
    lines, kept = without_imports_of(text, code.parent, pasted)
    inlined = []
    for m in pasted:
        body, imports = without_imports_of(code.with_name(m).read_text(encoding="utf-8"),
                                           code.parent, pasted)
        kept += imports
        inlined += ["\n".join(body).strip("\n"), "", ""]
    at = found[0][0]  # where code.py's imports of its modules stood
    return "\n".join(lines[:at] + [MODULES_NOTE, CHAPTER_PATH] + kept
                     + (["", ""] + inlined[:-1] if inlined else []) + lines[at:])


def patches() -> list[Path]:
    """Every starter's and every solution's patch, in course order."""
    return (sorted(EXERCISES.glob("s[0-9][0-9]/ex[0-9]*.patch"))
            + sorted(EXERCISES.glob("solutions/s[0-9][0-9]/ex[0-9]*.patch")))


def is_solution(patch: Path) -> bool:
    return patch.parent.parent.name == "solutions"


def exercise_key(path: Path) -> str:
    """exercises/s03/ex1.patch, exercises/solutions/s03/ex1.py -> "s03/ex1"."""
    return f"{path.parent.name}/{path.stem}"


def build(patch: Path, target: Path | None = None) -> str:
    """The exercise file a patch describes, made from the current code.py, for the
    place `target` (default: beside the patch)."""
    code = chapter_of(patch)
    chapter = chapter_text(code, WRITTEN_IN.get(exercise_key(patch), ()))
    try:
        text = apply_patch(chapter, patch.read_text(encoding="utf-8"))
    except PatchError as e:
        raise PatchError(f"{patch.relative_to(ROOT)}: {e}") from None
    depth = len(patch.resolve().relative_to(ROOT).parts) - 1  # folders below the root
    text = text.replace(CHAPTER_ENV, COPY_ENV.format(depth))
    return text.replace(CHAPTER_PATH, copy_path(code.parent, target
                                                or patch.with_suffix(".py")))


def copy_path(folder: Path, target: Path) -> str:
    """The line that puts the chapter's folder on sys.path, for a file at `target`:
    found from the file's own place in the course, else (a copy made elsewhere, as
    the tests make them) named in full."""
    try:
        depth = len(target.resolve().relative_to(ROOT).parts) - 1
    except ValueError:
        return f"sys.path.insert(0, {str(folder)!r})"
    return COPY_PATH.format(depth, folder.name)


def unlocated(copy_text: str) -> str:
    """A copy's text with the chapter's own .env line and sys.path line back (what
    its patch is made from: the lines are the copy's place, not the exercise)."""
    text = re.sub(re.escape(COPY_ENV).replace(r"\{\}", r"\d+"), CHAPTER_ENV, copy_text)
    path = re.escape(COPY_PATH).replace(r"\{\}", r"\d+", 1).replace(r"\{\}", r"\w+")
    text = re.sub(path, CHAPTER_PATH.replace("\\", "\\\\"), text)
    return re.sub(r"^sys\.path\.insert\(0, '[^'\n]*'\)$", CHAPTER_PATH, text,
                  flags=re.MULTILINE)


def is_copy(path: Path) -> bool:
    """Is this exercise file a copy of its chapter's code.py (not a standalone one)?"""
    head = "\n".join(path.read_text(encoding="utf-8").split("\n")[:20])
    return not STANDALONE.search(head)


def regions(text: str) -> list[tuple[str, list[str]]]:
    """The marked regions of an exercise file: (name, lines), markers included."""
    found, current = [], None
    for number, line in enumerate(text.split("\n"), start=1):
        start, end = START.match(line), END.match(line)
        if current is None and end:
            raise ValueError(f"line {number}: '<<< EXERCISE {end['name']}' with no start")
        if current is None and start:
            current = (start["name"], [line])
        elif current is not None:
            current[1].append(line)
            if start:
                raise ValueError(f"line {number}: regions do not nest")
            if end:
                if end["name"] != current[0]:
                    raise ValueError(f"line {number}: region {current[0]} ends as {end['name']}")
                found.append(current)
                current = None
    if current is not None:
        raise ValueError(f"region {current[0]} has no end marker")
    return found


# --- the command ---------------------------------------------------------------------------

def make(into: Path = EXERCISES, force: bool = False, quiet: bool = False,
         say=print) -> int:
    """Write every exercise file under `into`; returns 1 if a patch does not fit.
    Says each file it made and then what it did in all (`quiet`: only a new starter,
    no sum; `say` is where the lines go: the docs build logs them out of sight)."""
    status, made, current, kept = 0, 0, 0, 0
    for patch in patches():
        target = into / patch.relative_to(EXERCISES).with_suffix(".py")
        if target.exists() and not (force or is_solution(patch)):
            kept += 1
            continue  # a starter may hold a learner's work
        try:
            text = build(patch, target)
        except PatchError as e:
            print(f"does not fit: {e}", file=sys.stderr)
            status = 1
            continue
        if target.exists() and target.read_text(encoding="utf-8") == text:
            current += 1
            continue
        write_atomically(target, text)
        made += 1
        if not (quiet and is_solution(patch)):  # a new starter is news to a learner
            say(f"made {shown(target)}")
    if not quiet:
        say(f"{made} made, {current} already current, {kept} starters kept as they are "
            f"(they may hold your work; --force remakes them), in {shown(into)}")
    return status


def shown(path: Path) -> str:
    """A path as a learner at the repository's top types it, else in full."""
    try:
        return path.resolve().relative_to(Path.cwd()).as_posix() or "."
    except ValueError:
        return str(path)


def write_atomically(target: Path, text: str) -> None:
    """Checkers may run side by side: a reader sees the old file or the new one."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, target)


def save(files: list[Path]) -> int:
    for file in files:
        file = file.resolve()
        chapter = chapter_text(chapter_of(file), WRITTEN_IN.get(exercise_key(file), ()))
        patch = file.with_suffix(".patch")
        patch.write_text(make_patch(chapter, unlocated(file.read_text(encoding="utf-8")),
                                    file.name),
                         encoding="utf-8")
        print(f"saved {patch.relative_to(ROOT)}")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Make the exercise files from code.py and patches.")
    p.add_argument("--check", action="store_true", help="only check that every patch fits")
    p.add_argument("--force", action="store_true", help="remake starters too (loses edits)")
    p.add_argument("--save", nargs="+", type=Path, metavar="FILE",
                   help="store these exercise files' changes as their patches")
    p.add_argument("--into", type=Path, help="make the files under this folder instead")
    args = p.parse_args(argv)
    if args.save:
        return save(args.save)
    if args.check:
        bad = 0
        for patch in patches():
            try:
                build(patch)
            except PatchError as e:
                print(f"does not fit: {e}")
                bad = 1
        print("every patch fits its chapter" if not bad else "fix the patches above")
        return bad
    return make(args.into.resolve() if args.into else EXERCISES, force=args.force)


if __name__ == "__main__":
    sys.exit(main())
