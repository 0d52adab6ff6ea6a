"""Checker for exercise s06 ex3 (stretch): a failed command stops its siblings.

    pytest exercises/s06/test_ex3.py

It checks `shell_failed` on its own, then runs parallel batches through the streaming
loop: a command that fails while two others run beside it (blocked on named pipes,
exercises/s06/fifos.py) must get them killed and cancelled, with every result in call
order; a failed read must stop nothing. Which calls run, and which were killed, is
seen on the pipes, not timed.
"""

import threading

from exercises.conftest import blocks, result_text, run_agent, tool_use_block
from exercises.s06.fifos import Fifos
from offline.server import reply, tool_use


def wait_until(condition, seconds: float) -> bool:
    event = threading.Event()
    for _ in range(int(seconds / 0.02)):
        if condition():
            return True
        event.wait(0.02)
    return condition()


def test_shell_failed(mod):
    """A command fails on an is_error result or an exit code other than 0; other tools never."""
    shell = tool_use_block("run_shell", command="make test")
    cases = [(shell, "ok\n[exit code: 0]", False, False),
             (shell, "boom\n[exit code: 2]", False, True),
             (shell, "[timed out after 5s: the command and everything it started were killed]",
              False, True),
             (shell, "Permission denied: run_shell(command='make test') was not run.", True, True),
             (tool_use_block("read_file", file_path="x"), "Error: file not found: x", True, False)]
    for block, output, is_error, want in cases:
        got = mod.shell_failed(block, output, is_error)
        assert got is want, (
            f"shell_failed({block.name}, {output!r}, is_error={is_error}) returned {got!r}, "
            f"not {want!r}")


def test_a_failed_command_stops_the_commands_beside_it(mod, server, client, workspace):
    """[read notes, cat a, grep TODO gate, cat b]: the grep fails while both cats run;
    the cats are killed and cancelled, the read (done by then) keeps its result."""
    fifos = Fifos(workspace, ["a", "gate", "b"])
    (workspace / "notes.txt").write_text("a note\n")
    seen = {}

    def feed():
        try:
            seen["running"] = fifos.wait_running(["a", "gate", "b"], 3, 20)
            fifos.release("gate")  # no TODO in gate, none.txt missing: exit 2
            seen["killed"] = wait_until(
                lambda: fifos.reader_gone("a") and fifos.reader_gone("b"), 5)
        finally:
            fifos.close()  # whatever happened, let every cat end

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    server.add(reply(tool_use("read_file", {"file_path": "notes.txt"}, id="toolu_read"),
                     tool_use("run_shell", {"command": "cat a", "timeout": 30_000}, id="toolu_a"),
                     tool_use("run_shell", {"command": "grep TODO gate none.txt", "timeout": 30_000}, id="toolu_grep"),
                     tool_use("run_shell", {"command": "cat b", "timeout": 30_000}, id="toolu_b"),
                     event_delay=0.005),
               reply("stopped"))
    _, final = run_agent(mod, client, "look for TODOs")
    feeder.join(30)
    assert len(seen.get("running", [])) == 3, (
        f"the three commands should run side by side first; only {seen.get('running')} did")
    results = blocks(server.requests[1]["messages"][-1])
    ids = [r["tool_use_id"] for r in results]
    assert ids == ["toolu_read", "toolu_a", "toolu_grep", "toolu_b"], (
        f"one tool_result per call, in call order: {ids}")
    read, a, grep, b = results
    assert "[exit code: 2]" in result_text(grep) and grep.get("is_error"), (
        f"the failed command keeps its own result, an error (exit code 2): "
        f"{result_text(grep)!r}")
    assert "a note" in result_text(read), f"the read had finished: keep its result: {result_text(read)!r}"
    for name, r in (("cat a", a), ("cat b", b)):
        assert r.get("is_error") and result_text(r).startswith("Cancelled:"), (
            f"`{name}` was still running when `grep TODO gate none.txt` failed: its result should be "
            f"an is_error 'Cancelled: ...', not {result_text(r)[:80]!r}")
        assert "grep TODO gate" in result_text(r), (
            f"the cancel message should name the call that failed: {result_text(r)!r}")
    assert seen.get("killed"), (
        "the cats were not killed: stop a cancelled call's processes (self.procs[i]), "
        "or they run on after their result was given.")
    assert final == "stopped"


def test_a_failed_read_stops_nothing(mod, server, client, workspace):
    """[read a missing file, cat a]: the read fails, the command still runs to its end."""
    fifos = Fifos(workspace, ["a"])

    def feed():
        try:
            fifos.wait_running(["a"], 1, 20)
        finally:
            fifos.close()

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    server.add(reply(tool_use("read_file", {"file_path": "missing.txt"}, id="toolu_read"),
                     tool_use("run_shell", {"command": "cat a", "timeout": 30_000}, id="toolu_a")),
               reply("ok"))
    run_agent(mod, client, "read")
    feeder.join(30)
    read, a = blocks(server.requests[1]["messages"][-1])
    assert read.get("is_error"), f"the read of a missing file fails: {result_text(read)!r}"
    assert "content of a" in result_text(a) and not a.get("is_error"), (
        "a failed read must not cancel its siblings (only a failed command does): "
        f"`cat a` returned {result_text(a)!r}")


def test_success_changes_nothing(mod, server, client, workspace):
    """Commands that all succeed: every result is their own, in order."""
    server.add(reply(*[tool_use("run_shell", {"command": f"echo call-{i}"}, id=f"toolu_{i}")
                       for i in range(4)]),
               reply("four"))
    run_agent(mod, client, "count")
    results = blocks(server.requests[1]["messages"][-1])
    assert [f"call-{i}" in result_text(r) for i, r in enumerate(results)] == [True] * 4, (
        f"results: {[result_text(r)[:40] for r in results]}")
