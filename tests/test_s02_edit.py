"""edit_file's rules (s02), kept by every later chapter.

The rules are checked by calling the handler directly (`TOOL_HANDLERS["edit_file"]`),
so that a later chapter's permission gate and read-before-edit check do not stand in
the way; what goes through execute_tool reads the file first, as a careful model does.
The `trusted` settings file (Claude Code's own format) lets later chapters accept
edits without asking. Every assertion is on the bytes on disk.
"""

import re

import pytest

from conftest import call_tool, load_chapter, teaching_and_last
from conftest import the_agent


@pytest.fixture(params=teaching_and_last("s02"))
def mod(request):
    return load_chapter(request.param)


@pytest.fixture
def edit(mod):
    """Call edit_file directly; returns its report."""
    def run(file_path, old_string, new_string, **more):
        return mod.TOOL_HANDLERS["edit_file"](the_agent(mod), file_path=file_path, old_string=old_string,
                                              new_string=new_string, **more)
    return run


def refused(mod, **args) -> str:
    """Call edit_file expecting a refusal; return its message."""
    with pytest.raises(Exception) as info:
        mod.TOOL_HANDLERS["edit_file"](the_agent(mod), **args)
    return str(info.value)


# --- exact, unique replacement -------------------------------------------------------------


def test_unique_match_is_replaced(edit, workspace):
    """One occurrence: replaced, everything else byte for byte the same."""
    (workspace / "calc.py").write_bytes(b"def add(a, b):\n    return a - b\n\nprint(add(1, 2))\n")
    edit("calc.py", "return a - b", "return a + b")
    assert (workspace / "calc.py").read_bytes() == \
        b"def add(a, b):\n    return a + b\n\nprint(add(1, 2))\n"


def test_replace_all_replaces_every_occurrence(edit, workspace):
    """replace_all=true renames a variable everywhere."""
    (workspace / "a.py").write_bytes(b"count = 0\ncount += 1\nprint(count)\n")
    edit("a.py", "count", "total", replace_all=True)
    assert (workspace / "a.py").read_bytes() == b"total = 0\ntotal += 1\nprint(total)\n"


def test_the_report_shows_a_diff_with_line_numbers(edit, workspace):
    """The result names the file and shows the changed line, old and new, with its number."""
    (workspace / "five.txt").write_text("a = 1\nb = 2\nc = 3\nd = 4\ne = 5\n")
    report = edit("five.txt", "c = 3", "c = 30")
    assert "five.txt" in report
    assert re.search(r"^\s*3\s*-\s?c = 3$", report, re.M)
    assert re.search(r"^\s*3\s*\+\s?c = 30$", report, re.M)
    assert "e = 5" not in report  # a small diff, not the whole file


def test_empty_old_string_creates_a_missing_file(edit, workspace):
    """An empty old_string on a file that does not exist creates it (and its folders)."""
    edit("pkg/new.py", "", "x = 1\n")
    assert (workspace / "pkg/new.py").read_bytes() == b"x = 1\n"


def test_empty_old_string_fills_an_empty_file(edit, workspace):
    """An existing but empty file may be filled with an empty old_string."""
    (workspace / "blank.txt").write_bytes(b"")
    edit("blank.txt", "", "now it has text\n")
    assert (workspace / "blank.txt").read_bytes() == b"now it has text\n"


# --- refusals: each leaves the file byte-for-byte unchanged ------------------------------------

ORIGINAL = b"x = 1\ny = 2\nx = 1\n"


@pytest.mark.parametrize("old, new, more, words", [
    ("x = 1", "x = 9", {}, [r"\b2\b", "replace_all"]),           # found twice
    ("y = 2", "y = 2", {}, ["same"]),                           # nothing to change
    ("", "z = 3\n", {}, ["empty"]),                             # would clobber the file
    ("y = 3", "y = 4", {}, ["whitespace", "not found"]),        # not there at all
    ("y  = 2", "y = 4", {}, ["whitespace"]),                    # a near miss
], ids=["found-twice", "old-equals-new", "empty-old-on-nonempty", "not-found", "near-miss"])
def test_refusals_leave_the_file_unchanged(mod, workspace, old, new, more, words):
    """A refused edit says why and does not touch the file."""
    path = workspace / "vars.py"
    path.write_bytes(ORIGINAL)
    before = path.stat().st_mtime_ns
    message = refused(mod, file_path="vars.py", old_string=old, new_string=new, **more)
    for word in words:
        assert re.search(word, message, re.I), (word, message)
    assert path.read_bytes() == ORIGINAL
    assert path.stat().st_mtime_ns == before
    assert sorted(p.name for p in workspace.iterdir()) == ["vars.py"]  # no temp file either


def test_found_twice_names_the_count(mod, workspace):
    """Three occurrences: the refusal says 3, so the model knows how much context to add."""
    (workspace / "t.txt").write_bytes(b"ok\nok\nok\n")
    message = refused(mod, file_path="t.txt", old_string="ok", new_string="fine")
    assert re.search(r"\b3\b", message)
    assert (workspace / "t.txt").read_bytes() == b"ok\nok\nok\n"


def test_edit_of_a_missing_file_is_an_error(mod, workspace):
    """A non-empty old_string on a file that does not exist: refused, nothing created."""
    message = refused(mod, file_path="ghost.py", old_string="a", new_string="b")
    assert "ghost.py" in message and "not found" in message.lower()
    assert not (workspace / "ghost.py").exists()


def test_non_utf8_file_is_refused_and_unchanged(mod, workspace):
    """A Latin-1 file is not valid UTF-8: refused rather than risked."""
    data = "café = 1\nnaïve = 2\n".encode("latin-1")
    (workspace / "old.txt").write_bytes(data)
    message = refused(mod, file_path="old.txt", old_string="= 2", new_string="= 3")
    assert "utf-8" in message.lower()
    assert (workspace / "old.txt").read_bytes() == data


# --- curly quotes: forgiven both ways, the file's style kept ------------------------------------


def test_file_curly_model_straight(edit, workspace):
    """The file has “ ”, the model types " : it still matches, and the file keeps “ ”."""
    (workspace / "greet.py").write_text("print(“hello”)\n", encoding="utf-8")
    edit("greet.py", 'print("hello")', 'print("hello, world")')
    assert (workspace / "greet.py").read_text(encoding="utf-8") == "print(“hello, world”)\n"


def test_file_curly_new_quoted_text_is_curled_too(edit, workspace):
    """Quotes the model adds in the new text take the file's curly style."""
    (workspace / "story.md").write_text("She said “no”.\n", encoding="utf-8")
    edit("story.md", 'She said "no".', 'She said "no". He said "yes".')
    assert (workspace / "story.md").read_text(encoding="utf-8") == \
        "She said “no”. He said “yes”.\n"


def test_file_curly_single_quotes(edit, workspace):
    """Single quotes too: ‘ ’ in the file, ' from the model."""
    (workspace / "names.txt").write_text("name = ‘Ada’\n", encoding="utf-8")
    edit("names.txt", "name = 'Ada'", "name = 'Grace'")
    assert (workspace / "names.txt").read_text(encoding="utf-8") == "name = ‘Grace’\n"


def test_file_straight_model_curly(edit, workspace):
    """File straight, model curly: it matches, and the file keeps its straight quotes."""
    (workspace / "greet.py").write_text('print("hello")\n', encoding="utf-8")
    edit("greet.py", "print(“hello”)", "print(“bye”)")
    assert (workspace / "greet.py").read_bytes() == b'print("bye")\n'


def test_file_straight_model_curly_new_quoted_text_is_straight(edit, workspace):
    """Quotes the model adds in curly style become straight, like the rest of the file."""
    (workspace / "greet.py").write_text('print("hello")\n', encoding="utf-8")
    edit("greet.py", "print(“hello”)", "print(“hello”, “world”)")
    assert (workspace / "greet.py").read_bytes() == b'print("hello", "world")\n'


def test_curly_quotes_in_new_string_are_kept_on_an_exact_match(edit, workspace):
    """Folding is only a fallback: an exact match inserts new_string as given."""
    (workspace / "t.md").write_text('title = "draft"\n', encoding="utf-8")
    edit("t.md", '"draft"', "“final”")
    assert (workspace / "t.md").read_text(encoding="utf-8") == "title = “final”\n"


# --- line endings ----------------------------------------------------------------------------


def test_crlf_file_edited_with_lf_old_string_stays_crlf(edit, workspace):
    """A Windows file: old_string written with \\n matches, and every line, inserted
    ones included, still ends in \\r\\n."""
    (workspace / "win.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    edit("win.txt", "two\nthree", "2\nthree\nfour")
    assert (workspace / "win.txt").read_bytes() == b"one\r\n2\r\nthree\r\nfour\r\n"


def test_crlf_old_string_on_crlf_file(edit, workspace):
    """old_string with \\r\\n works on a CRLF file too; nothing doubles to \\r\\r\\n."""
    (workspace / "win.txt").write_bytes(b"a\r\nb\r\n")
    edit("win.txt", "a\r\nb", "a\r\nB")
    assert (workspace / "win.txt").read_bytes() == b"a\r\nB\r\n"


def test_lf_file_stays_lf(edit, workspace):
    """A Unix file gets no \\r, even if the model's new_string has \\r\\n."""
    (workspace / "unix.txt").write_bytes(b"a\nb\n")
    edit("unix.txt", "b", "b\r\nc")
    assert (workspace / "unix.txt").read_bytes() == b"a\nb\nc\n"


# --- new_string is literal -----------------------------------------------------------------


@pytest.mark.parametrize("new", [r"price = $1.00", r"path = C:\1\new", r"m = \g<0>",
                                 r"\n stays two characters", "$& and $$"])
def test_new_string_is_literal(edit, workspace, new):
    """`$1`, `\\1`, `\\g<0>`, `\\n` in new_string are text, not regex replacement syntax."""
    (workspace / "lit.txt").write_bytes(b"before\nOLD\nafter\n")
    edit("lit.txt", "OLD", new)
    assert (workspace / "lit.txt").read_bytes() == b"before\n" + new.encode() + b"\nafter\n"


def test_old_string_is_literal(edit, workspace):
    """Regex characters in old_string match themselves."""
    (workspace / "re.txt").write_bytes(b"a.b\naxb\n(x)+\n")
    edit("re.txt", "a.b", "A.B")
    edit("re.txt", "(x)+", "[y]")
    assert (workspace / "re.txt").read_bytes() == b"A.B\naxb\n[y]\n"


# --- through execute_tool: errors are data --------------------------------------------------


def test_edit_errors_are_results_not_exceptions(mod, trusted):
    """Through execute_tool, after a read: an ambiguous edit is an is_error result,
    then the same edit with more context succeeds."""
    workspace = trusted
    (workspace / "cfg.ini").write_bytes(b"[a]\nport = 1\n[b]\nport = 1\n")
    output, is_error = call_tool(mod, "read_file", file_path="cfg.ini")
    assert not is_error
    output, is_error = call_tool(mod, "edit_file", file_path="cfg.ini",
                                 old_string="port = 1", new_string="port = 2")
    assert is_error and "2" in output
    assert (workspace / "cfg.ini").read_bytes() == b"[a]\nport = 1\n[b]\nport = 1\n"
    output, is_error = call_tool(mod, "edit_file", file_path="cfg.ini",
                                 old_string="[b]\nport = 1", new_string="[b]\nport = 2")
    assert not is_error, output
    assert (workspace / "cfg.ini").read_bytes() == b"[a]\nport = 1\n[b]\nport = 2\n"
