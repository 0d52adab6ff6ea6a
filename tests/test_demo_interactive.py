"""The offline demo asks the learner: s03's permission prompts and s05's plan approval,
answered in a real pseudo-terminal, as a learner at a terminal answers them.

Each test runs `python sNN/code.py --offline` once in a pseudo-terminal (stdin,
stdout and stderr are its slave side), waits for each question, types an answer, and
checks what the learner saw and what is on the disk of the demo's scratch copy. The
scripted model reads every answer in its next request and goes on accordingly; one
run answers several questions, so that yes, no and always are covered by few runs.
Without a terminal (every other test, the docs build) each question is answered "no":
tests/test_s03_gate.py and the transcripts cover that story.
"""

from __future__ import annotations

import re
import sys

import warm  # tests/warm.py: chapter runs forked warm
from pathlib import Path

import pytest

from conftest import ROOT, clean_env

pytest.importorskip("pty", reason="pseudo-terminals are POSIX only")
from offline.terminal import DANGEROUS, PERMISSION, PLAN, Terminal  # noqa: E402
from test_demo_truthful import check_s03, check_s05  # noqa: E402  (what the demo says)

FIX = 'total += item["price"] * item["qty"]'


def demo(chapter: str, tmp_path: Path) -> Terminal:
    """The chapter's offline demo in a pseudo-terminal (offline/terminal.py)."""
    return Terminal([sys.executable, str(ROOT / chapter / "code.py"), "--offline"],
                    tmp_path, clean_env(TMPDIR=str(tmp_path)), popen=warm.Popen)


@pytest.fixture
def terminal(tmp_path):
    opened = []

    def open_(chapter: str) -> Terminal:
        opened.append(demo(chapter, tmp_path))
        return opened[-1]

    yield open_
    for t in opened:
        t.close()


def workspace_of(screen: str) -> Path:
    return Path(re.search(r"Workspace: (\S+)", screen).group(1))


def servers_left_in(workspace: Path) -> list[int]:
    """The MCP servers (offline/mcp_server.py) still running in the demo's copy."""
    left = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if (b"mcp_server.py" in (proc / "cmdline").read_bytes()
                    and (proc / "cwd").resolve() == workspace.resolve()):
                left.append(int(proc.name))
        except OSError:
            continue  # gone meanwhile, or not ours to read
    return left


# --- s03: permission prompts -----------------------------------------------------------


def test_s03_always_then_no_then_yes(terminal):
    """s03 at a terminal: `a` lets the report run now and later unasked; `n` to removing
    build/ makes the model empty it instead, which asks as dangerous; `y` empties it."""
    t = terminal("s03_permissions")
    before = t.expect(PERMISSION)
    assert "It asks you" in before and "not a terminal" not in before  # the banner
    assert "? Allow run_shell(command='python3 report.py')" in before
    t.answer("a")
    said = t.expect(PERMISSION)
    assert "Stock value: 28.50" in said and "the user approved it for this session" in said
    assert "? Allow run_shell(command='ls build; rm -rf build')" in said
    t.answer("n")
    said = t.expect(DANGEROUS)
    assert "the user said no" in said and "(you said no), so I'll only empty it" in said
    assert "dangerous: rm '$BUILD_DIR/*'" in said and "[a]lways" not in said
    t.answer("y")
    status, screen = t.finish()
    assert status == 0, screen[-3000:]
    rest = screen[t.read_up_to:]
    assert "approved earlier this session (always)" in rest  # the report ran unasked
    assert "? Allow" not in rest and "Emptied build/" in rest
    assert 'The report now says "Stock value: 209.50"' in rest
    copy = workspace_of(screen)
    assert (copy / "build").is_dir() and not any((copy / "build").iterdir())
    assert FIX in (copy / "inventory.py").read_text()
    assert (copy / ".env").exists()
    check_s03(screen, copy)


def test_s03_yes_yes_then_no(terminal):
    """s03 at a terminal: `y` runs the report once, so it asks again later; `y` removes
    build/ (nothing dangerous is tried); `n` to the second report: the model does without."""
    t = terminal("s03_permissions")
    t.expect(PERMISSION)
    t.answer("y")
    said = t.expect(PERMISSION)
    assert "the user approved it" in said and "for this session" not in said
    t.answer("y")
    said = t.expect(PERMISSION)
    assert "build/ is gone" in said and "$BUILD_DIR" not in said
    assert "? Allow run_shell(command='python3 report.py')" in said  # asked again
    t.answer("n")
    status, screen = t.finish()
    assert status == 0, screen[-3000:]
    rest = screen[t.read_up_to:]
    assert "the user said no" in rest and "Removed build/." in rest
    assert "The report now says" not in rest
    copy = workspace_of(screen)
    assert not (copy / "build").exists() and FIX in (copy / "inventory.py").read_text()
    check_s03(screen, copy)


# --- s05: a permission prompt and the plan ----------------------------------------------


def test_s05_always_then_the_plan_approved(terminal):
    """s05 at a terminal: `a` to the report, `y` to the plan: the fix goes in, the tests
    run, the report runs again unasked, and the changelog quotes what the report said."""
    t = terminal("s05_deferred_tools")
    before = t.expect(PERMISSION)
    assert "to approve the plan" in " ".join(before.split())  # the banner says so
    t.answer("a")
    said = t.expect(PLAN)
    assert "the user approved it for this session" in said
    assert "+-- the plan, for your approval" in said
    t.answer("y")
    status, screen = t.finish()
    assert status == 0, screen[-3000:]
    rest = screen[t.read_up_to:]
    assert "The user approved your plan" in rest and "Approved. Making the change now." in rest
    assert "approved earlier this session (always)" in rest and "? Allow" not in rest
    assert 'The report now says "Stock value: 209.50"' in rest
    # the MCP part: a tool found, called and its answer used; the denied one not run
    assert "mcp: stockroom: 24 tools, deferred" in screen
    assert "Oak plank comes from Northwood Timber" in screen
    assert "[deny] deny rule mcp__stockroom__place_order" in screen
    copy = workspace_of(screen)
    if Path("/proc/self/cwd").exists():  # Linux: no server outlives the demo
        assert servers_left_in(copy) == []
    assert FIX in (copy / "inventory.py").read_text()
    assert "stock value (28.50 today)" in (copy / "CHANGELOG.md").read_text()
    check_s05(screen, copy)


def test_s05_no_then_feedback_then_no(terminal):
    """s05 at a terminal: `n` to the report (the entry does without it); feedback to the
    plan brings it back with the note; `n` to that: nothing changes, plan mode stays."""
    t = terminal("s05_deferred_tools")
    t.expect(PERMISSION)
    t.answer("n")
    said = t.expect(PLAN)
    assert "the user said no" in said
    t.answer("also say how many are left")
    said = t.expect(PLAN)
    assert "the user's feedback: also say how many are left" in said
    assert 'Your note, "also say how many are left"' in said  # the plan, shown again
    t.answer("n")
    status, screen = t.finish()
    assert status == 0, screen[-3000:]
    rest = screen[t.read_up_to:]
    assert "The plan was not approved (no feedback given)" in rest
    assert "still in plan mode" in rest and "Tell me what to change" in rest
    copy = workspace_of(screen)
    assert FIX not in (copy / "inventory.py").read_text()
    entry = (copy / "CHANGELOG.md").read_text()
    assert "Known issue" in entry and "today" not in entry
    check_s05(screen, copy)
