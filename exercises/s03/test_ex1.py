"""Checker for exercise s03 ex1 (warm-up): `git stash list` only reads.

    pytest exercises/s03/test_ex1.py

It calls your `git_stash_reads`, then the classifier (`is_read_only_command`) on
whole git commands, then the gate:
in plan mode, a scripted model may list the stashes of a real git repository, and may
not drop one.
"""

import os
import subprocess
from pathlib import Path

from exercises.conftest import the_agent
from exercises.conftest import blocks, result_text, run_agent
from offline.server import reply, tool_use

READS = ["git stash list", "git stash show", "git stash show -p stash@{1}",
         "git stash list --oneline", "git stash show --stat", "git --no-pager stash list",
         "git stash list | head -5"]
WRITES = {  # command -> what it would do to your work
    "git stash": "`git stash` alone stashes your changes and resets the files",
    "git stash push -m wip": "push stashes your changes",
    "git stash save": "save is the old spelling of push",
    "git stash pop": "pop changes files and drops the stash",
    "git stash apply": "apply changes files",
    "git stash drop": "drop deletes a stash for good",
    "git stash clear": "clear deletes every stash",
    "git stash branch fix": "branch checks out a new branch",
    "git stash store abc123": "store writes to the stash ref",
    "git stash -p": "`git stash -p` is `git stash push -p`",
    "git stash -- notes.txt": "`git stash -- FILE` stashes that file",
    "git stash list; git stash clear": "its second part deletes every stash",
    "git stash show --output=out.txt": "--output writes a file (it is on no list)",
    "git stash list --show-signature": "--show-signature runs gpg (it is on no list)",
}


def test_git_stash_reads(mod):
    """git_stash_reads is True for `list` and `show` first, False for everything else."""
    for operands, want in ((["list"], True), (["show"], True), (["show", "stash@{1}"], True),
                           ([], False), (["push", "wip"], False), (["pop"], False),
                           (["drop"], False), (["clear"], False), (["apply"], False),
                           (["branch", "fix"], False), (["store", "abc123"], False),
                           (["notes.txt"], False)):
        assert mod.git_stash_reads(operands) is want, (
            f"git_stash_reads({operands!r}) should be {want}: only a first operand of "
            "`list` or `show` reads; `git stash` alone is `git stash push`.")


def test_stash_list_and_show_read(mod):
    """is_read_only_command lets `git stash list` and `git stash show` through."""
    for command in READS:
        assert mod.is_read_only_command(command), (
            f"is_read_only_command({command!r}) is False: {mod.shell_effects(command).problem}."
            " Give `stash` a row in GIT_READ_ONLY with the options `list` and `show` "
            "accept (log's and diff's), and a rule in git_effects, beside branch's and "
            "config's, that uses git_stash_reads.")


def test_every_other_stash_command_changes_things(mod):
    """Everything else that `git stash` does changes your work or the stash."""
    for command, why in WRITES.items():
        assert not mod.is_read_only_command(command), (
            f"is_read_only_command({command!r}) is True, but {why}. Only the first "
            "operand decides: `list` or `show`, nothing else, not even nothing.")


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
    the_agent(mod).permissions.mode = "plan"
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
