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
import html
import importlib.util
import io
import math
import os
import re
import sys
import tempfile
import textwrap
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HOOKS = Path(__file__).resolve().parent


def hook_module(name: str):
    """A module beside this one (docs/_hooks/NAME.py), loaded by its path: mkdocs
    puts this folder on sys.path only while it loads the hook."""
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, HOOKS / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]
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


def highlighted(file: str, items: list[str], texts: list[str]) -> list[list[int]]:
    """For each item, its lines new or changed since the previous chapter (none for
    s01, and none for a file that has no previous chapter)."""
    prev = previous_file(file)
    if prev is None:
        return [[] for _ in texts]
    old_source, marked = source_of(prev), []
    for item, text in zip(items, texts):
        try:  # the same function, class or section in the previous chapter
            marked.append(new_lines(item_text(old_source, item, prev), text))
        except RegionError:  # none: what was moved here from elsewhere is not new
            marked.append(new_lines(old_source, text, least=3))
    return marked


EXCERPT = re.compile(r"^(?P<item>.*?)\s*\[(?P<keys>[^\]]*)\]$")
ELIDED = "# ..."  # stands for lines an excerpt leaves out (tests/test_docs.py knows it)


def header_end(lines: list[str]) -> int:
    """How many lines the item's head takes: a banner, a comment line before it,
    or a def/class signature up to the line that ends with its colon."""
    if lines[0].startswith("# === "):  # a banner, and the comment lines under it
        return next((i for i, ln in enumerate(lines) if not ln.startswith("#")),
                    len(lines))
    if lines[0].lstrip().startswith(("def ", "class ", "async def ", "@")):
        for i, line in enumerate(lines):
            if re.search(r"\)\s*(->\s*[^:]+)?:\s*(#.*)?$|^\s*class \w+.*:$", line) and \
                    not line.lstrip().startswith("@"):
                return i + 1
    return 1


def signature_lines(lines: list[str], i: int) -> list[int]:
    """Line i, a def or class, with the lines its signature continues on, and the
    first line of its docstring."""
    end = i + header_end(lines[i:])
    shown = list(range(i, end))
    if end < len(lines) and lines[end].strip().startswith(('"""', "r\"\"\"")):
        shown.append(end)
    return shown


def outline(lines: list[str]) -> list[int]:
    """The lines that say what a section holds: its banner, each def and class
    signature (with its docstring, methods too) and each top-level assignment,
    whole."""
    shown = list(range(header_end(lines)))
    for i, line in enumerate(lines):
        if re.match(r"^( {4})?(async def|def|class) ", line):
            shown += whole_statements(lines, set(signature_lines(lines, i)))
        elif re.match(r"^[A-Z_][A-Z0-9_]* *(: [^=]+)?= ", line):
            shown += constant_lines(lines, i)
    return shown


def constant_lines(lines: list[str], i: int) -> list[int]:
    """A constant, whole; a long table (more than TABLE_SHOWN lines) by its first
    line and its first and last entries."""
    span = next((sp for sp in statement_spans(lines) if sp[0] == i), None)
    if span is None:
        return [i]
    first, last, node = span
    parts = table_parts(first, last, node)
    if parts is None or last - first < TABLE_SHOWN or len(parts) < 4:
        return list(range(first, last + 1))
    return [j for a, b in (parts[0], parts[1], parts[-2], parts[-1])
            for j in range(a, b + 1)]


TABLE_SHOWN = 6  # lines of a table that an outline shows whole


def changed(lines: list[str], new: set[int]) -> list[int]:
    """The lines new since the previous chapter, each with the rest of its statement
    and the signature of the def it is in."""
    shown = list(range(header_end(lines)))
    for i in sorted(new):
        if not lines[i].strip():
            continue
        shown += whole_statements(lines, {i})
        owner = next((j for j in range(i, -1, -1)
                      if re.match(r"^\s*(async def|def|class) ", lines[j])), None)
        if owner is not None:
            shown += range(owner, owner + header_end(lines[owner:]))
    return shown


def excerpt(text: str, keys: str, item: str,
            new: set[int] = frozenset()) -> tuple[list[int], list[str]]:
    """The lines of an item that carry its idea: its head (banner or signature), then
    for each key the first line after the last one shown that contains it (`key+N`:
    and N lines more). Two keys stand for many lines: `outline` (the signatures and
    constants) and `changed` (the lines new since the chapter before); `name()` is
    that def or class whole. A statement is shown whole or not at all (a key that
    cuts one is refused). Skipped lines
    become one `# ...` line, indented as the next line shown. Returns (the 0-based
    item lines shown, or -1 for a `# ...` line; the lines)."""
    lines = text.split("\n")
    shown = list(range(header_end(lines)))
    for key in (k.strip() for k in keys.split(",") if k.strip()):
        if key in ("outline", "changed"):
            shown += outline(lines) if key == "outline" else changed(lines, new)
            continue
        if m := re.fullmatch(r"(\w+)\(\)", key):  # `name()`: that def, whole
            if not (whole := whole_def(lines, m[1])):
                raise RegionError(f"{item}: no def or class {m[1]}")
            shown += whole
            continue
        m = re.match(r"^(.*?)\+(\d+)$", key)
        needle, more = (m[1], int(m[2])) if m else (key, 0)
        start = max(shown) + 1
        found = next((i for i in range(start, len(lines)) if needle in lines[i]), None)
        if found is None:
            found = next((i for i in range(len(lines)) if needle in lines[i]), None)
        if found is None:
            raise RegionError(f"{item}: no line contains {needle!r}")
        shown += list(range(found, min(found + more + 1, len(lines))))
    shown = sorted(set(shown) | string_ends(lines, set(shown)) | table_ends(lines, set(shown)))
    if cut := cut_statement(lines, set(shown)):
        raise RegionError(f"{item} [{keys}]: the excerpt cuts the statement {cut!r} "
                          "in part; show it whole or leave it out")
    out_index, out = [], []
    for n, i in enumerate(shown):
        gap = lines[shown[n - 1] + 1:i] if n else []
        if gap and all(not ln.strip() for ln in gap):
            out_index += [-2] * len(gap)  # blank lines between two shown: kept
            out += [""] * len(gap)
        elif gap:
            out_index.append(-1)
            out.append(re.match(r"\s*", lines[i])[0] + ELIDED)
        out_index.append(i)
        out.append(lines[i])
    rest = [ln for ln in lines[shown[-1] + 1:] if ln.strip()]
    if rest:
        out_index.append(-1)
        out.append(re.match(r"\s*", rest[0])[0] + ELIDED)
    return out_index, out


def string_ends(lines: list[str], shown: set[int]) -> set[int]:
    """The rest of every multi-line string a shown line belongs to: a docstring cut
    after its first line would turn all that follows into a string (its colours
    too), and a `# ...` inside it would read as text."""
    more = set()
    try:
        tokens = list(tokenize.generate_tokens(
            io.StringIO(textwrap.dedent("\n".join(lines)) + "\n").readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return more
    for tok in tokens:
        span = set(range(tok.start[0] - 1, tok.end[0]))
        if tok.type == tokenize.STRING and len(span) > 1 and span & shown:
            more |= span
    return more


def statement_spans(lines: list[str]) -> list[tuple[int, int, object]]:
    """(first, last, node), 0-based, of every statement in the item that cannot be
    shown in part: a simple one whole, a compound one's head (decorators, signature
    or condition, up to its body). Empty if the item does not parse alone."""
    try:
        tree = ast.parse(textwrap.dedent("\n".join(lines)))
    except SyntaxError:
        return []
    spans = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt):
            continue
        first = min([node.lineno] + [d.lineno for d in
                                     getattr(node, "decorator_list", [])]) - 1
        body = getattr(node, "body", None)
        last = (body[0].lineno - 2 if body and body[0].lineno > node.lineno
                else node.end_lineno - 1) if body else node.end_lineno - 1
        if body and body[0].lineno == node.lineno:  # `if x: y` on one line
            last = node.end_lineno - 1
        while last > first and (not lines[last].strip()
                                or lines[last].lstrip().startswith("#")):
            last -= 1  # comments between a head and its body are not part of it
        spans.append((first, max(first, last), node))
    return spans


def whole_statements(lines: list[str], shown: set[int]) -> set[int]:
    """The shown lines with the rest of each statement they are part of."""
    more = set(shown)
    for first, last, _ in statement_spans(lines):
        if more & set(range(first, last + 1)):
            more |= set(range(first, last + 1))
    return more


def table_parts(first: int, last: int, node) -> list[tuple[int, int]] | None:
    """A table (`NAME = {` ... `}` over many lines) may be shown in part: its first
    and last lines, and whole entries. Their spans, or None if not a table."""
    value = getattr(node, "value", None)
    if not isinstance(node, (ast.Assign, ast.AnnAssign)) or last == first or \
            not isinstance(value, (ast.Dict, ast.List, ast.Set, ast.Tuple)):
        return None
    items = ([(k or v, v) for k, v in zip(value.keys, value.values)]
             if isinstance(value, ast.Dict) else [(e, e) for e in value.elts])
    spans = [(a.lineno - 1 + (first - node.lineno + 1), b.end_lineno - 1
              + (first - node.lineno + 1)) for a, b in items]
    return [(first, first), *spans, (last, last)]


def cut_statement(lines: list[str], shown: set[int]) -> str | None:
    """The first line of a statement an excerpt shows only in part, or None. A
    table may leave entries out, if it shows its first and last lines."""
    for first, last, node in statement_spans(lines):
        part = shown & set(range(first, last + 1))
        if not part or len(part) == last - first + 1:
            continue
        parts = table_parts(first, last, node)
        if parts is None or first not in part or last not in part or any(
                shown & set(range(a, b + 1)) and not set(range(a, b + 1)) <= shown
                for a, b in parts):
            return lines[first].strip()
    return None


def table_ends(lines: list[str], shown: set[int]) -> set[int]:
    """The closing line of each table whose first line is shown."""
    return {last for first, last, node in statement_spans(lines)
            if first in shown and table_parts(first, last, node)}


def whole_def(lines: list[str], name: str) -> list[int]:
    """The lines of the def or class called `name` (a `name()` key), all of it."""
    for first, _, node in statement_spans(lines):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) \
                and node.name == name:
            return list(range(first, node.end_lineno))
    return []


def item_line(source: str, text: str) -> tuple[int, int]:
    """(first, last) 1-based line of an item's text in its file."""
    start = source.index(text)
    first = source.count("\n", 0, start) + 1
    return first, first + text.count("\n")


def block(file: str, items: str, indent: str = "") -> str:
    """The fenced code block of a region, indented as its markers are; a chapter's
    code.py gets a link to where the items stand in the whole file."""
    file, names = file.strip(), [item.strip() for item in items.split(";")]
    source = source_of(file)
    parts, marked, links, offset, whole_new = [], [], [], 0, []
    specs = [EXCERPT.match(n) for n in names]
    plain = [m["item"] if m else n for m, n in zip(specs, names)]
    texts = [item_text(source, item, file) for item in plain]
    for spec, name, text, new in zip(specs, plain, texts, highlighted(file, plain, texts)):
        new = {n - 1 for n in new}  # 0-based, as the item's lines
        index, lines = (excerpt(text, spec["keys"], name, new) if spec
                        else (list(range(text.count("\n") + 1)), text.split("\n")))
        code_lines = [n for n, i in enumerate(index) if i >= 0 and lines[n].strip()]
        hl = [n for n, i in enumerate(index) if i in new]
        whole_new.append(bool(code_lines) and len(hl) >= len(code_lines))
        if not whole_new[-1]:  # never a whole block: the title says "new" instead
            marked += [offset + n + 1 for n in hl]
        parts.append("\n".join(lines))
        offset += len(lines) + 2  # the blank lines between items
        if text in source:
            links.append((name, *item_line(source, text)))
    code = "\n\n\n".join(parts)
    fence = "````" if "```" in code else "```"
    hl = f' hl_lines="{ranges(marked)}"' if marked else ""
    notes = (["excerpt"] if any(specs) else []) + (
        [f"new in {file[:3]}"] if previous_file(file) and all(whole_new) else [])
    title = "; ".join(plain) + (f" ({', '.join(notes)})" if notes else "")
    # GitHub shows neither a fence's title nor its highlights: a line before the
    # block says both in plain Markdown (the site hides it: docs/css/extra.css).
    said = (f" · new in {file[:3]}: lines {ranges(marked).replace(' ', ', ')} of this "
            "block" if marked else "")
    text = (f'<sub class="code-title">{html.escape(file)}: {html.escape(title)}{said}'
            f'</sub>\n\n{fence}python title="{file}: {title}"{hl}\n{code}\n{fence}\n')
    if chapter_file := re.match(r"^s\d\d_[a-z0-9_]+/(?P<name>[a-z0-9_]+\.py)$", file):
        name = chapter_file["name"]  # a file beside the README: code.py, bash_safety.py
        where = ", ".join((f"{item}, " if len(links) > 1 else "")
                          + f"[lines {a}-{b}]({name}#L{a}-L{b})" for item, a, b in links)
        text += f"\n<sub>All of it in {name}: {where}.</sub>\n"
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
    """The file, loaded anew as a learner runs it: the modules beside it (a chapter's
    command_line.py, sandbox.py ...) are its own fresh copies (offline/chapters.py)."""
    path = ROOT / file
    name = "_run_" + re.sub(r"\W", "_", file)
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from offline.chapters import load_file
    saved, sys.dont_write_bytecode = sys.dont_write_bytecode, True
    try:
        return load_file(path, name, path.parent)
    finally:
        sys.dont_write_bytecode = saved


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
    return rebase_links(without_solutions(text, path.name), path.parent, readme.parent)


def without_solutions(text: str, page: str) -> str:
    """The exercises with each folded solution replaced by a link to it on their own
    page: the chapter poses the exercises, and stays a guide rather than code."""
    SLUG = hook_module("what_changed").SLUG
    out, heading, skipping = [], "", False
    for line in text.split("\n"):
        if line.startswith("### "):
            heading = line[4:].strip()
        if line.startswith('<details class="success"'):
            skipping = True
            anchor = SLUG(re.sub(r"[`*]", "", heading), "-")
            out.append(f"The solution, folded, is on [the exercises page]({page}#{anchor}).")
        elif skipping and line.startswith("</details>"):
            skipping = False
        elif not skipping:
            out.append(line)
    return "\n".join(out)


# --- a chapter's generated sections: what changed, the transcript, the reading time --

def named_region(name: str) -> re.Pattern:
    return re.compile(rf"(?P<open>^<!-- {name} -->\n)(?P<body>.*?)(?P<close>^<!-- /{name} -->)",
                      re.S | re.M)


DIFF, TRANSCRIPT, READING = (named_region(n) for n in ("diff", "transcript", "reading-time"))
BENCHMARKS = named_region("benchmarks")
QUIZ = named_region("quiz")  # the chapter's quiz: docs/_hooks/chapters.py, as_quiz
WORDS_A_MINUTE, LINES_A_MINUTE = 200, 10  # prose, and code or output (read slower)
# A folded block (`<details>`: deeper detail a first reading skips, "How Claude Code
# does it") is left out of the reading time and counted apart; so are the exercises
# (each says its own time, "**Time.** About N minutes") and the quiz.
FOLDED = re.compile(r"^<details[^>\n]*>\n.*?^</details>[ \t]*$", re.S | re.M)
EXERCISE_TIME = re.compile(r"^\*\*Time\.\*\* About (\d+) minutes", re.M)
QUESTION = re.compile(r"^\*\*\d+\. ", re.M)  # a quiz question's first line


def chapter_of(path: Path | None) -> str | None:
    if path is not None and path.name == "README.md" and re.match(r"^s\d\d_", path.parent.name):
        return path.parent.name
    return None


def diff_region(chapter: str) -> str:
    """What changed since the chapter before: a table for learners, each changed
    section's diff folded (docs/_hooks/what_changed.py)."""
    chapters = hook_module("chapters")  # the docs hook; it imports this module
    return chapters.diff_section(chapter, plain=True) + "\n"


def transcript_region(chapter: str) -> str:
    """The offline demo as a learner ran it (docs/_hooks/transcripts.py), in a block."""
    transcripts = hook_module("transcripts")
    text = transcripts.start_demo(chapter).result(timeout=transcripts.DEMO_TIMEOUT + 60)
    answers = transcripts.ANSWERS.get(chapter)
    typed = ""
    if answers:
        said = [f"`{a}`" for _, a in answers]
        typed = (f" in a terminal, where a learner answered its questions with "
                 f"{', '.join(said[:-1])} and {said[-1]}")
    fence = "````" if "```" in text else "```"
    machine = ("; the `sandbox:` line says what the recording machine had, and "
               "yours says what yours has" if transcripts.MACHINE.search(text) else "")
    return (f"What `python {chapter}/code.py --offline` printed{typed} (the scratch "
            f"folder's random name and the test timings are normalised{machine}):\n\n"
            f"{fence}text\n{text.rstrip()}\n{fence}\n")


def measure(markdown: str) -> tuple[int, int, int]:
    """(lines, lines inside fenced blocks, words outside them) of a README, its quiz
    left out (neither code nor a part of the guide)."""
    markdown = QUIZ.sub("", markdown)
    lines, fenced, words, fence = markdown.splitlines(), 0, 0, None
    for line in lines:
        m = re.match(r"^\s*(`{3,}|~{3,})", line)
        if fence is None and m:
            fence = m[1]
            fenced += 1
        elif fence is not None:
            fenced += 1
            if line.strip().startswith(fence) and not line.strip().strip(fence[0]):
                fence = None
        else:
            words += len(re.sub(r"^#+ |<[^>]+>|\]\([^)]*\)", " ", line).split())
    return len(lines), fenced, words


def first_reading(markdown: str) -> tuple[str, str]:
    """(what a first reading reads, what it leaves folded) of a chapter README: the
    exercises, the quiz, this line and comments are in neither."""
    text = READING.sub("", QUIZ.sub("", INCLUDE.sub("", markdown)))
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    return FOLDED.sub("", text), "\n".join(m[0] for m in FOLDED.finditer(text))


def minutes(text: str) -> tuple[int, int, int]:
    """(minutes, words, code lines): prose at WORDS_A_MINUTE, code and output at
    LINES_A_MINUTE, rounded up."""
    _, code, words = measure(text)
    return math.ceil(words / WORDS_A_MINUTE + code / LINES_A_MINUTE), words, code


def reading_minutes(markdown: str) -> tuple[int, int, int]:
    """(minutes, words, code lines) of a chapter's first reading: what is not folded,
    the exercises and the quiz not counted."""
    return minutes(first_reading(markdown)[0])


def folded_minutes(markdown: str) -> int:
    """The minutes of the folded blocks a first reading skips (counted the same way)."""
    return minutes(first_reading(markdown)[1])[0]


def exercise_minutes(markdown: str) -> list[int]:
    """Each exercise's time, as the exercises (included in the README) state it."""
    m = INCLUDE.search(markdown)
    return [int(n) for n in EXERCISE_TIME.findall(m["body"] if m else "")]


def duration(total: int) -> str:
    hours, rest = divmod(total, 60)
    return (f"{hours} h {rest:02d} min" if hours and rest else
            f"{hours} h" if hours else f"{rest} minutes")


def reading_region(markdown: str) -> str:
    """The line at the top of a chapter: its reading time, what the folded parts add,
    the exercises' time and the quiz's size."""
    read, words, code = reading_minutes(markdown)
    folded, each = folded_minutes(markdown), exercise_minutes(markdown)
    quiz = QUIZ.search(markdown)
    questions = len(QUESTION.findall(quiz["body"])) if quiz else 0
    line = (f"*About {read} minutes to read: {words:,} words at {WORDS_A_MINUTE} a "
            f"minute, and {code} lines of code and output at {LINES_A_MINUTE} a minute")
    if folded:
        line += f"; the folded parts add about {folded} more"
    after = []
    if each:
        listed = ", ".join(str(n) for n in each[:-1]) + f" and {each[-1]}"
        after.append(f"The exercises take about {duration(sum(each))} ({listed} minutes)"
                     if len(each) > 1 else f"The exercise takes about {each[0]} minutes")
    if questions:  # a minute a question
        after.append(f"the quiz ({questions} questions) about {questions}")
    line += "." + (f" {', '.join(after)}." if after else "")
    return line + "*\n"


def fill(markdown: str, path: Path | None = None) -> str:
    """The markdown with every region written from its file: exercises first (they
    hold code regions), then code, then runs; in a chapter README then what changed
    and the transcript, and last the reading time (it counts the rest)."""
    if path is not None:
        markdown = INCLUDE.sub(lambda m: m["open"] + included(m["file"], path)
                               + m["close"], markdown)
    markdown = REGION.sub(lambda m: m["open"] + block(m["file"], m["items"], m["indent"])
                          + m["close"], markdown)
    markdown = RUN.sub(lambda m: m["open"] + run_block(m["file"].strip(), m["body"])
                       + m["close"], markdown)
    if path is not None and path.resolve() == (ROOT / "benchmarks" / "README.md"):
        markdown = BENCHMARKS.sub(lambda m: m["open"] + hook_module("benchmarks_page").results()
                                  + m["close"], markdown)
    chapter = chapter_of(path)
    if chapter:
        markdown = DIFF.sub(lambda m: m["open"] + diff_region(chapter) + m["close"],
                            markdown)
        markdown = TRANSCRIPT.sub(lambda m: m["open"] + transcript_region(chapter)
                                  + m["close"], markdown)
        markdown = READING.sub(lambda m: m["open"] + reading_region(markdown)
                               + m["close"], markdown)
    return markdown


def comparable(text: str) -> str:
    """What the stale check compares: the text with run-to-run timings masked."""
    return hook_module("transcripts").comparable(text)


def readmes() -> list[Path]:
    """Exercises first: a chapter README copies its exercises file, filled."""
    return [*sorted(ROOT.glob("exercises/*/README.md")), ROOT / "exercises" / "README.md",
            ROOT / "benchmarks" / "README.md", *sorted(ROOT.glob("s[0-9][0-9]_*/README.md"))]


def start_demos(paths=None) -> None:
    """Run the demos of these chapter READMEs' transcripts side by side (each is
    cached; by default every chapter's): the transcripts."""
    for path in paths or ROOT.glob("s[0-9][0-9]_*/README.md"):
        if chapter_of(path) and TRANSCRIPT.search(path.read_text(encoding="utf-8")):
            hook_module("transcripts").start_demo(chapter_of(path))


def stale(paths=None) -> list[str]:
    """What is wrong: a stale README, or a region that names nothing. Only the demos
    these READMEs show are run (or read from the cache)."""
    start_demos(paths)
    problems = []
    for path in paths or readmes():
        text = path.read_text(encoding="utf-8")
        try:
            if comparable(fill(text, path)) != comparable(text):
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
    start_demos()
    for path in readmes():
        text = path.read_text(encoding="utf-8")
        try:
            new = fill(text, path)
        except RegionError as e:
            print(f"{path.relative_to(ROOT)}: {e}")
            status = 1
            continue
        if comparable(new) != comparable(text):
            path.write_text(new, encoding="utf-8")
            print(f"wrote {path.relative_to(ROOT)}")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
