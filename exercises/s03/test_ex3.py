"""Checker for exercise s03 ex3 (stretch): `tar` may list, not extract.

    pytest exercises/s03/test_ex3.py

It calls your `tar_effects` on tar's three spellings of options, then the whole
classifier (`is_read_only_command`), then the gate: in plan mode a scripted model
may list a real archive, and may not unpack it.
"""

import io
import shlex
import tarfile
from pathlib import Path

from exercises.conftest import the_agent
from exercises.conftest import blocks, result_text, run_agent
from offline.server import reply, tool_use

LISTS = ["tf stock.tar", "tzf site.tgz", "tvzf site.tgz", "-tf stock.tar", "-tvzf site.tgz",
         "-t -f stock.tar", "-tfstock.tar", "--list --file=stock.tar",
         "--list --verbose --file stock.tar notes.txt", "-tjf old.tar.bz2", "-tJf new.tar.xz",
         "--list --gzip -f site.tgz", "-tf stock.tar -- -odd-name"]
NOT = {  # arguments -> why they are not read-only
    "xf stock.tar": "x extracts: it writes files, over yours",
    "-xzf site.tgz": "x extracts",
    "--extract --file=stock.tar": "--extract extracts",
    "-cf out.tar src": "c creates an archive",
    "-rf stock.tar notes.txt": "r appends to the archive",
    "--delete -f stock.tar notes.txt": "--delete rewrites the archive",
    "-t -I ./evil.sh -f site.tgz": "-I names a program for tar to run",
    "--use-compress-program=./evil.sh -tf site.tgz": "tar runs that program",
    "-tf stock.tar --to-command=sh": "--to-command runs a program",
    "--checkpoint-action=exec=sh -tf stock.tar": "--checkpoint-action=exec runs one",
    "-tf backup:stock.tar": "host:file is a remote archive: tar runs rsh",
    "--list --file=me@backup:stock.tar": "a remote archive",
    "tvf backup:stock.tar": "a remote archive, old style",
    "-tzf site.tgz -C /": "-C is not on the list of harmless options",
    "-tf stock.tar --remove-files": "an option not on the list: not provably harmless",
    "": "tar with nothing to do lists nothing",
    "-vf stock.tar": "no t, no --list: not a listing",
}


def words(args: str) -> list[str]:
    return shlex.split(args)


def test_listings_are_read_only(mod):
    """tar_effects finds no problem in a listing, in every spelling tar accepts, and
    returns the archive as the path it reads."""
    for args in LISTS:
        problem, paths, _ = mod.tar_effects("tar", words(args))
        assert problem is None, (
            f"tar_effects('tar', {words(args)!r}) says {problem!r}, but `tar {args}` "
            "only lists.")
        archive = next(w for w in words(args) if w.endswith(("tar", "tgz", "bz2", "xz")))
        assert [p.removeprefix("-f").removeprefix("--file=") for p in paths] == [
            archive.removeprefix("-tf").removeprefix("--file=")], (
            f"tar_effects('tar', {words(args)!r}) returned the paths {paths!r}: it should "
            f"return the archive, {archive!r}, and nothing else (members are not files).")


def test_everything_else_is_not(mod):
    """tar_effects names a problem for writes, programs tar would run, remote archives
    and options it does not know."""
    for args, why in NOT.items():
        problem, _, _ = mod.tar_effects("tar", words(args))
        assert problem, (
            f"tar_effects('tar', {words(args)!r}) finds no problem, but {why}.")


def test_the_classifier_knows_tar(mod):
    """is_read_only_command: tar listings pass, and the usual rules still hold for them."""
    for command in ("tar -tzf site.tgz", "tar tf stock.tar | head -3", "tar --list -f stock.tar"):
        assert mod.is_read_only_command(command), (
            f"is_read_only_command({command!r}) is False: is tar in READ_ONLY, and "
            "tar_effects in SPECIAL?")
    for command, why in (("tar -tf /etc/backup.tar", "the archive is outside the workspace"),
                         ("tar -tf stock.tar > list.txt", "the redirection writes a file"),
                         ("tar -tf stock.tar; tar -xf stock.tar", "the second part extracts")):
        assert not mod.is_read_only_command(command), (
            f"is_read_only_command({command!r}) is True, but {why}.")


def make_archive() -> None:
    with tarfile.open("site.tgz", "w:gz") as tar:
        data = b"<h1>hello</h1>\n"
        info = tarfile.TarInfo("site/index.html")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))


def test_plan_mode_lists_but_does_not_unpack(mod, server, client):
    """Plan mode: `tar -tzf site.tgz` runs unasked; `tar -xzf site.tgz` is denied."""
    make_archive()
    the_agent(mod).permissions.mode = "plan"
    server.add(reply(tool_use("run_shell", {"command": "tar -tzf site.tgz"}, id="toolu_list")),
               reply(tool_use("run_shell", {"command": "tar -xzf site.tgz"}, id="toolu_unpack")),
               reply("It holds one page."))
    run_agent(mod, client, "what is in site.tgz?")
    listed = blocks(server.requests[1]["messages"][-1])[0]
    assert not listed.get("is_error") and "site/index.html" in result_text(listed), (
        "in plan mode, `tar -tzf site.tgz` should run unasked and list the archive; its "
        f"tool_result was: {result_text(listed)!r}")
    unpacked = blocks(server.requests[2]["messages"][-1])[0]
    assert unpacked.get("is_error") and "plan mode" in result_text(unpacked), (
        f"`tar -xzf` must be denied in plan mode: {result_text(unpacked)!r}")
    assert not Path("site").exists(), "the archive was unpacked: the gate let it through"
