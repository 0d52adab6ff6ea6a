"""The code blocks of the READMEs, written from the tested files (never by hand).

A README marks where code goes, and this script writes it in (three kinds of region):

1. Code, by name:

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
The fence's `hl_lines="..."` marks the lines that are new or changed since the
previous chapter (the same item in its code.py; an item it lacks is new throughout):
Material highlights them, GitHub ignores the option.

2. A small run, next to the code it explains: the author writes the `>>>` lines, and
this script runs them against the tested file (in a scratch directory) and writes
what Python printed, as the interpreter would:

    <!-- run s02_tool_use/code.py -->
    ```pycon
    >>> safe_path("../secrets.txt")
    Traceback (most recent call last):
      ...
    ToolError: '../secrets.txt' resolves to /tmp/demo/secrets.txt, outside ...
    ```
    <!-- /run -->

   Each region starts afresh: the module is loaded anew, in an empty scratch
   directory (shown as /tmp/demo). Results are cached by content in .cache/docs/.

3. An exercises file, copied whole (from its marker line on), links made relative
   to the README that includes it:

    <!-- exercises exercises/s03/README.md -->
    ... the text of exercises/s03/README.md ...
    <!-- /exercises -->

    python docs/_hooks/code_regions.py            rewrite every README's code blocks
    python docs/_hooks/code_regions.py --check    only say which are stale or broken

The site's build runs the check (a stale block or a missing name fails the strict
build), and so does tests/test_docs.py.
"""

from __future__ import annotations

import ast
import contextlib
import difflib
import functools
import hashlib
import importlib.util
import io
import os
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REGION = re.compile(r"(?P<open>^(?P<indent>[ \t]*)<!-- code (?P<file>[^:\n]+): "
                    r"(?P<items>[^\n]*?) -->\n)(?P<body>.*?)(?P<close>^[ \t]*<!-- /code -->)",
                    re.S | re.M)
RUN = re.compile(r"(?P<open>^<!-- run (?P<file>[^\n]+?) -->\n)(?P<body>.*?)(?P<close>^<!-- /run -->)",
                 re.S | re.M)
INCLUDE = re.compile(r"(?P<open>^<!-- exercises (?P<file>[^\n]+?) -->\n)(?P<body>.*?)"
                     r"(?P<close>^<!-- /exercises -->)", re.S | re.M)
INCLUDE_FROM = "<!-- the chapter's README includes this file from here on -->"
LINK = re.compile(r"(?P<pre>\]\()(?P<target>[^)\s#]+)(?P<rest>[^)]*\))")
CACHE = ROOT / ".cache" / "docs"
SCRATCH = "/tmp/demo"  # what the scratch directory of a run is shown as
BANNER = re.compile(r"^# === s\d\d · (?P<title>.*) ===$")
EXERCISE = re.compile(r"^\s*# >>> EXERCISE (?P<name>[a-z][-_0-9a-z]*)")


class RegionError(Exception):
    """A code region names a file or an item that does not exist."""


def source_of(file: str) -> str:
    """The text of a repository file. An exercise file is made from its patch, never
    read from disk: the made copy may be stale, or a learner's work."""
    path = ROOT / file
    patch = path.with_suffix(".patch")
    if patch.is_file():
        sys.path.insert(0, str(ROOT))
        from exercises.make import build
        return build(patch)
    if path.is_file():
        return path.read_text(encoding="utf-8")
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


def previous_file(file: str) -> str | None:
    """`s03_x/code.py` -> the code.py of the chapter before it; None for s01 and for
    every other file (an exercise solution is new throughout: no highlight)."""
    m = re.match(r"^s(\d\d)_[a-z0-9_]+/code\.py$", file)
    if not m:
        return None
    earlier = sorted((p for p in ROOT.glob("s[0-9][0-9]_*/code.py")
                      if int(p.parent.name[1:3]) < int(m[1])), key=lambda p: p.parent.name)
    return earlier[-1].relative_to(ROOT).as_posix() if earlier else None


def new_lines(old: str, new: str, least: int = 1) -> list[int]:
    """The 1-based lines of `new` that are not in `old`: a run of fewer than `least`
    equal lines counts as new (so that `return None` found anywhere in a whole file
    does not pass for unchanged code); a blank line is marked only between two
    marked lines."""
    lines = new.split("\n")
    marked = [True] * len(lines)
    matcher = difflib.SequenceMatcher(None, old.split("\n"), lines, autojunk=False)
    for _, j, size in matcher.get_matching_blocks():
        if size >= least:
            marked[j:j + size] = [False] * size
    for i, line in enumerate(lines):
        if not line.strip():
            marked[i] = 0 < i < len(lines) - 1 and marked[i - 1] and marked[i + 1]
    return [i + 1 for i, m in enumerate(marked) if m]


def ranges(numbers: list[int]) -> str:
    """[1, 2, 3, 7] -> "1-3 7" (pymdownx.highlight's hl_lines syntax)."""
    out, start = [], None
    for i, n in enumerate(numbers):
        start = n if start is None else start
        if i + 1 == len(numbers) or numbers[i + 1] != n + 1:
            out.append(f"{start}-{n}" if n != start else str(n))
            start = None
    return " ".join(out)


def highlighted(file: str, items: list[str], texts: list[str]) -> list[int]:
    """The block's lines new or changed since the previous chapter (none for s01)."""
    prev = previous_file(file)
    if prev is None:
        return []
    old_source, marked, offset = source_of(prev), [], 0
    for item, text in zip(items, texts):
        try:  # the same function, class or section in the previous chapter
            lines = new_lines(item_text(old_source, item, prev), text)
        except RegionError:  # none: what was moved here from elsewhere is not new
            lines = new_lines(old_source, text, least=3)
        marked += [offset + n for n in lines]
        offset += text.count("\n") + 3  # the two blank lines between items
    return marked


def block(file: str, items: str, indent: str = "") -> str:
    """The fenced code block of a region, indented as its markers are."""
    file, names = file.strip(), [item.strip() for item in items.split(";")]
    source = source_of(file)
    texts = [item_text(source, item, file) for item in names]
    code = "\n\n\n".join(texts)
    fence = "````" if "```" in code else "```"
    marked = ranges(highlighted(file, names, texts))
    hl = f' hl_lines="{marked}"' if marked else ""
    text = f'{fence}python title="{file}: {items.strip()}"{hl}\n{code}\n{fence}\n'
    return "".join(indent + line if line.strip() else line
                   for line in text.splitlines(keepends=True))


# --- runs: >>> lines, and what Python printed ---------------------------------------

def statements(body: str) -> list[str]:
    """The `>>>` statements of a pycon block (with their `...` lines)."""
    out: list[str] = []
    for line in body.split("\n"):
        if line.startswith(">>> "):
            out.append(line[4:])
        elif (line.startswith("... ") or line == "...") and out:
            out[-1] += "\n" + line[4:]
    return [source.rstrip("\n") for source in out]


def load_module(file: str):
    path = ROOT / file
    name = "_run_" + re.sub(r"\W", "_", file)
    if re.match(r"s\d\d_[a-z0-9_]+/code\.py$", file):  # it imports its bash_safety.py
        name = f"{path.parent.name}.{name}"  # from its package (s03 on)
        if str(ROOT) not in sys.path:
            sys.path.insert(0, str(ROOT))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    saved, sys.dont_write_bytecode = sys.dont_write_bytecode, True
    try:
        spec.loader.exec_module(module)
    finally:
        sys.dont_write_bytecode = saved
    return module


def run_statements(file: str, sources: list[str]) -> str:
    """Run the statements in a fresh module, in a scratch directory; the pycon text."""
    module, shown = load_module(file), []
    namespace = module.__dict__
    old_cwd = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="docs-run-") as tmp:
        os.chdir(tmp)
        try:
            for source in sources:
                out = io.StringIO()
                with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                    try:
                        exec(compile(source + "\n", "<run>", "single"), namespace)
                    except Exception as e:  # shown as the interpreter would, frames left out
                        print(f"Traceback (most recent call last):\n  ...\n"
                              f"{type(e).__name__}: {e}")
                lines = source.split("\n")
                shown += [">>> " + lines[0]] + ["... " + ln for ln in lines[1:]]
                if len(lines) > 1:
                    shown.append("...")
                printed = out.getvalue()
                for prefix in {tmp, os.path.realpath(tmp)}:
                    printed = printed.replace(prefix, SCRATCH)
                shown += printed.rstrip("\n").split("\n") if printed.strip() else []
        finally:
            os.chdir(old_cwd)
    return "\n".join(shown)


def run_block(file: str, body: str) -> str:
    """The pycon block of a run region: its statements and what they print."""
    sources = statements(body)
    if not sources:
        raise RegionError(f"a run region of {file} has no >>> line")
    # What the output depends on: the Python, the file, the statements, this script.
    key = hashlib.sha256("\0".join([sys.version, source_of(file), *sources,
                                    Path(__file__).read_text(encoding="utf-8")]).encode())
    cached = CACHE / "runs" / (key.hexdigest()[:32] + ".txt")
    if cached.is_file():
        text = cached.read_text(encoding="utf-8")
    else:
        text = run_statements(file, sources)
        cached.parent.mkdir(parents=True, exist_ok=True)
        cached.write_text(text, encoding="utf-8")
    return f"```pycon\n{text}\n```\n"


# --- exercises: one file's text, copied --------------------------------------------------

def rebase_links(text: str, source_dir: Path, target_dir: Path) -> str:
    """Relative Markdown links of `text`, written from source_dir, made to work from
    target_dir."""
    def rebase(m):
        target = m["target"]
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("/"):
            return m[0]
        moved = os.path.relpath(os.path.normpath(source_dir / target), target_dir)
        return m["pre"] + Path(moved).as_posix() + m["rest"]
    return LINK.sub(rebase, text)


def included(file: str, readme: Path) -> str:
    path = ROOT / file
    if not path.is_file():
        raise RegionError(f"no file {file}")
    text = path.read_text(encoding="utf-8")
    if INCLUDE_FROM not in text:
        raise RegionError(f"{file} has no line {INCLUDE_FROM!r}")
    text = text.split(INCLUDE_FROM, 1)[1].strip("\n") + "\n"
    return rebase_links(text, path.parent, readme.parent)


def fill(markdown: str, path: Path | None = None) -> str:
    """The markdown with every region written from its file: exercises first (they
    hold code regions), then code, then runs."""
    if path is not None:
        markdown = INCLUDE.sub(lambda m: m["open"] + included(m["file"], path)
                               + m["close"], markdown)
    markdown = REGION.sub(lambda m: m["open"] + block(m["file"], m["items"], m["indent"])
                          + m["close"], markdown)
    return RUN.sub(lambda m: m["open"] + run_block(m["file"].strip(), m["body"])
                   + m["close"], markdown)


def readmes() -> list[Path]:
    """Exercises first: a chapter README copies its exercises file, filled."""
    return [*sorted(ROOT.glob("exercises/*/README.md")), ROOT / "exercises" / "README.md",
            *sorted(ROOT.glob("s[0-9][0-9]_*/README.md"))]


def stale(paths=None) -> list[str]:
    """What is wrong: a stale README, or a region that names nothing."""
    problems = []
    for path in paths or readmes():
        text = path.read_text(encoding="utf-8")
        try:
            if fill(text, path) != text:
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
            new = fill(text, path)
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
