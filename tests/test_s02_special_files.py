"""Files that are not files, and links where results are saved (issue 28).

- read_file, edit_file and grep_search read regular files only: a FIFO (which would
  block the agent forever), a socket or a device is a clear is_error result, at once.
  A test that would hang is stopped by a deadline and unblocks the FIFO it waits on.
- A cut result is saved under `.tool-results/` only: a symbolic link there (the folder
  itself, or planted at a saved file's name) is never followed out of the workspace;
  the cut result still comes back, and says why the whole could not be saved.
Runs against s02 and every later chapter.
"""

import os
import socket
import threading
from pathlib import Path

import pytest

from conftest import (call_tool, load_chapter, result_text, run_agent, sent_tool_results,
                      teaching_and_last, tool_use_block)
from conftest import the_agent
from offline.server import reply, tool_use


@pytest.fixture(params=teaching_and_last("s02"))
def mod(request):
    return load_chapter(request.param)


@pytest.fixture
def outside(workspace) -> Path:
    """A folder beside the workspace, with a file no tool may touch."""
    folder = workspace.parent / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text("TOPSECRET\n")
    return folder


def within(seconds: float, fifo: Path, run):
    """run(), or a failure if it is still waiting after `seconds`: then the FIFO gets
    a writer and is closed, so the stuck reader sees its end and the test goes on."""
    done = {}
    worker = threading.Thread(target=lambda: done.update(value=run()), daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # wakes the reader
        worker.join(10)
        pytest.fail(f"still waiting on the FIFO {fifo.name} after {seconds} s")
    return done["value"]


def test_reading_a_fifo_is_an_error_not_a_hang(mod, server, client, trusted):
    """The model reads, edits and searches a FIFO: three is_error results, at once."""
    fifo = trusted / "pipe"
    os.mkfifo(fifo)
    server.add(reply(tool_use("read_file", {"file_path": "pipe"}),
                     tool_use("edit_file", {"file_path": "pipe", "old_string": "a",
                                            "new_string": "b"}),
                     tool_use("grep_search", {"pattern": "a", "path": "pipe"})),
               reply("ok"))
    within(30, fifo, lambda: run_agent(mod, client, "read the pipe"))
    results = sent_tool_results(server.requests[-1])
    assert [r["is_error"] for r in results] == [True, True, True]
    for r in results:
        assert "pipe is not a regular file: it is a FIFO" in result_text(r)


def test_edit_and_a_whole_tree_search_pass_a_fifo_by(mod, trusted):
    """A FIFO beside the files: grep_search over the workspace skips it, and
    edit_file's own read refuses it."""
    os.mkfifo(trusted / "pipe")
    (trusted / "a.txt").write_text("alpha\n")
    output, is_error = within(30, trusted / "pipe",
                              lambda: call_tool(mod, "grep_search", pattern="alpha"))
    assert not is_error and "a.txt:1:alpha" in output

    def edit() -> str:
        with pytest.raises(mod.ToolError) as refused:
            mod.TOOL_HANDLERS["edit_file"](the_agent(mod), file_path="pipe", old_string="a",
                                           new_string="b")
        return str(refused.value)

    assert "not a regular file: it is a FIFO" in within(30, trusted / "pipe", edit)


def test_a_socket_and_a_device_are_refused(mod, workspace):
    """A Unix socket in the workspace is refused by name; /dev/zero, which never ends,
    is outside the workspace, and refused as a device even when reached directly."""
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind("sock")
        output, is_error = call_tool(mod, "read_file", file_path="sock")
    assert is_error and "sock is not a regular file: it is a socket" in output
    os.symlink("/dev/zero", workspace / "zero")
    output, is_error = call_tool(mod, "read_file", file_path="zero")
    assert is_error
    with pytest.raises(mod.ToolError, match="it is a character device"):
        mod.open_regular(Path("/dev/zero"))


# --- .tool-results: never a way out -------------------------------------------------

BIG = "seq 1 100000; seq 1 100000 >&2"  # both streams cut, and the result as a whole


def test_a_results_folder_that_is_a_link_is_not_followed(mod, workspace, outside):
    """`.tool-results` links to a folder outside: nothing is written there; the result
    comes back cut, and says the whole could not be saved, and why."""
    os.symlink(outside, workspace / ".tool-results")
    output, is_error = call_tool(mod, "run_shell", command=BIG)
    assert not is_error
    assert output.startswith("1\n2\n3\n") and "cut from the middle" in output
    assert "could not be saved in .tool-results (it is a symbolic link)" in output
    assert sorted(os.listdir(outside)) == ["secret.txt"]
    assert (outside / "secret.txt").read_text() == "TOPSECRET\n"


@pytest.mark.parametrize("kind", ["symlink", "hardlink"])
def test_a_link_planted_at_a_saved_name_is_not_followed(mod, workspace, outside, kind):
    """The next result's file name (its tool_use id) is already a link to a file
    outside: that file is left as it was, and the whole result is saved in the folder."""
    (workspace / ".tool-results").mkdir()
    planted = workspace / ".tool-results" / "toolu_next.txt"
    getattr(os, kind.replace("hardlink", "link"))(outside / "secret.txt", planted)
    output, is_error = mod.execute_tool(
        tool_use_block("run_shell", id="toolu_next", command=BIG), the_agent(mod))
    assert not is_error and "is saved in .tool-results/toolu_next.txt" in output
    assert (outside / "secret.txt").read_text() == "TOPSECRET\n"
    assert not planted.is_symlink() and planted.read_text().startswith("1\n2\n3\n")
