"""The code blocks of the READMEs, written from the tested files (never by hand).

A README marks where code goes, and this script writes it in:

    <!-- code s03_permissions/code.py: permissions: rules in Claude Code's format -->
    ```python title="s03_permissions/code.py: permissions: rules in Claude Code's format"
    ... the section, as it stands in code.py ...
    ```
    <!-- /code -->

After `code FILE:` come one or more items, separated by `;`. An item is a top-level
function or class of FILE (`decide_permission`), the title of one of its sections, as
its banner gives it after `sNN · ` (`permissions: rules in Claude Code's format`), or,
in an exercise solution, the name of a `>>> EXERCISE` region (`ex1`). The block is
plain Markdown, so a README reads the same on GitHub, in an editor and on the site.

    python docs/_hooks/code_regions.py            rewrite every README's code blocks
    python docs/_hooks/code_regions.py --check    only say which are stale or broken

The site's build runs the check (a stale block or a missing name fails the strict
build), and so does tests/test_docs.py.
"""

from __future__ import annotations

import ast
import functools
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REGION = re.compile(r"(?P<open>^(?P<indent>[ \t]*)<!-- code (?P<file>[^:\n]+): "
                    r"(?P<items>[^\n]*?) -->\n)(?P<body>.*?)(?P<close>^[ \t]*<!-- /code -->)",
                    re.S | re.M)
BANNER = re.compile(r"^# === s\d\d · (?P<title>.*) ===$")
EXERCISE = re.compile(r"^\s*# >>> EXERCISE (?P<name>[a-z][-_0-9a-z]*)")


class RegionError(Exception):
    """A code region names a file or an item that does not exist."""


def source_of(file: str) -> str:
    """The text of a repository file; an exercise solution is made from its patch."""
    path = ROOT / file
    if path.is_file():
        return path.read_text(encoding="utf-8")
    patch = path.with_suffix(".patch")
    if patch.is_file():
        sys.path.insert(0, str(ROOT))
        from exercises.make import build
        return build(patch)
    raise RegionError(f"no file {file}")


@functools.lru_cache(maxsize=64)
def definitions(source: str) -> dict:
    """{name: (first line, end line)} of a file's top-level functions and classes
    (parsed once per text: a README names many items of one file)."""
    return {node.name: (node.lineno - 1 - len(node.decorator_list), node.end_lineno)
            for node in ast.parse(source).body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}


def item_text(source: str, item: str, file: str) -> str:
    """One item of a file: a function or class, a banner section, an exercise region."""
    lines = source.split("\n")
    if item in definitions(source):
        first, end = definitions(source)[item]
        return "\n".join(lines[first:end])
    for i, line in enumerate(lines):
        banner = BANNER.match(line)
        if banner and banner["title"] == item:
            end = next((j for j in range(i + 1, len(lines)) if BANNER.match(lines[j])),
                       len(lines))
            return "\n".join(lines[i:end]).rstrip()
        region = EXERCISE.match(line)
        if region and region["name"] == item:
            end = next(j for j in range(i + 1, len(lines))
                       if re.match(rf"^\s*# <<< EXERCISE {re.escape(item)}\b", lines[j]))
            body = lines[i + 1:end]
            indent = min((len(ln) - len(ln.lstrip()) for ln in body if ln.strip()), default=0)
            return "\n".join(ln[indent:] for ln in body).strip("\n")
    raise RegionError(f"{file} has no function, class, section or exercise region "
                      f"called {item!r}")


def block(file: str, items: str, indent: str = "") -> str:
    """The fenced code block of a region, indented as its markers are."""
    source = source_of(file.strip())
    texts = [item_text(source, item.strip(), file) for item in items.split(";")]
    code = "\n\n\n".join(texts)
    fence = "````" if "```" in code else "```"
    text = f'{fence}python title="{file.strip()}: {items.strip()}"\n{code}\n{fence}\n'
    return "".join(indent + line if line.strip() else line
                   for line in text.splitlines(keepends=True))


def fill(markdown: str) -> str:
    """The markdown with every code region written from its file."""
    return REGION.sub(lambda m: m["open"] + block(m["file"], m["items"], m["indent"])
                      + m["close"], markdown)


def readmes() -> list[Path]:
    return sorted([*ROOT.glob("s[0-9][0-9]_*/README.md"), *ROOT.glob("exercises/*/README.md")])


def stale(paths=None) -> list[str]:
    """What is wrong: a stale README, or a region that names nothing."""
    problems = []
    for path in paths or readmes():
        text = path.read_text(encoding="utf-8")
        try:
            if fill(text) != text:
                problems.append(f"{path.relative_to(ROOT)}: its code blocks are stale; run "
                                "python docs/_hooks/code_regions.py")
        except RegionError as e:
            problems.append(f"{path.relative_to(ROOT)}: {e}")
    return problems


def main(argv: list[str]) -> int:
    if "--check" in argv:
        problems = stale()
        print("\n".join(problems) or "every code block is up to date")
        return 1 if problems else 0
    status = 0
    for path in readmes():
        text = path.read_text(encoding="utf-8")
        try:
            new = fill(text)
        except RegionError as e:
            print(f"{path.relative_to(ROOT)}: {e}")
            status = 1
            continue
        if new != text:
            path.write_text(new, encoding="utf-8")
            print(f"wrote {path.relative_to(ROOT)}")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
