"""The shell's working directory sticks from one run_shell call to the next (s01 on).

As Claude Code's Bash tool: `cd sub` in one call, `pwd` in the next prints sub; a
directory outside the workspace is not kept, and the result says so.
"""

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from conftest import (chapter_params, load_chapter, result_text, run_agent, wait_until,
                      sent_tool_results, teaching_and_last, tool_use_block, write_settings)
from conftest import the_agent
from offline.server import reply, tool_use


@pytest.fixture(params=teaching_and_last("s01"))
def mod(request):
    return load_chapter(request.param)


@pytest.fixture(autouse=True)
def shell_allowed(workspace):
    """s03 on: an allow rule for every command, so the gate lets each one run (in the
    sandbox, where one is installed); s01 and s02 run every command anyway."""
    write_settings(workspace, {"allow": ["Bash"]})


def shell_calls(server, *commands):
    """One reply per command, then an answer: each call sees the one before it."""
    server.add(*[reply(tool_use("run_shell", {"command": c})) for c in commands],
               reply("done"))


def results(server) -> list:
    """Every tool_result the model received, in order."""
    return [r for request in server.requests[1:]
            for r in sent_tool_results(request)[-1:]]


def test_cd_then_pwd_prints_the_subfolder(mod, server, client, workspace):
    """`cd sub` in one call, `pwd` in the next: the path of sub."""
    (workspace / "sub").mkdir()
    shell_calls(server, "cd sub", "pwd")
    run_agent(mod, client, "go")
    first, second = results(server)
    assert not first["is_error"] and not second["is_error"]
    assert result_text(second).splitlines()[0] == str((workspace / "sub").resolve())


def test_a_cd_outside_the_workspace_is_reset_and_said(mod, server, client, workspace):
    """`cd /` is not kept: the result says the shell went back, and pwd proves it."""
    shell_calls(server, "cd / && pwd", "pwd")
    run_agent(mod, client, "go")
    first, second = results(server)
    assert "/\n" in result_text(first) or result_text(first).startswith("/")
    assert f"shell cwd was reset to {workspace.resolve()}" in result_text(first)
    assert result_text(second).splitlines()[0] == str(workspace.resolve())


@pytest.fixture
def folder_outside():
    """A small folder outside the workspace that the sandbox (s03 on) shows, read-only:
    not in /tmp (the sandbox's /tmp is its own) nor in the home (hidden). Not a
    system folder such as /usr: what is in it would be this machine's, not the test's."""
    path = Path(tempfile.mkdtemp(prefix="course-test-", dir="/var/tmp"))
    (path / "x.txt").write_text("x\n")
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_a_link_out_of_the_workspace_is_reset(mod, server, client, workspace,
                                              folder_outside):
    """A symbolic link that leads outside: pwd -P sees through it, the shell goes back."""
    os.symlink(folder_outside, workspace / "out")
    shell_calls(server, "cd out", "pwd")
    run_agent(mod, client, "go")
    first, second = results(server)
    assert "shell cwd was reset" in result_text(first)
    assert result_text(second).splitlines()[0] == str(workspace.resolve())


def test_a_failed_command_keeps_its_exit_status(mod, server, client, workspace):
    """The trap that records the directory changes no exit status."""
    (workspace / "sub").mkdir()
    shell_calls(server, "cd sub && exit 3", "pwd")
    run_agent(mod, client, "go")
    first, second = results(server)
    assert first["is_error"] and "exit code: 3" in result_text(first)
    assert result_text(second).splitlines()[0] == str((workspace / "sub").resolve())


@pytest.mark.parametrize("ending", [" # a comment", "  # a note: cd elsewhere"])
def test_a_command_that_ends_in_a_comment_or_backslash(mod, server, client, workspace,
                                                       ending):
    """A command that ends in a comment still runs and still moves the shell: the
    trap comes first, so nothing after the command can be swallowed by it."""
    (workspace / "sub").mkdir()
    shell_calls(server, "cd sub" + ending, "pwd")
    run_agent(mod, client, "go")
    first, second = results(server)
    assert "exit code: 0" in result_text(first)
    assert result_text(second).splitlines()[0] == str((workspace / "sub").resolve())


def test_a_deleted_directory_sends_the_shell_home(mod, server, client, workspace):
    """The shell's folder was removed: the next command starts in the workspace."""
    (workspace / "sub").mkdir()
    shell_calls(server, "cd sub", "rmdir ../sub", "pwd")
    run_agent(mod, client, "go")
    assert result_text(results(server)[2]).splitlines()[0] == str(workspace.resolve())


# --- the file tools keep to the workspace's root (s02 on) ------------------------------


@pytest.mark.parametrize("chapter", chapter_params("s02"))
def test_file_tools_start_at_the_workspace_root_after_a_cd(chapter, server, client,
                                                          workspace):
    """`cd sub`, then write_file("w.txt"): w.txt lands at the root, where the file
    tools' relative paths start (their descriptions say so); the shell stays in sub."""
    mod = load_chapter(chapter)
    write_settings(workspace, {"allow": ["Bash"], "defaultMode": "acceptEdits"})
    (workspace / "sub").mkdir()
    server.add(reply(tool_use("run_shell", {"command": "cd sub"})),
               reply(tool_use("write_file", {"file_path": "w.txt", "content": "x\n"})),
               reply(tool_use("run_shell", {"command": "pwd"})), reply("done"))
    run_agent(mod, client, "go")
    assert (workspace / "w.txt").read_text() == "x\n"
    assert not (workspace / "sub" / "w.txt").exists()
    assert result_text(results(server)[2]).splitlines()[0].endswith("/sub")


# --- the gate reads a command from the shell's folder (s03 on) -------------------------


@pytest.mark.parametrize("chapter", chapter_params("s03"))
def test_a_write_after_cd_is_judged_where_it_lands(chapter, server, client, workspace):
    """acceptEdits lets writes in the workspace run unasked, but never to git's config:
    after `cd .git`, `echo x > config` writes .git/config, and the gate sees that (it
    asks, and no one answers); the file is unchanged, by the gate and by the sandbox."""
    mod = load_chapter(chapter)
    write_settings(workspace, {"defaultMode": "acceptEdits"})
    (workspace / ".git").mkdir()
    (workspace / ".git" / "config").write_text("[core]\n")
    server.add(reply(tool_use("run_shell", {"command": "cd .git"})),
               reply(tool_use("run_shell", {"command": "echo x > config"})),
               reply("done"))
    run_agent(mod, client, "go")
    second = results(server)[1]
    assert second["is_error"] and "git's config" in result_text(second)
    assert (workspace / ".git" / "config").read_text() == "[core]\n"


@pytest.mark.parametrize("chapter", chapter_params("s03"))
def test_a_read_after_cd_runs_unasked(chapter, server, client, workspace):
    """Default mode: after `cd sub`, `cat ../a.txt` reads a file of the workspace, so it
    runs unasked, as `cat a.txt` would from the root; `cat ../../x` leaves it, and asks
    (no one answers here: it is not run)."""
    mod = load_chapter(chapter)
    write_settings(workspace, {})  # no rules: the gate alone decides
    (workspace / "sub").mkdir()
    (workspace / "a.txt").write_text("inside\n")
    (workspace.parent / "x").write_text("not-for-the-model\n")
    shell_calls(server, "cd sub", "cat ../a.txt", "cat ../../x")
    run_agent(mod, client, "go")
    first, second, third = results(server)
    assert not second["is_error"] and "inside" in result_text(second)
    assert third["is_error"] and "not-for-the-model" not in result_text(third)
    assert "outside the workspace" in result_text(third)  # asked, and no one answered


@pytest.mark.parametrize("chapter", chapter_params("s04"))
def test_a_hook_is_told_where_the_shell_stands(chapter, server, client, workspace,
                                               trusted_folder):
    """A PreToolUse hook's input `cwd` is the shell's folder after a `cd`, as Claude
    Code's; the hook itself still runs at the workspace's root."""
    mod = load_chapter(chapter)
    (workspace / "sub").mkdir()
    (workspace / ".claude").mkdir(exist_ok=True)
    (workspace / ".claude" / "settings.json").write_text(json.dumps({
        "permissions": {"allow": ["Bash"]},
        "hooks": {"PreToolUse": [{"matcher": "*", "hooks": [{
            "type": "command", "command": "cat >> hook-inputs.jsonl; echo >> hook-inputs.jsonl"}]}]}}))
    shell_calls(server, "cd sub", "true")
    run_agent(mod, client, "go")
    inputs = [json.loads(line) for line in
              (workspace / "hook-inputs.jsonl").read_text().splitlines() if line]
    assert [Path(i["cwd"]) for i in inputs] == [workspace.resolve(),
                                              (workspace / "sub").resolve()]


# --- s06: a cd runs alone, a background command starts where the shell stands ----------


def test_a_cd_never_runs_beside_the_next_call():
    """Two read-only calls in one reply may run together, unless one moves the shell:
    `cd sub` then `ls` are two batches, so ls lists sub."""
    mod = load_chapter("s06_concurrency")
    calls = [tool_use_block("run_shell", id=f"t{n}", command=c)
             for n, c in enumerate(["ls", "cd sub", "ls", "cat a.txt"])]
    assert [[b.id for b in batch] for batch in mod.partition_tool_calls(calls, the_agent(mod))] == [
        ["t0"], ["t1"], ["t2", "t3"]]


def test_one_reply_cd_then_pwd_prints_the_subfolder(server, client, workspace):
    """s06 runs safe calls in parallel: `cd sub` and `pwd` in the same reply still run
    one after the other, and pwd prints sub."""
    mod = load_chapter("s06_concurrency")
    write_settings(workspace, {"allow": ["Bash"]})
    (workspace / "sub").mkdir()
    server.add(reply(tool_use("run_shell", {"command": "cd sub"}),
                     tool_use("run_shell", {"command": "pwd"})), reply("done"))
    run_agent(mod, client, "go")
    pwd = sent_tool_results(server.requests[-1])[1]
    assert result_text(pwd).splitlines()[0] == str((workspace / "sub").resolve())


def test_a_background_command_starts_where_the_shell_stands(server, client, workspace):
    """After `cd sub`, a background `pwd -P > here.txt` writes sub/here.txt (an edit
    there: acceptEdits lets it run)."""
    mod = load_chapter("s06_concurrency")
    write_settings(workspace, {"allow": ["Bash"], "defaultMode": "acceptEdits"})
    (workspace / "sub").mkdir()
    server.add(reply(tool_use("run_shell", {"command": "cd sub"})),
               reply(tool_use("run_shell", {"command": "pwd -P > here.txt",
                                            "run_in_background": True})),
               reply("done"))
    run_agent(mod, client, "go")
    wait_until(lambda: (workspace / "sub" / "here.txt").is_file())
    the_agent(mod).close()
    assert (workspace / "sub" / "here.txt").read_text().strip() == str(
        (workspace / "sub").resolve())


def test_a_subagent_has_a_shell_of_its_own(server, client, workspace):
    """Two subagents side by side: one `cd a`, the other `cd b`, then each `pwd`; each
    prints its own folder, and the main agent's shell has not moved (its pwd is the
    workspace). A subagent starts where its parent's shell stands."""
    from offline.server import routed
    mod = load_chapter("s06_concurrency")
    write_settings(workspace, {"allow": ["Bash"]})
    for name in "ab":
        (workspace / name).mkdir()

    def agent_call(name):
        return tool_use("agent", {"description": f"in {name}", "prompt": f"Work in {name}.",
                                  "subagent_type": "general-purpose"})

    def steps(name):
        return [reply(tool_use("run_shell", {"command": f"cd {name}"})),
                reply(tool_use("run_shell", {"command": "pwd"})), reply(f"done {name}")]
    server.add(reply(agent_call("a"), agent_call("b")),
               *routed({"Work in a.": steps("a"), "Work in b.": steps("b")}),
               reply(tool_use("run_shell", {"command": "pwd"})), reply("all done"))
    run_agent(mod, client, "go")
    printed = {r["messages"][0]["content"]: result_text(sent_tool_results(r)[-1])
               for r in server.requests if len(r["messages"]) == 5}
    for name in "ab":
        assert printed[f"Work in {name}."].splitlines()[0] == str(
            (workspace / name).resolve())
    main_pwd = sent_tool_results(server.requests[-1])[-1]
    assert result_text(main_pwd).splitlines()[0] == str(workspace.resolve())
