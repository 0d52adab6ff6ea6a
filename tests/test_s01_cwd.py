"""The shell's working directory sticks from one run_shell call to the next (s01 on).

As Claude Code's Bash tool: `cd sub` in one call, `pwd` in the next prints sub; a
directory outside the workspace is not kept, and the result says so.
"""

import os

import pytest

from conftest import (chapter_params, load_chapter, result_text, run_agent,
                      sent_tool_results, write_settings)
from offline.server import reply, tool_use


@pytest.fixture(params=chapter_params("s01"))
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


def test_a_link_out_of_the_workspace_is_reset(mod, server, client, workspace):
    """A symbolic link that leads outside: pwd -P sees through it, the shell goes back."""
    os.symlink("/usr", workspace / "out")  # a folder the sandbox shows, read-only
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
