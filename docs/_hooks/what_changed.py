"""What changed since the previous chapter, section by section (the docs hook's part).

A chapter's code.py is cut at its origin banners (`# === s03 · permissions: rules ===`),
and each section is compared with the section of the same banner in the previous
chapter's code.py:

    added      the banner is new: the chapter's own code
    changed    the banner was there before, its code differs (with its own small diff)
    moved      the same code, at another place in the file
    removed    the banner is gone

Each row links to the place on the chapter page that explains the section: the
heading above the README's code region that shows it (by banner title or by one of
its functions). The whole-file diff comes last, collapsed, without the two module
docstrings (their reading maps are prose, and the page says the same in full).
"""

from __future__ import annotations

import ast
import difflib
import re
from pathlib import Path

from pymdownx.slugs import slugify

BANNER = re.compile(r"^# === (?P<origin>s\d\d) · (?P<title>.*) ===$")
FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
HEADING = re.compile(r"^(#{2,4}) (?P<text>.+?)\s*$")
CODE_REGION = re.compile(r"^\s*<!-- code (?P<file>[^:\n]+): (?P<items>[^\n]*?) -->")
PREAMBLE = "the imports"   # what comes before the first banner, docstring left out
SLUG = slugify(case="lower")  # mkdocs.yml's toc slugify: ids as GitHub makes them
OPEN_UP_TO = 40            # a section diff this long or shorter starts open


def docstring_lines(source: str) -> tuple[int, int]:
    """(first line index, number of lines) of the module docstring; (0, 0) if none."""
    body = ast.parse(source).body
    if (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)):
        return body[0].lineno - 1, body[0].end_lineno - body[0].lineno + 1
    return 0, 0


def without_docstring(source: str) -> str:
    """The file without its module docstring (the reading map is prose, not code)."""
    first, count = docstring_lines(source)
    lines = source.split("\n")
    del lines[first:first + count]
    return "\n".join(lines)


def sections(source: str) -> dict[str, tuple[int, str]]:
    """{banner title with its origin ("s03 · permissions: rules"): (first line in the
    file, text)}, in file order; what precedes the first banner, without the module
    docstring, is PREAMBLE."""
    first, count = docstring_lines(source)
    lines = without_docstring(source).split("\n")
    starts = [i for i, line in enumerate(lines) if BANNER.match(line)]
    found = {PREAMBLE: (1, "\n".join(lines[:starts[0] if starts else len(lines)]).strip())}
    for n, start in enumerate(starts):
        m = BANNER.match(lines[start])
        end = starts[n + 1] if n + 1 < len(starts) else len(lines)
        line = start + 1 + (count if start >= first else 0)  # as numbered in the file
        found[f"{m['origin']} · {m['title']}"] = (line, "\n".join(lines[start:end]).rstrip())
    return found


def renumbered(diff: list[str], old_offset: int, new_offset: int) -> list[str]:
    """A diff's hunk headers moved by the given numbers of lines."""
    def move(m):
        return (f"@@ -{int(m[1]) + old_offset}{m[2] or ''} "
                f"+{int(m[3]) + new_offset}{m[4] or ''} @@")
    return [re.sub(r"^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@", move, ln) for ln in diff]


def counts(diff_lines: list[str]) -> tuple[int, int]:
    plus = sum(1 for ln in diff_lines if ln.startswith("+") and not ln.startswith("+++"))
    minus = sum(1 for ln in diff_lines if ln.startswith("-") and not ln.startswith("---"))
    return plus, minus


def section_diff(old: tuple[int, str], new: tuple[int, str]) -> list[str]:
    """The unified diff of one section, its hunks numbered as lines of the two files."""
    lines = list(difflib.unified_diff(old[1].split("\n"), new[1].split("\n"), n=2,
                                      lineterm=""))[2:]
    return renumbered(lines, old[0] - 1, new[0] - 1)


def whole_diff(prev: str, chapter: str, a: str, b: str) -> list[str]:
    """The diff of the two files without their docstrings, numbered as in the files."""
    diff = list(difflib.unified_diff(without_docstring(a).split("\n"),
                                     without_docstring(b).split("\n"),
                                     f"{prev}/code.py", f"{chapter}/code.py", lineterm=""))
    return diff[:2] + renumbered(diff[2:], docstring_lines(a)[1], docstring_lines(b)[1])


def explained_in(readme: str, file: str) -> dict[str, tuple[str, str]]:
    """{item shown by a code region of `file`: (heading text, anchor)}: the heading
    under which the README shows it."""
    found, heading, in_fence, seen = {}, None, None, {}
    for line in readme.split("\n"):
        fence = FENCE.match(line)
        if fence and (in_fence is None or fence[1].startswith(in_fence)):
            in_fence = None if in_fence else fence[1]
            continue
        if in_fence:
            continue
        if m := HEADING.match(line):
            text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", m["text"]).replace("`", "")
            text = text.replace("**", "").replace("*", "")
            slug = SLUG(text, "-")
            seen[slug] = seen.get(slug, -1) + 1  # toc makes a repeated id unique
            heading = (text, slug if not seen[slug] else f"{slug}_{seen[slug]}")
        elif (m := CODE_REGION.match(line)) and m["file"].strip() == file and heading:
            for item in m["items"].split(";"):
                found.setdefault(item.strip(), heading)
    return found


def link_for(key: str, text: str, places: dict) -> str:
    title = key.split(" · ", 1)[-1]
    candidates = [title] + re.findall(r"^(?:def|class|async def) (\w+)", text, re.M)
    for name in candidates:
        if name in places:
            heading, anchor = places[name]
            return f"[{heading}](#{anchor})"
    return "not shown on this page"


def fenced_diff(lines: list[str], indent: str = "    ") -> str:
    fence = "````" if any("```" in ln for ln in lines) else "```"
    body = [fence + "diff", *lines, fence]
    return "\n".join(indent + ln if ln else "" for ln in body)


def what_changed(prev: str, chapter: str, root: Path, summary: str) -> str:
    """The markdown of the README's <!-- diff --> region."""
    a = (root / prev / "code.py").read_text(encoding="utf-8")
    b = (root / chapter / "code.py").read_text(encoding="utf-8")
    old, new = sections(a), sections(b)
    places = explained_in((root / chapter / "README.md").read_text(encoding="utf-8"),
                          f"{chapter}/code.py")
    common_old = [k for k in old if k in new]
    common_new = [k for k in new if k in old]
    in_place: set[str] = set()
    for block in difflib.SequenceMatcher(None, common_old, common_new).get_matching_blocks():
        in_place |= set(common_new[block.b:block.b + block.size])
    def status_of(key: str) -> str:
        if key not in old:
            return "added"
        if old[key][1] != new[key][1]:
            return "changed" if key in in_place else "changed, moved"
        return "moved" if key not in in_place else "unchanged"

    rows, diffs, unchanged = [], [], 0
    order = {"added": 0, "changed": 1, "changed, moved": 1, "moved": 2, "unchanged": 3}
    for key, (start, text) in sorted(new.items(), key=lambda kv: order[status_of(kv[0])]):
        if key not in old:
            status, diff = "added", None
            size = f"+{text.count(chr(10)) + 1}"
        elif old[key][1] != text:
            diff = section_diff(old[key], (start, text))
            status = "changed" + ("" if key in in_place else ", moved")
            size = "+{} −{}".format(*counts(diff))
        elif key not in in_place:
            status, diff, size = "moved", None, ""
        else:
            unchanged += 1
            continue
        name = f"`{key}`" if key != PREAMBLE else PREAMBLE
        rows.append(f"| {status} | {name} | {size} | {link_for(key, text, places)} |")
        if diff:
            fold = "???+" if len(diff) <= OPEN_UP_TO else "???"
            diffs.append(f'{fold} abstract "{status.capitalize()}: {key} ({size})"\n\n'
                         f"{fenced_diff(diff)}\n")
    rows += [f"| removed | `{key}` | −{text.count(chr(10)) + 1} | |"
             for key, (_, text) in old.items() if key not in new]
    whole = whole_diff(prev, chapter, a, b)
    plus, minus = counts(whole)
    table = ["| | section | lines | explained in |", "|---|---|---|---|", *rows]
    return "\n\n".join([
        f"Generated from `{prev}/code.py` and `{chapter}/code.py` when this page was built, "
        f"section by section: each section of a file starts at its banner, and the banner "
        f"names the chapter that introduced it. {unchanged} sections are unchanged.",
        summary,
        "\n".join(table),
        *diffs,
        f'??? abstract "The whole diff: {prev} → {chapter}, docstrings left out '
        f'(+{plus} −{minus})"\n\n{fenced_diff(whole)}\n',
    ])
