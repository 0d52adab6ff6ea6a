"""Screenshots of the reading site as a learner sees it, with the network off.

    python docs/_tools/screenshots.py                  build the site, shoot every page
    python docs/_tools/screenshots.py --site DIR       shoot an already built site
    python docs/_tools/screenshots.py --pages s03 --full

For every page, at 1280 px (a laptop) and 390 px (a phone) wide, in the light and the
dark scheme: the top of the page, then each part worth a look (the first diagram,
the first code block with highlighted lines, what changed, the transcript, the
exercises), each in one screen. --full takes whole pages instead. The pictures go
to .cache/screenshots/ (git ignores it): look at them, they are not kept. Needs
Chromium and Playwright, like tests/test_docs_browser.py.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from browser import browser, chromium_path, serve, wait_for_diagrams  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / ".cache" / "screenshots"
WIDTHS = {"laptop": (1280, 800), "phone": (390, 844)}
# The parts of a chapter page worth a screen each: (name, CSS selector of its top).
PARTS = [("diagram", "div.mermaid"), ("highlighted", ".highlight .hll"),
         ("run", ".language-pycon"), ("changed", "#what-changed, [id^='what-changed']"),
         ("transcript", ".transcript"), ("exercises", "#exercises")]


def build(into: Path) -> Path:
    site = into / "site"
    subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q",
                    "-f", str(ROOT / "mkdocs.yml"), "-d", str(site)], check=True,
                   env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})  # no theme banner
    return site


def pages(site: Path, only: list[str]) -> list[str]:
    found = [""] + sorted(p.parent.name + "/" for p in site.glob("s[0-9][0-9]_*/index.html"))
    found += [p for p in ("exercises/", "benchmarks/", "CONTRIBUTING/", "tests/fidelity/")
              if (site / p / "index.html").is_file()]
    found += sorted(p.parent.relative_to(site).as_posix() + "/"
                    for p in site.glob("exercises/s[0-9][0-9]/index.html"))
    return [p for p in found if not only or any(p.startswith(o) for o in only)]


def shoot(b, base: str, path: str, full: bool) -> list[Path]:
    shots = []
    for device, (width, height) in WIDTHS.items():
        for scheme in ("light", "dark"):
            page = b.page(width, height, dark=scheme == "dark")
            page.goto(base + path)
            if page.query_selector("pre.mermaid, div.mermaid"):
                wait_for_diagrams(page)
            name = (path.strip("/") or "home").replace("/", "_")
            stem = OUT / f"{name}-{device}-{scheme}"
            if full:
                page.screenshot(path=f"{stem}.png", full_page=True)
                shots.append(Path(f"{stem}.png"))
            else:
                page.screenshot(path=f"{stem}-top.png")
                shots.append(Path(f"{stem}-top.png"))
                for part, selector in PARTS:
                    element = page.query_selector(selector)
                    if element is None:
                        continue
                    element.scroll_into_view_if_needed()
                    page.evaluate("window.scrollBy(0, -60)")
                    page.wait_for_timeout(400)  # the header title animates on scroll
                    page.screenshot(path=f"{stem}-{part}.png")
                    shots.append(Path(f"{stem}-{part}.png"))
            page.close()
    return shots


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--site", type=Path, help="a built site (default: build one)")
    p.add_argument("--pages", nargs="*", default=[], help="e.g. s03 exercises")
    p.add_argument("--full", action="store_true", help="whole pages, not screens")
    args = p.parse_args(argv)
    if chromium_path() is None:
        print("no Chromium found: apt-get install chromium", file=sys.stderr)
        return 1
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        site = args.site or build(Path(tmp))
        with serve(site) as base, browser() as b:
            for path in pages(site, args.pages):
                for shot in shoot(b, base, path, args.full):
                    print(shot.relative_to(ROOT))
            if b.outside:
                print("requests to other hosts (blocked):", *sorted(set(b.outside)),
                      sep="\n  ", file=sys.stderr)
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
