"""mkdocs hook: turn the chapter directories into the book.

The reading site has one page per chapter, and that page *is* the chapter's README
(one source). This hook, registered in mkdocs.yml, does everything that has to be
computed when the site is built, so that nothing on a page is typed by hand:

- on_config: finds the chapters (a directory `sNN_name/` holding both code.py and
  README.md), builds the navigation from them, and makes the snippets base path
  absolute (so `mkdocs build -f path/to/mkdocs.yml` works from anywhere).
- on_files: adds each chapter's README.md and code.py to the site as if they were in
  docs/, at `sNN_name/README.md` (served as `sNN_name/`) and `sNN_name/code.py`, so
  the README's own relative links work on GitHub and on the site alike. It also starts
  each chapter's offline demo in the background (they run in parallel).
- on_page_markdown: replaces the generated regions of a page:
      <!-- chapters --> ... <!-- /chapters -->      (home page) the chapter table
      <!-- diff --> ... <!-- /diff -->              what changed since sNN-1
      <!-- transcript --> ... <!-- /transcript -->  a real run of the offline demo
- on_page_content: keeps the whole file, the diff and the solutions out of search.
  Whatever sits between the two markers is what GitHub readers see instead. A chapter
  README that lacks a region gets the generated section appended, with a notice.
- on_serve: `mkdocs serve` also rebuilds when a chapter or the offline demo changes.

Adding a chapter therefore needs no change here or in mkdocs.yml: create
`sNN_name/code.py` and `sNN_name/README.md` and it appears in the navigation.
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import importlib.util
import logging
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from mkdocs.structure.files import File

log = logging.getLogger("mkdocs.hooks.chapters")

ROOT = Path(__file__).resolve().parents[2]   # the repository root
CHAPTER_DIR = re.compile(r"^s(\d\d)_[a-z0-9_]+$")
DEMO_TIMEOUT = 180                           # seconds one offline demo may take
WORKSPACE_PLACEHOLDER = "xxxxxxxx"            # stands for mkdtemp's random suffix
REGION = r"<!--\s*{name}\s*-->(?P<inside>.*?)<!--\s*/{name}\s*-->"


# --- finding the chapters -----------------------------------------------------------

def chapters(root: Path = ROOT) -> list[str]:
    """Every chapter directory, in course order: `sNN_name/` with code.py and README.md."""
    found = [p.name for p in root.iterdir()
             if p.is_dir() and CHAPTER_DIR.match(p.name)
             and (p / "code.py").is_file() and (p / "README.md").is_file()]
    return sorted(found, key=lambda name: (int(name[1:3]), name))


def previous_chapter(chapter: str, root: Path = ROOT) -> str | None:
    """The chapter before `chapter` that has a code.py, or None for the first."""
    earlier = sorted((p.name for p in root.iterdir()
                      if p.is_dir() and CHAPTER_DIR.match(p.name) and (p / "code.py").is_file()
                      and int(p.name[1:3]) < int(chapter[1:3])),
                     key=lambda name: int(name[1:3]))
    return earlier[-1] if earlier else None


def readme_title(chapter: str, root: Path = ROOT) -> str:
    """The README's first `# ` heading, or the directory name."""
    for line in (root / chapter / "README.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return chapter


def readme_summary(chapter: str, root: Path = ROOT) -> str:
    """The first paragraph line after the title: the chapter's one-line summary."""
    lines = (root / chapter / "README.md").read_text(encoding="utf-8").splitlines()
    seen_title = False
    for line in lines:
        if line.startswith("# "):
            seen_title = True
        elif seen_title and line.strip() and not line.startswith(("#", "<!--", "!", "[")):
            return line.strip()
    return ""


# --- what changed since the previous chapter -------------------------------------

def chapter_diff(prev: str, chapter: str, root: Path = ROOT) -> str:
    """The unified diff of the two chapters' code.py (what tests/test_docs.py recomputes)."""
    a = (root / prev / "code.py").read_text(encoding="utf-8").splitlines(keepends=True)
    b = (root / chapter / "code.py").read_text(encoding="utf-8").splitlines(keepends=True)
    lines = difflib.unified_diff(a, b, f"{prev}/code.py", f"{chapter}/code.py", n=3)
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def definitions(path: Path) -> dict[str, str]:
    """Top-level functions and classes of a file: name -> source text."""
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()  # subtle: ast.get_source_segment re-splits per call: slow
    return {node.name: "\n".join(lines[node.lineno - 1:node.end_lineno])
            for node in ast.parse(source).body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}


def tool_names(path: Path) -> list[str]:
    """The names in the module's TOOLS: imported (code.py has no import side effects),
    or, if that fails, read from the `TOOLS = [...]` literal with ast."""
    # subtle: no __pycache__ in the chapter, or `mkdocs serve` would see a change.
    saved, sys.dont_write_bytecode = sys.dont_write_bytecode, True
    try:
        spec = importlib.util.spec_from_file_location(f"_docs_{path.parent.name}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return [tool["name"] for tool in module.TOOLS]
    except Exception as e:  # fall back to reading the source
        log.debug("importing %s failed (%s); reading TOOLS with ast", path, e)
    finally:
        sys.dont_write_bytecode = saved
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "TOOLS" for t in node.targets):
            for d in ast.walk(node.value):
                if isinstance(d, ast.Dict):
                    for k, v in zip(d.keys, d.values):
                        if (isinstance(k, ast.Constant) and k.value == "name"
                                and isinstance(v, ast.Constant)):
                            names.append(v.value)
    return names


def code_list(names) -> str:
    return ", ".join(f"`{n}`" for n in names) if names else "none"


# What each chapter's code.py may add to the one before it, in lines (by its number).
# tests/test_chapters_read.py fails past these; the diff summary shows them. s03 was
# 1500 until its lines were wrapped to 88 columns, which cost 68 lines of layout alone.
LINES_ADDED_AT_MOST = {"s02": 600, "s03": 1560, "s04": 400, "s05": 400, "s06": 400}


def diff_summary(prev: str, chapter: str, diff: str, root: Path = ROOT) -> str:
    """A few generated bullet points: functions, tools and lines added and removed."""
    old, new = definitions(root / prev / "code.py"), definitions(root / chapter / "code.py")
    added = [n for n in new if n not in old]
    removed = [n for n in old if n not in new]
    changed = [n for n in new if n in old and new[n] != old[n]]
    old_tools = tool_names(root / prev / "code.py")
    new_tools = tool_names(root / chapter / "code.py")
    plus = sum(1 for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++"))
    budget = LINES_ADDED_AT_MOST.get(chapter[:3])
    minus = sum(1 for ln in diff.splitlines() if ln.startswith("-") and not ln.startswith("---"))
    return "\n".join([
        f"- **Functions and classes added:** {code_list(added)}",
        f"- **Changed:** {code_list(changed)}",
        f"- **Removed:** {code_list(removed)}",
        f"- **Tools added:** {code_list([t for t in new_tools if t not in old_tools])}"
        + (f"; **removed:** {code_list([t for t in old_tools if t not in new_tools])}"
           if any(t not in new_tools for t in old_tools) else ""),
        f"- **Lines:** {plus} added, {minus} removed "
        f"({prev}/code.py has {len(_lines(root / prev / 'code.py'))}, "
        f"{chapter}/code.py has {len(_lines(root / chapter / 'code.py'))})"
        + (f"; the budget is at most {budget} added" if budget else ""),
    ])


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def escape_markers(text: str) -> str:
    """Escape `--8<-- [start:x]` lines, which pymdownx.snippets would otherwise delete
    from the page (it renders `;--8<--` as a literal `--8<--`)."""
    return re.sub(r"(?<![-;])(-+8<-+[ \t]+\[)", r";\1", text)


def diff_section(chapter: str, root: Path = ROOT) -> str:
    """The markdown that replaces the README's <!-- diff --> region."""
    prev = previous_chapter(chapter, root)
    if prev is None:
        return ("This is the first chapter, so there is no previous chapter to compare "
                "with: every line of `code.py` is new. From the next chapter on, this "
                "section shows the diff against the chapter before, generated when the "
                "site is built.")
    diff = chapter_diff(prev, chapter, root)
    if not diff:
        return f"`{chapter}/code.py` is identical to `{prev}/code.py`."
    # A long diff starts collapsed; a short one (the usual case) starts open.
    fold = "???+" if diff.count("\n") <= 150 else "???"
    body = "\n".join("    " + line if line else "" for line in
                     ["```diff", *escape_markers(diff).rstrip("\n").split("\n"), "```"])
    return (f"Generated from the two files when this page was built: "
            f"`{prev}/code.py` → `{chapter}/code.py`.\n\n"
            f"{diff_summary(prev, chapter, diff, root)}\n\n"
            f'{fold} abstract "The diff: {prev} → {chapter}"\n\n{body}\n')


# --- the offline demo, really run ----------------------------------------------------

def demo_environment(tmp: str) -> dict[str, str]:
    """No key, no colour, no provider from the developer's shell or .env."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("ANTHROPIC_") and k != "MODEL_ID"}
    # subtle: empty values count as set, so load_dotenv cannot fill them from .env.
    env.update(ANTHROPIC_API_KEY="", ANTHROPIC_AUTH_TOKEN="", MODEL_ID="",
               NO_COLOR="1", TMPDIR=tmp, PYTHONIOENCODING="utf-8")
    return env


def normalise_transcript(text: str, tmp: str) -> str:
    """Make the transcript stable: the scratch workspace and timings vary per run."""
    for prefix in {tmp, os.path.realpath(tmp)}:
        text = text.replace(prefix.rstrip("/") + "/", "/tmp/")
    text = re.sub(r"(/tmp/s\d\d-demo-)[A-Za-z0-9_]+", rf"\g<1>{WORKSPACE_PLACEHOLDER}", text)
    text = re.sub(r"\b(Ran \d+ tests? in )\d+\.\d+s", r"\g<1>0.001s", text)
    return text.rstrip() + "\n"


def run_demo(chapter: str, root: Path = ROOT) -> str:
    """Run `python sNN/code.py --offline` as a learner would; return what it printed."""
    with tempfile.TemporaryDirectory(prefix="docs-demo-") as tmp:
        proc = subprocess.run(
            [sys.executable, str(root / chapter / "code.py"), "--offline"],
            cwd=tmp, env=demo_environment(tmp), stdin=subprocess.DEVNULL,
            capture_output=True, text=True, encoding="utf-8", errors="replace",
            timeout=DEMO_TIMEOUT,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"exit status {proc.returncode}\n{proc.stderr[-2000:]}")
        return normalise_transcript(proc.stdout + proc.stderr, tmp)


def demo_fingerprint(chapter: str, root: Path = ROOT) -> str:
    """What the transcript depends on: the chapter's code and the offline package."""
    h = hashlib.sha256()
    for path in [root / chapter / "code.py", *sorted((root / "offline").rglob("*"))]:
        if path.is_file() and "__pycache__" not in path.parts:
            h.update(path.as_posix().encode() + path.read_bytes())
    return h.hexdigest()


_POOL = ThreadPoolExecutor(max_workers=8)  # demos mostly wait: run them all at once
_DEMOS: dict[str, Future] = {}  # fingerprint -> future transcript (kept across rebuilds)


def start_demo(chapter: str) -> Future:
    key = demo_fingerprint(chapter)
    if key not in _DEMOS:
        _DEMOS[key] = _POOL.submit(run_demo, chapter)
    return _DEMOS[key]


def transcript_section(chapter: str) -> str:
    """The markdown that replaces the README's <!-- transcript --> region."""
    command = f"python {chapter}/code.py --offline"
    try:
        output = start_demo(chapter).result(timeout=DEMO_TIMEOUT + 10)
    except Exception as e:
        _DEMOS.pop(demo_fingerprint(chapter), None)  # try again on the next build
        log.warning("chapters hook: the offline demo of %s failed: %s", chapter, e)
        return f'!!! failure "The offline demo failed when this page was built"\n\n    {e}'
    fence = "````" if "```" in output else "```"
    return (f"This is what `{command}` printed when this page was built "
            f"(the scratch workspace's random name and test timings are normalised):\n\n"
            f'{fence}text title="{command}"\n{output}{fence}')


# --- the home page's chapter table ------------------------------------------------------

# The course plan (DESIGN.md); a planned chapter is listed until its directory exists.
PLANNED = {"01": "the agent loop", "02": "tool use", "03": "permissions", "04": "hooks",
           "05": "deferred tools", "06": "concurrency"}


def chapters_table(root: Path = ROOT) -> str:
    rows = ["| chapter | what it adds |", "|---|---|"]
    present = chapters(root)
    for chapter in present:
        rows.append(f"| [{readme_title(chapter, root)}]({chapter}/README.md) "
                    f"| {readme_summary(chapter, root).replace('|', '&#124;')} |")
    to_come = [f"s{n} {topic}" for n, topic in PLANNED.items()
               if not any(c[1:3] == n for c in present)]
    if to_come:
        rows.append(f"\nStill to come: {', '.join(to_come)}.")
    return "\n".join(rows)


def replace_region(markdown: str, name: str, content: str) -> tuple[str, bool]:
    pattern = re.compile(REGION.format(name=name), re.DOTALL)
    # a function, so that backslashes in the content are not read as group references
    return pattern.subn(lambda _: content, markdown, count=1)[0], bool(pattern.search(markdown))


# --- mkdocs events --------------------------------------------------------------------

def make_exercise_files() -> None:
    """The solutions the Exercises sections include are made from code.py + patches."""
    sys.path.insert(0, str(ROOT))
    from exercises.make import make
    if make(quiet=True):
        log.warning("chapters hook: an exercise patch no longer fits its chapter; "
                    "see `python exercises/make.py --check`")


def on_config(config, **kwargs):
    make_exercise_files()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import code_regions  # the READMEs' code blocks: written from the files, never stale
    for problem in code_regions.stale():
        log.warning("chapters hook: %s", problem)
    snippets = config.mdx_configs.setdefault("pymdownx.snippets", {})
    snippets["base_path"] = [str(ROOT)]
    config.nav = [{"Home": "index.md"}] + [
        {readme_title(chapter): f"{chapter}/README.md"} for chapter in chapters()]
    return config


def on_files(files, config, **kwargs):
    for chapter in chapters():
        for name in ("README.md", "code.py"):
            files.append(File.generated(config, f"{chapter}/{name}",
                                        abs_src_path=str(ROOT / chapter / name)))
        start_demo(chapter)  # runs while mkdocs reads the other pages
    return files


def on_page_markdown(markdown, page, config, files, **kwargs):
    src = page.file.src_uri
    if src == "index.md":
        return replace_region(markdown, "chapters", chapters_table())[0]
    chapter = src.split("/")[0]
    if not (src.endswith("/README.md") and chapter in chapters()):
        return markdown
    prev = previous_chapter(chapter)
    generated = [("diff", f"What changed since {prev or 'the start'}", diff_section(chapter)),
                 ("transcript", "Transcript of the offline demo", transcript_section(chapter))]
    for name, heading, content in generated:
        markdown, found = replace_region(markdown, name, content)
        if not found:
            log.info("chapters hook: %s/README.md has no <!-- %s --> region; appending it",
                     chapter, name)
            markdown += f"\n\n## {heading}\n\n{content}\n"
    return markdown


# Collapsed blocks that repeat what the page already shows, or give an answer away:
# the whole file (example), the diff (abstract), the exercises' solutions (success).
# Search leaves them out; it indexes the explanation and the code shown beside it.
NOT_SEARCHED = re.compile(r'<details class="(?:example|abstract|success)"')


def on_page_content(html, page, config, files, **kwargs):
    return NOT_SEARCHED.sub(lambda m: m[0] + " data-search-exclude", html)


def on_serve(server, config, builder, **kwargs):
    for path in [*(p for p in ROOT.iterdir() if p.is_dir() and CHAPTER_DIR.match(p.name)),
                 ROOT / "offline"]:
        server.watch(str(path))
    return server
