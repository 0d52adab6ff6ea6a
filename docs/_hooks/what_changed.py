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
import functools
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


@functools.lru_cache(maxsize=64)  # a build asks for each file's again and again
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


def unified_diff(a: list[str], b: list[str], fromfile: str = "", tofile: str = "",
                 n: int = 3, lineterm: str = "\n"):
    """difflib.unified_diff, matched without difflib's "autojunk" guess (in a sequence
    of 200 lines or more, it skips lines found in over 1% of them, blank ones say, and
    finds a longer diff). Matched in full, its lines added and removed are those of
    `git diff --histogram`, the command the pages cite (tests/test_docs.py checks)."""
    def span(start: int, stop: int) -> str:  # a hunk's range, as diff -u writes it
        return str(start + 1) if stop - start == 1 else f"{start + (stop > start)},{stop - start}"
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for k, group in enumerate(matcher.get_grouped_opcodes(n)):
        if k == 0:
            yield f"--- {fromfile}{lineterm}"
            yield f"+++ {tofile}{lineterm}"
        (_, i1, _, j1, _), (_, _, i2, _, j2) = group[0], group[-1]
        yield f"@@ -{span(i1, i2)} +{span(j1, j2)} @@{lineterm}"
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                yield from (" " + line for line in a[i1:i2])
                continue
            yield from ("-" + line for line in a[i1:i2])  # replace, delete
            yield from ("+" + line for line in b[j1:j2])  # replace, insert


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
    lines = list(unified_diff(old[1].split("\n"), new[1].split("\n"), n=2,
                              lineterm=""))[2:]
    return renumbered(lines, old[0] - 1, new[0] - 1)


def whole_diff(prev: str, chapter: str, a: str, b: str) -> list[str]:
    """The diff of the two files without their docstrings, numbered as in the files."""
    diff = list(unified_diff(without_docstring(a).split("\n"),
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
    return ""


def fenced_diff(lines: list[str], indent: str = "    ") -> str:
    fence = "````" if any("```" in ln for ln in lines) else "```"
    body = [fence + "diff", *lines, fence]
    return "\n".join(indent + ln if ln else "" for ln in body)


def changes(prev: str, chapter: str, root: Path) -> tuple[list[dict], int]:
    """Each section that is new, changed, moved or removed, in that order:
    {status, key, lines, link, diff}; and how many sections are unchanged."""
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
            return "new"
        if old[key][1] != new[key][1]:
            return "changed" if key in in_place else "changed and moved"
        return "moved" if key not in in_place else "unchanged"

    rows, unchanged = [], 0
    order = {"new": 0, "changed": 1, "changed and moved": 1, "moved": 2, "unchanged": 3}
    for key, (start, text) in sorted(new.items(), key=lambda kv: order[status_of(kv[0])]):
        status, diff = status_of(key), None
        if status == "unchanged":
            unchanged += 1
            continue
        if status == "new":
            size = f"{text.count(chr(10)) + 1} lines"
        elif status.startswith("changed"):
            diff = section_diff(old[key], (start, text))
            size = "+{} −{} lines".format(*counts(diff))
        else:
            size = ""
        rows.append({"status": status, "key": key, "size": size, "diff": diff,
                     "link": link_for(key, text, places)})
    rows += [{"status": "removed", "key": key, "size": f"{text.count(chr(10)) + 1} lines",
              "diff": None, "link": ""} for key, (_, text) in old.items() if key not in new]
    return rows, unchanged


def table(rows: list[dict]) -> str:
    """Two columns, so that it fits a phone: the section, and what happened to it."""
    out = ["| section of code.py | what happened |", "|---|---|"]
    for r in rows:
        name = r["key"] if r["key"] == PREAMBLE else r["key"].split(" · ", 1)[1]
        origin = "" if r["key"] == PREAMBLE else f" (from {r['key'][:3]})"
        what = ", ".join(x for x in (r["status"], r["size"]) if x)
        if r["link"]:
            what += f"; explained in {r['link']}"
        out.append(f"| {name.replace('|', '&#124;')}{origin} | {what} |")
    return "\n".join(out)


def what_changed(prev: str, chapter: str, root: Path, summary: str,
                 plain: bool = False) -> str:
    """The markdown of the <!-- diff --> region: plain Markdown for the README (the
    table, and the command that shows the diff), or the site's version (the table,
    each changed section's diff in Material's folds, and the whole diff last)."""
    rows, unchanged = changes(prev, chapter, root)
    intro = (f"Each section of `code.py` starts at a banner such as `# === s01 · the "
             f"agent loop ===`, which names the chapter that wrote it. Against "
             f"[{prev}](../{prev}/README.md), {len(rows)} sections are new or different "
             f"and {unchanged} are unchanged.")
    parts = [intro, summary, table(rows)]
    if plain:  # GitHub: the table; the diffs are one command away (or on the site)
        parts.append(f"Each section's own diff is on this chapter's page of the reading "
                     f"site; here, the whole diff is one command: "
                     f"`git diff --no-index --histogram {prev}/code.py {chapter}/code.py`.")
        return "\n\n".join(parts)
    for r in rows:
        if r["diff"]:
            title = (f"{r['status'].capitalize()}: {r['key'].split(' · ', 1)[-1]} "
                     f"({r['size']})")
            fold = "???+" if len(r["diff"]) <= OPEN_UP_TO else "???"
            parts.append(f'{fold} abstract "{title}"\n\n{fenced_diff(r["diff"])}\n')
    a = (root / prev / "code.py").read_text(encoding="utf-8")
    b = (root / chapter / "code.py").read_text(encoding="utf-8")
    whole = whole_diff(prev, chapter, a, b)
    plus, minus = counts(whole)
    parts.append(f'??? abstract "The whole diff: {prev} → {chapter}, docstrings left '
                 f'out (+{plus} −{minus})"\n\n{fenced_diff(whole)}\n')
    return "\n\n".join(parts)
