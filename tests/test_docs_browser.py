"""The reading site in a real browser, with the network off, as a learner opens it.

The site built by tests/test_docs.py is served on localhost and opened in headless
Chromium (Debian's `chromium`, driven by Playwright; see docs/_tools/browser.py),
with every request to another host blocked. On every page: the diagrams are drawn
as SVG and fit a screen, no code block scrolls sideways, and nothing was fetched from
elsewhere; on a 390 px phone nothing makes a page wider than the screen or runs off
its edge except inside a box that scrolls; on the home page, search answers and the
dark-mode toggle switches; on a chapter page, the quiz answers.

Without Chromium (or Playwright) these tests are skipped and say how to get them;
CI installs Chromium (.ci/run), and under CI (the CI variable set) a missing one
fails instead of skipping.
"""

from __future__ import annotations

import os
import sys

import pytest

from conftest import ROOT
from test_docs import CHAPTERS, quiz_of, site  # noqa: F401  (site: the session's build)

sys.path.insert(0, str(ROOT / "docs" / "_tools"))
import browser as tools  # noqa: E402

try:
    import playwright.sync_api  # noqa: F401
    MISSING = None if tools.chromium_path() else (
        "no Chromium: `apt-get install chromium` (Debian, Ubuntu) to run the browser checks")
except ImportError:
    MISSING = ("no Playwright: `pip install -r requirements-browser.txt` (and Chromium) "
               "to run the browser checks")

PAGES = ["", *(f"{c}/" for c in CHAPTERS), "exercises/", "benchmarks/", "CONTRIBUTING/",
         "tests/fidelity/",
         *(f"exercises/{c[:3]}/" for c in CHAPTERS)]
# The pages in four shares, each a test of its own: under pytest -n they are opened
# side by side (each share costs a browser's start, a second; a page, several).
SHARES = 4
LAPTOP, PHONE = (1280, 800), (390, 844)
LINE = 88          # code.py lines are at most this long
SMALLEST_TEXT = {LAPTOP: 12, PHONE: 10}  # px: a diagram's label text on screen, at least
ZOOMED_TEXT = 14     # px: the same, once the diagram is opened at full size


# subtle: one browser per test, closed after it. The xdist group may interleave these
# tests with test_docs.py's, and a Playwright session left open between them (its
# greenlets) has made CPython 3.11's ast.parse fail there ("AST constructor recursion
# depth mismatch").
@pytest.fixture
def chromium(site):  # noqa: F811
    if MISSING and os.environ.get("CI"):
        pytest.fail(f"CI must run the browser checks: {MISSING}")
    if MISSING:
        pytest.skip(MISSING)
    with tools.serve(site) as base, tools.browser() as b:
        b.base = base
        yield b
    assert not b.outside, f"requests to other hosts: {sorted(set(b.outside))}"


def open_page(chromium, path: str, size, dark: bool = False):
    page = chromium.page(*size, dark=dark)
    page.goto(chromium.base + path)
    page.wait_for_load_state("load")
    return page


def check_page(page, path: str, size) -> list[str]:
    """What is wrong with one open page at its current size."""
    problems = []
    if page.query_selector("pre.mermaid, div.mermaid"):
        tools.wait_for_diagrams(page)
        page.wait_for_timeout(200)  # docs/js/diagrams.js fits them a frame later
        for d in tools.diagrams(page):
            if not d["text"].strip():
                problems.append(f"{path}: a diagram drew no labels")
            if d["textPx"] < SMALLEST_TEXT[size]:
                problems.append(f"{path} at {size[0]}px: diagram text {d['textPx']:.1f}px")
        zoomed = tools.zoomed_diagram(page)
        if zoomed["textPx"] < ZOOMED_TEXT:
            problems.append(f"{path} at {size[0]}px: zoomed diagram text "
                            f"{zoomed['textPx']:.1f}px")
        page.keyboard.press("Escape")
        if page.query_selector(".diagram-zoom"):
            problems.append(f"{path}: Escape does not close the zoomed diagram")
    # Everything a reader can unfold or switch to: collapsed blocks, other tabs.
    page.evaluate("""() => {
        document.querySelectorAll('details').forEach(d => d.open = true);
        document.querySelectorAll('.tabbed-content > .tabbed-block')
            .forEach(b => b.style.display = 'block'); }""")
    if size == LAPTOP:  # on a phone a token longer than the box may scroll
        problems += [f"{path} at {size[0]}px: {o['title'][:60]!r} is {o['scroll']}px "
                     f"wide in a {o['box']}px box" for o in tools.overflowing_code(page)]
    problems += [f"{path} at {size[0]}px: code {p}" for p in tools.code_layout(page)]
    problems += [f"{path} at {size[0]}px: a table {t['width']:.0f}px wide: {t['head']!r}"
                 for t in tools.wide_tables(page)]
    if size == PHONE:  # nothing widens the page or runs off it, unless it scrolls
        problems += [f"{path} at {size[0]}px: {p}" for p in tools.off_screen(page)]
    if size == LAPTOP and page.query_selector(".highlight pre > code"):
        room = page.evaluate(f"""() => {{
            const code = document.querySelector('.highlight pre > code');
            const probe = document.createElement('span');
            probe.textContent = 'x'.repeat({LINE});
            probe.style.whiteSpace = 'pre';
            code.prepend(probe);
            const wide = probe.getBoundingClientRect().width;
            probe.remove();
            const style = getComputedStyle(code);
            return [wide, code.clientWidth - parseFloat(style.paddingLeft)
                                            - parseFloat(style.paddingRight)]; }}""")
        if room[0] > room[1] + 1:  # a pixel of rounding
            problems.append(f"{path}: {LINE} characters need {room[0]:.0f}px, "
                            f"the code box has {room[1]:.0f}px")
    return problems


@pytest.mark.parametrize("share", [
    pytest.param(PAGES[i::SHARES], id="+".join(p.strip("/") or "home" for p in PAGES[i::SHARES]))
    for i in range(SHARES)])
def test_every_page_works_offline(chromium, share):
    """Each page, at 1280 px and then at 390 px, draws its diagrams as SVG with text
    one can read (at least 12 px at 1280 px), opens one at full size on a click, and
    fetches nothing from another host; code wraps at spaces, hanging past its own
    indentation; no table is wider than the column; at 1280 px no code block scrolls
    sideways and a line of 88 characters fits a code box unwrapped; at 390 px the
    page is no wider than the screen, nothing runs off its edge except inside a box
    that scrolls sideways, code lines wrap to their box, and a diagram too wide to
    read scaled down scrolls in its box with a hint saying so."""
    problems = []
    for path in share:
        page = open_page(chromium, path, LAPTOP)
        problems += check_page(page, path, LAPTOP)
        # subtle: the same page made narrow, not loaded again: a load (mermaid's 3 MB
        # and the page) is most of the time, and the layout follows the new width.
        page.set_viewport_size({"width": PHONE[0], "height": PHONE[1]})
        problems += check_page(page, path, PHONE)
        page.close()
    assert not problems, "\n".join(problems)
    assert not chromium.outside, f"requests to other hosts: {sorted(set(chromium.outside))}"


def test_search_answers_offline(chromium):
    """Typing in the search box lists matching pages (the search worker loads locally)."""
    page = open_page(chromium, "", LAPTOP)
    page.click("input.md-search__input")
    page.keyboard.type("tool_result", delay=20)  # Material searches on key presses
    page.wait_for_selector(".md-search-result__item", timeout=15_000)
    found = page.eval_on_selector_all(".md-search-result__item a", "as => as.map(a => a.href)")
    assert any("s01_agent_loop" in href for href in found), found
    meta = page.inner_text(".md-search-result__meta")
    assert "Initializing" not in meta, meta
    page.close()


def test_dark_mode_toggle_switches(chromium):
    """The palette toggle switches the page between the light and the dark scheme."""
    page = open_page(chromium, "s01_agent_loop/", LAPTOP)
    scheme = "() => document.body.getAttribute('data-md-color-scheme')"
    assert page.evaluate(scheme) == "default"
    page.click("form[data-md-component='palette'] label:visible")
    page.wait_for_function(f"({scheme})() === 'slate'", timeout=5_000)
    page.click("form[data-md-component='palette'] label:visible")
    page.wait_for_function(f"({scheme})() === 'default'", timeout=5_000)
    page.close()


def test_a_quiz_answers_offline(chromium):
    """On a chapter page, with the network off, the quiz works: a question answered
    right says so and shows why; one answered wrong says so, marks the answer chosen
    wrong and the right one right, and shows why; the score at the end counts both."""
    chapter = CHAPTERS[0]
    questions = quiz_of(chapter)
    page = open_page(chromium, f"{chapter}/", LAPTOP)
    page.wait_for_function("() => document.querySelectorAll('.quiz form').length > 0")
    for n, right in ((0, True), (1, False)):
        options = list(questions[n]["options"])
        correct = options.index(questions[n]["correct"][0])
        chosen = correct if right else (correct + 1) % len(options)
        page.click(f"#quiz-{n} label[for='quiz-{n}-{chosen}']")
        feedback = page.locator(f"#quiz-{n} .quiz-feedback")
        feedback.wait_for(state="visible", timeout=5_000)
        said = feedback.inner_text()
        assert ("Correct answer" in said) == right, said
        why = page.locator(f"#quiz-{n} section.content")
        assert why.is_visible(), f"question {n + 1}: the explanation stays hidden"
        words = " ".join(questions[n]["why"].replace("`", "").replace("*", "").split()[:4])
        assert words in " ".join(why.inner_text().split()), (words, why.inner_text())
        marked = page.eval_on_selector_all(
            f"#quiz-{n} fieldset > div", "ds => ds.map(d => d.className)")
        assert "correct" in marked[correct].split(), marked
        if not right:
            assert "wrong" in marked[chosen].split(), marked
    stats = page.inner_text("#quiz-results .quiz-results-stats")
    assert stats.split()[:3] == ["2", "/", str(len(questions))], stats
    assert page.inner_text("#quiz-results .quiz-results-correct") == "1"
    page.close()

