"""The offline demo of each chapter, really run, shown as a transcript.

`python docs/_hooks/code_regions.py` runs `python sNN/code.py --offline` as a learner
would and writes what it printed into the chapter README (the <!-- transcript -->
region, a ```text block GitHub shows); the site shows the same text, styled. A
chapter whose demo asks questions (ANSWERS) runs in a pseudo-terminal
(offline/terminal.py), and the recorded learner types the answers listed there: the
transcript shows the questions and the answers as they appeared on the screen.
A transcript is cached by what it depends on (the chapter's code.py, the offline
package, the answers, the Python version, the sandbox this machine has) in
.cache/docs/transcripts/, which git
ignores: a rerun with nothing changed runs no demo.

Each line gets a class from STYLES, the first pattern that matches, and
docs/css/extra.css gives each class its look, light and dark. The demo's lines
change as the chapters do: adjust the table, not the code.
"""

from __future__ import annotations

import fcntl
import hashlib
import html
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from offline.terminal import DANGEROUS, PERMISSION, PLAN, play  # noqa: E402

# What the recorded learner types, question by question, in the chapters that ask.
# s03: "always" for the report; "no" to removing build/, so the model empties it
# instead, and that dangerous command asks again; "yes" to it. s05: "always" for the
# report; feedback on the first plan; "yes" to the plan that comes back.
ANSWERS = {
    "s03_permissions": [(PERMISSION, "a"), (PERMISSION, "n"), (DANGEROUS, "y")],
    "s05_deferred_tools": [(PERMISSION, "a"), (PLAN, "also say how many are left"),
                           (PLAN, "y")],
}
TIMING = re.compile(r"\b\d+\.\d+ s\b")  # s06's batch timings: they vary run to run
# Lines that say what this machine has, not what the chapter does: the sandbox line
# (s03 on) names bubblewrap, Seatbelt, or why none can start. The stale check masks
# them, so a transcript recorded on one machine is current on every other.
MACHINE = re.compile(r"^sandbox: .*$", re.M)
CACHE = ROOT / ".cache" / "docs" / "transcripts"
DEMO_TIMEOUT = 180                           # seconds one offline demo may take
WORKSPACE_PLACEHOLDER = "xxxxxxxx"            # stands for mkdtemp's random suffix

# How each line of a transcript is shown: (pattern, class), the first match wins.
# A subagent's lines carry its label first (`[check report] > read_file(...)`): the
# label is shown apart, and the rest of the line is classified as usual.
SUBAGENT = re.compile(r"^\[(?!allow\]|deny\]|ask\])[^\]\n]{1,60}\] (?=[> !\[~]|  )")
STYLES = [
    (r"^-{20,}$", "rule"),                          # the demo banner's rules
    (r"^s\d\d >> ", "prompt"),                      # what the user typed
    (r"^> \w+\(", "call"),                          # a tool_use, as the model asked
    (r"^\s*\[allow\]", "allow"),                    # the permission decision ...
    (r"^\s*\[deny\]", "deny"),
    (r"^\s*\[ask\]|^\s*\? Allow |\[y\]es / \[n\]o|^Approve this plan\?", "ask"),
    (r"^\s*~ |^\s*\[?hook|^hooks: ", "hook"),     # a hook ran, and what it said
    (r"^\s*batch \d|^\s*\[reply complete", "batch"),  # s06: calls started together
    (r"^! ", "error"),                              # an is_error tool_result
    (r"^(permission mode|tools|skills|deferred):", "status"),  # what the run starts with
    (r"^  ", "result"),                             # a tool_result, indented
    (r"", "text"),                                  # the model's own words
]
_STYLES = [(re.compile(pattern), name) for pattern, name in STYLES]


def line_class(line: str, in_banner: bool) -> str:
    if in_banner and not line.startswith("---"):
        return "banner"
    return next(name for pattern, name in _STYLES if pattern.search(line))


def styled(text: str) -> str:
    """The transcript as HTML: one <span class="t-..."> per line, its newline inside
    (the CSS makes each a block, so that a wrapped line can hang indented)."""
    out, in_banner = [], False
    for line in text.rstrip("\n").split("\n"):
        label = ""
        if m := SUBAGENT.match(line):
            label, line = m[0], line[m.end():]
        name = line_class(line, in_banner)
        if name == "rule":
            in_banner = not in_banner
        tag = f'<span class="t-agent">{html.escape(label)}</span>' if label else ""
        out.append(f'<span class="t-line t-{name}">{tag}{html.escape(line)}\n</span>')
    return "".join(out)


def transcript_html(command: str, text: str) -> str:
    """A block that looks like the site's other code blocks, with its lines styled.
    Written as raw HTML into the Markdown (no blank line: one HTML block). The copy
    button copies `data-copy`, the text as printed."""
    body = styled(text)  # every line is a <span>: no blank line ends the HTML block
    copy = html.escape(text.rstrip("\n"), quote=True).replace("\n", "&#10;")
    return (f'<div class="language-text highlight transcript" data-copy="{copy}">'
            f'<span class="filename">{html.escape(command)}</span>'
            f"<pre><span></span><code>{body}\n</code></pre></div>")


# --- running the demo -------------------------------------------------------------------

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
    text = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", text).replace("\r", "")
    return "\n".join(line.rstrip() for line in text.rstrip().split("\n")) + "\n"


CLOCK = re.compile(r'"time": "\d\d:\d\d:\d\d"')  # s04's audit hook logs the time


def comparable(text: str) -> str:
    """A transcript as two runs of it agree: timings and clock times masked, and
    the lines of subagents that ran side by side (s06) taken out of the main agent's
    lines and grouped by subagent, each one's lines in their order (threads
    interleave them differently each run; a subagent's parallel calls sorted as the
    main agent's), and the lines a reply prints when it ends
    (its usage, "reply complete") apart, sorted."""
    out, subagents, usage = [], {}, []
    text = MACHINE.sub("sandbox: (this machine's)", TIMING.sub("#.## s", text))
    for line in CLOCK.sub('"time": "hh:mm:ss"', text).split("\n"):
        if "[input tokens: " in line or "[reply complete: " in line:  # printed when
            usage.append(line)  # the reply ends: before or after calls it started early
        elif found := SUBAGENT.match(line):
            subagents.setdefault(found[0], []).append(line)
        else:
            out.append(line)
    grouped = [label + ln for label in sorted(subagents)  # a subagent's own batches too
               for ln in parallel_calls_sorted([ln[len(label):] for ln in subagents[label]])]
    return "\n".join(parallel_calls_sorted(out) + grouped + sorted(usage))


PARALLEL = re.compile(r"^  batch \d+ · (\d+) calls in parallel")


def parallel_calls_sorted(lines: list[str]) -> list[str]:
    """The calls of a parallel batch (s06) are shown as each ends, in whichever order
    they end, and an agent call's answer may come after another call's lines (its
    call line showed when its subagent started): sort the batch's lines (the tests
    of s06 check which line stands under which call)."""
    out: list[str] = []
    starts: list[int] = []  # where each call block of the current stretch starts
    for line in lines:
        if (found := PARALLEL.match(line)) and len(starts) >= int(found[1]):
            out[starts[-int(found[1])]:] = sorted(out[starts[-int(found[1])]:])
            starts = []
        elif line.startswith("> "):
            starts.append(len(out))
        elif not line.startswith("  "):
            starts = []
        out.append(line)
    return out


def run_demo(chapter: str, root: Path = ROOT, popen=subprocess.Popen) -> str:
    """Run `python sNN/code.py --offline` as a learner would; return what it printed.
    (`popen`: how to start it; the tests pass their warm one, tests/warm.py.)"""
    with tempfile.TemporaryDirectory(prefix="docs-demo-") as tmp:
        argv = [sys.executable, str(root / chapter / "code.py"), "--offline"]
        if chapter in ANSWERS:
            status, screen = play(argv, Path(tmp), demo_environment(tmp), ANSWERS[chapter],
                                  timeout=DEMO_TIMEOUT, popen=popen)
            if status != 0:
                raise RuntimeError(f"exit status {status}\n{screen[-2000:]}")
            return normalise_transcript(screen, tmp)
        with popen(argv, cwd=tmp, env=demo_environment(tmp), stdin=subprocess.DEVNULL,
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                   encoding="utf-8", errors="replace") as proc:
            try:
                out, err = proc.communicate(timeout=DEMO_TIMEOUT)
            except subprocess.TimeoutExpired:
                proc.kill()
                raise
        if proc.returncode != 0:
            raise RuntimeError(f"exit status {proc.returncode}\n{err[-2000:]}")
        return normalise_transcript(out + err, tmp)


def sandbox_here(chapter: str, root: Path = ROOT) -> str:
    """Whether the chapter's sandbox can start on this machine, and if not why (its
    own sandbox.probe, run afresh: the PATH may have changed since the last build)."""
    path = root / chapter / "sandbox.py"
    if not path.is_file():
        return "no sandbox in this chapter"
    spec = importlib.util.spec_from_file_location(f"_sandbox_of_{chapter}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return f"{sys.platform}: {module.probe() or 'confined'}"


def demo_fingerprint(chapter: str, root: Path = ROOT) -> str:
    """What the transcript depends on: the chapter's code, the offline package, the
    Python that runs them and whether a sandbox can start here."""
    h = hashlib.sha256((sys.version + repr(ANSWERS.get(chapter))
                        + sandbox_here(chapter, root)).encode())
    for path in [*sorted((root / chapter).glob("*.py")),
                 *sorted((root / "offline").rglob("*"))]:
        if path.is_file() and "__pycache__" not in path.parts:
            h.update(path.relative_to(root).as_posix().encode() + path.read_bytes())
    return h.hexdigest()


def cached_demo(chapter: str, key: str, popen=subprocess.Popen) -> str:
    """The demo's transcript, from the cache, else run and cached. One process at a
    time runs a given demo (a lock file beside it): the site's build and the tests,
    run side by side on a fresh clone, each wait for the other's run, not run it
    again (a demo costs seconds of processor time)."""
    path = CACHE / f"{chapter}-{key[:32]}.txt"
    if path.is_file():
        return path.read_text(encoding="utf-8")
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / f"{chapter}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if path.is_file():  # another process ran it while this one waited
            return path.read_text(encoding="utf-8")
        text = run_demo(chapter, popen=popen)
        for old in CACHE.glob(f"{chapter}-*.txt"):  # keep one per chapter
            old.unlink(missing_ok=True)
        partial = path.with_suffix(".part")
        partial.write_text(text, encoding="utf-8")
        partial.replace(path)  # whole or not at all, for a reader that took no lock
    return text


_POOL = ThreadPoolExecutor(max_workers=8)  # demos mostly wait: run them all at once
_DEMOS: dict[str, Future] = {}  # fingerprint -> future transcript (kept across rebuilds)


def start_demo(chapter: str) -> Future:
    key = demo_fingerprint(chapter)
    if key not in _DEMOS:
        _DEMOS[key] = _POOL.submit(cached_demo, chapter, key)
    return _DEMOS[key]


def forget_demo(chapter: str) -> None:
    _DEMOS.pop(demo_fingerprint(chapter), None)
