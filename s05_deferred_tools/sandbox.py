"""sandbox: the operating system confines a shell command (s03 on).

code.py decides the policy: what a command may write (nothing for a read-only verdict,
else the workspace), which paths stay read-only anyway (protected names, what git and
the agent itself run later), what it may not read (your home, Read-denied paths). This
file finds the paths that policy names (one walk of the workspace) and turns it into
what the operating system runs, and a first reading can skip it:
- Linux: bubblewrap (`bwrap`), found on PATH. The command gets a view of the file
  system built from mounts: everything read-only, a private /tmp, home and denied
  paths hidden, the writable paths bound writable, the protected ones read-only on
  top; no network (a network namespace of its own), its own process IDs, killed with
  us (--die-with-parent), and no capabilities (--cap-drop ALL: run as root, it could
  otherwise undo every mount).
- macOS: `sandbox-exec` with a Seatbelt profile written for each command.
- Both: limits on memory and processes (ulimit), set before the command starts.
The same file stands in every chapter from s03 on.

Reading map:
  s03 · sandbox: its settings                 Claude Code's `sandbox` keys, one line
  s03 · sandbox: can one start here           probe(); home_problem(): a workspace
                                              that holds your home
  s03 · sandbox: the programs a command runs  programs(): PATH and Python, visible
  s03 · sandbox: one walk of the workspace    walk_workspace(), scan(): denied paths,
                                              protected names
  s03 · sandbox: what git reads               git_reads(): config, hooks, includes
  s03 · sandbox: what a write leaves alone    protected_paths(): names, git, programs
  s03 · sandbox: names that do not exist yet  placeholders(): held while it runs
  s03 · sandbox: a file tool writes what was checked
                                              write_unfollowed(): through no link
  s03 · sandbox: limits                       limited(): memory and processes
  s03 · sandbox: bubblewrap on Linux          bwrap_argv(), end_group()
  s03 · sandbox: Seatbelt on macOS            seatbelt_profile()
"""

import contextlib
import errno
import functools
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

# === s03 · sandbox: its settings ===
# Claude Code's `sandbox` keys, and their values when no settings file sets them.
DEFAULTS = {"enabled": True, "failIfUnavailable": False,
            "allowUnsandboxedCommands": True, "filesystem": {}}


def sandbox_settings(settings: list) -> dict:
    """The `sandbox` block of each settings file's JSON (a later file wins) over
    DEFAULTS. A file that is missing or broken (not a dict) adds nothing."""
    merged = dict(DEFAULTS)
    for data in settings:
        block = data.get("sandbox") if isinstance(data, dict) else None
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


def home_problem(workspace: Path) -> str | None:
    """Started in your home folder (or above it), the workspace would hold your
    home: the sandbox could hide none of it (keys, your shell's start-up files)."""
    home = Path.home().resolve()
    if home != Path("/") and home.is_relative_to(workspace):
        return (f"the workspace {workspace} holds your home folder, which the sandbox "
                "hides from every command; run the agent from a project folder")
    return None


def argv_for(command: str, writable: list, read_only: list, hidden: list,
             workspace: Path, start: Path | None = None) -> list:
    """What to run instead of `bash -c command` on this platform, started in `start`
    (the shell's directory; the workspace if None). Starting elsewhere in the
    workspace widens nothing: what may be written stays as given."""
    if sys.platform != "linux":  # sandbox-exec starts where run_shell's Popen does
        return seatbelt_argv(command, writable, read_only, hidden, workspace)
    return bwrap_argv(command, writable, read_only, hidden, workspace, start)


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
        try:
            path = path.resolve() if path.is_absolute() and path.is_dir() else None
        except OSError:  # a folder on PATH we may not look into: not shown
            path = None
        if path is None or path in out or workspace in (path, *path.parents):
            continue
        cover = [h for h in home + [Path("/tmp")] if h in path.parents]
        if cover and not any(d == path or d in path.parents or path in d.parents
                             for d in denied):
            out.append(path)
    return out


# === s03 · sandbox: one walk of the workspace ===
class SandboxError(Exception):
    """The policy cannot be built: the command must not run (fail closed)."""


MAX_SCAN = 200_000  # files and folders one walk may visit before it gives up
SCAN_SECONDS = 5


def scan(workspace: Path, denied, names: set, skip=()) -> tuple[list, list]:
    """Every path in the workspace that `denied(path)` covers and every one whose name
    is in `names`, at any depth, but in the folders of `skip`: (denied, named).
    `denied` may be None (no Read rule). The walk stays in the workspace: a link is
    judged where it stands (a denied one hides what it points to), never walked; a
    link to /usr costs nothing, and what lies outside is read-only or hidden by a
    rule of its own already. A walk that cannot finish raises SandboxError: a path it
    did not see could not be hidden. Strings, not Paths, in the loop: it visits every
    entry."""
    stack, skip, hits, named = [str(workspace)], {str(p) for p in skip}, [], []
    count, start = 0, time.monotonic()
    while stack:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        count += len(entries)
        if count > MAX_SCAN or time.monotonic() - start > SCAN_SECONDS:
            raise SandboxError(
                f"the walk of the workspace gave up after {count:,} files and folders "
                f"in {time.monotonic() - start:.1f} s (it stops past {MAX_SCAN:,} or "
                f"{SCAN_SECONDS} s), before it found every protected and Read-denied "
                "path. Run the agent from a smaller folder.")
        for entry in entries:
            if entry.name in names:
                named.append(Path(entry.path))
            if denied and denied(Path(entry.path)):  # a link: hidden where it points
                hits.append(Path(os.path.realpath(entry.path)))
            elif entry.is_dir(follow_symlinks=False) and entry.path not in skip:
                stack.append(entry.path)
    return hits, named


def walk_workspace(workspace: Path, patterns: list, matches, names: set,
                   skip: list) -> tuple[list, list]:
    """scan() for code.py's policy: the paths the Read deny `patterns` cover
    (`matches(pattern, path)`), and for a pattern outside the workspace the folder it
    starts at; the protected `names` at any depth (none for a read-only command)."""
    if not patterns and not names:
        return [], []
    denied, named = scan(workspace, patterns and (lambda path: any(
        matches(p, path) for p in patterns)), names,
        skip=[] if patterns else skip)  # no Read rule: no need to walk the venv
    return denied + [outside_root(p) for p in patterns if p.startswith("//")], named


def outside_root(pattern: str) -> Path:
    """The folder a Read deny rule outside the workspace starts at (`//data/**/*.key`
    -> /data): hidden whole, which may hide more than the rule, never less."""
    fixed = [part for part in pattern[1:].split("/")]
    stop = next((i for i, p in enumerate(fixed) if any(c in p for c in "*?[")),
                len(fixed))
    return Path("/".join(fixed[:stop]) or "/").resolve()


# === s03 · sandbox: what git reads ===
@functools.lru_cache(maxsize=64)
def git_config_reads(config: Path, stamp: tuple) -> tuple:
    """The files a git config includes (found or not) and the hooks folder it names,
    read by git itself (`stamp`: the file's mtime and size, so an edit made outside
    the sandbox is read again)."""
    try:
        run = subprocess.run(["git", "config", "--file", str(config), "--includes",
                              "--show-origin", "--null", "--list"],
                             capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ()
    out, fields = [], run.stdout.split("\0")
    for origin, entry in zip(fields[::2], fields[1::2]):
        key, _, value = entry.partition("\n")
        here = Path(origin.removeprefix("file:"))
        out += [(here, "file")] if here != config else []
        if key.lower() == "core.hookspath":
            out.append((Path(os.path.expanduser(value)), "folder"))
        elif key.lower().startswith("include") and key.lower().endswith(".path"):
            out.append((here.parent / os.path.expanduser(value), "file"))
    return tuple(out)


def git_reads(gitdir: Path, worktree: Path) -> dict:
    """Where git, run later outside any sandbox, reads config and hooks from, for the
    repository whose git folder is `gitdir`: its config (and config.worktree, read
    once `git sparse-checkout init` sets extensions.worktreeConfig) and hooks,
    `commondir` (it points git at another folder's config), submodules' git folders,
    the files its config includes and the folder core.hooksPath names (husky's
    .husky/). {path: "file" | "folder"}: what each is, or is held as while missing."""
    if gitdir.is_file():  # `.git` is a file in a worktree or submodule: gitdir: path
        text = gitdir.read_text(encoding="utf-8", errors="replace").strip()
        gitdir = (worktree / text.removeprefix("gitdir:").strip()).resolve()
    out = {gitdir / "config": "file", gitdir / "config.worktree": "file",
           gitdir / "hooks": "folder", gitdir / "commondir": "file",
           gitdir / "modules": "folder"}
    if (common := gitdir / "commondir").is_file():
        text = common.read_text(encoding="utf-8", errors="replace").strip()
        if (other := (gitdir / text).resolve()) != gitdir:
            out |= {other / "config": "file", other / "hooks": "folder"}
    for config in [p for p in out if p.name == "config" and p.is_file()]:
        stat = config.stat()
        out |= {worktree / path: kind for path, kind in git_config_reads(
            config.resolve(), (stat.st_mtime_ns, stat.st_size))}
    return out


# === s03 · sandbox: what a write leaves alone ===
def protected_paths(workspace: Path, held: list, named: list, programs: list) -> dict:
    """What a write must leave as it is, {path: "file" | "folder"}: each entry of
    `held` (or the first missing part of one, held while it runs), the protected
    names the walk found (a `.git` file too: its gitdir: line tells git where to
    read), what git reads for each repository, and the folders of `programs` (the
    agent runs them later) in the workspace, a venv whole (site-packages too)."""
    out = {first_missing(workspace, e): "folder" for e in held}
    out |= dict.fromkeys([p for p in named if p.name != ".git" or not p.is_dir()],
                         "folder")
    for git in [workspace / ".git", *(p for p in named if p.name == ".git")]:
        out |= git_reads(git, git.parent) if os.path.lexists(git) else {}
    out |= dict.fromkeys([venv_of(p, workspace) for p in programs
                          if p.is_relative_to(workspace) and p != workspace], "folder")
    out = {Path(os.path.normpath(p)): kind for p, kind in out.items()}  # .git/../x
    if links := [p for p in out if p.is_symlink()]:
        shown = (links[0].relative_to(workspace)
                 if links[0].is_relative_to(workspace) else links[0])
        raise SandboxError(f"{shown} is a symbolic link: a protected name cannot be "
                           "held in place while it is one")
    return out


def venv_of(folder: Path, workspace: Path) -> Path:
    """The venv that holds `folder` (its bin/ on PATH), else `folder`: a `.pth` file
    planted in its site-packages runs in every python3 it starts."""
    for above in [folder, *folder.parents]:
        if above == workspace or not above.is_relative_to(workspace):
            break
        if (above / "pyvenv.cfg").is_file():
            return above
    return folder


def first_missing(workspace: Path, entry: str) -> Path:
    """The entry's path, or its first part that does not exist yet (no .git: .git)."""
    path = workspace
    for part in Path(entry).parts:
        path /= part
        if not os.path.lexists(path):
            break
    return path


# === s03 · sandbox: names that do not exist yet ===
# A mount needs a path that exists. A protected name that does not exist yet (no
# .claude folder, no .git/commondir) would be free to create, so while a command runs
# it is held by an empty placeholder, read-only inside; removed when no command that
# holds it is left. `commondir` holds ".": git then reads the same folder as before.
HOLDERS: dict = {}  # {Path: commands holding it}
HOLDING = threading.Lock()


@contextlib.contextmanager
def placeholders(held: dict):
    """Make each missing path of `held` ({path: "file" | "folder"}) for as long as
    the block runs; then remove those no other command holds."""
    made = []
    with HOLDING:
        for path, kind in held.items() if sys.platform == "linux" else ():
            if HOLDERS.get(path) or not os.path.lexists(path):
                with contextlib.suppress(OSError):
                    if not HOLDERS.get(path):  # Seatbelt's rules need no placeholder
                        make_placeholder(path, kind)
                    HOLDERS[path] = HOLDERS.get(path, 0) + 1
                    made.append(path)
    try:
        yield
    finally:
        with HOLDING:
            for path in made:
                HOLDERS[path] -= 1
                if not HOLDERS[path]:
                    del HOLDERS[path]
                    with contextlib.suppress(OSError):
                        path.rmdir() if path.is_dir() else path.unlink()


def make_placeholder(path: Path, kind: str) -> None:
    """A folder (git ignores an empty one: `git add -A` takes nothing), or an empty
    file where git reads one; `commondir` holds ".", which leads git where it was."""
    if kind == "folder":
        path.mkdir()
    else:
        path.write_text(".\n" if path.name == "commondir" else "")


# === s03 · sandbox: a file tool writes what was checked ===
# write_file and edit_file run in the agent's own process, outside the sandbox. The
# gate checks the path they will write; a command running beside them (in the
# background) could swap a folder on the way for a link to .git between the check
# and the write. So the write walks to its folder one part at a time from the
# workspace's descriptor, never through a link (O_NOFOLLOW): a part swapped for a
# link fails the walk, and the folder it holds cannot be swapped from under it.
def write_unfollowed(path: Path, workspace: Path, data: bytes) -> None:
    """Write `data` to `path` (resolved) atomically, in its folder reached from the
    workspace (or from / for an outside path the user let through) without following
    a link, the folders that are missing made on the way. SandboxError if a part is
    a link or no folder now: nothing is written."""
    base = workspace if path.is_relative_to(workspace) else Path("/")
    fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in path.parent.relative_to(base).parts:
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, dir_fd=fd)
            inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW,
                            dir_fd=fd)
            os.close(fd)
            fd = inner
        replace_in(fd, path.name, data)
    except OSError as e:
        if e.errno not in (errno.ELOOP, errno.ENOTDIR):
            raise
        raise SandboxError(f"cannot write {path}: a folder on its way is a file or a "
                           "symbolic link (a link swapped in since the check is never "
                           "followed); nothing was written") from None
    finally:
        os.close(fd)


def replace_in(folder: int, name: str, data: bytes) -> None:
    """Write `data` to a new file in the folder `folder`, then rename it over `name`:
    readers see the old file or the new one. It keeps the old file's mode (a new
    one gets 0666 less the umask); a link at `name` is replaced, never followed."""
    tmp = f".{name[:200]}.{os.urandom(4).hex()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666,
                 dir_fd=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
            with contextlib.suppress(FileNotFoundError):
                old = os.stat(name, dir_fd=folder, follow_symlinks=False)
                if old.st_mode & 0o170000 == 0o100000:  # a regular file: its mode
                    os.fchmod(f.fileno(), old.st_mode & 0o7777)
        os.replace(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        os.unlink(tmp, dir_fd=folder)
        raise


# === s03 · sandbox: limits ===
# Set inside the sandbox by bash's ulimit before the command starts, so a runaway
# command fails on its own (`jq -n '[range(2e8)]'`, a fork bomb) instead of taking
# the machine. The timeout and the output limit are run_shell's (code.py).
MEMORY_MB = 4096      # data a process may allocate (ulimit -d)
MORE_PROCESSES = 256  # processes it may start, over those you already run (ulimit -u)


def limited(command: str) -> list:
    """bash that sets the limits, then runs `command` in a fresh bash (its text
    untouched, as "$1"). Root is exempt from ulimit -u (the kernel's rule)."""
    limits = f"ulimit -d {MEMORY_MB * 1024}"
    if (running := processes()) is not None:
        limits += f" -u {running + MORE_PROCESSES}"
    return ["bash", "-c", f'{limits} 2>/dev/null; exec bash -c "$1"', "bash", command]


def processes() -> int | None:
    """How many processes your user runs now (threads too: the kernel counts them),
    on Linux; None where we cannot tell."""
    if not os.path.isdir("/proc"):
        return None
    count = 0
    for entry in os.scandir("/proc"):
        with contextlib.suppress(OSError):  # one that ends while we count
            if entry.name.isdigit() and entry.stat().st_uid == os.getuid():
                count += os.stat(f"/proc/{entry.name}/task").st_nlink - 2
    return count


# === s03 · sandbox: bubblewrap on Linux ===
def bwrap_argv(command: str, writable: list, read_only: list, hidden: list,
               workspace: Path, start: Path | None = None) -> list:
    """bwrap's arguments, in order: a later mount covers an earlier one."""
    argv = ["bwrap", "--die-with-parent", "--new-session", "--unshare-all",
            "--cap-drop", "ALL",                              # root too: no mount
            "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            "--tmpfs", "/tmp"]                                 # a private /tmp
    home = hidden[:1]
    for path in hidden:    # home, denied paths (those in the home are hidden with it)
        argv += [] if any(h in path.parents for h in home) else hide(path)
    for path in programs(hidden, workspace):                  # PATH, the Python
        argv += ["--ro-bind", str(path), str(path)]
    # writable: the workspace, then inside it git folders bound to themselves (a
    # folder that is a mount point cannot be renamed or replaced)
    for path in [workspace] + [p for p in writable if p != workspace]:
        argv += ["--bind" if path in writable else "--ro-bind", str(path), str(path)]
    for path in read_only:     # protected paths (in the hidden home: hidden already)
        if os.path.lexists(path) and (workspace in path.parents
                                      or not any(h in path.parents for h in home)):
            argv += ["--ro-bind", str(path), str(path)]
    for path in hidden:  # again: a denied file inside the workspace stays hidden
        if path != workspace and workspace in path.parents:
            argv += hide(path)
    return argv + ["--chdir", str(start or workspace), "--", *limited(command)]


def hide(path: Path) -> list:
    """An empty folder or file over `path`; nothing where nothing is (a link's
    missing target)."""
    if not path.exists():
        return []
    return (["--tmpfs", str(path)] if path.is_dir()
            else ["--ro-bind", "/dev/null", str(path)])


def end_group(pid: int) -> None:
    """Kill process group `pid` and every child of its leader. subtle: bwrap's child
    (the sandbox's pid 1) leaves our group (--new-session) before it asks to die with
    its parent; killed in between, bwrap would leave it running for good. So: stop the
    group (no new child can start), kill each child (a pid namespace's pid 1 takes
    every process in it along), then the group. macOS: no /proc, no such child."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGSTOP)
        with contextlib.suppress(OSError):
            children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
            for child in children:
                os.kill(int(child), signal.SIGKILL)
        os.killpg(pid, signal.SIGKILL)


# === s03 · sandbox: Seatbelt on macOS ===
def seatbelt_profile(writable: list, read_only: list, hidden: list,
                     workspace: Path) -> str:
    """A Seatbelt profile: in SBPL the last rule that matches wins. Its rules name
    paths, not mounts: a protected name that does not exist yet is covered too."""
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
    return ["sandbox-exec", "-p", profile, *limited(command)]
