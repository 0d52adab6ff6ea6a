"""protected: what no write may reach without a question (s03 on).

code.py's gate asks before any write to these places, whichever tool writes and in
every mode; the sandbox (sandbox.py) keeps them read-only for a shell command. This
file says which they are and finds them; code.py decides what to do about them
(protected_target, confine). The same file stands in every chapter from s03 on.

Reading map (a first reading can skip it: the chapter's README lists the places):
  s03 · paths: where a path really leads      resolve_path(): `..`, `~`, links;
                                              written_path(): as written
  s03 · paths: the protected table            PROTECTED, and protected_write()
  s03 · paths: the one protected set          protected_set(): found in this
                                              workspace, what git and the agent run
"""

import os
import re
from pathlib import Path

from rules import path_rule_matches, protected_entry
from sandbox import protected_paths, walk_workspace


# === s03 · paths: where a path really leads ===
def resolve_path(path: str) -> Path:
    """Where `path` really points (`..`, `~`, links followed); the gate judges it."""
    full = Path.cwd().resolve() / Path(path).expanduser()
    try:
        return full.resolve()
    except (OSError, RuntimeError, ValueError):  # a loop; a NUL byte (no such file)
        return Path(os.path.normpath(full))


def written_path(path: str) -> Path:
    """`path` as written: from the workspace, `~` expanded, `..` folded, no link
    followed (what a rule or a protected name sees before the links lead on)."""
    return Path(os.path.normpath(Path.cwd() / os.path.expanduser(path)))


def rule_paths(path: str, deny: bool) -> list[Path]:
    """The path as resolved and as written; allow rules use only the resolved one,
    so a symbolic link cannot launder a path into an allow rule."""
    return [resolve_path(path), written_path(path)] if deny else [resolve_path(path)]


def is_inside(full: Path) -> bool:
    return full.is_relative_to(Path.cwd().resolve())


# === s03 · paths: the protected table ===
# Places where a write runs code later, holds keys, or changes the agent's own rules,
# after Claude Code's protected paths. A write to one always asks, whichever tool
# writes (bypassPermissions too, stricter than Claude Code); the sandbox keeps the
# ones in the workspace read-only even when the workspace is writable. The table
# names them; protected_set() (below) finds them in this workspace, with
# what git reads and what the agent runs, and the gate asks that same set.
STARTUP_FILES = (".bashrc", ".bash_profile", ".bash_login", ".profile", ".zshrc",
                 ".zprofile", ".zshenv")  # they matter in your home, hidden anyway
PROTECTED = {  # a path at any depth, or ~/path in your home; "x/": what x holds
    ".git/hooks/": "a git hook (hooks run programs)",
    ".git/config": "git's config (which can run programs)",
    ".gitmodules": "git's submodules (which can run programs)",
    ".claude/settings.json": "the agent's own permission settings",
    ".claude/settings.local.json": "the agent's own permission settings",
    ".mcp.json": "the MCP servers the agent starts (programs)",
    ".vscode/": "editor settings (tasks run programs)", ".idea/": "editor settings",
    ".envrc": "direnv's script (it runs when you cd in)",
    ".pre-commit-config.yaml": "pre-commit's hooks (they run on git commit)",
    **dict.fromkeys(STARTUP_FILES, "a shell start-up file"),
    "~/.ssh/": "your SSH keys", "~/.gitconfig": "git's config (which can run programs)"}
# In the workspace the sandbox finds them at any depth, by name, and holds those that
# are missing, but the start-up files (they run from your home, hidden anyway).
PROTECTED_NAMES = {Path(e).parts[0] for e in PROTECTED if not e.startswith("~/")}
HOLD_WHILE_MISSING = [e for e in PROTECTED
                      if e not in STARTUP_FILES and not e.startswith("~/")]


def protected_write(target: str) -> str | None:
    """Why writing to `target` is dangerous, or None: PROTECTED, system files, disks."""
    path = written_path(target)
    if entry := protected_entry(path, PROTECTED):  # at any depth, or in your home
        return f"it writes {PROTECTED[entry]}: {entry}"
    if re.match(r"/etc/(sudoers|passwd|shadow|profile|bash\.bashrc|environment)",
                str(path)):
        return f"it writes {path}"
    if path.parts[:2] == ("/", "dev") and not re.fullmatch(
            r"/dev/(null|zero|std(out|err)|tty|fd/\d+)", str(path)):
        return f"it writes to the device {path} (a disk?)"
    return None


# === s03 · paths: the one protected set ===
def protected_set(programs: list, named: list | None = None) -> dict:
    """The one protected set, {path: "file" | "folder"}, whichever tool writes: the
    sandbox keeps it read-only (confine), the gate asks (protected_target). The
    PROTECTED names (held while missing), what git reads, the agent's programs
    (sandbox.py's protected_paths). `programs`: code.py's agent_programs();
    `named`: the protected names confine() found on its walk, if it walked."""
    workspace = Path.cwd().resolve()
    if named is None:  # one walk, for the protected names only
        named = walk_workspace(workspace, [], path_rule_matches, PROTECTED_NAMES,
                               programs)[1]
    return protected_paths(workspace, HOLD_WHILE_MISSING, named, programs)
