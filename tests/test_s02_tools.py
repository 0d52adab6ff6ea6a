"""s02's tools and dispatch, and everything later chapters must keep of them.

Each test runs against s02 and every later chapter. It relies only on names s02 makes
public: TOOLS, TOOL_HANDLERS, execute_tool, safe_path, the handlers by name, the limits
MAX_RESULT_CHARS and MAX_LINE_CHARS, and RG (None: ripgrep is missing).
Read-only tools go through execute_tool (errors are data: `(output, is_error)`);
write_file is called through TOOL_HANDLERS, or through execute_tool with the `trusted`
settings (a Claude Code settings file that later chapters' permission gates obey),
or through execute_tool with no settings at all where only the refusal matters.
"""

import http.server
import os
import re
import socket
import threading
from pathlib import Path

import anthropic
import pytest

from conftest import call_tool, load_chapter, teaching_and_last, write_settings
from conftest import the_agent


def safe_path(mod, path: str):
    """The chapter's safe_path; from s03 on it asks the agent (the paths let out)."""
    import inspect
    if "agent" in inspect.signature(mod.safe_path).parameters:
        return mod.safe_path(the_agent(mod), path)
    return mod.safe_path(path)


@pytest.fixture(params=teaching_and_last("s02"))
def mod(request):
    return load_chapter(request.param)


@pytest.fixture
def trusted(workspace) -> Path:
    """Claude Code's own settings file, saying: accept edits inside the workspace and
    let web_fetch run. Later chapters (s03+) then run these calls without asking; s02
    has no permissions and ignores the file. Escapes are tested without it."""
    return write_settings(workspace, {"defaultMode": "acceptEdits", "allow": ["WebFetch"]})


def visible(folder: Path) -> list[str]:
    """The names in `folder`, leaving out the .claude settings folder."""
    return sorted(p.name for p in folder.iterdir() if p.name != ".claude")


@pytest.fixture
def outside(workspace) -> Path:
    """A directory next to the workspace, with a file the tools must never touch."""
    folder = workspace.parent / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_bytes(b"TOPSECRET\n")
    return folder


def handler_error(mod, name: str, **args) -> str:
    """Call a handler directly and return the message of the error it must raise."""
    with pytest.raises(Exception) as info:
        mod.TOOL_HANDLERS[name](the_agent(mod), **args)
    return str(info.value)


def numbered(output: str) -> dict[int, str]:
    """The numbered rows of a read_file result: {line number: text}."""
    rows = {}
    for line in output.splitlines():
        m = re.match(r"^\s*(\d+)(?:\t|→)(.*)$", line)
        if m:
            rows[int(m.group(1))] = m.group(2)
    return rows


def tree(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` (links not followed): relative path -> bytes."""
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file() and not p.is_symlink()}


def saved_path(output: str) -> str:
    """The `.tool-results/...` path a cut result names."""
    m = re.search(r"\.tool-results/[\w.\-]+", output)
    assert m, f"no .tool-results path in: {output[:200]!r}"
    return m.group(0).rstrip(".")


# --- safe_path: every way out of the workspace is refused --------------------------------


def test_safe_path_refuses_dotdot_absolute_and_home(mod, workspace, outside, monkeypatch):
    """`..`, an absolute path outside and `~` all end outside the workspace: refused."""
    monkeypatch.setenv("HOME", str(outside))
    for path in ["../outside/secret.txt", "sub/../../outside/secret.txt",
                 str(outside / "secret.txt"), "/etc/passwd", "~/secret.txt", "~"]:
        with pytest.raises(Exception):
            safe_path(mod, path)


def test_safe_path_allows_an_absolute_path_inside(mod, workspace):
    """An absolute path that is inside the workspace is fine, and so is `a/../b`."""
    (workspace / "a.txt").write_text("hi\n")
    assert safe_path(mod, str(workspace / "a.txt")) == (workspace / "a.txt").resolve()
    assert safe_path(mod, "sub/../a.txt") == (workspace / "a.txt").resolve()
    output, is_error = call_tool(mod, "read_file", file_path=str(workspace / "a.txt"))
    assert not is_error and numbered(output) == {1: "hi"}


def test_safe_path_refuses_symlinks_that_lead_out(mod, workspace, outside):
    """A link inside the workspace to a file or a directory outside is refused."""
    (workspace / "link.txt").symlink_to(outside / "secret.txt")
    (workspace / "linkdir").symlink_to(outside, target_is_directory=True)
    for path in ["link.txt", "linkdir", "linkdir/secret.txt", "linkdir/new.txt"]:
        with pytest.raises(Exception):
            safe_path(mod, path)


@pytest.mark.parametrize("path", [
    "../outside/secret.txt", "ABSOLUTE", "~/secret.txt", "link.txt", "linkdir/secret.txt",
])
def test_read_file_never_reads_outside(mod, workspace, outside, monkeypatch, path):
    """read_file refuses each escape with a clear is_error and shows nothing of the file."""
    monkeypatch.setenv("HOME", str(outside))
    (workspace / "link.txt").symlink_to(outside / "secret.txt")
    (workspace / "linkdir").symlink_to(outside, target_is_directory=True)
    path = str(outside / "secret.txt") if path == "ABSOLUTE" else path
    output, is_error = call_tool(mod, "read_file", file_path=path)
    assert is_error
    assert "TOPSECRET" not in output
    assert "outside" in output.lower() or "workspace" in output.lower()


@pytest.mark.parametrize("path", [
    "../outside/new.txt", "../outside/secret.txt", "ABSOLUTE", "~/new.txt",
    "link.txt",            # a link to a file outside: writing would overwrite it
    "dangling.txt",        # a link to a file outside that does not exist yet
    "linkdir/new.txt",     # a new file under a linked directory outside
    "linkdir/deeper/new.txt",
])
def test_write_file_never_writes_outside(mod, workspace, outside, monkeypatch, path):
    """write_file refuses each escape: an is_error result and nothing written outside."""
    monkeypatch.setenv("HOME", str(outside))
    (workspace / "link.txt").symlink_to(outside / "secret.txt")
    (workspace / "dangling.txt").symlink_to(outside / "planted.txt")
    (workspace / "linkdir").symlink_to(outside, target_is_directory=True)
    before = tree(outside)
    path = str(outside / "new.txt") if path == "ABSOLUTE" else path
    output, is_error = call_tool(mod, "write_file", file_path=path, content="pwned\n")
    assert is_error
    assert tree(outside) == before
    assert (workspace / "link.txt").is_symlink()  # the link itself was not replaced


def test_edit_file_never_edits_through_a_link_out(mod, workspace, outside):
    """edit_file on a link to a file outside is refused; the outside file is unchanged."""
    (workspace / "link.txt").symlink_to(outside / "secret.txt")
    message = handler_error(mod, "edit_file", file_path="link.txt",
                            old_string="TOPSECRET", new_string="pwned")
    assert "outside" in message.lower() or "workspace" in message.lower()
    assert (outside / "secret.txt").read_bytes() == b"TOPSECRET\n"


def test_links_that_stay_inside_are_followed(mod, workspace):
    """A link to a file inside the workspace is fine to read and write through."""
    (workspace / "real.txt").write_text("one\n")
    (workspace / "alias.txt").symlink_to(workspace / "real.txt")
    output, is_error = call_tool(mod, "read_file", file_path="alias.txt")
    assert not is_error and numbered(output) == {1: "one"}
    mod.TOOL_HANDLERS["write_file"](the_agent(mod), file_path="alias.txt", content="two\n")
    assert (workspace / "real.txt").read_bytes() == b"two\n"


# --- read_file -------------------------------------------------------------------------


def test_read_file_numbers_lines(mod, workspace):
    """Each line comes back with its 1-based number."""
    (workspace / "poem.txt").write_text("alpha\n  beta\ngamma\n")
    output, is_error = call_tool(mod, "read_file", file_path="poem.txt")
    assert not is_error
    assert numbered(output) == {1: "alpha", 2: "  beta", 3: "gamma"}


def test_read_file_offset_and_limit(mod, workspace):
    """offset is a 1-based line number, limit a count; a note says how to read on."""
    (workspace / "ten.txt").write_text("".join(f"line {n}\n" for n in range(1, 11)))
    output, is_error = call_tool(mod, "read_file", file_path="ten.txt", offset=4, limit=3)
    assert not is_error
    assert numbered(output) == {4: "line 4", 5: "line 5", 6: "line 6"}
    assert "offset=7" in output.replace(" ", "")


def test_read_file_default_limit_is_2000_lines_with_a_read_on_note(mod, workspace):
    """A 2500-line file: lines 1-2000 come back, and a note says to read on from 2001."""
    (workspace / "big.txt").write_text("".join(f"row {n}\n" for n in range(1, 2501)))
    output, is_error = call_tool(mod, "read_file", file_path="big.txt")
    assert not is_error
    rows = numbered(output)
    assert sorted(rows) == list(range(1, 2001))
    assert rows[2000] == "row 2000"
    assert "row 2001" not in output
    assert "2001" in output.splitlines()[-1]


def test_read_file_whole_file_has_no_read_on_note(mod, workspace):
    """A file that fits gets no 'more lines' note: the model knows it saw everything."""
    (workspace / "small.txt").write_text("a\nb\n")
    output, _ = call_tool(mod, "read_file", file_path="small.txt")
    assert output.strip().splitlines()[-1].split("\t")[-1] == "b"
    assert "offset" not in output


def test_read_file_shortens_a_very_long_line(mod, workspace):
    """A 100,000-character line is cut with a marker; the next line still comes back."""
    (workspace / "min.js").write_text("x" * 100_000 + "\nnext line\n")
    output, is_error = call_tool(mod, "read_file", file_path="min.js")
    assert not is_error
    rows = numbered(output)
    assert rows[2] == "next line"
    assert 100 < len(rows[1]) < 5_000
    assert rows[1].startswith("x" * 100) and "cut" in rows[1]
    assert len(output) < 5_000


@pytest.mark.parametrize("newline", ["\n", "\r\n"], ids=["lf", "crlf"])
def test_read_file_line_at_the_cap_is_not_cut(mod, workspace, newline):
    """A line exactly as long as the cap comes back whole, with no 'cut' marker."""
    cap = mod.MAX_LINE_CHARS
    (workspace / "edge.txt").write_bytes(("y" * cap + newline + "next" + newline).encode())
    output, _ = call_tool(mod, "read_file", file_path="edge.txt")
    assert numbered(output) == {1: "y" * cap, 2: "next"}


def test_read_file_cut_marker_counts_what_was_left_out(mod, workspace):
    """A line 10 characters over the cap says 10 more characters, not 11 (the newline)."""
    cap = mod.MAX_LINE_CHARS
    (workspace / "over.txt").write_text("z" * (cap + 10) + "\nnext\n")
    output, _ = call_tool(mod, "read_file", file_path="over.txt")
    row = numbered(output)[1]
    assert row.startswith("z" * cap) and "z" * (cap + 1) not in row
    assert re.search(r"\b10 more", row), row


@pytest.mark.parametrize("make, word", [
    (lambda ws: (ws / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), "binary"),
    (lambda ws: (ws / "logo.png").mkdir(), "directory"),
    (lambda ws: None, "not found"),
], ids=["binary", "directory", "missing"])
def test_read_file_refuses_what_it_cannot_show(mod, workspace, make, word):
    """A binary file, a directory or a missing file: a clear is_error naming why."""
    make(workspace)
    output, is_error = call_tool(mod, "read_file", file_path="logo.png")
    assert is_error
    assert word in output.lower()
    assert "logo.png" in output


def test_read_file_empty_file_and_offset_past_the_end(mod, workspace):
    """An empty file and an offset past the end are answers, not errors."""
    (workspace / "empty.txt").write_bytes(b"")
    (workspace / "three.txt").write_text("1\n2\n3\n")
    output, is_error = call_tool(mod, "read_file", file_path="empty.txt")
    assert not is_error and numbered(output) == {} and "empty" in output.lower()
    output, is_error = call_tool(mod, "read_file", file_path="three.txt", offset=50)
    assert not is_error and numbered(output) == {}
    assert "3" in output  # says how long the file really is


# --- write_file ------------------------------------------------------------------------


def test_write_file_creates_parents_and_reports(mod, workspace):
    """A new file in new folders: written byte for byte; the report names it and its size."""
    content = "print('hi')\nprint('bye')\n"
    output = mod.TOOL_HANDLERS["write_file"](the_agent(mod), file_path="src/pkg/hello.py", content=content)
    assert (workspace / "src/pkg/hello.py").read_bytes() == content.encode()
    assert "src/pkg/hello.py" in output
    assert str(len(content.encode())) in output or "2 lines" in output


def test_write_file_overwrites(mod, workspace):
    """An existing file is replaced whole, not appended to."""
    (workspace / "notes.md").write_text("old text that is longer than the new one\n")
    mod.TOOL_HANDLERS["write_file"](the_agent(mod), file_path="notes.md", content="new\n")
    assert (workspace / "notes.md").read_bytes() == b"new\n"


def test_write_file_is_atomic_and_leaves_no_temp_files(mod, workspace):
    """After many writes the folder holds only the file: no temporary files left behind."""
    for n in range(5):
        mod.TOOL_HANDLERS["write_file"](the_agent(mod), file_path="data/out.txt", content=f"v{n}\n" * 1000)
    assert sorted(p.name for p in (workspace / "data").iterdir()) == ["out.txt"]
    assert (workspace / "data/out.txt").read_bytes() == b"v4\n" * 1000


def test_write_file_crash_before_rename_keeps_the_old_file(mod, trusted, monkeypatch):
    """If the final rename fails, the old file is whole and no temporary file remains."""
    workspace = trusted
    (workspace / "keep.txt").write_bytes(b"precious\n")
    assert not call_tool(mod, "read_file", file_path="keep.txt")[1]  # read before write

    def crash(*args, **kwargs):
        raise OSError("disk fell off")

    with monkeypatch.context() as patch:
        patch.setattr(os, "replace", crash)
        patch.setattr(os, "rename", crash)
        output, is_error = call_tool(mod, "write_file", file_path="keep.txt", content="new\n")
    assert is_error and "disk fell off" in output
    assert (workspace / "keep.txt").read_bytes() == b"precious\n"
    assert visible(workspace) == ["keep.txt"]


def test_write_file_keeps_permissions(mod, workspace):
    """Overwriting an executable script keeps it executable."""
    script = workspace / "run.sh"
    script.write_text("#!/bin/sh\necho old\n")
    script.chmod(0o755)
    mod.TOOL_HANDLERS["write_file"](the_agent(mod), file_path="run.sh", content="#!/bin/sh\necho new\n")
    assert script.stat().st_mode & 0o777 == 0o755
    assert script.read_bytes() == b"#!/bin/sh\necho new\n"


def test_write_file_new_file_gets_ordinary_permissions(mod, workspace):
    """A new file gets the mode any program's new file gets (0666 less the umask), not 0600."""
    umask = os.umask(0o022)
    os.umask(umask)
    mod.TOOL_HANDLERS["write_file"](the_agent(mod), file_path="page.html", content="<p>hi</p>\n")
    assert (workspace / "page.html").stat().st_mode & 0o777 == 0o666 & ~umask


def test_write_file_onto_a_directory_is_an_error(mod, trusted):
    """Writing over a directory is refused and the directory is left alone."""
    workspace = trusted
    (workspace / "src").mkdir()
    (workspace / "src/a.py").write_text("x = 1\n")
    output, is_error = call_tool(mod, "write_file", file_path="src", content="oops")
    assert is_error and "director" in output.lower()
    assert (workspace / "src/a.py").read_bytes() == b"x = 1\n"


# --- list_files ------------------------------------------------------------------------


def test_list_files_globs(mod, workspace):
    """`**/*.py` finds Python files at any depth and nothing else."""
    for name in ["a.py", "b.txt", "sub/c.py", "sub/deep/d.py", "sub/e.md"]:
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_text("x\n")
    output, is_error = call_tool(mod, "list_files", pattern="**/*.py")
    assert not is_error
    assert sorted(output.splitlines()) == ["a.py", "sub/c.py", "sub/deep/d.py"]
    output, _ = call_tool(mod, "list_files", pattern="*.md", path="sub")
    assert output.splitlines() == ["sub/e.md"]


def test_list_files_newest_first(mod, workspace):
    """Files come back by modification time, the most recently touched first."""
    for name, mtime in [("old.py", 1_000_000), ("new.py", 3_000_000), ("mid.py", 2_000_000)]:
        (workspace / name).write_text("x\n")
        os.utime(workspace / name, (mtime, mtime))
    output, _ = call_tool(mod, "list_files", pattern="*.py")
    assert output.splitlines() == ["new.py", "mid.py", "old.py"]


def test_list_files_is_capped_with_a_count_of_the_rest(mod, workspace):
    """105 matches: 100 paths and a line saying 5 more were left out."""
    for n in range(105):
        (workspace / f"f{n:03d}.txt").write_text("x\n")
    output, is_error = call_tool(mod, "list_files", pattern="*.txt")
    assert not is_error
    lines = output.splitlines()
    assert len([ln for ln in lines if re.fullmatch(r"f\d{3}\.txt", ln)]) == 100
    assert re.search(r"\b5\b", lines[-1])


def test_list_files_with_equal_times_comes_in_the_same_order(mod, workspace):
    """120 files with one modification time: the 100 listed are the same every run."""
    for n in range(120):
        (workspace / f"f{n:03d}.txt").write_text("x\n")
        os.utime(workspace / f"f{n:03d}.txt", (1_000_000, 1_000_000))
    runs = {call_tool(mod, "list_files", pattern="*.txt")[0] for _ in range(5)}
    assert len(runs) == 1, "the order changed from one run to the next"
    lines = runs.pop().splitlines()
    assert lines[:-1] == sorted(f"f{n:03d}.txt" for n in range(120))[::-1][:100]


def test_list_files_skips_git_and_ignored_files(mod, workspace):
    """Nothing under .git, nothing .gitignore'd; a `!` rule brings a file back."""
    files = [".git/HEAD", ".git/hooks/pre-commit.py", "src/app.py", "build/gen.py",
             "debug.log", "keep.log", "src/cache/x.py"]
    for name in files:
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_text("x\n")
    (workspace / ".gitignore").write_text("# generated\nbuild/\n*.log\n!keep.log\ncache/\n")
    output, _ = call_tool(mod, "list_files", pattern="**/*")
    assert sorted(output.splitlines()) == ["keep.log", "src/app.py"]
    output, is_error = call_tool(mod, "list_files", pattern=".git/**/*")
    assert not is_error and "HEAD" not in output and "pre-commit" not in output


def test_list_files_no_match_is_not_an_error(mod, workspace):
    """No file matches: a plain answer saying so, not an is_error."""
    (workspace / "a.txt").write_text("x\n")
    output, is_error = call_tool(mod, "list_files", pattern="**/*.rs")
    assert not is_error
    assert "no" in output.lower() and "a.txt" not in output


def test_list_files_path_outside_is_refused(mod, workspace, outside):
    """The `path` argument goes through safe_path like every other file tool."""
    output, is_error = call_tool(mod, "list_files", pattern="*", path="..")
    assert is_error and "secret.txt" not in output


def test_list_files_pattern_cannot_climb_out(mod, workspace, outside):
    """A pattern such as `../outside/*` or an absolute one shows nothing outside."""
    for pattern in ["../outside/*", "../*/*", str(outside / "*")]:
        output, _ = call_tool(mod, "list_files", pattern=pattern)
        assert "secret.txt" not in output, pattern


def test_list_files_does_not_list_through_a_link_out(mod, workspace, outside):
    """A linked directory that leads outside is not walked into."""
    (workspace / "linkdir").symlink_to(outside, target_is_directory=True)
    (workspace / "mine.txt").write_text("x\n")
    output, _ = call_tool(mod, "list_files", pattern="**/*.txt")
    assert output.splitlines() == ["mine.txt"]


# --- grep_search -------------------------------------------------------------------------


@pytest.fixture
def grep_mod(mod):
    """The chapter; ripgrep comes with requirements.txt."""
    assert mod.RG, "ripgrep is not installed: pip install -r requirements.txt"
    return mod


def test_no_ripgrep_is_one_clear_error(mod, workspace, monkeypatch):
    """Without rg, grep_search and list_files say what is missing and how to get it."""
    monkeypatch.setattr(mod, "RG", None)
    for tool, args in (("grep_search", {"pattern": "x"}), ("list_files", {"pattern": "*"})):
        output, is_error = call_tool(mod, tool, **args)
        assert is_error and "ripgrep" in output and "pip install" in output, output


def grep(mod, **args) -> tuple[str, bool]:
    return call_tool(mod, "grep_search", **args)


@pytest.fixture
def project(workspace) -> Path:
    files = {
        "app.py": "def answer():\n    return 42\n",
        "notes.txt": "42 is the answer\nnothing here\n",
        "lib/util.py": "X = 42  # the answer\n",
    }
    for name, content in files.items():
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_text(content)
    return workspace


def test_grep_gives_file_line_text(grep_mod, project):
    """Every matching line as path:line:text, paths relative to the workspace."""
    output, is_error = grep(grep_mod, pattern=r"4\d")
    assert not is_error
    assert sorted(output.splitlines()) == [
        "app.py:2:    return 42", "lib/util.py:1:X = 42  # the answer",
        "notes.txt:1:42 is the answer"]


def test_grep_include_and_path_narrow_the_search(grep_mod, project):
    """`include` filters files by glob; `path` searches one folder."""
    output, _ = grep(grep_mod, pattern="42", include="*.py")
    assert sorted(output.splitlines()) == ["app.py:2:    return 42",
                                           "lib/util.py:1:X = 42  # the answer"]
    output, _ = grep(grep_mod, pattern="42", path="lib")
    assert output.splitlines() == ["lib/util.py:1:X = 42  # the answer"]


def test_grep_include_with_braces(grep_mod, project):
    """`*.{py,txt}` (the form Claude Code's own Grep examples use) picks both kinds."""
    output, is_error = grep(grep_mod, pattern="42", include="*.{py,txt}")
    assert not is_error
    assert sorted(output.splitlines()) == [
        "app.py:2:    return 42", "lib/util.py:1:X = 42  # the answer",
        "notes.txt:1:42 is the answer"]


def test_grep_path_may_be_a_file_or_a_hidden_folder(grep_mod, project):
    """`path` may name one file, or a hidden folder such as .github, which is then searched."""
    (project / ".github/workflows").mkdir(parents=True)
    (project / ".github/workflows/ci.yml").write_text("run: pytest -q 42\n")
    output, _ = grep(grep_mod, pattern="42", path="notes.txt")
    assert output.splitlines() == ["notes.txt:1:42 is the answer"]
    output, _ = grep(grep_mod, pattern="42", path=".github")
    assert output.splitlines() == [".github/workflows/ci.yml:1:run: pytest -q 42"]


def test_grep_is_capped_with_a_count_of_the_rest(grep_mod, workspace):
    """105 matching lines: 100 shown and a line saying 5 more."""
    (workspace / "many.txt").write_text("".join(f"hit {n}\n" for n in range(105)))
    output, is_error = grep(grep_mod, pattern="hit")
    assert not is_error
    lines = output.splitlines()
    assert len([ln for ln in lines if re.fullmatch(r"many\.txt:\d+:hit \d+", ln)]) == 100
    assert re.search(r"\b5\b", lines[-1])


def test_grep_keeps_the_first_lines_by_path_every_time(grep_mod, workspace):
    """240 matches in 20 files, searched on every core: the 100 shown are the first
    by path and line number (line 10 after line 9), and every run shows the same."""
    names = [f"{d}/{f}.txt" for d in ("b", "a", "c/d", "a.b") for f in "qxkmp"]
    for name in names:
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_text("".join(f"hit {n}\n" for n in range(1, 13)))
    every = [f"{name}:{n}:hit {n}" for name in sorted(names) for n in range(1, 13)]
    runs = {grep(grep_mod, pattern="hit")[0] for _ in range(5)}
    assert len(runs) == 1, "the answer changed from one run to the next"
    lines = runs.pop().splitlines()
    assert lines[:-1] == every[:100]
    assert re.search(r"\b140 more\b", lines[-1])


def test_grep_no_match_is_not_an_error(grep_mod, project):
    """No matching line is an answer, not a failure."""
    output, is_error = grep(grep_mod, pattern="no such text anywhere")
    assert not is_error
    assert "no match" in output.lower()


def test_grep_include_that_matches_no_file_is_not_an_error(grep_mod, project):
    """Searching `*.rs` files in a project without any is 'no matches', not an error."""
    output, is_error = grep(grep_mod, pattern="42", include="*.rs")
    assert not is_error, output
    assert "42 is the answer" not in output


def test_grep_bad_regex_is_a_clear_error(grep_mod, project):
    """An unbalanced `(` is reported as a bad regular expression."""
    output, is_error = grep(grep_mod, pattern="answer(")
    assert is_error
    assert "regex" in output.lower() or "regular expression" in output.lower()


def test_grep_pattern_starting_with_dash_is_a_pattern(grep_mod, workspace):
    """`-v` is searched for, not taken as ripgrep's 'invert match' option."""
    (workspace / "cli.txt").write_text("run it -v for more\nplain line\n")
    output, is_error = grep(grep_mod, pattern="-v")
    assert not is_error
    assert output.splitlines() == ["cli.txt:1:run it -v for more"]


def test_grep_does_not_search_through_a_link_out(grep_mod, project, outside):
    """A link inside the workspace to a file outside is not read by a search."""
    (project / "leak.txt").symlink_to(outside / "secret.txt")
    output, _ = grep(grep_mod, pattern="TOPSECRE[T]")  # so an echoed pattern cannot match
    assert "TOPSECRET" not in output
    output, is_error = grep(grep_mod, pattern="TOPSECRE[T]", path="leak.txt")
    assert is_error and "TOPSECRET" not in output


def test_grep_path_outside_is_refused(grep_mod, project, outside):
    """The `path` argument goes through safe_path."""
    output, is_error = grep(grep_mod, pattern="TOPSECRE[T]", path="../outside")
    assert is_error and "TOPSECRET" not in output


# --- web_fetch, against a local HTTP server -----------------------------------------------

PAGES = {  # path -> (status, content type, body)
    "/page.html": (200, "text/html; charset=utf-8",
                   "<html><head><title>T</title><style>.x { color: red }</style></head>"
                   "<body><h1>Hello</h1><script>var token = 'SCRIPTED';</script>"
                   "<p>Fish &amp; chips</p><ul><li>one</li><li>two</li></ul></body></html>"),
    "/short.html": (200, "text/html", "<!doctype html><html><head><title>T</title>"
                                      "<body><p>Body text</p></body></html>"),
    "/list.html": (200, "text/html", "<p>See <a href='/more'>more</a>.<ul>"
                   + "".join(f"<li>item {i}" for i in range(3000)) + "</ul><p>The end"),
    "/deep.html": (200, "text/html", "<div>" * 5000 + "deep" + "</div>" * 5000),
    "/long.txt": (200, "text/plain", "0123456789" * 1000),
    "/data.json": (200, "application/json", '{"ok": true}'),
    "/logo.png": (200, "image/png", "\x89PNG not text"),
}


class _PageHandler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        status, kind, body = PAGES.get(self.path, (404, "text/plain", "no such page"))
        data = body.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def site(monkeypatch):
    """A local web server on 127.0.0.1; its base URL."""
    for var in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY",
                "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("no_proxy", "*")
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _PageHandler)
    threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def fetch(mod, **args) -> tuple[str, bool]:
    """web_fetch through execute_tool. Where web_fetch is a deferred tool (s05+), load
    it first with tool_search, as a model must."""
    if "tool_search" in mod.TOOL_HANDLERS:
        output, is_error = call_tool(mod, "tool_search", query="select:web_fetch")
        assert not is_error, output
    return call_tool(mod, "web_fetch", **args)


def test_web_fetch_turns_html_into_text(mod, trusted, site):
    """Visible text comes back; scripts and styles are dropped."""
    output, is_error = fetch(mod, url=f"{site}/page.html")
    assert not is_error
    for visible in ["Hello", "Fish & chips", "one", "two"]:
        assert visible in output
    assert "SCRIPTED" not in output and "color" not in output and "<p>" not in output


def test_web_fetch_page_without_head_end_tag(mod, trusted, site):
    """HTML may leave out </head>; the body's text must still come back."""
    output, is_error = fetch(mod, url=f"{site}/short.html")
    assert not is_error
    assert "Body text" in output


def test_web_fetch_gives_markdown_even_for_open_tags(mod, trusted, site):
    """HTML may leave <p> and <li> open: 3,000 open items still come back, as a
    Markdown list, and a link keeps where it goes (as Claude Code's WebFetch gives)."""
    output, is_error = fetch(mod, url=f"{site}/list.html", max_length=100_000)
    assert not is_error, output
    assert "[more](/more)" in output and "* item 0\n" in output
    assert "* item 2999" in output and output.endswith("The end")


def test_web_fetch_of_html_nested_too_deeply_is_an_error(mod, trusted, site):
    """5,000 nested tags are deeper than the conversion can follow: a clear is_error
    result, not a crash."""
    output, is_error = fetch(mod, url=f"{site}/deep.html")
    assert is_error and "nests too deeply" in output


def test_web_fetch_plain_text_and_json_pass_through(mod, trusted, site):
    """Text that is not HTML comes back as it is."""
    output, is_error = fetch(mod, url=f"{site}/data.json")
    assert not is_error and output.strip() == '{"ok": true}'


def test_web_fetch_caps_the_length(mod, trusted, site):
    """max_length=100: the first 100 characters and a note, not the whole 10,000."""
    output, is_error = fetch(mod, url=f"{site}/long.txt", max_length=100)
    assert not is_error
    assert output.startswith("0123456789" * 10)
    assert len(output) < 300


def test_web_fetch_saves_the_whole_page_before_its_cut(mod, trusted, site, workspace):
    """Issue 30: a page longer than max_length is saved whole first; the cut result
    names the file, which holds all 10,000 characters."""
    output, is_error = fetch(mod, url=f"{site}/long.txt", max_length=100)
    assert not is_error and "of 10,000 characters" in output
    assert (workspace / saved_path(output)).read_text() == "0123456789" * 1000


def test_web_fetch_404_is_an_error_result(mod, trusted, site):
    """A missing page is an is_error result naming the status."""
    output, is_error = fetch(mod, url=f"{site}/nope")
    assert is_error and "404" in output


def test_web_fetch_refuses_non_text(mod, trusted, site):
    """An image is refused: web_fetch returns text only."""
    output, is_error = fetch(mod, url=f"{site}/logo.png")
    assert is_error and "image/png" in output


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://127.0.0.1/x", "localhost/x",
                                 "javascript:alert(1)"])
def test_web_fetch_refuses_other_schemes(mod, trusted, url):
    """Only http and https: a file:// URL never reads a local file."""
    output, is_error = fetch(mod, url=url)
    assert is_error and "http" in output
    assert "root:" not in output


def test_web_fetch_unreachable_is_an_error_not_a_crash(mod, trusted):
    """A port nobody listens on: an is_error result, quickly."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    output, is_error = fetch(mod, url=f"http://127.0.0.1:{port}/")
    assert is_error and str(port) in output


# --- validation: bad input is data, never a crash ---------------------------------------


@pytest.mark.parametrize("name, tool_input, names", [
    ("fly_to_moon", {"speed": 1}, "fly_to_moon"),
    ("read_file", {}, "file_path"),
    ("edit_file", {"file_path": "a.txt", "old_string": "x"}, "new_string"),
    ("read_file", {"file_path": 3}, "file_path"),
    ("read_file", {"file_path": "a.txt", "offset": "2"}, "offset"),
    ("read_file", {"file_path": "a.txt", "limit": True}, "limit"),  # JSON: true is no integer
    ("run_shell", {"command": "echo hi", "timeout": False}, "timeout"),
    ("edit_file", {"file_path": "a.txt", "old_string": "a", "new_string": "b",
                   "replace_all": "yes"}, "replace_all"),
    ("read_file", {"file_path": "a.txt", "colour": "red"}, "colour"),
], ids=["unknown-tool", "missing", "missing-new_string", "wrong-type", "string-for-int",
        "bool-for-int", "bool-for-timeout", "string-for-bool", "unexpected-field"])
def test_bad_input_is_an_error_naming_the_problem(mod, workspace, name, tool_input, names):
    """Unknown tool, missing or mistyped or unexpected field: is_error naming it, no effect."""
    (workspace / "a.txt").write_text("a\n")
    output, is_error = call_tool(mod, name, **tool_input)
    assert is_error
    assert names in output
    assert (workspace / "a.txt").read_bytes() == b"a\n"
    assert sorted(p.name for p in workspace.iterdir()) == ["a.txt"]


def test_input_that_is_not_an_object_is_an_error(mod):
    """An input that is a list, not a JSON object: is_error, no exception."""
    block = anthropic.types.ToolUseBlock.model_construct(
        type="tool_use", id="toolu_list", name="read_file", input=["a.txt"])
    output, is_error = mod.execute_tool(block, the_agent(mod))
    assert is_error and "object" in output.lower()


def test_valid_input_passes_validation(mod, workspace):
    """Optional fields with the right types are accepted (no false alarms)."""
    (workspace / "a.txt").write_text("a\nb\n")
    output, is_error = call_tool(mod, "read_file", file_path="a.txt", offset=2, limit=1)
    assert not is_error and numbered(output) == {2: "b"}


def test_every_tool_has_a_schema_and_a_handler(mod):
    """s02's seven tools each have a schema the model sees and a handler that runs."""
    s02_tools = {"run_shell", "read_file", "write_file", "edit_file", "list_files",
                 "grep_search", "web_fetch"}
    assert s02_tools <= {tool["name"] for tool in mod.TOOLS}
    assert s02_tools <= set(mod.TOOL_HANDLERS)
    for tool in mod.TOOLS:
        assert tool["input_schema"]["type"] == "object" and tool["description"]


# --- result shaping: big results keep head and tail, the whole is saved -------------------


def test_big_shell_output_keeps_head_and_tail_and_is_saved(mod, workspace):
    """200,000 lines of output: the result keeps the first and last, says what was cut,
    and the whole output is saved under .tool-results/ for read_file to read on."""
    command = "seq 1 200000"
    output, is_error = call_tool(mod, "run_shell", command=command)
    assert not is_error
    assert len(output) <= mod.MAX_RESULT_CHARS + 1_000
    lines = output.splitlines()
    assert lines[:3] == ["1", "2", "3"]
    assert "200000" in lines[-3:]
    assert "100000\n" not in output  # the middle is gone from the result ...
    assert "cut" in output
    saved = saved_path(output)
    data = (workspace / saved).read_bytes()  # ... but not lost
    assert data == b"".join(b"%d\n" % n for n in range(1, 200_001))
    reread, is_error = call_tool(mod, "read_file", file_path=saved, offset=100_000, limit=1)
    assert not is_error and numbered(reread) == {100_000: "100000"}


def test_result_over_the_limit_from_both_streams_is_cut_and_saved(mod, workspace):
    """stdout and stderr together over MAX_RESULT_CHARS: the result itself is cut and
    saved whole; reading that file back does not save yet another copy."""
    command = "seq 1 100000; seq 500000 600000 >&2"
    output, is_error = call_tool(mod, "run_shell", command=command)
    assert not is_error
    assert len(output) <= mod.MAX_RESULT_CHARS + 1_000
    assert output.startswith("1\n2\n3\n")
    assert output.rstrip().splitlines()[-1].startswith("[")  # exit status last
    saved_before = sorted(p.name for p in (workspace / ".tool-results").iterdir())
    whole = [p for p in (workspace / ".tool-results").iterdir()
             if b"--- stderr ---" in p.read_bytes()]
    assert len(whole) == 1  # the whole result, stdout and stderr together
    reread, is_error = call_tool(mod, "read_file",
                                 file_path=f".tool-results/{whole[0].name}", limit=3)
    assert not is_error and numbered(reread)[1] == "1"
    assert sorted(p.name for p in (workspace / ".tool-results").iterdir()) == saved_before


def test_big_grep_result_is_cut_and_saved(grep_mod, workspace):
    """100 matches with very long paths exceed the limit: head and tail kept, whole saved."""
    folder = workspace / ("a" * 250) / ("b" * 250)
    folder.mkdir(parents=True)
    (folder / ("c" * 240 + ".txt")).write_text("".join(f"match {n}\n" for n in range(150)))
    output, is_error = grep(grep_mod, pattern="match")
    assert not is_error
    assert len(output) <= grep_mod.MAX_RESULT_CHARS + 1_000
    assert output.splitlines()[0].endswith(":1:match 0")
    assert re.search(r"\b50\b", output.splitlines()[-1])  # the "50 more" line survives
    whole = (workspace / saved_path(output)).read_text()
    assert len(whole) > grep_mod.MAX_RESULT_CHARS
    assert [ln.rsplit(":", 1)[-1] for ln in whole.splitlines()[:100]] == [
        f"match {n}" for n in range(100)]


def test_saved_result_stays_inside_the_workspace(mod, workspace):
    """A tool_use id is the provider's string, not a path: a cut result whose id holds
    `../` is still saved under .tool-results/, never outside the workspace."""
    block = anthropic.types.ToolUseBlock(type="tool_use", id="../../escaped", name="run_shell",
                                         input={"command": "seq 1 100000; seq 1 100000 >&2"})
    output, is_error = mod.execute_tool(block, the_agent(mod))
    assert not is_error
    assert not (workspace.parent / "escaped.txt").exists()
    assert not (workspace.parent.parent / "escaped.txt").exists()
    assert (workspace / saved_path(output)).is_file()


def test_read_file_results_are_never_saved(mod, workspace):
    """A read_file result over MAX_RESULT_CHARS comes back whole and is not saved."""
    (workspace / "wide.txt").write_text("".join(f"{n:018d}\n" for n in range(1, 2001)))
    output, is_error = call_tool(mod, "read_file", file_path="wide.txt")
    assert not is_error
    assert len(output) > mod.MAX_RESULT_CHARS  # 2000 numbered rows of 19 characters
    assert numbered(output)[1000] == f"{1000:018d}"
    assert not (workspace / ".tool-results").exists()


# --- file tools that show what they did (issue 30) ------------------------------------


def test_file_tools_show_what_they_did(mod, trusted, server, client, monkeypatch):
    """Through the loop: write_file of a new file shows its first lines; an overwrite
    (after a read) shows the lines it changed; an edit found only by folding quotes,
    primes (′ ″) included, says so and keeps the file's own quotes."""
    from conftest import result_text, run_agent, sent_tool_results
    from offline.server import reply, tool_use
    (trusted / "old.txt").write_text("keep\nold line\nkeep too\n")
    (trusted / "size.txt").write_text("width = 5′ 3″\n")
    new = "".join(f"row {i}\n" for i in range(1, 31))
    server.add(reply(tool_use("read_file", {"file_path": "old.txt"}),
                     tool_use("read_file", {"file_path": "size.txt"})),
               reply(tool_use("write_file", {"file_path": "new.txt", "content": new}),
                     tool_use("write_file", {"file_path": "old.txt",
                                             "content": "keep\nnew line\nkeep too\n"}),
                     tool_use("edit_file", {"file_path": "size.txt",
                                            "old_string": "5' 3\"",
                                            "new_string": "6' 1\""})),
               reply("Done."))
    run_agent(mod, client, "write")
    created, overwrote, edited = map(result_text, sent_tool_results(server.requests[2]))
    assert created.startswith("Created new.txt (30 lines, 201 bytes):\n     1 + row 1\n")
    assert "    10 + row 10\n" in created and "row 11" not in created
    assert "     2 - old line\n     2 + new line" in overwrote, overwrote
    assert "quotes were made straight" in edited, edited
    assert (trusted / "size.txt").read_text() == "width = 6′ 1″\n"


def test_a_search_past_its_time_limit_is_a_clear_error(mod, workspace, monkeypatch):
    """SEARCH_TIMEOUT 0: list_files and grep_search stop ripgrep and say so."""
    (workspace / "a.txt").write_text("needle\n")
    monkeypatch.setattr(mod, "SEARCH_TIMEOUT", 0)
    for tool, args in (("list_files", {"pattern": "*.txt"}),
                       ("grep_search", {"pattern": "needle"})):
        output, is_error = call_tool(mod, tool, **args)
        assert is_error and "took over 0s and was stopped" in output, output
