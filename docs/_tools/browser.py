"""A built site, served on localhost and opened in headless Chromium with the network off.

Used by tests/test_docs_browser.py and docs/_tools/screenshots.py. Chromium is
Debian's (`apt-get install chromium`), driven by Playwright's Python package with
`executable_path`; Playwright's own browser download is not needed. Every request
to a host other than localhost is blocked and recorded, so a page that would need
the network shows it: a diagram left as text, a search that never answers, and an
entry in `Browser.outside`.
"""

from __future__ import annotations

import functools
import http.server
import shutil
import threading
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

# The flags that work in a container, with nothing in the background that phones home.
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage"]
LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}
# Force the shadow roots Material draws diagrams into open, so a check can look inside.
OPEN_SHADOW_ROOTS = """
const attach = Element.prototype.attachShadow;
Element.prototype.attachShadow = function (init) {
  return attach.call(this, Object.assign({}, init, {mode: "open"}));
};
"""


def chromium_path() -> str | None:
    """Debian's Chromium, or another Chromium on PATH; None if there is none."""
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        if found := shutil.which(name):
            return found
    return None


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # no line per request on stderr
        pass


@contextmanager
def serve(site: Path):
    """Serve the folder `site` on a free localhost port; yields its base URL."""
    handler = functools.partial(QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


class Browser:
    """Chromium with the network off: `outside` lists every blocked request. Each
    page gets a context of its own, so nothing (a chosen colour scheme in
    localStorage, say) carries over from one page to the next."""

    def __init__(self, playwright, executable: str):
        # Playwright starts Chromium with a fresh, temporary --user-data-dir.
        self.chromium = playwright.chromium.launch(
            executable_path=executable, headless=True, args=CHROMIUM_FLAGS)
        self.outside: list[str] = []

    def _route(self, route):
        url = route.request.url
        if urlsplit(url).scheme in ("data", "blob") or urlsplit(url).hostname in LOOPBACK:
            route.continue_()
        else:
            self.outside.append(url)
            route.abort("internetdisconnected")

    def page(self, width: int, height: int = 900, dark: bool = False):
        """A new tab, `width` px wide, in the light or the dark colour scheme."""
        context = self.chromium.new_context(
            viewport={"width": width, "height": height}, service_workers="block",
            color_scheme="dark" if dark else "light")
        context.add_init_script(OPEN_SHADOW_ROOTS)
        context.route("**/*", self._route)
        page = context.new_page()
        page.on("close", lambda _: context.close())
        return page

    def close(self):
        self.chromium.close()


@contextmanager
def browser(executable: str | None = None):
    from playwright.sync_api import sync_playwright
    with sync_playwright() as playwright:
        b = Browser(playwright, executable or chromium_path())
        try:
            yield b
        finally:
            b.close()


def wait_for_diagrams(page, timeout: float = 20_000) -> None:
    """Until no mermaid block is left as text (Material swaps each for a drawing)."""
    page.wait_for_function(
        "() => document.querySelectorAll('pre.mermaid').length === 0"
        " && [...document.querySelectorAll('div.mermaid')].every("
        "      d => d.shadowRoot && d.shadowRoot.querySelector('svg'))",
        timeout=timeout)


# The size of a diagram's label text on screen: its font size in the drawing's units,
# times the drawing's scale (its width on screen over its viewBox's width).
LABEL_TEXT_PX = """(svg, labels) => {
    const scale = svg.getBoundingClientRect().width / (svg.viewBox.baseVal.width || 1);
    return Math.min(...labels.filter(t => t.getBoundingClientRect().height > 0)
        .map(t => parseFloat(getComputedStyle(t).fontSize) * scale)); }"""


def diagrams(page) -> list[dict]:
    """Each drawn diagram: its size on screen, the text of its labels, the height of
    their boxes (fontPx) and the size of their text on screen (textPx)."""
    return page.evaluate(f"""() => [...document.querySelectorAll('div.mermaid')].map(d => {{
        const svg = d.shadowRoot.querySelector('svg'), box = svg.getBoundingClientRect();
        const labels = [...svg.querySelectorAll('.nodeLabel, text')];
        return {{width: box.width, height: box.height, text: svg.textContent,
                fontPx: Math.min(...labels.map(t => t.getBoundingClientRect().height)
                                          .filter(h => h > 0)),
                textPx: ({LABEL_TEXT_PX})(svg, labels)}};
    }})""")


def zoomed_diagram(page) -> dict | None:
    """Click the first diagram; the full-size drawing's size and label text size."""
    page.click("div.mermaid")
    page.wait_for_selector(".diagram-zoom svg", timeout=5_000)
    return page.evaluate(f"""() => {{
        const svg = document.querySelector('.diagram-zoom svg');
        const labels = [...svg.querySelectorAll('.nodeLabel, text')];
        return {{width: svg.getBoundingClientRect().width,
                textPx: ({LABEL_TEXT_PX})(svg, labels)}}; }}""")


def code_layout(page) -> list[dict]:
    """Problems with how code lines wrap: a code box that may split a word, or an
    indented line whose wrapped part would not hang past its own indentation."""
    return page.evaluate("""() => {
        const out = [];
        document.querySelectorAll('.md-typeset pre > code').forEach(code => {
            const s = getComputedStyle(code);
            if (code.offsetParent !== null && s.whiteSpace !== 'pre' &&
                (s.overflowWrap !== 'normal' || s.wordBreak !== 'normal'))
                out.push({what: 'may split a word', wrap: s.overflowWrap,
                          brk: s.wordBreak});
        });
        const line = [...document.querySelectorAll(
            ".md-typeset .language-python pre > code > span[id^='__span']")]
            .find(l => /^ {8}\\S/.test(l.textContent));
        if (line) {
            const ch = parseFloat(getComputedStyle(line).fontSize) * 0.6;
            const pad = parseFloat(getComputedStyle(line).paddingLeft);
            if (pad < 11 * ch) out.push({what: 'hangs too little', pad: pad, ch: ch});
        }
        return out; }""")


def wide_tables(page) -> list[dict]:
    """Tables wider than the text column (a reader would scroll sideways)."""
    return page.evaluate("""() => [...document.querySelectorAll('.md-typeset table')]
        .filter(t => t.offsetParent !== null)
        .filter(t => t.getBoundingClientRect().width >
                     document.querySelector('.md-content__inner').clientWidth + 1)
        .map(t => ({head: t.rows[0].textContent.trim().slice(0, 60),
                    width: t.getBoundingClientRect().width}))""")


def overflowing_code(page) -> list[dict]:
    """Code blocks wider than their box (a reader would scroll sideways)."""
    return page.evaluate("""() => [...document.querySelectorAll('pre > code')]
        .filter(c => c.offsetParent !== null && c.scrollWidth > c.clientWidth + 1)
        .map(c => ({title: (c.closest('.highlight')?.querySelector('.filename')
                            ?.textContent || c.textContent.slice(0, 60)),
                    scroll: c.scrollWidth, box: c.clientWidth}))""")


# Whether a scroll container, or an element inside one, counts as "scrolls inside
# itself": the nearest ancestor (through shadow roots, to their hosts) whose
# overflow-x lets a reader scroll it.
_SCROLLER = """el => {
    for (let a = el.parentElement || el.getRootNode().host; a;
         a = a.parentElement || (a.getRootNode() !== document && a.getRootNode().host)) {
        if (['auto', 'scroll'].includes(getComputedStyle(a).overflowX)) return a;
    }
    return null; }"""


def off_screen(page) -> list[str]:
    """What makes the page wider than the window, or runs off its right edge: the
    document wider than the viewport; any element (diagrams' drawings included, in
    their shadow roots) whose right edge is past the viewport and that is not inside
    an element that scrolls sideways (overflow-x auto or scroll); a diagram wider
    than its box whose box does not scroll or shows no hint that it does; a code
    line laid out wider than its code box (lines wrap to the box: only a token
    longer than the box may make it scroll)."""
    return page.evaluate(f"""() => {{
        const out = [], vw = window.innerWidth, scroller = {_SCROLLER};
        const name = e => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') +
            (typeof e.className === 'string' && e.className
             ? '.' + e.className.trim().split(/\\s+/).join('.') : '');
        if (document.documentElement.scrollWidth > vw)
            out.push(`the document is ${{document.documentElement.scrollWidth}}px wide`);
        const all = [...document.querySelectorAll('body *')];
        document.querySelectorAll('div.mermaid').forEach(d => {{
            if (d.shadowRoot) all.push(...d.shadowRoot.querySelectorAll('svg'));
        }});
        for (const e of all) {{
            const r = e.getBoundingClientRect();
            if (r.width === 0 || r.right <= vw + 1 || scroller(e)) continue;
            out.push(`${{name(e)}} reaches ${{Math.round(r.right)}}px, not scrollable`);
        }}
        document.querySelectorAll('div.mermaid').forEach((d, i) => {{
            const svg = d.shadowRoot && d.shadowRoot.querySelector('svg');
            if (!svg) return;
            const wide = svg.getBoundingClientRect().right > d.getBoundingClientRect().right + 1;
            const s = getComputedStyle(d).overflowX;
            const hint = d.nextElementSibling;
            if (wide && !['auto', 'scroll'].includes(s))
                out.push(`diagram ${{i + 1}} is wider than its box, which does not scroll`);
            else if (wide && !(hint && hint.matches('.diagram-hint') &&
                               hint.getBoundingClientRect().height > 0))
                out.push(`diagram ${{i + 1}} scrolls sideways with no hint that it does`);
        }});
        document.querySelectorAll('.md-typeset pre > code').forEach(code => {{
            if (code.offsetParent === null) return;
            const box = code.clientWidth;
            const line = [...code.querySelectorAll(":scope > span[id^='__span']")]
                .find(l => l.getBoundingClientRect().width > box + 1);
            if (line)
                out.push(`a code line is ${{Math.round(line.getBoundingClientRect().width)}}px` +
                         ` in a ${{box}}px box: ${{JSON.stringify(line.textContent.slice(0, 40))}}`);
        }});
        return out; }}""")
