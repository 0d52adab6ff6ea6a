#!/usr/bin/env python3
"""Keep every exercise file in step with its chapter's code.py.

An exercise file (a starter, `exercises/sNN/exK.py`, or a solution,
`exercises/solutions/sNN/exK.py`) is a copy of `sNN_name/code.py` with marked regions:

    # >>> EXERCISE ex2-check                        a region that adds lines
    ...
    # <<< EXERCISE ex2-check

    # >>> EXERCISE ex2-call (replaces 1 line: 3f9a0c2e)    a region that stands in
    ...                                                     for 1 line of code.py,
    # <<< EXERCISE ex2-call                                 whose sha1 starts 3f9a0c2e

Everything outside the regions is the chapter's code, byte for byte. So:

    python exercises/refresh.py            re-create every exercise file from the
                                           current code.py, keeping its regions
    python exercises/refresh.py --check    only say which files are out of date
    python exercises/refresh.py FILE...    just these files

tests/test_exercises.py runs the same check (`drift`), so a change to a chapter that
leaves its exercises behind fails the test run, with this command as the fix.

How the regions find their place in a changed code.py: a region that replaces lines
is put back where those exact lines are (found by their hash); a region that adds
lines goes between the lines that surround it now. If code.py changed the very lines a
region replaces, or the lines right beside a region, the file is still rewritten, but
refresh says so and exits 1: read that region again, since the chapter's change may
belong inside it too.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXERCISES = ROOT / "exercises"

START = re.compile(r"^[ \t]*# >>> EXERCISE (?P<name>[a-z][-_0-9a-z]*)"
                   r"(?: \(replaces (?P<count>\d+) lines?: (?P<hash>[0-9a-f]{8})\))?")
END = re.compile(r"^[ \t]*# <<< EXERCISE (?P<name>[a-z][-_0-9a-z]*)")


@dataclass
class Region:
    name: str
    lines: list[str]          # the region as written, marker lines included
    replaces: int = 0         # how many lines of code.py it stands in for
    digest: str | None = None  # the first 8 hex digits of their sha1


def digest(lines: list[str]) -> str:
    return hashlib.sha1("\n".join(lines).encode()).hexdigest()[:8]


def parse(text: str) -> tuple[list[list[str]], list[Region]]:
    """Split a copy into the chapter's text and its regions:
    outside[0], regions[0], outside[1], ..., regions[-1], outside[-1]."""
    outside: list[list[str]] = [[]]
    regions: list[Region] = []
    current: Region | None = None
    for number, line in enumerate(text.split("\n"), start=1):
        start, end = START.match(line), END.match(line)
        if current is None:
            if end:
                raise ValueError(f"line {number}: '<<< EXERCISE {end['name']}' with no start")
            if start:
                current = Region(start["name"], [line], int(start["count"] or 0), start["hash"])
            else:
                outside[-1].append(line)
            continue
        current.lines.append(line)
        if start:
            raise ValueError(f"line {number}: region {start['name']} starts inside "
                             f"region {current.name}; regions do not nest")
        if end:
            if end["name"] != current.name:
                raise ValueError(f"line {number}: region {current.name} ends as {end['name']}")
            regions.append(current)
            outside.append([])
            current = None
    if current is not None:
        raise ValueError(f"region {current.name} has no '<<< EXERCISE {current.name}' line")
    names = [r.name for r in regions]
    if len(set(names)) != len(names):
        raise ValueError(f"a region name is used twice: {names}")
    return outside, regions


def drift(copy_text: str, chapter_text: str) -> str | None:
    """None if the copy is the chapter's text plus its regions; else what differs."""
    try:
        outside, regions = parse(copy_text)
    except ValueError as e:
        return f"bad exercise markers: {e}"
    chapter = chapter_text.split("\n")
    pos = 0
    for k, segment in enumerate(outside):
        here = chapter[pos:pos + len(segment)]
        if here != segment:
            where = next((i for i, (a, b) in enumerate(zip(segment, here)) if a != b),
                         min(len(segment), len(here)))
            want = chapter[pos + where] if pos + where < len(chapter) else "(end of file)"
            have = segment[where] if where < len(segment) else "(end of file)"
            return (f"outside the marked regions, the copy differs from code.py at its "
                    f"line {pos + where + 1}:\n  code.py: {want!r}\n  copy:    {have!r}")
        pos += len(segment)
        if k == len(regions):
            break
        region = regions[k]
        replaced = chapter[pos:pos + region.replaces]
        if region.replaces and digest(replaced) != region.digest:
            return (f"code.py changed the {region.replaces} line(s) that region "
                    f"{region.name} stands in for (line {pos + 1} on)")
        pos += region.replaces
    if pos != len(chapter):
        return f"code.py has {len(chapter) - pos} more line(s) at the end than the copy"
    return None


def rebuild(copy_text: str, chapter_text: str) -> tuple[str, list[str]]:
    """The copy re-made from the current code.py, and warnings for a human."""
    outside, regions = parse(copy_text)
    chapter = chapter_text.split("\n")
    flat = [line for segment in outside for line in segment]
    # For each line of the old text, the line of code.py it became (if unchanged).
    # subtle: autojunk=False, or blank lines (frequent) would be ignored as junk.
    moved: dict[int, int] = {}
    matcher = difflib.SequenceMatcher(None, flat, chapter, autojunk=False)
    for a, b, size in matcher.get_matching_blocks():
        moved.update((a + i, b + i) for i in range(size))
    warnings, spans, boundary, floor = [], [], 0, 0
    for k, region in enumerate(regions):
        boundary += len(outside[k])
        span = find_replaced(region, chapter, floor) if region.replaces else None
        if span is None:
            before, after = boundary - 1, boundary
            start = moved[before] + 1 if before in moved else None
            end = moved[after] if after in moved else None
            if start is None or end is None or end < start:
                warnings.append(f"region {region.name}: code.py changed the lines around "
                                f"it; check where it landed")
                start = start if start is not None else floor
                end = end if end is not None and end >= start else start + region.replaces
            elif region.replaces:
                warnings.append(f"region {region.name}: code.py changed the lines it "
                                f"replaces; read them and update the region if needed")
            elif end != start:
                warnings.append(f"region {region.name}: code.py has new lines right "
                                f"where it was; they were kept after it")
                end = start
            span = (start, end)
        spans.append(span)
        floor = span[1]
    out, pos = [], 0
    for region, (start, end) in zip(regions, spans):
        out += chapter[pos:start]
        out += with_digest(region, chapter[start:end])
        pos = end
    out += chapter[pos:]
    return "\n".join(out), warnings


def find_replaced(region: Region, chapter: list[str], floor: int) -> tuple[int, int] | None:
    """Where the lines the region replaces are now: the first place at or after `floor`."""
    n = region.replaces
    for i in range(floor, len(chapter) - n + 1):
        if digest(chapter[i:i + n]) == region.digest:
            return i, i + n
    return None


def with_digest(region: Region, replaced: list[str]) -> list[str]:
    """The region, its start marker updated to describe the lines it now replaces."""
    m = START.match(region.lines[0])
    head = region.lines[0][:m.start("name")] + region.name
    tail = region.lines[0][m.end():]
    if replaced:
        s = "" if len(replaced) == 1 else "s"
        head += f" (replaces {len(replaced)} line{s}: {digest(replaced)})"
    return [head + tail] + region.lines[1:]


# --- which copy belongs to which chapter ----------------------------------------------

def chapter_of(copy: Path) -> Path:
    """exercises/s02/ex1.py and exercises/solutions/s02/ex1.py -> s02_tool_use/code.py."""
    prefix = copy.parent.name  # "s02"
    found = sorted(ROOT.glob(f"{prefix}_*/code.py"))
    if len(found) != 1:
        raise FileNotFoundError(f"no single chapter {prefix}_*/code.py for {copy}")
    return found[0]


# A file whose first lines hold this marker is not a copy of code.py but a program of
# its own (a hook script, say): it has regions, but no chapter to keep in step with.
STANDALONE = re.compile(r"^# standalone:", re.MULTILINE)


def is_copy(path: Path) -> bool:
    """Is this exercise file a copy of its chapter's code.py (not a standalone one)?"""
    head = "\n".join(path.read_text(encoding="utf-8").split("\n")[:20])
    return not STANDALONE.search(head)


def exercise_files() -> list[Path]:
    """Every starter and every solution that copies its chapter, in course order."""
    starters = sorted(EXERCISES.glob("s[0-9][0-9]/ex[0-9]*.py"))
    solutions = sorted(EXERCISES.glob("solutions/s[0-9][0-9]/ex[0-9]*.py"))
    return [f for f in starters + solutions if is_copy(f)]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Re-create exercise files from code.py.")
    p.add_argument("files", nargs="*", type=Path, help="default: every exercise file")
    p.add_argument("--check", action="store_true", help="report only; change nothing")
    args = p.parse_args(argv)
    status = 0
    for copy in [f.resolve() for f in args.files] or exercise_files():
        name = copy.relative_to(ROOT)
        if not is_copy(copy):
            print(f"skipped   {name}: standalone, not a copy of code.py")
            continue
        chapter = chapter_of(copy)
        text, code = copy.read_text(encoding="utf-8"), chapter.read_text(encoding="utf-8")
        problem = drift(text, code)
        if problem is None:
            print(f"ok        {name}")
            continue
        if args.check:
            print(f"outdated  {name}: {problem}")
            status = 1
            continue
        new, warnings = rebuild(text, code)
        copy.write_text(new, encoding="utf-8")
        print(f"refreshed {name} from {chapter.relative_to(ROOT)}")
        for warning in warnings + ([problem] if drift(new, code) else []):
            print(f"  check by hand: {warning}")
            status = 1
    if status and not args.check:
        print("Then run: python -m pytest tests/test_exercises.py")
    return status


if __name__ == "__main__":
    sys.exit(main())
