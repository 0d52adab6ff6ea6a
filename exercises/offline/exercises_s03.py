"""The offline scenarios of s03's exercises: `python exercises/s03/exK.py --offline`.

Each one is short and uses what its exercise adds; a starter plays it too, and shows
what the chapter alone decides (a denial in plan mode, a question in dontAsk).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tarfile

from .scenarios import nobody_answered, refused, results_of
from .server import reply, tool_use


def settings(workdir, **permissions) -> None:
    (workdir / ".claude").mkdir(exist_ok=True)
    (workdir / ".claude" / "settings.json").write_text(
        json.dumps({"permissions": permissions}, indent=2) + "\n")


def ex1_setup(workdir) -> None:
    """A repository with one commit and one stash (if git is installed)."""
    settings(workdir, defaultMode="plan")
    if not shutil.which("git"):
        return

    def git(*args):
        subprocess.run(["git", "-c", "user.name=Demo", "-c", "user.email=demo@example.com",
                        "-c", "core.hooksPath=/dev/null", *args], cwd=workdir,
                       capture_output=True, check=False)

    git("init", "-q")
    git("add", "-A")
    git("commit", "-q", "-m", "stockroom as it is")
    with (workdir / "inventory.py").open("a") as f:
        f.write("\n\ndef restock(item, qty):  # half done\n    ...\n")
    git("stash", "push", "-q", "-m", "restock, half done")


def outcome(result: str) -> str:
    return "denied" if refused(result) else "ran"


EX1 = {
    "title": "exercise 1: git stash list only reads (plan mode)",
    "setup": ex1_setup,
    "prompts": ["What did I leave half done? Plan mode: don't change anything."],
    "turns": [
        reply("Your stashes first.", tool_use("run_shell", {"command": "git stash list"})),
        reply(tool_use("run_shell", {"command": "git stash show -p stash@{0}"})),
        reply("That stash is old work; I'll drop it to tidy up.",
              tool_use("run_shell", {"command": "git stash drop"})),
        lambda request: reply(
            "In plan mode: " + ", ".join(
                f"`{command}` {outcome(results_of(request, 'run_shell', command=command)[0])}"
                for command in ("git stash list", "git stash show -p stash@{0}",
                                "git stash drop"))
            + "." + (" The stash holds a half-done restock function in inventory.py."
                     if "restock" in results_of(request, "run_shell",
                                                command="git stash show -p stash@{0}")[0]
                     else "")),
    ],
}


def how_denied(result: str) -> str:
    if not refused(result):
        return "it ran: someone approved it"
    if "never asks" in result:
        return "denied at once, without a question (dontAsk)"
    if nobody_answered(result):
        return "denied: it asked, and no one was at the terminal to answer"
    return "denied: it asked, and the answer was no"


EX2 = {
    "title": "exercise 2: dontAsk, a mode that never asks",
    "setup": lambda workdir: settings(workdir, defaultMode="dontAsk"),
    "asks": "before rm runs, unless the mode is dontAsk (then nothing is ever asked)",
    "prompts": ["Clear out the old build output, then tell me what the README says."],
    "turns": [
        reply(tool_use("run_shell", {"command": "rm -rf build"})),
        reply(tool_use("read_file", {"file_path": "README.md", "limit": 3})),
        lambda request: reply(
            "The README introduces stockroom. As for rm: "
            + how_denied(results_of(request, "run_shell", command="rm -rf build")[0]) + "."),
    ],
}


def ex3_setup(workdir) -> None:
    settings(workdir, defaultMode="plan")
    site = workdir / "site"
    site.mkdir()
    (site / "index.html").write_text("<h1>stockroom</h1>\n")
    (site / "stock.css").write_text("h1 { color: teal }\n")
    with tarfile.open(workdir / "site.tgz", "w:gz") as tar:
        tar.add(site, arcname="site")
    shutil.rmtree(site)


EX3 = {
    "title": "exercise 3: tar may list, not extract (plan mode)",
    "setup": ex3_setup,
    "prompts": ["What is in site.tgz? Plan mode: don't change anything."],
    "turns": [
        reply(tool_use("run_shell", {"command": "tar -tzf site.tgz"}),
              tool_use("run_shell", {"command": "tar tvzf site.tgz"})),
        reply("I'll unpack it to read index.html.",
              tool_use("run_shell", {"command": "tar -xzf site.tgz"})),
        lambda request: reply(
            "In plan mode: " + ", ".join(
                f"`{command}` {outcome(results_of(request, 'run_shell', command=command)[0])}"
                for command in ("tar -tzf site.tgz", "tar tvzf site.tgz", "tar -xzf site.tgz"))
            + ". Listing only reads; unpacking writes files."),
    ],
}

SCENARIOS = {"ex1": EX1, "ex2": EX2, "ex3": EX3}
