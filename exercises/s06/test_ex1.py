"""Checker for exercise s06 ex1 (warm-up): show the batches.

    pytest exercises/s06/test_ex1.py

It checks `batch_line` on the partitions the chapter's table shows, then that the
streaming loop prints it once per reply with several calls, before their calls run.
"""

from exercises.conftest import the_agent
from exercises.conftest import run_agent, tool_use_block
from offline.server import reply, tool_use

READ = ("read_file", {"file_path": "a.txt"})
GREP = ("grep_search", {"pattern": "x"})
WRITE = ("write_file", {"file_path": "a.txt", "content": "new\n"})
LS = ("run_shell", {"command": "ls"})


def calls(*specs):
    return [tool_use_block(name, id=f"toolu_{i}", **tool_input)
            for i, (name, tool_input) in enumerate(specs)]


def test_batch_line(mod):
    """batch_line shows parallel calls joined by ' + ', batches separated by ' | '."""
    cases = [((READ, GREP, LS), "[batches] read_file + grep_search + run_shell"),
             ((WRITE, WRITE), "[batches] write_file | write_file"),
             ((READ, GREP, WRITE, READ, READ),
              "[batches] read_file + grep_search | write_file | read_file + read_file")]
    for specs, want in cases:
        got = mod.batch_line(mod.partition_tool_calls(calls(*specs), the_agent(mod)))
        assert got == want, (f"batch_line(partition_tool_calls([{', '.join(s[0] for s in specs)}])) "
                             f"returned\n    {got!r}\nbut should return\n    {want!r}")


def test_the_loop_shows_the_batches_first(mod, server, client, workspace, capsys):
    """A reply [read, grep, write, read]: one [batches] line, printed before the write runs."""
    (workspace / "a.txt").write_text("old\n")
    (workspace / ".claude").mkdir()
    (workspace / ".claude" / "settings.json").write_text('{"permissions": {"defaultMode": "acceptEdits"}}')
    server.add(reply(tool_use("read_file", {"file_path": "a.txt"}),
                     tool_use("grep_search", {"pattern": "old"}),
                     tool_use("write_file", {"file_path": "a.txt", "content": "new\n"}),
                     tool_use("read_file", {"file_path": "a.txt"})),
               reply(tool_use("run_shell", {"command": "echo alone"})),
               reply("done"))
    run_agent(mod, client, "rewrite a")
    out = capsys.readouterr().out.splitlines()
    shown = [i for i, line in enumerate(out) if line.startswith("[batches]")]
    assert shown, ("no line starting with '[batches]' was printed: print batch_line(...) "
                   "in run_all. Printed:\n" + "\n".join(out))
    assert len(shown) == 1, (
        f"print the line once per reply with more than one call; it was printed {len(shown)} "
        f"times: {[out[i] for i in shown]}")
    line = out[shown[0]]
    assert line == "[batches] read_file + grep_search | write_file | read_file", f"it said {line!r}"
    write = next(i for i, text in enumerate(out) if text.startswith("> write_file("))
    assert shown[0] < write, "print it before the calls run (at the start of run_all)"
