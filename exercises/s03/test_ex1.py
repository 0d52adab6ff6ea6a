"""Checker for exercise s03 ex1 (warm-up): `git stash list` only reads.

    pytest exercises/s03/test_ex1.py

It calls your `git_stash_read_only` directly, then the classifier on whole commands
(`is_read_only_command`), then the gate: in plan mode, a scripted model may list
the stashes of a real git repository, and may not drop one.
"""

import os
import subprocess
from pathlib import Path

from exercises.conftest import blocks, result_text, run_agent
from offline.server import reply, tool_use

READS = [["list"], ["show"], ["show", "-p", "stash@{1}"], ["list", "--oneline"],
         ["show", "--stat"]]
WRITES = {  # args -> what the command would do to your work
    (): "`git stash` alone stashes your changes and resets the files",
    ("push", "-m", "wip"): "push stashes your changes",
    ("save",): "save is the old spelling of push",
    ("pop",): "pop changes files and drops the stash",
    ("apply",): "apply changes files",
    ("drop",): "drop deletes a stash for good",
    ("clear",): "clear deletes every stash",
    ("branch", "fix"): "branch checks out a new branch",
    ("create",): "create writes an object",
    ("store", "abc123"): "store writes to the stash ref",
    ("-p",): "`git stash -p` is `git stash push -p`",
    ("--", "notes.txt"): "`git stash -- FILE` stashes that file",
    ("-u",): "`git stash -u` stashes, untracked files too",
}


def test_stash_subcommands_that_read(mod):
    """git_stash_read_only is True for `list` and `show`, with or without options."""
    for args in READS:
        assert mod.git_stash_read_only(list(args)) is True, (
            f"git_stash_read_only({args!r}) should be True: `git stash {' '.join(args)}` "
            "only reads.")


def test_stash_subcommands_that_write(mod):
    """git_stash_read_only is False for everything that changes your work or the stash."""
    for args, why in WRITES.items():
        assert mod.git_stash_read_only(list(args)) is False, (
            f"git_stash_read_only({list(args)!r}) should be False: {why}. Only the "
            "first word decides: `list` or `show`, nothing else.")


def test_whole_commands(mod):
    """is_read_only_command now lets `git stash list` and `git stash show` through."""
    for command in ("git stash list", "git stash show -p", "git --no-pager stash list",
                    "git stash list | head -5"):
        assert mod.is_read_only_command(command), (
            f"is_read_only_command({command!r}) is False. git_read_only refuses any "
            "subcommand not in GIT_READ_ONLY before it looks further: add 'stash' there, "
            "and send `git stash ...` to git_stash_read_only.")
    for command in ("git stash", "git stash drop", "git stash list; git stash clear",
                    "git stash pop && git status", "git stash show --output=out.txt"):
        assert not mod.is_read_only_command(command), (
            f"is_read_only_command({command!r}) is True, but the command changes things.")


def test_the_rest_of_git_is_unchanged(mod):
    """Other git commands are judged as before."""
    for command, want in (("git status", True), ("git log -3", True), ("git branch", True),
                          ("git branch -D old", False), ("git push", False),
                          ("git -c core.pager=less stash list", False)):
        assert mod.is_read_only_command(command) is want, (
            f"is_read_only_command({command!r}) should still be {want}: change only "
            "what `git stash` needs.")


def git(*args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
           "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", *args], env=env, check=True, capture_output=True,
                          text=True).stdout


def test_plan_mode_lists_stashes_but_does_not_drop_them(mod, server, client):
    """Plan mode, a repository with one stash: `list` runs unasked, `drop` is denied."""
    git("init", "-q")
    Path("notes.txt").write_text("one\n")
    git("add", "notes.txt")
    git("commit", "-q", "-m", "first")
    Path("notes.txt").write_text("two\n")
    git("stash", "push", "-q", "-m", "half-done")
    mod.SESSION["mode"] = "plan"
    server.add(reply(tool_use("run_shell", {"command": "git stash list"}, id="toolu_list")),
               reply(tool_use("run_shell", {"command": "git stash drop"}, id="toolu_drop")),
               reply("There is one stash."))
    run_agent(mod, client, "what is stashed?")
    listed = blocks(server.requests[1]["messages"][-1])[0]
    assert not listed.get("is_error") and "half-done" in result_text(listed), (
        "in plan mode, `git stash list` should run without asking (it only reads) and "
        f"show the stash; its tool_result was: {result_text(listed)!r}")
    dropped = blocks(server.requests[2]["messages"][-1])[0]
    assert dropped.get("is_error") and "plan mode" in result_text(dropped), (
        f"`git stash drop` must be denied in plan mode; its tool_result was: "
        f"{result_text(dropped)!r}")
    assert "half-done" in git("stash", "list"), "the stash was dropped: the gate let it through"
