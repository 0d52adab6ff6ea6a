"""sandbox: the operating system confines a shell command (s03 on).

code.py decides the policy: what a command may write (nothing for a read-only verdict,
else the workspace), which paths stay read-only anyway (PROTECTED), what it may not
read (your home, Read-denied paths). This file only turns that policy into what the
operating system runs, and a first reading can skip it:
- Linux: bubblewrap (`bwrap`), found on PATH. The command gets a view of the file
  system built from mounts: everything read-only, a private /tmp, home and denied
  paths hidden, the writable paths bound writable, the protected ones read-only on
  top; no network (a network namespace of its own), its own process IDs, killed with
  us (--die-with-parent: when run_shell kills bwrap, everything inside dies with it).
- macOS: `sandbox-exec` with a Seatbelt profile written for each command.
The same file stands in every chapter from s03 on.

Reading map:
  s03 · sandbox: its settings                 Claude Code's `sandbox` keys, one line
  s03 · sandbox: can one start here           probe(): the reason it cannot, or None
  s03 · sandbox: the programs a command runs  programs(): PATH and Python, visible
  s03 · sandbox: bubblewrap on Linux          bwrap_argv()
  s03 · sandbox: Seatbelt on macOS            seatbelt_profile()
"""

import functools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

# === s03 · sandbox: its settings ===
# Claude Code's `sandbox` keys, and their values when no settings file sets them.
DEFAULTS = {"enabled": True, "failIfUnavailable": False,
            "allowUnsandboxedCommands": True, "filesystem": {}}


def sandbox_settings(files: list) -> dict:
    """The `sandbox` block of each settings file (paths from the workspace; a later
    file wins) over DEFAULTS. A file that is missing or broken adds nothing."""
    merged = dict(DEFAULTS)
    for file in files:
        try:
            block = json.loads(Path(file).read_text(encoding="utf-8")).get("sandbox")
        except (OSError, ValueError, AttributeError):
            continue
        merged.update(block if isinstance(block, dict) else {})
    return merged


def sandbox_missing(settings: dict) -> str | None:
    """Why shell commands run unconfined (the classifier alone decides), or None."""
    if not settings["enabled"]:
        return "sandbox.enabled is false in the settings"
    return probe()


def sandbox_summary(settings: dict) -> str:
    """One line at start: what confines shell commands, or why nothing does."""
    if (missing := sandbox_missing(settings)) is None:
        return ("sandbox: shell commands run confined (no network, no home, writes "
                "only where allowed)")
    fail = settings["failIfUnavailable"]
    return (f"sandbox: {'ERROR' if fail else 'none'}: {missing}. Shell commands "
            + ("will not run." if fail else "run unconfined: the classifier alone "
               "decides (best effort)."))


# === s03 · sandbox: can one start here ===
INSTALL = {  # how to get a sandbox, said once at start when none can start
    "linux": "install bubblewrap: sudo apt-get install bubblewrap (Debian, Ubuntu) "
             "or sudo dnf install bubblewrap (Fedora)",
    "darwin": "sandbox-exec ships with macOS; is /usr/bin/sandbox-exec there?"}


@functools.cache
def probe() -> str | None:
    """Why no sandbox can start on this machine (with the fix), or None. Tried once:
    a container may have bwrap but forbid the namespaces it needs."""
    tool = {"linux": "bwrap", "darwin": "sandbox-exec"}.get(sys.platform)
    if tool is None:
        return f"no sandbox for {sys.platform} (Linux and macOS only)"
    if shutil.which(tool) is None:
        return f"{tool} is not installed: {INSTALL[sys.platform]}"
    argv = (bwrap_argv("true", [], [], [], Path("/")) if tool == "bwrap"
            else seatbelt_argv("true", [], [], [], Path("/")))
    try:
        run = subprocess.run(argv, capture_output=True, text=True, timeout=10,
                             check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"{tool} does not run ({e})"
    if run.returncode != 0:
        why = (run.stderr.strip().splitlines() or ["no reason given"])[-1]
        return (f"{tool} cannot start here ({why}); user namespaces may be "
                "blocked, as in many containers")
    return None


def argv_for(command: str, writable: list, read_only: list, hidden: list,
             workspace: Path) -> list:
    """What to run instead of `bash -c command` on this platform."""
    make = bwrap_argv if sys.platform == "linux" else seatbelt_argv
    return make(command, writable, read_only, hidden, workspace)


# === s03 · sandbox: the programs a command runs ===
def programs(hidden: list, workspace: Path) -> list:
    """The folders a command needs in order to run at all, read-only even where they
    lie in a hidden folder: those on PATH and the Python running the agent (a venv,
    pyenv or uv Python under your home, `rg` from the ripgrep wheel in the venv's bin;
    bwrap's private /tmp hides a venv there). Never a hidden folder itself, one a
    Read rule hides, or one in the workspace (it is there already)."""
    home, denied = hidden[:1], hidden[1:]
    found = [Path(p) for p in os.environ.get("PATH", "").split(os.pathsep)]
    out = []
    for path in found + [Path(sys.prefix), Path(sys.base_prefix)]:
        # pyenv, rbenv, asdf: a shim runs the manager's own program and the version
        # chosen, both under the folder above the shims (~/.pyenv): that folder, then
        if path.name == "shims":
            path = path.parent
        path = path.resolve() if path.is_absolute() and path.is_dir() else None
        if path is None or path in out or workspace in (path, *path.parents):
            continue
        cover = [h for h in home + [Path("/tmp")] if h in path.parents]
        if cover and not any(d == path or d in path.parents or path in d.parents
                             for d in denied):
            out.append(path)
    return out


# === s03 · sandbox: bubblewrap on Linux ===
def bwrap_argv(command: str, writable: list, read_only: list, hidden: list,
               workspace: Path) -> list:
    """bwrap's arguments, in order: a later mount covers an earlier one."""
    argv = ["bwrap", "--die-with-parent", "--new-session", "--unshare-all",
            "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            "--tmpfs", "/tmp"]                                 # a private /tmp
    for path in hidden:                                       # home, denied paths
        argv += (["--tmpfs", str(path)] if path.is_dir()
                 else ["--ro-bind", "/dev/null", str(path)])
    for path in programs(hidden, workspace):                  # PATH, the Python
        argv += ["--ro-bind", str(path), str(path)]
    for path in [workspace] + [p for p in writable if p != workspace]:
        argv += ["--bind" if path in writable else "--ro-bind", str(path), str(path)]
    for path in read_only:                                    # protected paths
        argv += ["--ro-bind", str(path), str(path)]
    for path in hidden:  # again: a denied file inside the workspace stays hidden
        if path != workspace and workspace in path.parents:
            argv += (["--tmpfs", str(path)] if path.is_dir()
                     else ["--ro-bind", "/dev/null", str(path)])
    return argv + ["--chdir", str(workspace), "--", "bash", "-c", command]


# === s03 · sandbox: Seatbelt on macOS ===
def seatbelt_profile(writable: list, read_only: list, hidden: list,
                     workspace: Path) -> str:
    """A Seatbelt profile: in SBPL the last rule that matches wins."""
    def paths(action: str, where: list) -> list:
        return [f'({action} (subpath "{p}"))' for p in where]
    return "\n".join(["(version 1)", "(allow default)", "(deny network*)",
                      "(deny file-write*)",
                      ('(allow file-write* (subpath "/private/tmp") '
                       '(subpath "/private/var/folders") (literal "/dev/null"))'),
                      *paths("allow file-write*", writable),
                      *paths("deny file-write*", read_only),
                      *paths("deny file-read*", hidden[:1]),
                      *paths("allow file-read*", [workspace]),
                      *paths("allow file-read*", programs(hidden, workspace)),
                      *paths("deny file-read*", hidden[1:])])


def seatbelt_argv(command: str, writable: list, read_only: list, hidden: list,
                  workspace: Path) -> list:
    profile = seatbelt_profile(writable, read_only, hidden, workspace)
    return ["sandbox-exec", "-p", profile, "bash", "-c", command]
