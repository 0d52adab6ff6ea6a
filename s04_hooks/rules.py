"""rules: Claude Code's permission rules, read and matched (s03 on).

code.py decides which rules a call meets and what they decide: deny first, then ask,
then allow, in the order its gate sets. This file only reads the rules: the settings
files' rules merged, a rule's two parts, and whether its pattern matches a command
line, a path or a host, as Claude Code reads the rules of its settings files; whether
a recursive read reaches a denied path; and whether an edit of those files keeps the
shape Claude Code reads. A first reading can skip it: the table of rule forms in the
chapter's README says what each form matches. The same file stands in every chapter
from s03 on.

Reading map:
  s03 · rules: where they come from       load_settings(): the settings, merged
  s03 · rules: a rule's two parts         parse_rule("Bash(npm test:*)"); Read denies
  s03 · rules: command patterns           exactly, by prefix (`:*`, ` *`), or with `*`
  s03 · rules: Bash rules on a line       every command the line runs, wrappers opened
  s03 · rules: path patterns              gitignore's patterns, read by pathspec; a
                                          line's paths; PROTECTED's entries; a tree
                                          that holds a denied path (denied_inside)
  s03 · rules: hosts                      WebFetch(domain:...): the host a URL reaches
  s03 · rules: the settings files' shape  what a settings edit must leave
"""

import functools
import ipaddress
import json
import os
import re
import socket
import stat
from pathlib import Path
from urllib.parse import urlparse

import pathspec

from bash_safety import (Unanalysable, all_runs, is_write, parse_command,
                         program, shell_effects)
from sandbox import sandbox_settings


# === s03 · rules: where they come from ===
SETTINGS_FILES = (".claude/settings.json", ".claude/settings.local.json")


def load_settings() -> dict:
    """The `permissions` of the workspace's settings files, merged: rules add up, the
    local file's defaultMode wins, a broken file is named (read_permissions)."""
    return read_permissions(read_settings(SETTINGS_FILES))


def sandbox_config() -> dict:
    """The `sandbox` blocks of the settings files, over sandbox.py's defaults."""
    return sandbox_settings(list(read_settings(SETTINGS_FILES).values()))


def read_settings(files) -> dict:
    """{name: its JSON, or the error that kept it from being read} for each of the
    settings `files` (from the workspace) that exists. The gate, the sandbox and the
    hooks of every call ask for them; they change seldom."""
    found = {}
    for name in files:
        path = Path.cwd() / name
        try:
            info = path.stat()
        except OSError:
            continue  # not there: nothing to read
        if not stat.S_ISREG(info.st_mode):
            continue  # a folder, a FIFO ...: no settings file
        changed = (info.st_mtime_ns, info.st_ctime_ns, info.st_size, info.st_ino)
        found[name] = read_json(str(path), changed)
    return found


@functools.lru_cache(maxsize=16)
def read_json(path: str, version: tuple):
    """A settings file's JSON object, or the error that kept it from being read.
    subtle: `version` (its stat) is part of the cache's key, so a file is opened
    again only when it changed on disk."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (ValueError, OSError) as e:
        return e
    return data if isinstance(data, dict) else ValueError("it is not a JSON object")


def read_permissions(settings: dict) -> dict:
    """The `permissions` of the settings files (read_settings' answer), merged:
    rules add up, a later file's defaultMode wins. A broken file is reported, not
    guessed at: {"allow": [...], "deny": [...], "ask": [...], "defaultMode",
    "problems"}."""
    merged = {"allow": [], "deny": [], "ask": [], "defaultMode": None, "problems": []}
    for name, data in settings.items():
        try:
            if isinstance(data, Exception):
                raise data
            permissions = data.get("permissions", {})
            if not isinstance(permissions, dict):
                raise ValueError("'permissions' is not an object")
        except (ValueError, OSError, AttributeError) as e:
            merged["problems"].append(f"{name}: {e}")
            continue
        for key in ("allow", "deny", "ask"):
            rules = permissions.get(key, [])
            merged[key] += ([r for r in rules if isinstance(r, str)]
                            if isinstance(rules, list) else [])
        merged["defaultMode"] = permissions.get("defaultMode") or merged["defaultMode"]
    return merged


# === s03 · rules: a rule's two parts ===
def parse_rule(rule: str) -> tuple[str, str | None]:
    """"Bash(npm test:*)" -> ("Bash", "npm test:*"); "Read" -> ("Read", None)."""
    rule = rule.strip()
    if rule.endswith(")") and "(" in rule:
        name, content = rule[:-1].split("(", 1)
        return name.strip(), content
    return rule, None


def read_deny_patterns(rules: dict) -> list:
    """The patterns of the Read deny rules among `rules` (the settings'): list_files
    and grep_search leave out what they cover, as read_file refuses it."""
    return [c for n, c in map(parse_rule, rules.get("deny", [])) if n == "Read" and c]


# === s03 · rules: command patterns ===
def command_rule_matches(pattern: str, command: str) -> bool:
    """Claude Code's Bash rule forms: `npm test` exactly; `npm run test:*` and
    `ls *` by prefix with a word boundary (so not `lsof`); `*` elsewhere spans
    anything, spaces and arguments included. A rule sees a command's words, never
    its redirections: `git log > f` is `git log` plus a write that Edit rules judge."""
    if pattern.endswith(":*"):
        prefix = pattern[:-2]
        return command == prefix or command.startswith(prefix + " ")
    if "*" not in pattern:
        return command == pattern
    regex = ".*".join(re.escape(piece) for piece in pattern.split("*"))
    if pattern.endswith(" *") and pattern.count("*") == 1:
        regex = regex[:-len(re.escape(" ") + ".*")] + "(?: .*)?"  # `ls *` matches `ls`
    return re.fullmatch(regex, command, re.DOTALL) is not None


# === s03 · rules: Bash rules on a line ===
def shell_rule_applies(content: str, command: str) -> str | None:
    """A Bash rule matches if it matches any command the line runs, wrappers opened
    (`sudo /bin/rm x` is also `rm x`). If a command cannot be seen (`$X a.txt`,
    `eval "$code"`, a line that does not parse), no rule is ruled out: it matches."""
    try:
        runs = all_runs(parse_command(command))
    except Unanalysable as e:
        return f" (the command cannot be analysed: {e})"
    for cmd in runs:
        if cmd.opaque:
            return f" ({cmd.opaque})"
        written = " ".join(w.text for w in cmd.words)
        if any(command_rule_matches(content, text) for text in (written, " ".join(
                [program(cmd)] + [w.text for w in cmd.words[1:]])) if text):
            return ""
    return None


# === s03 · rules: path patterns ===
def path_rule_matches(pattern: str, path: Path) -> bool:
    """gitignore patterns (pathspec reads them as git does): `//abs/**` from the root,
    `~/x/**` from home, `/x` and `./x` from the workspace, and `x` without a slash at
    any depth. A directory matches as the folder it is: `docs/**` covers `docs/`."""
    for prefix, base in (("//", Path("/")), ("~/", Path.home()), ("./", Path.cwd()),
                         ("/", Path.cwd()), ("", Path.cwd())):
        if pattern.startswith(prefix):
            break
    anchored = "/" + pattern[len(prefix):] if prefix else pattern
    try:
        rel = path.relative_to(base.resolve()).as_posix()
    except ValueError:
        return False
    spec = gitignore(anchored)
    return (rel != "." and spec.match_file(rel)
            or path.is_dir() and spec.match_file(rel + "/"))


def shell_path_rule(name: str, content: str, command: str, cwd=None,
                    effects=None) -> str | None:
    """A Read, Edit or Write rule asked about a command line run in `cwd`: does it
    cover a path the line reads (Read) or writes (Edit, Write)? As rule_applies
    answers in code.py: None, or a note ("" when it plainly matches). `effects`:
    the line's shell_effects, if read already."""
    effects = effects or shell_effects(command, cwd)
    paths = effects.writes if name != "Read" else [p for p, _ in effects.reads]
    if name != "Read" and any(is_write(op, t) and not t.static
                              for c, _ in effects.parts for op, t in c.redirects):
        return " (a redirection writes to a file only known at run time)"
    return "" if any(path_rule_matches(content, p) for p in paths) else None


def protected_entry(path: Path, entries) -> str | None:
    """The first of `entries` (code.py's PROTECTED) that `path` falls under, or
    None: `x` or `x/y` at any depth, `x/` what folder x holds, `~/x` in your home."""
    for entry in entries:
        inside = entry.endswith("/")  # a folder: what it holds, not itself
        if entry.startswith("~/"):
            top = Path.home() / entry[2:]
            hit = top in path.parents or path == top and not inside
        else:
            parts, n = Path(entry).parts, len(path.parts) - inside
            hit = any(path.parts[i:i + len(parts)] == parts
                      for i in range(n - len(parts) + 1))
        if hit:
            return entry
    return None


def read_denied(patterns: list, path: str) -> bool:
    """Does a Read deny rule's pattern cover `path` (from the workspace)?"""
    full = Path(os.path.normpath(Path.cwd().resolve() / path))
    return any(path_rule_matches(p, full) for p in patterns)


@functools.lru_cache(maxsize=256)
def gitignore(pattern: str) -> pathspec.GitIgnoreSpec:
    return pathspec.GitIgnoreSpec.from_lines([pattern])


MAX_WALK = 10_000  # folders a Read-rule check walks before it assumes the worst


def denied_inside(command: str, rules: dict, cwd=None, effects=None) -> str | None:
    """A recursive read (grep -r, rg, find, git ...) of a tree that holds a path a
    Read deny rule covers, the line run in `cwd`: why it must ask. The walk gives up
    after MAX_WALK entries. `effects`: the line's shell_effects, if read already."""
    patterns = read_deny_patterns(rules)
    if not patterns:
        return None
    effects = effects or shell_effects(command, cwd)
    roots = [p for p, recursive in effects.reads if recursive]
    for root in roots:
        for count, (folder, dirs, files) in enumerate(os.walk(root)):
            for path in (Path(folder, name) for name in dirs + files):
                if count > MAX_WALK or read_denied(patterns, str(path)):
                    return (f"it reads all of {shown(root)}, which holds "
                            f"{shown(path)}, and a Read deny rule covers that")
    return None


def shown(path: Path) -> str:
    """A path from the workspace if it lies there, else whole (code.py's display)."""
    workspace = Path.cwd().resolve()
    return str(path.relative_to(workspace)) if path.is_relative_to(workspace) \
        else str(path)


# === s03 · rules: hosts ===
def url_host(url: str) -> str:
    """The host a URL reaches, as the network reads it: `127.1`, `0x7f.1` and
    `[::ffff:127.0.0.1]` all reach 127.0.0.1, so one rule covers every spelling."""
    host = (urlparse(url).hostname or "").lower().rstrip(".")
    try:
        if re.fullmatch(r"[0-9][0-9a-fx.]*", host):  # inet_aton reads it as the OS does
            return socket.inet_ntoa(socket.inet_aton(host))
        address = ipaddress.ip_address(host)
        return str(address.ipv4_mapped or address)
    except (OSError, ValueError):
        return host


# === s03 · rules: the settings files' shape ===
def strings(value) -> bool:
    """A list of strings, as rules and args are."""
    return isinstance(value, list) and all(isinstance(s, str) for s in value)


def settings_shape(data: dict) -> str | None:
    """Claude Code's shape for what the course reads: permissions and hooks."""
    rules, hooks = data.get("permissions", {}), data.get("hooks", {})
    if not isinstance(rules, dict):
        return "have 'permissions' that is not an object"
    if bad := [k for k in ("allow", "deny", "ask") if not strings(rules.get(k, []))]:
        return f"have 'permissions.{bad[0]}' that is not a list of strings"
    if not isinstance(rules.get("defaultMode", ""), str):
        return "have 'permissions.defaultMode' that is not a string"
    groups = list(hooks.values()) if isinstance(hooks, dict) else [None]
    if not all(isinstance(g, list) and all(map(hook_group_ok, g)) for g in groups):
        return ("have 'hooks' not in Claude Code's shape, {event: [{\"matcher\": ..., "
                "\"hooks\": [{\"type\": \"command\", \"command\": ...}]}]}")
    return None


def hook_group_ok(group) -> bool:
    """{"matcher": "...", "hooks": [{"type": "command", "command": "..."}, ...]}"""
    hooks = group.get("hooks") if isinstance(group, dict) else None
    return (isinstance(group, dict) and isinstance(group.get("matcher", ""), str)
            and isinstance(hooks, list) and all(
                isinstance(h, dict) and isinstance(h.get("type"), str)
                and (h["type"] != "command" or isinstance(h.get("command"), str))
                for h in hooks))


def mcp_shape(data: dict) -> str | None:
    """.mcp.json as Claude Code reads it: {"mcpServers": {name: {"command": ...}}}."""
    servers = data.get("mcpServers", {})
    if not isinstance(servers, dict) or not all(
            isinstance(s, dict) and isinstance(s.get("command", s.get("url")), str)
            for s in servers.values()):
        return "have 'mcpServers' not in the shape {name: {\"command\": ...}}"
    return None


def settings_problem(kind: str, text: str) -> str | None:
    """What `text` would break in a settings file ("settings": .claude/settings*.json,
    "mcp": .mcp.json), or None: invalid JSON, or a shape Claude Code does not read
    (the file would be ignored whole)."""
    try:
        data = json.loads(text)
    except ValueError as e:
        return f"not be valid JSON ({e})"
    if not isinstance(data, dict):
        return "not hold a JSON object"
    return settings_shape(data) if kind == "settings" else mcp_shape(data)
