"""The reading site: it builds with zero warnings, and every page tells the truth.

The site is built once per test module with `mkdocs build --strict` (which runs each
chapter's offline demo for its transcript: a few seconds per chapter). The tests then
read the built HTML and compare it with the files: the code shown is the code in the
chapters, each diff is the diff of the files, and every local link leads somewhere.

Conventions these tests enforce (see docs/_hooks/chapters.py for the machinery):
- A chapter is a directory `sNN_name/` with code.py and README.md; its page is its README.
- A ```python block in a README or a docs page is either written from the tested file
  (a `<!-- code FILE: items -->` region, see docs/_hooks/code_regions.py) or starts
  with a `# pseudocode` line. code.py carries no docs markup.
"""

from __future__ import annotations

import difflib
import functools
import importlib.util
import json
import os
import re
import subprocess
import sys
from html import escape
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from conftest import ROOT, load_chapter

sys.path.insert(0, str(ROOT / "docs" / "_hooks"))
import code_regions  # noqa: E402

# One worker runs this file: its module fixtures build once (pytest -n, --dist loadgroup).
pytestmark = pytest.mark.xdist_group("docs")

DOCS = ROOT / "docs"
CHAPTERS = sorted((p.parent.name for p in ROOT.glob("s[0-9][0-9]_*/code.py")
                   if (p.parent / "README.md").is_file()), key=lambda n: int(n[1:3]))
WITH_CODE = sorted((p.parent.name for p in ROOT.glob("s[0-9][0-9]_*/code.py")),
                   key=lambda n: int(n[1:3]))
SNIPPET_LINE = re.compile(r'^\s*-+8<-+\s+"(?P<target>[^"]+)"\s*$')
SECTION_MARKER = re.compile(r"^\s*#\s*-+8<-+\s+\[(start|end):[a-z][-_0-9a-z]*\]\s*$")
FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})\s*(?P<lang>[\w+-]*)(?P<rest>.*)$")
PYTHON_LANGS = {"python", "py", "python3", "py3"}


def chapter_params():
    return [pytest.param(c, id=c[:3]) for c in CHAPTERS]


def markdown_sources() -> list[Path]:
    return [ROOT / c / "README.md" for c in CHAPTERS] + sorted(DOCS.rglob("*.md"))


# --- building the site once ------------------------------------------------------------


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """Build the site with --strict from outside the repository; return its folder."""
    out = tmp_path_factory.mktemp("site")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env["NO_MKDOCS_2_WARNING"] = "1"
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict",
         "-f", str(ROOT / "mkdocs.yml"), "-d", str(out / "site")],
        cwd=out, env=env, capture_output=True, text=True, timeout=600,
    )
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{log[-5000:]}"
    problems = [ln for ln in log.splitlines() if re.match(r"^(WARNING|ERROR)\b", ln)]
    assert not problems, "\n".join(problems)
    return out / "site"


def page(site: Path, chapter: str | None = None) -> "Page":
    path = site / (f"{chapter}/index.html" if chapter else "index.html")
    assert path.is_file(), f"no page built at {path.relative_to(site)}"
    return parsed(path)


@functools.lru_cache(maxsize=None)
def parsed(path: Path) -> "Page":
    """Each built page is parsed once (they are large: the whole code.py is on them)."""
    return Page(path)


class Page(HTMLParser):
    """What the tests need from a built page: code blocks, links and element ids."""

    def __init__(self, path: Path):
        super().__init__(convert_charrefs=True)
        self.path, self.html = path, path.read_text(encoding="utf-8")
        self.blocks: list[dict] = []   # {"lang", "title", "text"}
        self.links: list[str] = []     # href and src values
        self.ids: set[str] = set()
        self._lang = self._title = None
        self._in_code = self._in_title = False
        self._text: list[str] = []
        self.feed(self.html)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        for name in ("href", "src"):
            if attrs.get(name) and tag in ("a", "link", "script", "img"):
                self.links.append(attrs[name])
        classes = (attrs.get("class") or "").split()
        if tag == "div" and "highlight" in classes:
            langs = [c[len("language-"):] for c in classes if c.startswith("language-")]
            self._lang, self._title = (langs[0] if langs else ""), None
        elif tag == "span" and "filename" in classes and self._lang is not None:
            self._in_title, self._title = True, ""
        elif tag == "code" and self._lang is not None:
            self._in_code, self._text = True, []

    def handle_endtag(self, tag):
        if tag == "span" and self._in_title:
            self._in_title = False
        elif tag == "code" and self._in_code:
            self.blocks.append({"lang": self._lang, "title": self._title,
                                "text": "".join(self._text)})
            self._in_code, self._lang = False, None

    def handle_data(self, data):
        if self._in_code:
            self._text.append(data)
        elif self._in_title:
            self._title += data

    def code(self, lang: str) -> list[dict]:
        return [b for b in self.blocks if b["lang"] == lang]


# --- the build and the pages --------------------------------------------------------


def test_strict_build_has_a_page_per_chapter(site):
    """The strict build passed, and every chapter with a README has its page."""
    assert CHAPTERS, "no chapter found"
    for chapter in CHAPTERS:
        title = readme_title(chapter)
        assert title in page(site, chapter).html, f"{chapter}: its README title is not on its page"


def test_navigation_lists_exactly_the_chapters_in_order(site):
    """The menu holds Home and one entry per chapter, in course order, and no more."""
    html = page(site).html
    linked = re.findall(r'<a href="(s\d\d_[a-z0-9_]+)/" class="md-nav__link">', html)
    assert linked == CHAPTERS


def test_chapter_pages_link_previous_and_next(site):
    """The footer of each chapter page links the chapter before and after it."""
    for i, chapter in enumerate(CHAPTERS):
        html = page(site, chapter).html
        footer = html[html.index('class="md-footer"'):]
        prev = ".." if i == 0 else f"../{CHAPTERS[i - 1]}/"  # the first goes back home
        assert f'href="{prev}" class="md-footer__link md-footer__link--prev"' in footer
        assert "md-footer__link--prev" in footer, f"{chapter}: no previous link"
        if i + 1 < len(CHAPTERS):
            assert f'href="../{CHAPTERS[i + 1]}/"' in footer, f"{chapter}: no next link"


def test_home_page_lists_every_chapter(site):
    """The generated chapter table links every chapter page."""
    html = page(site).html
    for chapter in CHAPTERS:
        assert f'href="{chapter}/"' in html
    assert "The chapter table is generated" not in html  # the region was replaced


# --- the README template ---------------------------------------------------------------


def readme_title(chapter: str) -> str:
    text = (ROOT / chapter / "README.md").read_text(encoding="utf-8")
    titles = [line[2:].strip() for line in text.splitlines() if line.startswith("# ")]
    assert titles, f"{chapter}/README.md has no '# ' title"
    return titles[0]


@pytest.mark.parametrize("chapter", chapter_params())
def test_readme_follows_the_template(chapter):
    """Title, problem, diagram, code, what changed, try it, Claude Code, whole file."""
    text = (ROOT / chapter / "README.md").read_text(encoding="utf-8")
    assert readme_title(chapter).startswith(chapter[:3] + " · "), "title: '# sNN · Name'"
    required = ["## The problem", "```mermaid", "## The code, in order", "## What changed",
                "<!-- diff -->", "<!-- /diff -->", "## Try it", '=== "Offline"',
                '=== "Live"', "<!-- transcript -->", "<!-- /transcript -->",
                '??? note "How Claude Code does it"', '??? example "The whole file"',
                f'--8<-- "{chapter}/code.py"']
    missing = [r for r in required if r not in text]
    assert not missing, (f"{chapter}/README.md lacks {missing}: "
                         "see the template in docs/_hooks/chapter_template.md")
    positions = [text.index(r) for r in ["## The problem", "## The code, in order",
                                         "## What changed", "## Try it",
                                         '??? example "The whole file"']]
    assert positions == sorted(positions), "template sections are out of order"


# --- code on the pages is the code in the files ------------------------------------------


def fenced_blocks(path: Path):
    """(language, first line number, lines) of each fenced block in a markdown file."""
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, body, start = m.group("fence"), [], i + 1
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i])
            i += 1
        yield m.group("lang").lower(), start, body
        i += 1


def region_lines(path: Path) -> set[int]:
    """The line numbers (1-based) inside the file's generated code regions."""
    text = path.read_text(encoding="utf-8")
    inside = set()
    for m in code_regions.REGION.finditer(text):
        first = text.count("\n", 0, m.start()) + 1
        inside |= set(range(first, first + m.group(0).count("\n") + 1))
    return inside


def test_python_blocks_in_sources_are_generated_or_pseudocode():
    """No Python is pasted into a page: it is written from the tested file, or says
    pseudocode."""
    bad = []
    for path in markdown_sources():
        generated = region_lines(path)
        for lang, line, body in fenced_blocks(path):
            if lang not in PYTHON_LANGS:
                continue
            content = [ln for ln in body if ln.strip()]
            if content and content[0].strip().startswith("# pseudocode"):
                continue
            if line not in generated and not all(SNIPPET_LINE.match(ln) for ln in content):
                bad.append(f"{path.relative_to(ROOT)}:{line}")
    assert not bad, ("python blocks that are neither written from a file (a code region) "
                     f"nor start with '# pseudocode': {bad}")


def test_code_blocks_are_up_to_date():
    """Every README's code regions hold exactly the code of the items they name, and
    every name exists: `python docs/_hooks/code_regions.py` rewrites them."""
    assert code_regions.stale() == []


def test_code_carries_no_docs_markup():
    """code.py has no snippet markers: the site finds sections by banner or by name."""
    for chapter in WITH_CODE:
        text = (ROOT / chapter / "code.py").read_text(encoding="utf-8")
        assert "--8<--" not in text, f"{chapter}/code.py has a snippet marker"


def code_without_markers(chapter: str) -> str:
    text = (ROOT / chapter / "code.py").read_text(encoding="utf-8")
    return "\n".join(ln for ln in text.splitlines() if not SECTION_MARKER.match(ln))


def stripped_lines(text: str) -> str:
    """Lines without indentation: included sections may be dedented on the page."""
    return "\n".join(ln.strip() for ln in text.splitlines()) + "\n"


def test_python_blocks_on_pages_come_from_the_chapters(site):
    """Every Python block on the built site is pseudocode or a verbatim part of a code.py
    (or of an exercise's reference solution, included in the Exercises section)."""
    solutions = sorted((ROOT / "exercises" / "solutions").rglob("*.py"))
    sources = [code_without_markers(c) for c in WITH_CODE]
    sources += [p.read_text(encoding="utf-8") for p in solutions]
    sources = [stripped_lines(s) for s in sources]
    for html in [page(site)] + [page(site, c) for c in CHAPTERS]:
        for block in html.code("python") + html.code("py"):
            text = block["text"].strip("\n")
            if text.startswith("# pseudocode"):
                continue
            assert any(stripped_lines(text) in source for source in sources), (
                f"{html.path.parent.name}: a python block is not from any code.py:\n{text[:300]}")


@pytest.mark.parametrize("chapter", chapter_params())
def test_code_regions_appear_on_the_page(site, chapter):
    """Each code region of the README shows its code on the built page."""
    shown = stripped_lines("\n".join(b["text"] for b in page(site, chapter).code("python")))
    text = (ROOT / chapter / "README.md").read_text(encoding="utf-8")
    regions = list(code_regions.REGION.finditer(text))
    assert regions, f"{chapter}/README.md shows no code"
    for m in regions:
        code = code_regions.block(m["file"], m["items"]).split("\n", 1)[1].rsplit("```", 1)[0]
        assert stripped_lines(code.strip("\n")) in shown, (
            f"{m['file']}: {m['items']}: not shown on the {chapter} page")


# --- what changed: the diff -----------------------------------------------------------------


def expected_diff(prev: str, chapter: str) -> str:
    a = (ROOT / prev / "code.py").read_text(encoding="utf-8").splitlines(keepends=True)
    b = (ROOT / chapter / "code.py").read_text(encoding="utf-8").splitlines(keepends=True)
    return "".join(difflib.unified_diff(a, b, f"{prev}/code.py", f"{chapter}/code.py"))


@pytest.mark.parametrize("chapter", chapter_params())
def test_diff_on_the_page_matches_the_files(site, chapter):
    """The page shows the diff of the previous chapter's code.py against this one's."""
    html = page(site, chapter)
    earlier = [c for c in WITH_CODE if int(c[1:3]) < int(chapter[1:3])]
    diffs = html.code("diff")
    if not earlier:
        assert not diffs and "first chapter" in html.html
        return
    prev = earlier[-1]
    if not expected_diff(prev, chapter):
        assert not diffs and "is identical to" in html.html
        return
    assert len(diffs) == 1, f"{chapter}: expected one diff block, found {len(diffs)}"
    # subtle: Markdown empties whitespace-only lines, so a blank context line (" ")
    # shows as "". Compare with trailing whitespace removed from every line.
    shown = [ln.rstrip() for ln in diffs[0]["text"].strip("\n").split("\n")]
    assert shown == [ln.rstrip() for ln in expected_diff(prev, chapter).strip("\n").split("\n")]
    # The generated summary names the tools this chapter adds.
    old_tools = {t["name"] for t in load_chapter(prev).TOOLS}
    for tool in (t["name"] for t in load_chapter(chapter).TOOLS):
        if tool not in old_tools:
            assert f"<code>{tool}</code>" in html.html, f"summary misses tool {tool}"


def test_search_leaves_out_whole_files_diffs_and_solutions(site):
    """The search index holds the explanations and the code shown beside them, not the
    collapsed whole file, the diff or the exercises' solutions."""
    index = json.loads((site / "search" / "search_index.json").read_text(encoding="utf-8"))
    text = "\n".join(doc["text"] for doc in index["docs"])
    assert "#!/usr/bin/env python3" not in text, "a whole code.py is in the search index"
    assert "The diff: s0" not in text, "a chapter diff is in the search index"
    solution = code_regions.source_of("exercises/solutions/s02/ex1.py")
    body = code_regions.item_text(solution, "ex1", "s02 ex1")
    line = max(body.split("\n"), key=len).strip()
    assert escape(line, quote=False) not in text, f"a solution line is in the search index: {line}"


# --- try it: the transcript of a real offline run --------------------------------------------


@pytest.mark.parametrize("chapter", chapter_params())
def test_transcript_is_a_real_offline_run(site, chapter):
    """The page shows what the offline demo printed: its banner, its calls, its end."""
    html = page(site, chapter)
    title = f"python {chapter}/code.py --offline"
    blocks = [b for b in html.code("text") if (b["title"] or "").strip() == title]
    assert len(blocks) == 1, f"{chapter}: no transcript titled {title!r}"
    text = blocks[0]["text"]
    assert f"{chapter[:3]} OFFLINE DEMO" in text and "End of the scripted demo" in text
    assert f"/tmp/{chapter[:3]}-demo-xxxxxxxx" in text  # the scratch path, normalised
    assert "docs-demo-" not in text and str(ROOT) not in text
    module = load_chapter(chapter)
    tools = {t["name"] for t in module.TOOLS} | set(getattr(module, "TOOL_HANDLERS", {}))
    calls = re.findall(r"^> (\w+)\(", text, re.M)
    assert calls and set(calls) <= tools, f"calls {set(calls) - tools} are not tools"
    assert "On the reading site, a" not in html.html  # the GitHub fallback was replaced


# --- links -----------------------------------------------------------------------------------


def test_internal_links_resolve(site):
    """Every local href and src on every page leads to a built file (and anchor)."""
    pages = {p: parsed(p) for p in site.rglob("*.html")}
    broken = []
    for path, html in pages.items():
        for link in html.links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith(("mailto:", "javascript:")):
                continue
            if parts.path.startswith("/"):  # 404.html links from the site's root
                target = site / unquote(parts.path).lstrip("/")
            else:
                target = path if not parts.path else (path.parent / unquote(parts.path))
            if parts.path.endswith("/") or target.is_dir():
                target = target / "index.html"
            target = Path(os.path.normpath(target))
            if not target.is_file():
                broken.append(f"{path.relative_to(site)} -> {link}")
            elif parts.fragment and target.suffix == ".html":
                ids = parsed(target).ids
                if unquote(parts.fragment) not in ids:
                    broken.append(f"{path.relative_to(site)} -> {link} (no such anchor)")
    assert not broken, "\n".join(broken)


def test_mermaid_diagrams_are_built_as_diagrams(site):
    """Each page's mermaid fences become mermaid blocks, not highlighted code."""
    for html in [page(site)] + [page(site, c) for c in CHAPTERS]:
        assert '<pre class="mermaid"><code>' in html.html, html.path
        assert not html.code("mermaid")


# --- the hook on its own ---------------------------------------------------------------------


def load_hook():
    spec = importlib.util.spec_from_file_location("chapters_hook", DOCS / "_hooks/chapters.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_chapter_is_a_directory_with_code_and_readme(tmp_path):
    """Only sNN_name/ directories holding both files are chapters, sorted by number."""
    hook = load_hook()
    for name, files in {"s01_loop": ["code.py", "README.md"], "s02_tools": ["code.py"],
                        "s10_late": ["code.py", "README.md"], "s3_bad": ["code.py", "README.md"],
                        "notes": ["README.md"]}.items():
        (tmp_path / name).mkdir()
        for f in files:
            (tmp_path / name / f).write_text("# x\n")
    assert hook.chapters(tmp_path) == ["s01_loop", "s10_late"]
    assert hook.previous_chapter("s10_late", tmp_path) == "s02_tools"
    assert hook.previous_chapter("s01_loop", tmp_path) is None


def test_transcripts_are_normalised():
    """The scratch workspace's random name and test timings do not change the page."""
    hook = load_hook()
    raw = ("Workspace: /tmp/abc/s02-demo-k3j_x9q1\n"
           '  File "/tmp/abc/s02-demo-k3j_x9q1/test_inventory.py", line 16\n'
           "Ran 4 tests in 0.013s\n")
    assert hook.normalise_transcript(raw, "/tmp/abc") == (
        "Workspace: /tmp/s02-demo-xxxxxxxx\n"
        '  File "/tmp/s02-demo-xxxxxxxx/test_inventory.py", line 16\n'
        "Ran 4 tests in 0.001s\n")
