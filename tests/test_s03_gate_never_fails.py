"""Issue 21, item 4: the gate itself never fails.

Every check runs in linear time, and each decision has a time budget past which it
asks; no exception escapes decide_permission, whatever it is fed (a fuzz test draws
the inputs); globs that Python's glob reads differently from bash are unanalysable;
`~+0`, `~1`, `~-` and `..` after a symbolic link are read as bash and the kernel read
them; a here-document with a redirection is a write. Times are measured outside the
test: the checks run in a child process that is killed if it overruns.
Runs against s03 and every later chapter.
"""

import json
import os
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from conftest import GUARD, ROOT, load_chapter, teaching_and_last, where_it_lives
from conftest import gate, the_agent


@pytest.fixture(params=teaching_and_last("s03"))
def mod(request):
    return load_chapter(request.param)


def decide(mod, command, mode="default", **rules):
    return gate(mod, "run_shell", {"command": command}, mode,
                                 {"allow": [], "deny": [], "ask": [], **rules})


# --- linear time: the reported hang and its relatives ---------------------------------

SLOW_BEFORE = [  # (command, verdict): the sed scripts took seconds to forever
    ("sed -n '" + "   p;" * 11 + " X'", "ask"),   # the reported 66 characters
    ("sed -n '" + "   p;" * 200 + " X'", "ask"),
    ("sed -n '" + "p\n\n" * 300 + "X'", "ask"),
    ("sed -n -e '" + "1,3 ! p ;" * 300 + "w x'", "ask"),
    ("ls " + "[" * 9000, "allow"),                # `\[.*\]` on a word: quadratic
    ("cat " + "\\" * 9000, "allow"),
    ("echo " + "{x}" * 3000, "ask"),              # braces too deep to expand
    ("git push " + "push " * 1900, "ask"),
    ("python -c '" + "system(" * 1400 + "'", "ask"),
]


@pytest.mark.parametrize("chapter", where_it_lives("s03", between=False))
def test_every_check_answers_within_the_budget(chapter, tmp_path):
    """A child process decides each slow-before command and prints the verdicts and
    the processor time each took: the time the check spent, which a busy machine
    does not inflate (a quadratic check took seconds to forever; now each is well
    under 10 s). The child is killed past GUARD (a hang fails the test)."""
    code = ("import json, sys, time; sys.path.insert(0, sys.argv[1]); "
            "from offline.chapters import load_chapter; "
            f"m = load_chapter({chapter!r}); out = []\n"
            "for c in json.loads(sys.argv[2]):\n"
            "    t = time.process_time(); d = m.decide_permission(m.Call('run_shell', "
            "{'command': c}, 't', m.Agent(None)), 'default', {})\n"
            "    out.append([d[0], time.process_time() - t])\n"
            "print(json.dumps(out))")
    done = subprocess.run([sys.executable, "-c", code, str(ROOT), json.dumps([c for c, _ in SLOW_BEFORE])],
                          cwd=tmp_path, capture_output=True, text=True, timeout=GUARD)
    assert done.returncode == 0, done.stderr
    verdicts = json.loads(done.stdout)
    # an "allow" may become "ask" on a busy machine (past the budget): never the reverse
    assert all(d == v or d == "ask" for (d, _), (_, v) in zip(verdicts, SLOW_BEFORE))
    assert max(t for _, t in verdicts) < 10, verdicts  # processor seconds: linear


def test_the_fixed_sed_grammar_still_reads_scripts(mod, workspace):
    (workspace / "a.txt").write_text("x\n")
    for script in ("1,5p", "  p;  p", "/a/,/b/ !p", "$p\n\n5p;", "s/a/b/gp", "y/ab/cd/"):
        assert mod.is_read_only_command(f"sed -n '{script}' a.txt"), script
    for script in ("w out", "1e touch x", "p;w out", "r /etc/passwd", "  p;   p; X"):
        assert not mod.is_read_only_command(f"sed -n '{script}' a.txt"), script


def test_a_decision_past_its_budget_asks(mod, workspace, monkeypatch):
    """With a budget of zero, the first look at the clock makes the check
    unanalysable: `ls` asks instead of running."""
    safety = sys.modules[mod.within_budget.__module__]
    monkeypatch.setattr(safety, "DECISION_SECONDS", -1.0)
    decision, reason = decide(mod, "ls")
    assert decision == "ask" and "took over" in reason
    monkeypatch.setattr(safety, "DECISION_SECONDS", 2.0)
    assert decide(mod, "ls")[0] == "allow"


# --- no exception escapes decide_permission ------------------------------------------

SHELLISH = st.text(alphabet=st.sampled_from(list(
    "abcdeglnprstx ~+-0129./*?[]{}()<>|&;$`'\"\\!#=:,^\n\r\t\x00\u00e9\U000f0001")),
    max_size=60)
JUNK = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=8), inner, max_size=3),
                    max_leaves=8)
TOOLS = st.sampled_from(["run_shell", "Bash", "read_file", "write_file", "edit_file",
                         "web_fetch", "list_files", "grep_search", "nope", ""])
RULES = st.lists(st.sampled_from(["Bash", "Bash(ls *)", "Read(./.env)", "Edit(**)",
                                  "WebFetch(domain:x)", "Read", "Bash(", "(", "",
                                  "Write(/x/**)", "Bash(*)"]), max_size=3)


# Sized to what it found: the crashes it caught are explicit cases below; 60 random
# inputs a run (in s03 and s06: the gate is code.py's) keep exploring.
@pytest.mark.parametrize("mod", teaching_and_last("s03", between=False), indirect=True)
@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tool=TOOLS, command=SHELLISH, junk=JUNK, mode=st.sampled_from(
    ["default", "acceptEdits", "plan", "bypassPermissions", "bogus"]),
    allow=RULES, deny=RULES, key=st.sampled_from(["command", "file_path", "url",
                                                  "pattern", "path"]))
# found by this test: a NUL byte in a path made resolve_path raise (pathlib's ValueError)
@example(tool="read_file", command="\x00", junk=None, mode="default", allow=[], deny=[],
         key="file_path")
def test_no_exception_escapes_decide_permission(mod, workspace, tool, command, junk,
                                                mode, allow, deny, key):
    """The decision the gate calls (decide_permission: check_permission asks it, and
    its guard is the only one) never raises. On input the tool's schema accepts, the
    input the loop lets through, the checks decide by themselves: the guard, which
    asks when a check crashes, never has to (a crash in the gate fails this)."""
    for tool_input in ({key: command}, {key: junk}, {}, {"command": junk, key: command}):
        call = mod.Call(tool, tool_input, "toolu_fuzz", the_agent(mod))
        decision, reason, source = mod.decide_permission(
            call, mode, {"allow": allow, "deny": deny})
        assert decision in ("allow", "deny", "ask") and isinstance(reason, str)
        schema = mod.TOOL_BY_NAME.get(call.tool, {}).get("input_schema")
        if schema and mod.validate_input(schema, tool_input) is None:
            assert source != mod.Source.GUARD, (tool, tool_input, mode, reason)



@pytest.mark.parametrize("mod", where_it_lives("s03", between=False), indirect=True)
@pytest.mark.parametrize("command", ["{\U000f0001", "echo {\U000e0001}", "ls \x00",
                                     "ls \ud800", "echo {\U00032f00"])
def test_a_character_the_parser_crashes_on_is_refused_not_parsed(mod, command):
    """tree-sitter-bash 0.25 crashes the process (a segfault, no exception) on `{`
    followed by some characters beyond U+FFFF (private, unassigned, format; found by
    fuzzing), and bash cannot take a NUL: such a command is refused before it is
    parsed, and asks. In a child process, so that a crash is a failure, not a lost
    test worker."""
    code = (f"from offline.chapters import load_chapter; m = load_chapter("
            f"{mod.__package__!r}); print(tuple(m.decide_permission(m.Call("
            f"'run_shell', {{'command': {command!r}}}, 't', m.Agent(None)), 'default', "
            "{})[:2]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=GUARD)
    assert done.returncode == 0, f"the process died: {done.returncode} {done.stderr}"
    assert done.stdout.startswith("('ask',") and "U+" in done.stdout, done.stdout

def test_a_broken_input_asks(mod, workspace):
    """A command that is not text, or deep braces that would recurse too far: ask."""
    assert gate(mod, "run_shell", {"command": 42}, "default", {})[0] == "ask"
    assert gate(mod, "run_shell", {}, "bypassPermissions", {})[0] in (
        "ask", "deny")
    assert decide(mod, "echo " + "{a}" * 5000)[0] == "ask"


# --- globs bash and Python read differently ------------------------------------------

@pytest.mark.parametrize("glob", ["[^b]*", "[[:punct:]]*", "[[=-=]]*", "[[.hyphen.]]*",
                                  "./[^b]*", "[!a][^b]*"])
def test_globs_python_reads_otherwise_are_unanalysable(mod, workspace, glob):
    """With a file named `--output=pwned` beside it, `sort GLOB` would write: the
    glob is one Python's glob reads otherwise, so the command asks."""
    (workspace / "--output=pwned").write_text("")
    (workspace / "a.txt").write_text("a\n")
    decision, reason = decide(mod, f"sort {glob}")
    assert decision == "ask" and "glob" in reason


def test_globs_both_read_alike_are_still_analysed(mod, workspace):
    (workspace / "a.txt").write_text("a\n")
    (workspace / "b.txt").write_text("b\n")
    for command in ("sort [!b]*", "cat [ab].txt", "wc -l *.txt", "grep -n '[^a]' a.txt",
                    "cat a?txt"):
        assert decide(mod, command)[0] == "allow", command
    (workspace / "--output=pwned").write_text("")
    assert decide(mod, "sort *")[0] == "ask"


# --- paths as bash and the kernel read them ------------------------------------------

@pytest.fixture
def home_layout(workspace, monkeypatch):
    """The workspace inside a home that holds a secret; a link to a folder outside."""
    home = workspace.parent / "home"
    (home / "project").mkdir(parents=True)
    (home / "secret.txt").write_text("SECRET\n")
    (home / ".ssh").mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(home / "project")
    ws = home / "project"
    (ws / "sub").mkdir()
    (ws / "a.txt").write_text("a\n")
    (ws / ".env").write_text("KEY=1\n")
    os.symlink(home / ".ssh", ws / "link")
    os.symlink(ws / "sub", ws / "inlink")
    os.symlink(ws / ".env", ws / "envlink")
    return ws


@pytest.mark.parametrize("command", [
    "cat ~+0/../secret.txt", "cat ~0/../secret.txt", "cat ~+/../secret.txt",
    "cat ~-/secret.txt", "cat ~+1/x", "cat ~-1/x", "cat ~2/x",
    "cat link/../secret.txt", "cd link/.. && cat secret.txt", "cat < link/../secret.txt",
    "sort -o ~+0/../owned a.txt"])
def test_tilde_forms_and_links_before_dotdot_are_not_read_only(mod, home_layout,
                                                               command):
    assert decide(mod, command)[0] == "ask"


def test_dotdot_after_a_link_inside_is_still_read_only(mod, home_layout):
    """inlink -> sub: `inlink/../a.txt` is the workspace's a.txt, as the kernel says."""
    assert decide(mod, "cat inlink/../a.txt")[0] == "allow"


def test_a_link_to_a_denied_file_is_denied_too(mod, home_layout):
    """envlink -> .env under Read(./.env): the rule sees where the link leads."""
    assert decide(mod, "cat envlink", deny=["Read(./.env)"])[0] == "deny"
    assert decide(mod, "cat a.txt", deny=["Read(./.env)"])[0] == "allow"


def test_a_link_out_is_not_written_in_accept_edits(mod, home_layout):
    """`echo x > link/../owned` writes beside ~/.ssh, outside: acceptEdits asks."""
    decision, reason = decide(mod, "echo x > link/../owned", "acceptEdits")
    assert decision == "ask" and "owned" in reason


# --- a here-document with a redirection is a write -----------------------------------

@pytest.mark.parametrize("command", ["cat <<EOF > out.txt\nhello\nEOF",
                                     "cat <<'EOF' >> a.txt\nmore\nEOF",
                                     "cat <<EOF 2>/dev/null > out.txt\nhello\nEOF"])
def test_a_here_document_with_a_redirection_writes(mod, workspace, command):
    (workspace / "a.txt").write_text("a\n")
    decision, reason = decide(mod, command)
    assert decision == "ask" and "writes" in reason
    assert decide(mod, command, "acceptEdits")[0] == "allow"
    assert decide(mod, command, "plan")[0] == "deny"


def test_a_here_document_that_writes_outside_asks_in_accept_edits(mod, workspace):
    assert decide(mod, "cat <<EOF > ../out.txt\nhello\nEOF", "acceptEdits")[0] == "ask"
    assert decide(mod, "wc -l <<EOF\nhello\nEOF")[0] == "allow"  # reads only
