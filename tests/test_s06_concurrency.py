"""s06: concurrency safety per input, batches in order, parallel runs, streaming early start.

Each test runs against s06 and every later chapter. Overlap in time is proven by event
order, never by a speed threshold: calls that read named pipes (FIFOs) only finish if
they are all running at once, so a serial loop fails the test instead of being slow.
"""

import errno
import json
import os
import re
import threading
import time

import pytest

from conftest import the_agent
from conftest import concurrency_safe
from conftest import (GUARD, assert_no_process, chapter_params, load_chapter,
                      result_text, run_agent, run_cli, sent_tool_results, tool_use_block)
from offline.server import reply, tool_use


@pytest.fixture(params=chapter_params("s06"))
def mod(request):
    return load_chapter(request.param)


def settings(workspace, **permissions):
    """Write .claude/settings.json with these permissions."""
    (workspace / ".claude").mkdir(exist_ok=True)
    (workspace / ".claude" / "settings.json").write_text(json.dumps({"permissions": permissions}))


def calls(*specs):
    """SDK ToolUseBlocks from (name, input) pairs, ids toolu_0, toolu_1, ..."""
    return [tool_use_block(name, id=f"toolu_{i}", **tool_input)
            for i, (name, tool_input) in enumerate(specs)]


READ = ("read_file", {"file_path": "a.txt"})
WRITE = ("write_file", {"file_path": "a.txt", "content": "new"})
LS = ("run_shell", {"command": "ls"})
RM = ("run_shell", {"command": "rm -f a.txt"})


def shape(batches):
    return [[block.id for block in batch] for batch in batches]


# --- concurrency safety, per input ---------------------------------------------------

@pytest.mark.parametrize("name, tool_input, safe", [
    ("read_file", {"file_path": "a.txt"}, True),
    ("list_files", {"pattern": "*.py"}, True),
    ("grep_search", {"pattern": "x"}, True),
    ("web_fetch", {"url": "http://127.0.0.1/"}, True),
    ("agent", {"description": "d", "prompt": "p"}, True),
    ("run_shell", {"command": "ls -la"}, True),
    ("run_shell", {"command": "git status"}, True),
    ("run_shell", {"command": "sleep 1"}, True),
    ("run_shell", {"command": "rm -rf build"}, False),
    ("run_shell", {"command": "ls; rm x"}, False),          # one unsafe part is enough
    ("run_shell", {"command": "cat $(rm x)"}, False),       # unprovable: not safe
    ("run_shell", {"command": "echo hi > out.txt"}, False),
    ("run_shell", {}, False),                               # bad input fails closed
    ("write_file", {"file_path": "a.txt", "content": ""}, False),
    ("edit_file", {"file_path": "a.txt", "old_string": "a", "new_string": "b"}, False),
    ("no_such_tool", {}, False),                            # unknown fails closed
])
def test_concurrency_safety_is_decided_per_input(mod, name, tool_input, safe):
    assert concurrency_safe(mod, name, tool_input) is safe


def test_input_that_is_not_an_object_is_not_safe(mod):
    assert concurrency_safe(mod, "read_file", "a.txt") is False


# --- partitioning ------------------------------------------------------------------

def test_partition_all_safe_is_one_batch(mod):
    assert shape(mod.partition_tool_calls(calls(READ, LS, READ), the_agent(mod))) == [["toolu_0", "toolu_1", "toolu_2"]]


def test_partition_all_unsafe_is_one_batch_each(mod):
    assert shape(mod.partition_tool_calls(calls(WRITE, RM, WRITE), the_agent(mod))) == [["toolu_0"], ["toolu_1"], ["toolu_2"]]


def test_partition_mixed_keeps_order_and_never_merges_across_an_unsafe_call(mod):
    blocks = calls(READ, LS, WRITE, READ, RM, RM, READ, READ)
    assert shape(mod.partition_tool_calls(blocks, the_agent(mod))) == [
        ["toolu_0", "toolu_1"], ["toolu_2"], ["toolu_3"], ["toolu_4"], ["toolu_5"],
        ["toolu_6", "toolu_7"]]


def test_partition_one_call_and_no_call(mod):
    assert shape(mod.partition_tool_calls(calls(READ), the_agent(mod))) == [["toolu_0"]]
    assert shape(mod.partition_tool_calls(calls(WRITE), the_agent(mod))) == [["toolu_0"]]
    assert mod.partition_tool_calls([], the_agent(mod)) == []


def test_partition_more_than_ten_safe_calls_is_still_one_batch(mod):
    """The pool runs at most MAX_PARALLEL at once; the batch itself is not cut."""
    blocks = calls(*[READ] * 13)
    assert shape(mod.partition_tool_calls(blocks, the_agent(mod))) == [[b.id for b in blocks]]
    assert mod.MAX_PARALLEL == 10


# --- running batches -----------------------------------------------------------------

def test_a_write_between_reads_keeps_its_place(mod, server, client, workspace):
    """[read a, write a, read a]: the first read sees the old text, the second the new."""
    settings(workspace, defaultMode="acceptEdits")
    (workspace / "a.txt").write_text("old\n")
    server.add(reply(tool_use("read_file", {"file_path": "a.txt"}, id="toolu_r1"),
                     tool_use("write_file", {"file_path": "a.txt", "content": "new\n"}, id="toolu_w"),
                     tool_use("read_file", {"file_path": "a.txt"}, id="toolu_r2")),
               reply("done"))
    run_agent(mod, client, "rewrite a")
    results = sent_tool_results(server.requests[1])
    assert [r["tool_use_id"] for r in results] == ["toolu_r1", "toolu_w", "toolu_r2"]
    assert "old" in result_text(results[0]) and "new" not in result_text(results[0])
    assert not results[1]["is_error"]
    assert "new" in result_text(results[2])
    assert (workspace / "a.txt").read_text() == "new\n"


class FifoWriter:
    """Feeds named pipes. Opening a FIFO for writing only succeeds while a reader has it
    open, so `opened` records the moment each reader (a `cat` tool call) was running."""

    def __init__(self, workspace, names, order, timeout=GUARD):
        self.paths = {n: workspace / n for n in names}
        for path in self.paths.values():
            os.mkfifo(path)
        self.order, self.timeout = order, timeout
        self.opened, self.failed = {}, None
        self.thread = threading.Thread(target=self.run, daemon=True)

    def open_when_read(self, name):
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                fd = os.open(self.paths[name], os.O_WRONLY | os.O_NONBLOCK)
                self.opened[name] = time.monotonic()
                return fd
            except OSError as e:
                if e.errno != errno.ENXIO or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    def run(self):
        fds = {}
        try:
            for name in self.order:  # every reader must be running at the same time ...
                fds[name] = self.open_when_read(name)
            for name in self.order:  # ... and only then does any of them get its data
                fd = fds.pop(name)
                os.write(fd, f"content of {name}\n".encode())
                os.close(fd)  # end of file: that `cat` exits
                time.sleep(0.05)
        except OSError as e:
            self.failed = e
        finally:
            for fd in fds.values():
                os.close(fd)


def test_safe_calls_really_overlap_and_results_keep_call_order(mod, server, client, workspace):
    """Three `cat fifo` calls can only finish if all three run at once; they finish in
    the order c, b, a, yet the results come back a, b, c."""
    writer = FifoWriter(workspace, ["a", "b", "c"], order=["c", "b", "a"])
    writer.thread.start()
    server.add(reply(*[tool_use("run_shell", {"command": f"cat {n}", "timeout": 600_000}, id=f"toolu_{n}")
                       for n in "abc"]),
               reply("read all three"))
    _, final = run_agent(mod, client, "read the pipes")
    writer.thread.join(30)
    assert writer.failed is None, f"the calls did not run at the same time: {writer.failed}"
    assert final == "read all three"
    results = sent_tool_results(server.requests[1])
    assert [r["tool_use_id"] for r in results] == ["toolu_a", "toolu_b", "toolu_c"]
    assert [f"content of {n}" in result_text(r) for n, r in zip("abc", results)] == [True] * 3
    assert all("exit code: 0" in result_text(r) for r in results)


def test_denial_inside_a_parallel_batch_hits_only_that_call(mod, server, client, workspace):
    """A deny rule stops one call of a parallel batch; its neighbours still run."""
    settings(workspace, deny=["Bash(ls:*)"])
    (workspace / "a.txt").write_text("alpha\n")
    server.add(reply(tool_use("read_file", {"file_path": "a.txt"}, id="toolu_1"),
                     tool_use("run_shell", {"command": "ls"}, id="toolu_2"),
                     tool_use("grep_search", {"pattern": "alpha"}, id="toolu_3")),
               reply("ok"))
    run_agent(mod, client, "look")
    first, denied, third = sent_tool_results(server.requests[1])
    assert not first["is_error"] and "alpha" in result_text(first)
    assert denied["is_error"] and "denied" in result_text(denied).lower()
    assert not third["is_error"] and "a.txt" in result_text(third)


def test_parallel_calls_ask_one_question_at_a_time(mod, server, client, workspace, monkeypatch):
    """Three calls in one batch that all need approval: the questions never overlap,
    and the answer (no) is what each call's result reports."""
    active, most, lock = [0], [0], threading.Lock()

    def slow_user(tool_name, tool_input, reason, allow_always, say):
        with lock:
            active[0] += 1
            most[0] = max(most[0], active[0])
        time.sleep(0.3)
        with lock:
            active[0] -= 1
        return "no", "the test user said no"

    monkeypatch.setattr(mod, "ask_user", slow_user)
    for i in range(3):  # reads outside the workspace: safe, but they ask first
        (workspace.parent / f"outside{i}.txt").write_text("far away\n")
    server.add(reply(*[tool_use("read_file", {"file_path": f"../outside{i}.txt"}) for i in range(3)]),
               reply("ok"))
    run_agent(mod, client, "fetch")
    results = sent_tool_results(server.requests[1])
    assert len(results) == 3 and all(r["is_error"] for r in results)
    assert all("the test user said no" in result_text(r) for r in results)
    assert active == [0] and most[0] == 1


# --- streaming early start --------------------------------------------------------

def test_streaming_starts_a_safe_call_before_the_reply_ends_and_holds_an_unsafe_one(
        mod, server, client, workspace):
    """The safe first call starts while the rest of the reply still streams; the unsafe
    call, and the safe call after it, wait for the end of the stream and for it."""
    settings(workspace, allow=["Bash(touch b_ran)"])
    writer = FifoWriter(workspace, ["a"], order=["a"])
    writer.thread.start()
    seen = {}

    def watch():  # notes when the unsafe call's file appears
        deadline = time.monotonic() + GUARD  # a guard against a hang
        while not (workspace / "b_ran").exists() and time.monotonic() < deadline:
            time.sleep(0.005)
        seen["b_ran"] = time.monotonic()

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    server.add(reply("Reading the pipe first.",
                     tool_use("run_shell", {"command": "cat a", "timeout": 600_000}, id="toolu_a"),
                     tool_use("run_shell", {"command": "touch b_ran"}, id="toolu_b"),
                     tool_use("run_shell", {"command": "ls b_ran"}, id="toolu_c"),
                     tool_use("write_file", {"file_path": "note.txt", "content": "x" * 600}, id="toolu_d"),
                     event_delay=0.05),
               reply("done"))
    run_agent(mod, client, "go")
    writer.thread.join(30)
    watcher.join(30)
    stream_end = server.finished[0]
    assert writer.failed is None
    assert writer.opened["a"] < stream_end  # started before the reply ended
    assert seen["b_ran"] >= stream_end            # the unsafe call waited for the end
    a, b, c, d = sent_tool_results(server.requests[1])
    assert "content of a" in result_text(a) and "exit code: 0" in result_text(a)
    assert not b["is_error"]
    assert not c["is_error"] and "b_ran" in result_text(c)  # ran after b, not early
    assert [r["tool_use_id"] for r in (a, b, c, d)] == ["toolu_a", "toolu_b", "toolu_c", "toolu_d"]


def test_the_reply_is_streamed_and_its_text_printed_as_it_comes(mod, server, client, capsys):
    server.add(reply("Hello from the stream."))
    _, final = run_agent(mod, client, "hi")
    assert final == "Hello from the stream."
    assert server.requests[0]["stream"] is True
    assert "Hello from the stream." in capsys.readouterr().out


HOOK = """import json, sys
call = json.load(sys.stdin)
if "secret" in call["tool_input"].get("file_path", ""):
    print("no reading secrets", file=sys.stderr)
    sys.exit(2)
"""


def test_hook_block_inside_a_parallel_batch_hits_only_that_call(mod, server, client,
                                                               trusted_folder):
    """A PreToolUse hook (exit 2) blocks one read of a parallel batch; the others run
    (the folder is trusted, s04 on: its hooks run)."""
    if not hasattr(mod, "run_hooks"):
        pytest.skip("this chapter has no hooks yet (s04 is merged into the chain later)")
    workspace = trusted_folder
    (workspace / "guard.py").write_text(HOOK)
    (workspace / ".claude").mkdir()
    (workspace / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"PreToolUse": [
        {"matcher": "Read", "hooks": [{"type": "command", "command": "python3 guard.py"}]}]}}))
    for name in ("a.txt", "secret.txt", "b.txt"):
        (workspace / name).write_text(f"text of {name}\n")
    server.add(reply(*[tool_use("read_file", {"file_path": n}, id=f"toolu_{i}")
                       for i, n in enumerate(("a.txt", "secret.txt", "b.txt"))]),
               reply("ok"))
    run_agent(mod, client, "read them")
    a, secret, b = sent_tool_results(server.requests[1])
    assert "text of a.txt" in result_text(a) and not a["is_error"]
    assert secret["is_error"] and "no reading secrets" in result_text(secret)
    assert "text of secret.txt" not in result_text(secret)
    assert "text of b.txt" in result_text(b) and not b["is_error"]


def test_one_shot_prints_the_streamed_answer_once(mod, server, workspace):
    server.add(reply(tool_use("run_shell", {"command": "echo hi"})), reply("The answer is 42."))
    proc = run_cli(mod.__name__.split(".")[0], "what?", cwd=workspace,
                   ANTHROPIC_API_KEY="test-key", ANTHROPIC_BASE_URL=server.url)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("The answer is 42.") == 1


@pytest.mark.parametrize("chapter", [p for p in chapter_params("s06") if p.id == "s06"])
def test_s06_demo_shows_early_start_batches_and_subagents(chapter, workspace, tmp_path):
    """The demo: three calls start while the reply streams, the slow tests start in
    the background, two subagents work meanwhile, then the notification, the output
    file read, and no process left behind."""
    proc = run_cli(chapter, "--offline", cwd=workspace, TMPDIR=str(tmp_path), timeout=GUARD)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    early = out.index("[reply complete: list_files, grep_search, run_shell started while "
                      "it streamed]")
    started = out.index("> run_shell(command='sleep 1; python3 -m unittest")
    assert out.index("> list_files(") < early < started
    assert "batch 1 · 3 calls in parallel: " in out and "batch 2 · run_shell " in out
    assert re.search(r"batch 1 · 3 calls in parallel: \d+\.\d+ s after the reply ended "
                     r"\(with a head start while it streamed\)", out), out
    for line in re.findall(r"calls in parallel: .*", out):  # a batch shorter than its
        batch, _, *each = (float(s) for s in re.findall(r"(\d+\.\d+) s\b", line))
        assert "a head start" in line or batch >= max(each) - 0.01, line  # longest call
    assert "Command running in background with ID: bash_1." in out
    told = out.index("[background bash_1 completed (exit code 0): the model is told]")
    assert started < out.index("> task_create(") < told  # other work while they ran
    assert told < out.index("> read_file(file_path='.tool-results/bash_1.output')")
    assert "FAILED (failures=2)" in out[told:]  # read from the output file, afterwards
    assert "[check total_value] > grep_search(" in out and "[check report] > grep_search(" in out
    assert "ignores the quantity" in out and "I changed nothing." in out
    # issue 41: a fork reads its parent's whole prompt from the cache; a background
    # agent answers at once and later; both claimed and completed a task of one list
    parent = re.search(r"Two checks: .*\n  \[input tokens: ([\d,]+) read from the cache, "
                       r"([\d,]+) written", out)
    fork = re.search(r"\[check total_value\]   \[input tokens: ([\d,]+) read", out)
    whole = sum(int(n.replace(",", "")) for n in parent.groups())
    assert int(fork[1].replace(",", "")) == whole
    assert "Agent running in background with ID: agent_1." in out
    assert "[background agent_1 finished: the model is told]" in out
    assert ("#1 [completed] Check total_value (check total_value)\n"
            "  #2 [completed] Check the low-stock report (check report)") in out
    assert_no_process("sleep 1; python3 -m unittest")


def test_more_than_ten_safe_calls_all_run_and_keep_their_order(mod, server, client):
    server.add(reply(*[tool_use("run_shell", {"command": f"echo call-{i}"}, id=f"toolu_{i:02d}")
                       for i in range(12)]),
               reply("twelve"))
    run_agent(mod, client, "count to twelve")
    results = sent_tool_results(server.requests[1])
    assert [r["tool_use_id"] for r in results] == [f"toolu_{i:02d}" for i in range(12)]
    assert all(f"call-{i}" in result_text(r) for i, r in enumerate(results))
