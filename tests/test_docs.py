"""The reading site: it builds with zero warnings, and every page tells the truth.

The site is built once per test run with `mkdocs build --strict` (which runs each
chapter's offline demo for its transcript, or takes it from .cache/docs/): the first
worker to need it builds it, the others wait for that build and read it. The tests
then read the built HTML and compare it with the files: the code shown is the code in
the chapters, each diff is the diff of the files, every local link leads somewhere,
and no page needs another host. tests/test_docs_browser.py opens the same build in
headless Chromium.

Conventions these tests enforce (see docs/_hooks/chapters.py for the machinery):
- A chapter is a directory `sNN_name/` with code.py and README.md; its page is its README.
- A ```python block in a README or a docs page is either written from the tested file
  (a `<!-- code FILE: items -->` region, see docs/_hooks/code_regions.py) or starts
  with a `# pseudocode` line. code.py carries no docs markup.
- A README is plain Markdown that GitHub renders: no `===`, `???`, `!!!` or `--8<--`.
"""

from __future__ import annotations

import fcntl
import functools
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from html import escape
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

import warm  # tests/warm.py: chapter runs forked warm
from conftest import ROOT, load_chapter

sys.path.insert(0, str(ROOT / "docs" / "_hooks"))
import chapters as hook  # noqa: E402
import code_regions  # noqa: E402
import transcripts  # noqa: E402
import what_changed  # noqa: E402

DOCS = ROOT / "docs"
CHAPTERS = sorted((p.parent.name for p in ROOT.glob("s[0-9][0-9]_*/code.py")
                   if (p.parent / "README.md").is_file()), key=lambda n: int(n[1:3]))
WITH_CODE = sorted((p.parent.name for p in ROOT.glob("s[0-9][0-9]_*/code.py")),
                   key=lambda n: int(n[1:3]))
MKDOCS_ONLY = re.compile(r'^\s*(?:(?:===|\?\?\?\+?|!!!)\s|-+8<-+)')
SECTION_MARKER = re.compile(r"^\s*#\s*-+8<-+\s+\[(start|end):[a-z][-_0-9a-z]*\]\s*$")
FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})\s*(?P<lang>[\w+-]*)(?P<rest>.*)$")
PYTHON_LANGS = {"python", "py", "python3", "py3"}
MERMAID_VERSION = "11.17.2"  # docs/vendor/mermaid/README.md says how to update it


def chapter_params():
    return [pytest.param(c, id=c[:3]) for c in CHAPTERS]


def markdown_sources() -> list[Path]:
    return ([ROOT / c / "README.md" for c in CHAPTERS] + readme_sources()
            + sorted(p for p in DOCS.rglob("*.md") if "vendor" not in p.parts))


def readme_sources() -> list[Path]:
    """The Markdown files GitHub shows besides the chapters: exercises, root README."""
    return [ROOT / "README.md", ROOT / "exercises" / "README.md",
            *sorted(ROOT.glob("exercises/s[0-9][0-9]/README.md"))]


# --- building the site once ------------------------------------------------------------


@pytest.fixture(scope="session")
def site(tmp_path_factory, worker_id) -> Path:
    """The site built with --strict from outside the repository, once per run: under
    pytest -n, in the folder the workers share, by the first worker to take its lock
    (the others wait for the lock, then read what it built); its folder."""
    shared = tmp_path_factory.getbasetemp()
    shared = shared.parent if worker_id != "master" else shared
    built, failed = shared / "site-built", shared / "site-failed.txt"
    with open(shared / "site.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the build is done
        if not (built / "site" / "index.html").is_file() and not failed.exists():
            try:
                build_site(built)
            except AssertionError as e:  # the workers that waited fail with it
                failed.write_text(str(e))
                raise
    if failed.exists():
        pytest.fail(failed.read_text(), pytrace=False)
    return built / "site"


def build_site(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    # The demos' transcripts first, into the cache the build reads (.cache/docs/), each
    # demo forked from this worker's warm interpreter (tests/warm.py): ~1 processor-
    # second a demo, not the ~5 of a fresh `python`. The build then runs none.
    with ThreadPoolExecutor(max_workers=len(WITH_CODE)) as pool:
        list(pool.map(lambda c: transcripts.cached_demo(
            c, transcripts.demo_fingerprint(c), popen=warm.Popen), WITH_CODE))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env["NO_MKDOCS_2_WARNING"] = "1"
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict",
         "-f", str(ROOT / "mkdocs.yml"), "-d", str(out / "site")],
        cwd=out, env=env, capture_output=True, text=True, timeout=600,
    )
    log = proc.stdout + proc.stderr
    (out / "build.log").write_text(log, encoding="utf-8")
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{log[-5000:]}"
    problems = [ln for ln in log.splitlines() if re.match(r"^(WARNING|ERROR)\b", ln)]
    assert not problems, "\n".join(problems)
    # a tidy log: no theme banner (NO_MKDOCS_2_WARNING), no exercise files listed
    assert "end of life" not in log and "NO_MKDOCS_2_WARNING" not in log, log[:2000]
    assert not re.search(r"^made ", log, re.MULTILINE), log[:2000]


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
    """Title, problem, diagram, code, what changed, try it, quiz, exercises, Claude
    Code, whole file: in that order."""
    text = (ROOT / chapter / "README.md").read_text(encoding="utf-8")
    assert readme_title(chapter).startswith(chapter[:3] + " · "), "title: '# sNN · Name'"
    order = ["<!-- reading-time -->", "## The problem", "```mermaid", "## The code, in order", "## What changed",
             "<!-- diff -->", "<!-- /diff -->", "## Try it", "<!-- tabs -->", "### Offline",
             "### Live", "<!-- /tabs -->", "<!-- transcript -->", "<!-- /transcript -->",
             "## Quiz", "<!-- quiz -->", "<!-- /quiz -->",
             "## Exercises", f"<!-- exercises exercises/{chapter[:3]}/README.md -->",
             "<!-- /exercises -->", '<details class="note" markdown>',
             "<summary>How Claude Code does it</summary>", "<!-- whole-file -->",
             "<!-- /whole-file -->"]
    missing = [r for r in order if r not in text]
    assert not missing, (f"{chapter}/README.md lacks {missing}: "
                         "see the template in docs/_hooks/chapter_template.md")
    positions = [text.index(r) for r in order]
    assert positions == sorted(positions), "template sections are out of order"


@pytest.mark.parametrize("path", [pytest.param(p, id=p.relative_to(ROOT).as_posix())
                                  for p in [ROOT / c / "README.md" for c in CHAPTERS]
                                  + readme_sources()])
def test_readmes_are_plain_markdown(path):
    """What GitHub shows is the whole page: no syntax that only mkdocs understands
    (tabs, collapsed blocks, admonitions, snippet includes)."""
    in_fence, bad = None, []
    for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
        fence = FENCE.match(line)
        if fence and (in_fence is None or fence["fence"].startswith(in_fence)):
            in_fence = None if in_fence else fence["fence"]
        elif not in_fence and MKDOCS_ONLY.match(line):
            bad.append(f"{number}: {line.strip()}")
    assert not bad, (f"{path.relative_to(ROOT)} has mkdocs-only lines (use <details>, "
                     f"<!-- tabs --> with ### headings, > [!WARNING]): {bad}")


def test_material_widgets_are_made_from_plain_markdown():
    """The site turns the README's plain structures into Material's widgets."""
    plain = ("<!-- tabs -->\n### Offline\n\n```bash\nrun it\n```\n\n### Live\n\n"
             "Set a key.\n<!-- /tabs -->\n\n> [!WARNING]\n> **Careful**\n>\n> A `trap`.\n")
    assert hook.as_admonitions(hook.as_tabs(plain)) == (
        '=== "Offline"\n\n    ```bash\n    run it\n    ```\n\n=== "Live"\n\n    Set a key.\n\n'
        '!!! warning "Careful"\n\n    A `trap`.\n')


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
            if line not in generated:
                bad.append(f"{path.relative_to(ROOT)}:{line}")
    assert not bad, ("python blocks that are neither written from a file (a code region) "
                     f"nor start with '# pseudocode': {bad}")


def test_code_blocks_are_up_to_date(site):
    """Every README's code regions hold exactly the code of the items they name, and
    every name exists: `python docs/_hooks/code_regions.py` rewrites them. The site's
    strict build checks it (docs/_hooks/chapters.py runs code_regions.stale(): a
    stale block is a warning, which fails it), and its log says it checked every
    README: this run's build is the check, not a second run of it."""
    log = (site.parent / "build.log").read_text(encoding="utf-8")
    assert (f"chapters hook: {len(code_regions.readmes())} READMEs checked: every "
            "generated part is current") in log, log[-3000:]


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


def excerpt_parts(text: str) -> list[str]:
    """The runs of lines of a code block between its `# ...` lines (an excerpt's
    left-out lines), without blank lines at their ends."""
    parts = re.split(rf"^\s*{re.escape(code_regions.ELIDED)}$", text, flags=re.M)
    return [p.strip("\n") for p in parts if p.strip()]


def test_python_blocks_on_pages_come_from_the_chapters(site):
    """Every Python block on the built site is pseudocode or a verbatim part of a code.py
    or of a module beside it (command_line.py, bash_safety.py ...), or of an exercise's
    reference solution, included in the Exercises section."""
    solutions = sorted((ROOT / "exercises" / "solutions").rglob("*.py"))
    sources = [code_without_markers(c) for c in WITH_CODE]
    sources += [p.read_text(encoding="utf-8") for c in WITH_CODE
                for p in sorted((ROOT / c).glob("*.py")) if p.name != "code.py"]
    sources += [p.read_text(encoding="utf-8") for p in solutions]
    sources = [stripped_lines(s) for s in sources]
    for html in [page(site)] + [page(site, c) for c in CHAPTERS]:
        for block in html.code("python") + html.code("py"):
            text = block["text"].strip("\n")
            if text.startswith("# pseudocode"):
                continue
            for part in excerpt_parts(text):  # an excerpt: each run of lines is verbatim
                assert any(stripped_lines(part) in source for source in sources), (
                    f"{html.path.parent.name}: a python block is not from any code.py:\n"
                    f"{part[:300]}")


@pytest.mark.parametrize("chapter", chapter_params())
def test_code_regions_appear_on_the_page(site, chapter):
    """Each code region of the README shows its code on the built page."""
    shown = stripped_lines("\n".join(b["text"] for b in page(site, chapter).code("python")))
    text = (ROOT / chapter / "README.md").read_text(encoding="utf-8")
    regions = list(code_regions.REGION.finditer(text))
    assert regions, f"{chapter}/README.md shows no code"
    for m in regions:
        shown_block = code_regions.block(m["file"], m["items"])
        code = shown_block[shown_block.index("```"):].split("\n", 1)[1].rsplit("```", 1)[0]
        assert stripped_lines(code.strip("\n")) in shown, (
            f"{m['file']}: {m['items']}: not shown on the {chapter} page")


# --- what changed: by section, and the whole diff --------------------------------------------


def expected_diff(prev: str, chapter: str) -> str:
    a, b = ((ROOT / c / "code.py").read_text(encoding="utf-8") for c in (prev, chapter))
    return "\n".join(what_changed.unified_diff(
        what_changed.without_docstring(a).split("\n"),
        what_changed.without_docstring(b).split("\n"),
        f"{prev}/code.py", f"{chapter}/code.py", lineterm=""))


def shown_lines(block: dict | str) -> list[str]:
    # subtle: Markdown empties whitespace-only lines, so a blank context line (" ")
    # shows as "". Compare with trailing whitespace removed from every line.
    text = block["text"] if isinstance(block, dict) else block
    return [ln.rstrip() for ln in text.rstrip().strip("\n").split("\n")]


@pytest.mark.parametrize("chapter", chapter_params())
def test_what_changed_is_the_diff_of_the_files_by_section(site, chapter):
    """The page shows each changed section's own diff, then the whole diff of the two
    files without their docstrings, and names the tools this chapter adds."""
    html = page(site, chapter)
    earlier = [c for c in WITH_CODE if int(c[1:3]) < int(chapter[1:3])]
    diffs = html.code("diff")
    if not earlier:
        assert not diffs and "first chapter" in html.html
        return
    prev = earlier[-1]
    old = what_changed.sections((ROOT / prev / "code.py").read_text(encoding="utf-8"))
    new = what_changed.sections((ROOT / chapter / "code.py").read_text(encoding="utf-8"))
    changed = [k for k in new if k in old and new[k][1] != old[k][1]]
    assert len(diffs) == len(changed) + 1, f"{chapter}: one diff per changed section + 1"
    for key, block in zip([k for k in new if k in changed], diffs):
        expected = "\n".join(what_changed.section_diff(old[key], new[key]))
        assert shown_lines(block) == shown_lines(expected), key
    whole = shown_lines(diffs[-1])
    expected = expected_diff(prev, chapter).strip()  # a last context line may be " "
    assert [ln for ln in whole if not ln.startswith("@@")] == [
        ln.rstrip() for ln in expected.split("\n") if not ln.startswith("@@")]
    assert not any('"""' in ln for ln in whole[:3]), "the whole diff starts with a docstring"
    for key in new:
        if key not in old:
            assert escape(key, quote=False) in html.html, f"added section {key} not listed"
    old_tools = {t["name"] for t in load_chapter(prev).TOOLS}
    for tool in (t["name"] for t in load_chapter(chapter).TOOLS):
        if tool not in old_tools:
            assert f"<code>{tool}</code>" in html.html, f"summary misses tool {tool}"


def test_sections_compare_by_banner():
    """A worked example: a banner added, one changed, one moved, one removed."""
    a = ('"""Doc."""\nimport os\n# === s01 · loop ===\nx = 1\n# === s01 · show ===\n'
         'y = 2\n# === s01 · gone ===\nz = 3\n')
    b = ('"""Doc, changed."""\nimport os\n# === s01 · show ===\ny = 2\n'
         '# === s01 · loop ===\nx = 10\n# === s02 · new ===\nw = 4\n')
    old, new = what_changed.sections(a), what_changed.sections(b)
    assert list(new) == ["the imports", "s01 · show", "s01 · loop", "s02 · new"]
    assert old["the imports"][1] == new["the imports"][1] == "import os"  # no docstring
    assert what_changed.section_diff(old["s01 · loop"], new["s01 · loop"]) == [
        "@@ -3,2 +5,2 @@", " # === s01 · loop ===", "-x = 1", "+x = 10"]  # file lines
    assert "\n".join(what_changed.whole_diff("a", "b", a, b)).count('"""') == 0


def test_whole_diffs_and_solutions_stay_out_of_search(site):
    """The search index holds the explanations and the code shown beside them, not the
    collapsed whole file, the diffs, the exercises' solutions or the transcripts."""
    index = json.loads((site / "search" / "search_index.json").read_text(encoding="utf-8"))
    text = "\n".join(doc["text"] for doc in index["docs"])
    assert "#!/usr/bin/env python3" not in text, "a whole code.py is in the search index"
    assert "The whole diff" not in text and "+++ s02_tool_use/code.py" not in text, (
        "a diff is in the search index")
    assert "OFFLINE DEMO" not in text, "a transcript is in the search index"
    solution = code_regions.source_of("exercises/solutions/s02/ex1.py")
    body = code_regions.item_text(solution, "ex1", "s02 ex1")
    line = max(body.split("\n"), key=len).strip()
    assert escape(line, quote=False) not in text, f"a solution line is in the search index: {line}"
    assert "def check_permission(" not in text, "a function body is in the search index"
    why = quiz_of(CHAPTERS[0])[0]["why"]
    assert " ".join(why.split()[:8]) not in text, "a quiz's answer is in the search index"
    assert "Quiz Progress" not in text, "mkdocs-quiz's hidden progress panel is searched"
    # Prose only: about 350 kB for six chapters (with whole files it was 1.2 MB).
    assert len(json.dumps(index)) < 400_000, "the search index grew past 400 kB"


# --- new code highlighted -------------------------------------------------------------------


@pytest.mark.parametrize("chapter", chapter_params())
def test_new_lines_are_highlighted(chapter):
    """In every code block a README shows, each line whose text is nowhere in the
    previous chapter's code.py is marked in hl_lines; s01 marks nothing."""
    text = (ROOT / chapter / "README.md").read_text(encoding="utf-8")
    prev = code_regions.previous_file(f"{chapter}/code.py")
    old = set() if prev is None else {
        ln.strip() for ln in (ROOT / prev).read_text(encoding="utf-8").split("\n")}
    regions = [m for m in code_regions.REGION.finditer(text)
               if m["file"].strip() == f"{chapter}/code.py"]
    assert regions
    for m in regions:
        fence, _, rest = m["body"][m["body"].index("```"):].partition("\n")
        hl = re.search(r'hl_lines="([^"]*)"', fence)
        if prev is None:
            assert not hl, f"{chapter}: the first chapter highlights nothing"
            continue
        marked = set()
        for part in (hl[1].split() if hl else []):
            first, _, last = part.partition("-")
            marked |= set(range(int(first), int(last or first) + 1))
        code = rest.rsplit("```", 1)[0].rstrip("\n").split("\n")
        new = {n for n, ln in enumerate(code, 1) if ln.strip() and ln.strip() not in old
               and ln.strip() != code_regions.ELIDED}
        lines = {n for n, ln in enumerate(code, 1)
                 if ln.strip() and ln.strip() != code_regions.ELIDED}
        if f"new in {chapter[:3]})" in fence:  # all new: said in the title, not marked
            assert not hl, f"{m['items']}: a block new throughout is not highlighted"
            continue
        assert new <= marked, (f"{m['items']}: new lines not highlighted: "
                               f"{[code[n - 1] for n in sorted(new - marked)][:3]}")
        assert not lines or not lines <= marked, f"{m['items']}: the whole block is marked"


def test_an_excerpt_keeps_the_shape_of_the_code():
    """An excerpt shows its item's head, the lines its keys name, and one `# ...`,
    indented like the code after it, for each run of lines it leaves out."""
    text = ("def f(a,\n      b):\n    x = 1\n    y = 2\n    if x:\n        z = 3\n"
            "        w = 4\n    return z")
    index, lines = code_regions.excerpt(text, "z = 3+1", "f")
    assert lines == ["def f(a,", "      b):", "        # ...", "        z = 3",
                     "        w = 4", "    # ..."]
    assert index == [0, 1, -1, 5, 6, -1]


def test_an_excerpt_shows_whole_statements_or_is_refused():
    """A key that would show part of a statement (a call cut after its first line)
    is refused; a table may leave entries out but keeps its first and last lines;
    `name()` shows a def whole; an outline shows a constant whole."""
    text = ("TABLE = {\n    'a': 1,\n    'b': 2,\n    'c': 3}\n\n\n"
            "def f(x):\n    y = g(x,\n          1)\n    return y")
    with pytest.raises(code_regions.RegionError, match="cuts the statement"):
        code_regions.excerpt(text, "y = g", "f")
    _, lines = code_regions.excerpt(text, "TABLE", "t")
    assert lines == ["TABLE = {", "    # ...", "    'c': 3}", "# ..."]
    _, lines = code_regions.excerpt(text, "f()", "t")
    assert lines[-4:] == ["def f(x):", "    y = g(x,", "          1)", "    return y"]
    _, lines = code_regions.excerpt(text, "outline", "t")
    assert lines[:4] == ["TABLE = {", "    'a': 1,", "    'b': 2,", "    'c': 3}"]


def test_highlight_ranges():
    """hl_lines lists lines and ranges, and a blank line only inside new code."""
    assert code_regions.ranges([1, 2, 3, 7, 9, 10]) == "1-3 7 9-10"
    old, new = "a\nb\n\nc", "a\nx\n\ny\nb\n\nc"
    assert code_regions.new_lines(old, new) == [2, 3, 4]


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
    # s05 on: the demo's MCP server (offline/mcp_server.py) adds mcp__stockroom__*
    stockroom = (ROOT / "offline" / "mcp_server.py").read_text(encoding="utf-8")
    tools |= {f"mcp__stockroom__{name}" for name in re.findall(r"^def (\w+)\(", stockroom,
                                                               re.M)}
    calls = re.findall(r"^> (\w+)\(", text, re.M)
    assert calls and set(calls) <= tools, f"calls {set(calls) - tools} are not tools"
    assert "On the reading site, a" not in html.html  # the GitHub fallback was replaced


# --- links -----------------------------------------------------------------------------------


@pytest.mark.parametrize("chapter", chapter_params())
def test_chapters_link_what_they_mention(chapter):
    """A chapter's README links its neighbours, the exercises page, the sections its
    exercises send you back to, and Claude Code's documentation."""
    text = (ROOT / chapter / "README.md").read_text(encoding="utf-8")
    i = CHAPTERS.index(chapter)
    for neighbour in CHAPTERS[max(i - 1, 0):i] + CHAPTERS[i + 1:i + 2]:
        assert f"](../{neighbour}/README.md" in text, f"{chapter} does not link {neighbour}"
    assert "](../exercises/README.md)" in text, f"{chapter} does not link the exercises page"
    assert "](https://code.claude.com/docs/en/" in text, f"{chapter}: no Claude Code docs link"
    assert re.search(r"\]\(README\.md#[a-z0-9_-]+\)", text), (
        f"{chapter}: its exercises link no section of the chapter")


def test_exercises_and_benchmarks_pages_are_on_the_site(site):
    """The pages the root README points to are on the site, linked from the home page,
    and the benchmarks page says what every script measures."""
    home = page(site).html
    for link in ('href="exercises/"', 'href="benchmarks/"'):
        assert link in home, f"the home page lacks {link}"
    bench = parsed(site / "benchmarks" / "index.html").html
    for script in sorted((ROOT / "benchmarks").glob("*.py")):
        assert f"{script.name}</h3>" in bench or script.name in bench, script.name
    assert "Last measured on" in bench and "run_all.py" in bench and "Speedup" in bench
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "](exercises/README.md)" in readme and "](benchmarks/README.md)" in readme


@pytest.mark.parametrize("chapter", chapter_params())
def test_each_chapter_shows_small_runs(chapter):
    """Next to the code it explains, a chapter shows calls of its functions with what
    they really return (written by code_regions.py, checked stale above)."""
    text = (ROOT / chapter / "README.md").read_text(encoding="utf-8")
    runs = list(code_regions.RUN.finditer(text))
    assert runs, f"{chapter}: no <!-- run --> region"
    for m in runs:
        assert m["file"].strip() == f"{chapter}/code.py"
        assert code_regions.statements(m["body"]), "a run region with no >>> line"


def test_a_run_shows_what_python_prints(tmp_path):
    """A worked example: values, printed text and an exception, as the REPL shows them."""
    module = tmp_path / "m.py"
    module.write_text("def half(n):\n    if n % 2:\n        raise ValueError('odd')\n"
                      "    print('halving')\n    return n // 2\n")
    rel = module.relative_to(tmp_path).as_posix()
    saved, code_regions.ROOT = code_regions.ROOT, tmp_path
    try:
        shown = code_regions.run_statements(rel, ["half(4)", "half(3)", "x = 1"])
    finally:
        code_regions.ROOT = saved
    assert shown == (">>> half(4)\nhalving\n2\n>>> half(3)\nTraceback (most recent call "
                     "last):\n  ...\nValueError: odd\n>>> x = 1")


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


# --- complete with no network -------------------------------------------------------------

# Elements and attributes by which a page loads something (a link a reader clicks,
# <a href>, loads nothing until clicked; xmlns and the like name, they do not load).
LOADS = {"script": ["src"], "link": ["href"], "img": ["src", "srcset"], "iframe": ["src"],
         "source": ["src", "srcset"], "video": ["src", "poster"], "audio": ["src"],
         "embed": ["src"], "object": ["data"], "image": ["href", "xlink:href"],
         "use": ["href", "xlink:href"], "form": ["action"]}
OUTSIDE = re.compile(r"""(?:https?:)?//(?!(?:127\.0\.0\.1|localhost)[:/"'])[\w.-]+\.[a-z]{2,}[^\s"')]*""",
                     re.I)
CSS_URL = re.compile(r"""(?:url\(\s*["']?|@import\s+["'])([^"')\s]+)""", re.I)
# Hosts that the site's scripts name without loading anything from them, and why.
INERT_IN_SCRIPTS = {
    "unpkg.com": "Material's fallbacks, fetched only when window.mermaid or "
                 "ResizeObserver is missing: mkdocs.yml loads the vendored Mermaid first, "
                 "and every supported browser has ResizeObserver",
    "api.github.com": "Material's repository facts, used only with repo_url (unset)",
    "clipboardjs.com": "a licence comment in Material's bundle",
    "www.w3.org": "XML namespaces (SVG, XLink, XHTML, MathML)",
    "github.com": "Mermaid's and its libraries' error messages and licence comments",
    "chevrotain.io": "a parser library's error messages (inside Mermaid)",
    "langium.org": "a parser library's error messages (inside Mermaid)",
    "lodash.com": "licence comments (inside Mermaid)",
    "openjsf.org": "licence comments (inside Mermaid)",
    "underscorejs.org": "licence comments (inside Mermaid)",
    "en.wikipedia.org": "licence comments (inside Mermaid)",
    "tldrlegal.com": "licence comments (inside Mermaid)",
    "jquery.org": "licence comments (inside Mermaid)",
    "opensource.org": "licence comments (inside Mermaid)",
    "engelschall.com": "licence comments (inside Mermaid)",
}


class Loads(HTMLParser):
    """What an HTML page loads: (tag, url) pairs, style url()s included."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.urls: list[tuple[str, str]] = []
        self._style = False
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "meta" and (attrs.get("http-equiv") or "").lower() == "refresh":
            self.urls.append((tag, (attrs.get("content") or "").split("url=")[-1]))
        if tag == "link" and (attrs.get("rel") or "") in ("canonical", "alternate"):
            return  # names the page's address, loads nothing
        for name in LOADS.get(tag, []):
            for url in (attrs.get(name) or "").split(","):
                if url.strip():
                    self.urls.append((tag, url.strip().split()[0]))
        for url in CSS_URL.findall(attrs.get("style") or ""):
            self.urls.append((f"{tag} style", url))
        self._style = tag == "style"

    def handle_data(self, data):
        if self._style:
            self.urls += [("style", url) for url in CSS_URL.findall(data)]

    def handle_endtag(self, tag):
        self._style = False


def test_no_page_loads_anything_from_another_host(site):
    """Every built page, and every script and stylesheet it loads, needs only the
    site: no script, stylesheet, font, image, frame or fetch from another host."""
    problems, assets = [], set()
    for path in sorted(site.rglob("*.html")):
        for tag, url in Loads(path.read_text(encoding="utf-8")).urls:
            parts = urlsplit(url)
            if parts.scheme in ("http", "https") or url.startswith("//"):
                problems.append(f"{path.relative_to(site)}: <{tag}> {url}")
            elif not parts.scheme and parts.path.endswith((".js", ".css")):
                base = site if parts.path.startswith("/") else path.parent  # 404.html
                assets.add(Path(os.path.normpath(base / unquote(parts.path).lstrip("/"))))
    for asset in sorted(assets):
        text = asset.read_text(encoding="utf-8", errors="replace")
        if asset.suffix == ".css":
            problems += [f"{asset.relative_to(site)}: url({u})" for u in CSS_URL.findall(text)
                         if OUTSIDE.match(u)]
            continue
        for url in re.findall(r"https?://[\w.-]+", text):  # in a script: a full address
            host = urlsplit(url).hostname or ""
            if host.removeprefix("www.") not in {h.removeprefix("www.") for h in INERT_IN_SCRIPTS}:
                problems.append(f"{asset.relative_to(site)}: {url[:80]}")
    assert not problems, "pages would need the network:\n" + "\n".join(sorted(set(problems)))
    assert assets, "no script or stylesheet found: the check checked nothing"


def test_mermaid_is_served_by_the_site(site):
    """The vendored Mermaid (pinned, with its licence) is on every page with a diagram,
    so Material never fetches its own from a CDN."""
    vendored = ROOT / "docs" / "vendor" / "mermaid"
    assert f'"{MERMAID_VERSION}"' in (vendored / "mermaid.min.js").read_text(encoding="utf-8")
    assert "MIT License" in (vendored / "LICENSE").read_text(encoding="utf-8")
    assert MERMAID_VERSION in (vendored / "README.md").read_text(encoding="utf-8")
    for html in [page(site)] + [page(site, c) for c in CHAPTERS]:
        scripts = [u for u in html.links if u.endswith("vendor/mermaid/mermaid.min.js")]
        assert scripts, f"{html.path}: the vendored Mermaid is not loaded"
        # Right after Material's bundle, so it is there by the time the page is ready
        # and Material looks for `mermaid`.
        assert html.html.index(scripts[0]) > html.html.index("assets/javascripts/bundle")


def test_mermaid_diagrams_are_built_as_diagrams(site):
    """Each page's mermaid fences become mermaid blocks, not highlighted code."""
    for html in [page(site)] + [page(site, c) for c in CHAPTERS]:
        assert '<pre class="mermaid"><code>' in html.html, html.path
        assert not html.code("mermaid")


# --- the hook on its own ---------------------------------------------------------------------


def test_a_chapter_is_a_directory_with_code_and_readme(tmp_path):
    """Only sNN_name/ directories holding both files are chapters, sorted by number."""
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
    raw = ("Workspace: /tmp/abc/s02-demo-k3j_x9q1\n"
           '  File "/tmp/abc/s02-demo-k3j_x9q1/test_inventory.py", line 16\n'
           "Ran 4 tests in 0.013s\n")
    assert transcripts.normalise_transcript(raw, "/tmp/abc") == (
        "Workspace: /tmp/s02-demo-xxxxxxxx\n"
        '  File "/tmp/s02-demo-xxxxxxxx/test_inventory.py", line 16\n'
        "Ran 4 tests in 0.001s\n")


def test_transcript_lines_get_their_style():
    """Each kind of line has its class: calls, decisions, hooks, errors, the model's words."""
    lines = {"s03 >> Fix it.": "prompt", "> run_shell(command='ls')": "call",
             "  [allow] read-only command": "allow", "  [deny] deny rule Read(./.env)": "deny",
             "  [ask] rm -rf build": "ask", "  ~ PreToolUse guard_rm.py: exit 2": "hook",
             "! Permission denied: ...": "error", "  [exit code: 0]": "result",
             "  [reply complete; 3 safe call(s) started while it streamed]": "batch",
             "I'll fix total_value.": "text"}
    for line, name in lines.items():
        assert f'class="t-line t-{name}"' in transcripts.styled(line), line
    shown = transcripts.styled("[check report] > read_file(file_path='x')")
    assert '<span class="t-agent">[check report] </span>' in shown and "t-call" in shown


# --- a README is a guide ---------------------------------------------------------------------

CODE_SHARE_AT_MOST = 0.40  # of a chapter README's lines, inside fenced blocks


@pytest.mark.parametrize("chapter", chapter_params())
def test_a_chapter_readme_is_mostly_prose(chapter):
    """At most 40 % of a chapter README's lines are inside fenced blocks (code, runs,
    diagrams, transcripts): the page guides through the code, code.py holds it."""
    lines, fenced, _ = code_regions.measure(
        (ROOT / chapter / "README.md").read_text(encoding="utf-8"))
    assert fenced / lines <= CODE_SHARE_AT_MOST, (
        f"{chapter}/README.md: {fenced} of its {lines} lines are code "
        f"({fenced / lines:.0%}); show excerpts (see CONTRIBUTING.md)")


def test_the_code_share_is_counted_by_fences():
    """A worked example of the measure: fence lines count as code, prose does not."""
    text = "# T\n\nSome words here.\n\n```python\nx = 1\n```\n\nMore.\n"
    assert code_regions.measure(text) == (9, 3, 5)


READING_AT_MOST = 60  # minutes: a chapter's first reading fits a class hour


@pytest.mark.parametrize("chapter", chapter_params())
def test_reading_time_is_current(chapter):
    """The reading time at the top is computed from the page by its stated rule:
    prose at 200 words a minute, fenced lines at 10 a minute; the exercises, the quiz
    and the folded blocks left out, the folded blocks' time said apart. It says the
    exercises' time, the sum of what each exercise states, and the quiz's size; a
    first reading takes at most an hour."""
    text = (ROOT / chapter / "README.md").read_text(encoding="utf-8")
    shown = re.search(r"\*About (\d+) minutes to read: ([\d,]+) words at 200 a minute, "
                      r"and (\d+) lines of code and output at 10 a minute; the folded "
                      r"parts add about (\d+) more\. The exercises take about "
                      r"(?P<total>[^(]+) \((?P<each>[\d, and]+) minutes\), the quiz "
                      r"\((\d+) questions\) about \d+\.\*", text)
    assert shown, f"{chapter}: no reading time at the top, or not in its form"
    assert text.index(shown[0]) < text.index("## The problem")
    minutes, words, code = code_regions.reading_minutes(text)
    assert (int(shown[1]), int(shown[2].replace(",", "")), int(shown[3])) == (
        minutes, words, code)
    assert minutes == -(-(words / 200 + code / 10) // 1)
    assert int(shown[4]) == code_regions.folded_minutes(text)
    exercises = (ROOT / "exercises" / chapter[:3] / "README.md").read_text(encoding="utf-8")
    stated = [int(n) for n in code_regions.EXERCISE_TIME.findall(exercises)]
    assert [int(n) for n in re.findall(r"\d+", shown["each"])] == stated
    assert shown["total"] == code_regions.duration(sum(stated))
    assert int(shown[7]) == len(quiz_of(chapter))
    assert minutes <= READING_AT_MOST, (
        f"{chapter}: a first reading takes {minutes} minutes; fold what it can skip "
        "into a 'Going further' block (see docs/_hooks/chapter_template.md)")


def test_the_reading_time_leaves_out_what_is_folded():
    """A worked example: words in a folded block, the quiz and the exercises are not
    in the first reading; the folded block is counted apart."""
    text = ("# T\n\n" + "word " * 200 + "\n\n<details class=\"info\" markdown>\n"
            "<summary>Going further</summary>\n\n" + "deep " * 400 + "\n\n</details>\n\n"
            "<!-- quiz -->\n" + "quiz " * 400 + "\n<!-- /quiz -->\n\n"
            "<!-- exercises exercises/s01/README.md -->\n**Time.** About 25 minutes.\n"
            + "task " * 400 + "\n<!-- /exercises -->\n")
    assert code_regions.reading_minutes(text) == (2, 201, 0)  # 200 words and the title
    assert code_regions.folded_minutes(text) == 3               # 400 words and "Going further"
    assert code_regions.exercise_minutes(text) == [25]


# --- the quiz -------------------------------------------------------------------------------

def quiz_of(chapter: str) -> list[dict]:
    text = (ROOT / chapter / "README.md").read_text(encoding="utf-8")
    m = code_regions.QUIZ.search(text)
    assert m, f"{chapter}/README.md has no <!-- quiz --> region"
    return hook.quiz_questions(m["body"])


@pytest.mark.parametrize("chapter", chapter_params())
def test_every_chapter_has_a_quiz_that_github_shows_folded(chapter):
    """5 to 8 questions, each with its answers listed and the right one folded
    under it: on GitHub no answer shows at a glance (no ticked box, no answer
    outside its <details>)."""
    questions = quiz_of(chapter)
    assert 5 <= len(questions) <= 8, f"{chapter}: {len(questions)} quiz questions"
    body = code_regions.QUIZ.search(
        (ROOT / chapter / "README.md").read_text(encoding="utf-8"))["body"]
    assert "[x]" not in body.lower() and "<quiz>" not in body
    outside = re.sub(r"<details><summary>Answer</summary>.*?</details>", "", body, flags=re.S)
    assert "**(" not in outside, f"{chapter}: an answer is shown outside its fold"
    for q in questions:
        assert len(q["options"]) >= 3 and q["why"], f"{chapter}: {q['question']}"


@pytest.mark.parametrize("chapter", chapter_params())
def test_the_quiz_answer_is_not_given_away_by_its_length(chapter):
    """A learner who always picks the longest option (the most careful-looking one)
    does no better than chance: the right answer is the longest option (ties count)
    in at most a third of the chapter's questions, and so is the shortest."""
    questions = quiz_of(chapter)
    longest = [q["question"][:50] for q in questions
               if any(len(q["options"][c]) == max(map(len, q["options"].values()))
                      for c in q["correct"])]
    shortest = [q["question"][:50] for q in questions
                if any(len(q["options"][c]) == min(map(len, q["options"].values()))
                       for c in q["correct"])]
    most = round(len(questions) / 3)
    assert len(longest) <= most, f"{chapter}: the right answer is the longest in {longest}"
    assert len(shortest) <= most, f"{chapter}: the right answer is the shortest in {shortest}"


def test_a_quiz_becomes_the_plugins_blocks():
    """A worked example: the GitHub form of a question, as mkdocs-quiz's block, kept
    out of search; a question that breaks the form is refused, saying why."""
    page = ("Before.\n\n<!-- quiz -->\n**1. Why `x`?**\n\n- (a) no\n- (b) yes, because\n"
            "  it is so\n\n<details><summary>Answer</summary>\n\n**(b)** Because.\n\n"
            "</details>\n<!-- /quiz -->\n\nAfter.\n")
    site, questions = hook.as_quiz(page)
    assert questions == 1
    assert site == ("Before.\n\n<aside class=\"quizzes\" data-search-exclude>\n\n<quiz>\n"
                    "Why `x`?\n- [ ] no\n- [x] yes, because it is so\n\nBecause.\n</quiz>\n\n"
                    "<!-- mkdocs-quiz results -->\n\n</aside>\n\n\nAfter.\n")
    with pytest.raises(hook.QuizError, match="answer should follow"):
        hook.as_quiz(page.replace("**(b)** Because.", "Because."))
    with pytest.raises(hook.QuizError, match="should open with"):
        hook.as_quiz(page.replace("**1. ", "**2. "))


@pytest.mark.parametrize("chapter", chapter_params())
def test_the_quiz_is_on_the_chapter_page(site, chapter):
    """Each question is on the built page as the plugin's quiz, with its right
    answers marked for the script, and the plugin's script and style inlined (no
    file, no other host)."""
    html = page(site, chapter).html
    questions = quiz_of(chapter)
    assert html.count('<div class="quiz"') == len(questions)
    for i, q in enumerate(questions):
        quiz = html[html.index(f'id="quiz-{i}"'):]
        quiz = quiz[:quiz.index("</form>")]
        marked = re.findall(r'id="quiz-\d+-(\d+)" data-correct="true"', quiz)
        assert [list(q["options"])[int(n)] for n in marked] == q["correct"], q["question"]
    assert "window.mkdocsQuizConfig" in html and ".quiz-feedback" in html
    assert '<aside class="quizzes" data-search-exclude>' in html


@pytest.mark.parametrize("chapter", chapter_params())
def test_github_readers_get_what_changed_and_the_transcript(chapter):
    """What changed (for learners: no line budgets) and the transcript are in the
    README itself, not left for the site."""
    text = (ROOT / chapter / "README.md").read_text(encoding="utf-8")
    diff = code_regions.DIFF.search(text)["body"]
    transcript = code_regions.TRANSCRIPT.search(text)["body"]
    assert "budget" not in diff and "appears" not in diff
    if chapter != CHAPTERS[0]:
        assert "| section of code.py | what happened |" in diff
    assert f"{chapter[:3]} OFFLINE DEMO" in transcript and "```text" in transcript
    assert "End of the scripted demo" in transcript


@pytest.mark.parametrize("chapter", chapter_params()[1:])
def test_what_changed_counts_the_lines_as_the_command_it_cites(chapter):
    """The README's "Lines: X added, Y removed" are what the command it names for the
    whole diff counts (git's histogram diff), so a reader who runs it sees the same."""
    prev = CHAPTERS[CHAPTERS.index(chapter) - 1]
    diff = code_regions.DIFF.search(
        (ROOT / chapter / "README.md").read_text(encoding="utf-8"))["body"]
    command = f"git diff --no-index --histogram {prev}/code.py {chapter}/code.py"
    assert f"`{command}`" in diff
    said = re.search(r"\*\*Lines:\*\* (\d+) added, (\d+) removed", diff)
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    counted = subprocess.run([*command.split(), "--numstat"], cwd=ROOT, text=True,
                             capture_output=True, check=False).stdout.split()[:2]
    assert said and list(said.groups()) == counted, (said and said[0], counted)


@pytest.mark.parametrize("chapter", chapter_params()[1:])
def test_what_changed_names_the_tools_the_chapter_really_registers(chapter):
    """The README's "Tools added" and "removed" are the difference between the
    chapters' TOOLS, as the tests load them (s05 adds tool_search and plan mode's
    tools and skill, s06 the agent; s03 removes none)."""
    prev = CHAPTERS[CHAPTERS.index(chapter) - 1]
    old, new = ([t["name"] for t in load_chapter(c).TOOLS] for c in (prev, chapter))
    added, removed = [t for t in new if t not in old], [t for t in old if t not in new]
    diff = code_regions.DIFF.search(
        (ROOT / chapter / "README.md").read_text(encoding="utf-8"))["body"]
    assert f"**Tools added:** {hook.code_list(added)}" in diff
    assert ("**removed:**" in diff) == bool(removed)
    assert {"s05": "tool_search" in added, "s06": "agent" in added}.get(chapter[:3], True)


def test_the_chapter_table_names_the_tools_each_chapter_adds():
    """The root README's table, "tools after it": s01's tools, then what each chapter
    adds to the one before (as its TOOLS say), or "same"."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    shown = dict(re.findall(r"^\| \[(s\d\d_\w+)\]\(.*\| ([^|]+) \|$", readme, re.M))
    assert list(shown) == CHAPTERS
    before: list[str] = []
    for chapter in CHAPTERS:
        tools = [t["name"] for t in load_chapter(chapter).TOOLS]
        added = [t for t in tools if t not in before]
        expected = (", ".join(added) if not before else
                    "+ " + ", ".join(added) if added else "same")
        assert shown[chapter] == expected, chapter
        before = tools


def transcript_of(chapter: str) -> str:
    text = (ROOT / chapter / "README.md").read_text(encoding="utf-8")
    return code_regions.TRANSCRIPT.search(text)["body"]


def path_without(tmp_path: Path, *programs: str) -> str:
    """A PATH that finds everything the current one does, except `programs`."""
    folder = tmp_path / "path-without"
    folder.mkdir()
    for entry in os.environ["PATH"].split(os.pathsep):
        for program in Path(entry).glob("*") if Path(entry).is_dir() else []:
            link = folder / program.name
            if program.name not in programs and not link.exists():
                link.symlink_to(program)
    return str(folder)


SANDBOX_LINES = [  # what the demo's sandbox line says on each kind of machine
    "sandbox: shell commands run confined (no network, no home, writes only where allowed)",
    "sandbox: none: bwrap is not installed: install bubblewrap: sudo apt-get install "
    "bubblewrap (Debian, Ubuntu). Shell commands run unconfined: the classifier alone "
    "decides (best effort).",
    "sandbox: none: sandbox-exec is not installed: sandbox-exec ships with macOS; is "
    "/usr/bin/sandbox-exec there?. Shell commands run unconfined: the classifier alone "
    "decides (best effort)."]


@pytest.mark.parametrize("chapter", [c for c in CHAPTERS if c >= "s03"])
def test_a_transcript_is_current_whatever_sandbox_the_machine_has(chapter):
    """The transcript's sandbox line is the recording machine's: the stale check
    masks it, so a README recorded with bubblewrap is current without it, on macOS
    too, and the page says the line is the machine's."""
    text = (ROOT / chapter / "README.md").read_text(encoding="utf-8")
    recorded = transcript_of(chapter)
    assert "the `sandbox:` line says what the recording machine had" in recorded
    line = transcripts.MACHINE.search(recorded)[0]
    for other in SANDBOX_LINES:
        assert (code_regions.comparable(text.replace(line, other))
                == code_regions.comparable(text))
    assert code_regions.comparable(text.replace(line, "sandbox: off")) != \
        code_regions.comparable(text.replace(line, "sandbox-ish: off")), "not masked"


@pytest.mark.skipif(sys.platform != "linux", reason="hides bwrap from the PATH: Linux")
def test_the_demo_is_current_with_bubblewrap_and_without(tmp_path, monkeypatch):
    """s04's demo run with bwrap on the PATH (if this machine can sandbox) and without
    it: each run matches the README's transcript, and the cache key differs. A run is
    taken from the transcripts' cache when one of the same key is there (the site's
    build of this test run made the one with bwrap): the key holds all it depends on."""
    chapter = "s04_hooks"
    recorded = transcript_of(chapter).split("```text\n", 1)[1].rsplit("```", 1)[0]
    keys = {}
    for way, path in [("with", os.environ["PATH"]), ("without", path_without(tmp_path, "bwrap"))]:
        monkeypatch.setenv("PATH", path)
        found = transcripts.sandbox_here(chapter)
        if way == "with" and "confined" not in found:
            continue  # no sandbox can start here: only the run without it is tried
        assert ("bwrap is not installed" in found) == (way == "without"), found
        keys[way] = transcripts.demo_fingerprint(chapter)
        ran = transcripts.cached_demo(chapter, keys[way], popen=warm.Popen)
        assert ("bwrap is not installed" in ran) == (way == "without"), way
        assert transcripts.comparable(ran) == transcripts.comparable(recorded), way
    assert len(set(keys.values())) == len(keys), "the cache key ignores the sandbox"


def test_s03_transcript_shows_the_agent_asking():
    """s03's transcript is a learner's run: the questions, an "always", a refusal,
    and then the dangerous command asking (recorded in a pseudo-terminal)."""
    text = transcript_of("s03_permissions")
    assert "not a terminal" not in text
    assert "? Allow run_shell(command='python3 report.py')" in text
    assert "[y]es / [n]o / [a]lways this session: a" in text
    assert "[y]es / [n]o / [a]lways this session: n" in text
    assert "[y]es / [n]o: y" in text  # the dangerous command asks, with no "always"
    assert text.index("this session: n") < text.index("[y]es / [n]o: y")


def test_s05_transcript_shows_a_plan_refused_with_feedback_then_approved():
    """s05's transcript: feedback on the first plan, the plan again, approved."""
    text = transcript_of("s05_deferred_tools")
    assert "not a terminal" not in text
    ask = "Approve this plan? [y]es, [n]o, or type what to change: "
    assert f"{ask}also say how many are left" in text and f"{ask}y" in text
    assert "The user approved your plan" in text


@pytest.mark.parametrize("chapter", chapter_params())
def test_a_run_comes_right_after_the_code_it_calls(chapter):
    """Each small run calls functions the code block just before it defines (at
    least their signatures, in an excerpt), so the reader has just seen them."""
    text = (ROOT / chapter / "README.md").read_text(encoding="utf-8")
    not_defined_here = {"print", "len", "dict", "list", "str", "repr", "sorted", "set",
                        "open", "Block", "SimpleNamespace", "Path", "write_text",
                        "read_text", "mkdir", "Read",
                        "Agent", "Call"}  # a run builds the agent, a call's record
    for m in code_regions.RUN.finditer(text):
        called = set(re.findall(r"(\w+)\(", "\n".join(code_regions.statements(m["body"]))))
        before = list(code_regions.REGION.finditer(text[:m.start()]))
        shown = before[-1]["body"] if before else ""
        missing = [n for n in sorted(called - not_defined_here)
                   if f"def {n}(" not in shown and f"class {n}" not in shown]
        assert not missing, (f"{chapter}: a run calls {missing}, which the code block "
                             f"just before it does not show")


def test_two_runs_of_a_demo_compare_equal():
    """What varies from run to run (s06's timings and interleaved subagents, s04's
    clock times) does not make a README stale."""
    one = ('[a] > read_file(x)\n[b] > grep_search(y)\n[a]   [allow] read-only tool\n'
           'batch 1 · 2 calls in parallel: 0.58 s\n  {"time": "04:59:30"}\n')
    two = ('[b] > grep_search(y)\n[a] > read_file(x)\n[a]   [allow] read-only tool\n'
           'batch 1 · 2 calls in parallel: 0.61 s\n  {"time": "05:19:27"}\n')
    assert transcripts.comparable(one) == transcripts.comparable(two)
    assert transcripts.comparable(one) != transcripts.comparable(one.replace("[a]", "[c]"))



def test_a_subagents_own_parallel_calls_may_end_in_either_order():
    """A subagent's batch shows its calls as each ends (a fresh clone's run showed
    grep_search before read_file, the recording the other way): the same transcript."""
    calls = ["[r] > read_file(file_path='a.py')\n[r]   [allow] read-only tool\n",
             "[r] > grep_search(pattern='x')\n[r]   [allow] read-only tool\n"]
    batch = "[r]   batch 1 · 2 calls in parallel: 0.01 s\n"
    one, two = calls[0] + calls[1] + batch, calls[1] + calls[0] + batch
    assert transcripts.comparable(one) == transcripts.comparable(two)
    assert transcripts.comparable(one) != transcripts.comparable(
        one.replace("'x'", "'y'")), "the calls' own lines still count"

def test_the_sites_set_up_says_what_the_readme_says_about_windows():
    """Windows is not supported; both set-up sections send its users to WSL."""
    for path in (ROOT / "README.md", ROOT / "docs" / "index.md"):
        set_up = path.read_text().split("## Set up", 1)[1].split("\n## ", 1)[0]
        assert "Linux or macOS" in set_up and "use WSL" in set_up, path


def test_a_replys_end_line_may_come_before_or_after_the_calls_it_started():
    """s06 prints "[reply complete: ...]" when the reply ends, which a call started
    early may finish before or after: both orders are the same transcript."""
    one = ("> read_file(file_path='a.txt')\n  [allow] read-only tool\n  1\tx\n"
           "  [reply complete: read_file started while it streamed]\nDone.\n")
    two = ("  [reply complete: read_file started while it streamed]\n"
           "> read_file(file_path='a.txt')\n  [allow] read-only tool\n  1\tx\nDone.\n")
    assert code_regions.comparable(one) == code_regions.comparable(two)
    assert code_regions.comparable(one) != code_regions.comparable(
        one.replace("1\tx", "1\ty")), "the calls' own lines still count"
