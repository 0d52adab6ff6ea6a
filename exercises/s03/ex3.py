#!/usr/bin/env python3
# >>> EXERCISE ex3-about
# Exercise s03 ex3 (stretch): `tar` may list, not extract.
# Add tar to the read-only classifier: `tar -tzf site.tgz` lists an archive and is
# read-only; extracting, creating, remote archives and programs tar would run are not.
# The task: exercises/s03/README.md. Your work goes between the `>>> EXERCISE ex3`
# markers below; leave the rest as it is.
# Check:  pytest exercises/s03/test_ex3.py
# Try:    python exercises/s03/ex3.py --offline
# <<< EXERCISE ex3-about
"""s03_permissions: a gate in front of every tool call.

s02 let the model run any tool it liked; all that stopped it was safe_path. Here
every call first passes a permission gate, inside the one pipeline every call takes
(look up, validate, read-before-edit, permission, run, shape). This chapter adds:
- tool metadata: `is_read_only(input)` and `is_destructive(input)` per tool, decided
  per input; a tool that declares nothing gets the safe defaults.
- permission modes: default, acceptEdits, plan, bypassPermissions
  (`--permission-mode`, or `permissions.defaultMode` in the settings).
- allow / deny / ask rules in Claude Code's format, from `.claude/settings.json`
  and `.claude/settings.local.json`: deny, then ask, then allow; first match wins.
- a bash read-only classifier that parses the command (`is_read_only_command`) and
  a list of dangerous commands that always ask, in every mode.
- asking: y / n / always on a terminal; with no terminal, the answer is no, and
  the model is told why. Paths outside the workspace become a question.
- read-before-edit: no edit to a file the agent has not read, or that changed on
  disk since it did.

Unchanged: the loop, the tools and their handlers. Left for later: hooks (s04),
deferred tools (s05), concurrency (s06).

Run:  python s03_permissions/code.py            (REPL; offline demo if no API key)
      python s03_permissions/code.py "task"     (one task, then exit)
      python s03_permissions/code.py --permission-mode plan "task"
      python s03_permissions/code.py --offline  (force the scripted demo)
"""

import argparse
import difflib
import fnmatch
import glob
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlparse

# --8<-- [start:config]
CHAPTER = "s03"
DEFAULT_MODEL = "claude-sonnet-5-5"
MAX_TOKENS = 8000
MAX_TURNS = 50               # model calls per task before we give up on a runaway loop
DEFAULT_TIMEOUT = 120        # seconds a shell command may run ...
MAX_TIMEOUT = 600            # ... and the most the model may ask for
MAX_OUTPUT_CHARS = 30_000    # per stream; beyond this we keep the head and the tail
MAX_RESULT_CHARS = 50_000    # any tool_result; longer ones are cut and saved whole
RESULTS_DIR = ".tool-results"  # where cut results are saved, inside the workspace
READ_LIMIT = 2000            # lines read_file returns by default
MAX_LINE_CHARS = 2000        # read_file shortens longer lines
MAX_READ_CHARS = 40_000      # read_file stops before this much text
LIST_LIMIT = 100             # paths list_files returns
GREP_LIMIT = 100             # matching lines grep_search returns
FETCH_TIMEOUT = 30           # seconds for web_fetch
FETCH_MAX_BYTES = 5_000_000  # web_fetch reads at most this much of a page
COLOR = sys.stdout.isatty() and not os.environ.get("NO_COLOR")

SYSTEM = (
    "You are a coding agent working in the directory {cwd}. Use the tools to inspect "
    "and change files: read before you edit, prefer edit_file over rewriting a whole "
    "file, and check your work. Act, then report briefly what you did."
)
SESSION = {  # what this run of the agent remembers; main() sets the mode
    "mode": None,         # --permission-mode; None: the settings' defaultMode, or "default"
    "approved": set(),    # {(tool, command | path | host)}: answered "always"
    "granted": set(),     # {Path}: outside paths the user let a call reach
    "read": {},           # {Path: (mtime_ns, sha256)}: files as we last read or wrote them
}
# --8<-- [end:config]

# --8<-- [start:tools]
def schema(properties: dict, required: list) -> dict:
    return {"type": "object", "properties": properties, "required": required}


STRING, INTEGER, BOOLEAN = {"type": "string"}, {"type": "integer"}, {"type": "boolean"}

TOOLS = [
    {"name": "run_shell",
     "description": "Run a shell command in the workspace; returns stdout, stderr and "
                    "the exit code. Stdin is closed. Default timeout "
                    f"{DEFAULT_TIMEOUT}s, at most {MAX_TIMEOUT}s.",
     "input_schema": schema({"command": STRING, "timeout": INTEGER}, ["command"])},
    {"name": "read_file",
     "description": f"Read a text file with line numbers. Returns up to {READ_LIMIT} "
                    "lines from `offset` (1-based line number); use offset/limit to "
                    "read on.",
     "input_schema": schema({"file_path": STRING, "offset": INTEGER, "limit": INTEGER},
                            ["file_path"])},
    {"name": "write_file",
     "description": "Create or overwrite a file with `content` (atomically). Prefer "
                    "edit_file to change part of an existing file.",
     "input_schema": schema({"file_path": STRING, "content": STRING},
                            ["file_path", "content"])},
    {"name": "edit_file",
     "description": "Replace `old_string` with `new_string` in a file. `old_string` "
                    "must match exactly once (include surrounding lines to make it "
                    "unique) unless `replace_all` is true. An empty `old_string` "
                    "creates a new file.",
     "input_schema": schema({"file_path": STRING, "old_string": STRING,
                             "new_string": STRING, "replace_all": BOOLEAN},
                            ["file_path", "old_string", "new_string"])},
    {"name": "list_files",
     "description": "Find files by glob pattern (e.g. '**/*.py'), newest first. "
                    "Skips .git and git-ignored files.",
     "input_schema": schema({"pattern": STRING, "path": STRING}, ["pattern"])},
    {"name": "grep_search",
     "description": "Search file contents with a regular expression; returns "
                    "file:line:text. `include` filters files by glob (e.g. '*.py').",
     "input_schema": schema({"pattern": STRING, "path": STRING, "include": STRING},
                            ["pattern"])},
    {"name": "web_fetch",
     "description": "Fetch an http(s) URL and return its text (HTML turned into "
                    "readable text), at most `max_length` characters.",
     "input_schema": schema({"url": STRING, "max_length": INTEGER}, ["url"])},
]
# --8<-- [end:tools]


# --8<-- [start:safe_path]
class ToolError(Exception):
    """An expected failure; its message goes to the model as an is_error result."""


def safe_path(path: str) -> Path:
    """Resolve `path` against the workspace; refuse anything that ends outside it,
    unless the permission gate let this call reach it (SESSION["granted"])."""
    workspace = Path.cwd().resolve()
    try:
        # resolve() follows symbolic links and `..`; for a new file it resolves
        # the parent, so a link to a directory outside is caught too.
        full = (workspace / Path(path).expanduser()).resolve()
    except (OSError, RuntimeError) as e:  # e.g. a symlink loop
        raise ToolError(f"cannot resolve '{path}': {e}")
    if not is_inside(full) and full not in SESSION["granted"]:
        raise ToolError(f"'{path}' resolves to {full}, outside the workspace "
                        f"{workspace}. File tools only work inside the workspace.")
    return full


def resolve_path(path: str) -> Path:
    """Where `path` really points (`..`, `~` and symbolic links followed), without
    refusing anything: the permission gate decides about paths outside."""
    full = Path.cwd().resolve() / Path(path).expanduser()
    try:
        return full.resolve()
    except (OSError, RuntimeError):
        return Path(os.path.normpath(full))


def is_inside(full: Path) -> bool:
    workspace = Path.cwd().resolve()
    return full == workspace or workspace in full.parents


def display(path: Path) -> str:
    """A path as the model should see it: relative to the workspace (absolute if
    the user let a call reach outside it)."""
    if not is_inside(path):
        return str(path)
    return str(path.relative_to(Path.cwd().resolve())) or "."
# --8<-- [end:safe_path]


# --8<-- [start:shape]
def save_result(source, name: str) -> str:
    """Save a whole result (a string, or a file to copy) under RESULTS_DIR."""
    folder = Path.cwd() / RESULTS_DIR
    folder.mkdir(exist_ok=True)
    # subtle: the name comes from the model (a tool_use id); keep it a plain name.
    path = folder / (re.sub(r"[^\w.-]", "_", name).lstrip(".") + ".txt")
    if isinstance(source, str):
        path.write_text(source, encoding="utf-8")
    else:
        source.seek(0)
        with path.open("wb") as dst:
            shutil.copyfileobj(source, dst)
    return f"{RESULTS_DIR}/{path.name}"


def shape_result(tool_name: str, output: str, tool_use_id: str) -> str:
    """Keep a result within MAX_RESULT_CHARS: its head and tail, the whole saved."""
    # subtle: read_file bounds its own output and is never saved, or reading a
    # saved result back would save it again, and again.
    if len(output) <= MAX_RESULT_CHARS or tool_name == "read_file":
        return output
    saved = save_result(output, tool_use_id)
    half = MAX_RESULT_CHARS // 2
    return (f"{output[:half]}\n\n[... {len(output) - 2 * half:,} characters cut from "
            f"the middle; the whole result ({len(output):,} characters) is saved in "
            f"{saved}: read it with read_file offset/limit ...]\n\n{output[-half:]}")
# --8<-- [end:shape]


# --8<-- [start:run_shell]
# Settings that stop programs from waiting for a human: pagers, editors, prompts.
NON_INTERACTIVE_ENV = {
    "PAGER": "cat", "GIT_PAGER": "cat", "MANPAGER": "cat", "LESS": "-FRX",
    "GIT_TERMINAL_PROMPT": "0", "GIT_EDITOR": "true", "EDITOR": "true",
    "TERM": "dumb", "PYTHONUNBUFFERED": "1",
}


def run_shell(command: str, timeout: int = DEFAULT_TIMEOUT) -> str:
    """Run `command` with bash in the workspace; return exit code, stdout and stderr."""
    timeout = max(1, min(int(timeout), MAX_TIMEOUT))
    # subtle: output goes to temporary files, not pipes. A pipe would hold the whole
    # output in memory, and a background child that keeps the pipe open would make
    # us wait for it. Files cost no memory and we only wait for bash itself.
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            ["bash", "-c", command], stdin=subprocess.DEVNULL, stdout=out, stderr=err,
            env={**os.environ, **NON_INTERACTIVE_ENV},
            start_new_session=True,  # its own process group, so we can kill all of it
        )
        try:
            status = f"exit code: {proc.wait(timeout=timeout)}"
        except subprocess.TimeoutExpired:
            kill_group(proc)
            status = f"timed out after {timeout}s: the command and everything it started were killed"
        except BaseException:  # Ctrl-C: never leave the command running behind us
            kill_group(proc)
            raise
        stdout, stderr = head_and_tail(out, name="stdout"), head_and_tail(err, name="stderr")
    parts = [stdout] if stdout else []
    if stderr:
        parts.append(f"--- stderr ---\n{stderr}")
    if not parts:
        parts.append("(no output)")
    return "\n".join(parts + [f"[{status}]"])


def kill_group(proc: subprocess.Popen) -> None:
    """Kill the process and every process it started (they share its group)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def head_and_tail(f, limit: int = MAX_OUTPUT_CHARS, name: str = "output") -> str:
    """The output in file `f`; if longer than `limit`, its head and tail, and the
    whole of it saved under RESULTS_DIR (copied from disk, never held in memory)."""
    size = f.seek(0, os.SEEK_END)
    f.seek(0)
    if size <= limit:
        return f.read().decode(errors="replace").rstrip("\n")
    saved = save_result(f, f"shell-{uuid.uuid4().hex[:8]}-{name}")
    half = limit // 2
    f.seek(0)
    head = f.read(half).decode(errors="replace")
    f.seek(size - half)
    tail = f.read().decode(errors="replace")
    return (f"{head}\n\n[... {size - 2 * half:,} bytes cut from the middle; the whole "
            f"{name} is saved in {saved}: read it with read_file ...]\n\n{tail}").rstrip("\n")
# --8<-- [end:run_shell]


# --8<-- [start:read_file]
def read_file(file_path: str, offset: int = 1, limit: int = READ_LIMIT) -> str:
    """Numbered lines of a text file, from line `offset`, at most `limit` of them."""
    path = safe_path(file_path)
    if not path.exists():
        raise ToolError(f"file not found: {file_path}")
    if path.is_dir():
        raise ToolError(f"{file_path} is a directory; use list_files to see inside it.")
    if is_binary(path):
        raise ToolError(f"{file_path} looks like a binary file ({path.stat().st_size:,} "
                        "bytes); read_file shows text only.")
    offset, limit = max(1, offset), max(1, min(limit, READ_LIMIT))
    rows, chars, number = [], 0, 0
    with path.open(encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(text_lines(f), start=1):
            if number < offset:
                continue  # subtle: we stream past earlier lines; a 1 GB file costs no memory
            if len(rows) == limit or chars > MAX_READ_CHARS:
                rows.append(f"[... more lines follow: read on with offset={number}]")
                break
            rows.append(f"{number:>6}\t{line}")
            chars += len(line)
    if not rows:
        return "(empty file)" if number == 0 else f"(the file has only {number} lines)"
    return "\n".join(rows)


def text_lines(f, cap: int = MAX_LINE_CHARS):
    """Yield the lines of text file `f`, each cut to `cap` characters, without ever
    holding a whole long line (a minified file can be one 50 MB line)."""
    while line := f.readline(cap + 1):
        if len(line) > cap and not line.endswith("\n"):
            rest = 0
            while chunk := f.readline(1 << 16):  # skip the rest of the line
                rest += len(chunk.rstrip("\n"))
                if chunk.endswith("\n"):
                    break
            line = f"{line[:cap]} [... line cut, {len(line) - cap + rest:,} more characters]"
        yield line.rstrip("\r\n")


def is_binary(path: Path) -> bool:
    """A NUL byte in the first 8 KB: what git and grep also take as binary."""
    with path.open("rb") as f:
        return b"\0" in f.read(8192)
# --8<-- [end:read_file]


# --8<-- [start:write_file]
def write_file(file_path: str, content: str) -> str:
    path = safe_path(file_path)
    if path.is_dir():
        raise ToolError(f"{file_path} is a directory.")
    existed = path.exists()
    atomic_write(path, content.encode("utf-8"))
    lines = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
    verb = "Overwrote" if existed else "Created"
    return f"{verb} {display(path)} ({lines} lines, {len(content.encode()):,} bytes)."


def atomic_write(path: Path, data: bytes) -> None:
    """Write to a temporary file beside `path`, then rename it over `path`: readers
    see the old file or the new one, never half of one, even if we crash midway."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if path.exists():
            os.chmod(tmp, path.stat().st_mode)  # keep the file's permissions
        else:  # mkstemp makes 0600 files; a new file gets the usual 0666 - umask
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
# --8<-- [end:write_file]


# --8<-- [start:edit_file]
CURLY_TO_STRAIGHT = str.maketrans({"‘": "'", "’": "'", "“": '"', "”": '"'})


def edit_file(file_path: str, old_string: str, new_string: str,
              replace_all: bool = False) -> str:
    """Replace `old_string` with `new_string`; refuse anything ambiguous."""
    path = safe_path(file_path)
    old, new = old_string.replace("\r\n", "\n"), new_string.replace("\r\n", "\n")
    if old == new:
        raise ToolError("old_string and new_string are the same; nothing to change.")
    if not path.exists():
        if old:
            raise ToolError(f"file not found: {file_path}")
        atomic_write(path, new_string.encode("utf-8"))  # empty old_string: a new file
        return f"Created {display(path)}."
    original = read_text_for_edit(path, file_path)
    # Match on LF text when the file is consistently CRLF; write CRLF back below.
    crlf = "\r\n" in original and original.count("\r\n") == original.count("\n")
    text = original.replace("\r\n", "\n") if crlf else original
    if not old:
        if text:
            raise ToolError("old_string is empty but the file is not; give the text to replace.")
        updated = new
    else:
        updated = replace_text(text, old, new, replace_all, file_path)
    atomic_write(path, (updated.replace("\n", "\r\n") if crlf else updated).encode("utf-8"))
    return f"Edited {display(path)}:\n{numbered_diff(text, updated)}"


def read_text_for_edit(path: Path, file_path: str) -> str:
    if path.is_dir():
        raise ToolError(f"{file_path} is a directory.")
    data = path.read_bytes()
    if b"\0" in data[:8192]:
        raise ToolError(f"{file_path} looks like a binary file; edit_file edits text only.")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ToolError(f"{file_path} is not valid UTF-8 ({e.reason} at byte {e.start}); "
                        "refusing to edit it rather than risk corrupting it.")


def replace_text(text: str, old: str, new: str, replace_all: bool, file_path: str) -> str:
    """Replace the exact matches of `old` (or, failing that, its curly-quote
    variants) in `text`. New text is inserted literally: no regex, no `$1`."""
    haystack, needle = text, old
    if text.count(old) == 0:  # the model often types ' and " where the file has ‘’“”
        haystack, needle = text.translate(CURLY_TO_STRAIGHT), old.translate(CURLY_TO_STRAIGHT)
    starts = find_all(haystack, needle)
    if not starts:
        raise ToolError(not_found_message(text, old, file_path))
    if len(starts) > 1 and not replace_all:
        raise ToolError(f"old_string was found {len(starts)} times in {file_path}. Include "
                        "more surrounding lines to make it unique, or set replace_all.")
    out, pos = [], 0
    for start in starts:  # folding keeps lengths, so positions hold in the real text
        found = text[start:start + len(old)]
        out += [text[pos:start], keep_quote_style(new, old, found)]
        pos = start + len(old)
    return "".join(out + [text[pos:]])


def find_all(haystack: str, needle: str) -> list[int]:
    """Start of every non-overlapping occurrence."""
    starts, i = [], haystack.find(needle)
    while i != -1:
        starts.append(i)
        i = haystack.find(needle, i + len(needle))
    return starts


def keep_quote_style(new: str, old: str, found: str) -> str:
    """`new`, with the file's own characters wherever it repeats `old`, and curly
    quotes in the inserted parts if the file used them there."""
    if found == old:
        return new
    out = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if op == "equal":
            out.append(found[i1:i2])  # what the file really has at these places
        else:  # inserted text: the file's quote style, curly or straight
            double, single = "“" in found or "”" in found, "‘" in found or "’" in found
            inserted = new[j1:j2]
            if not double:
                inserted = inserted.replace("“", '"').replace("”", '"')
            if not single:
                inserted = inserted.replace("‘", "'").replace("’", "'")
            out.append(curl_quotes(inserted, double, single))
    return "".join(out)


def curl_quotes(s: str, double: bool, single: bool) -> str:
    """Straight quotes to curly: opening after a space or bracket, else closing."""
    out = []
    for i, ch in enumerate(s):
        opening = i == 0 or s[i - 1].isspace() or s[i - 1] in "([{"
        if ch == '"' and double:
            ch = "“" if opening else "”"
        elif ch == "'" and single:
            ch = "‘" if opening else "’"  # ’ is also the apostrophe in don’t
        out.append(ch)
    return "".join(out)


def not_found_message(text: str, old: str, file_path: str) -> str:
    message = (f"old_string was not found in {file_path}. It must match the file exactly, "
               "including whitespace, indentation and line endings; read the file again "
               "and copy the text.")
    first = old.strip().splitlines()[0].strip() if old.strip() else ""
    for number, line in enumerate(text.splitlines(), start=1):
        if first and first in line:
            return message + f" (Its first line appears at line {number}; check the lines around it.)"
    return message


def numbered_diff(before: str, after: str, context: int = 1, max_lines: int = 40) -> str:
    """The changed lines with line numbers: `-` old line, `+` new line."""
    a, b = before.splitlines(), after.splitlines()
    rows = []
    for group in difflib.SequenceMatcher(None, a, b, autojunk=False).get_grouped_opcodes(context):
        if rows:
            rows.append("   ...")
        for op, i1, i2, j1, j2 in group:
            if op == "equal":
                rows += [f"{j + 1:>6}   {b[j]}" for j in range(j1, j2)]
                continue
            rows += [f"{i + 1:>6} - {a[i]}" for i in range(i1, i2)]
            rows += [f"{j + 1:>6} + {b[j]}" for j in range(j1, j2)]
    if len(rows) > max_lines:
        rows = rows[:max_lines] + [f"   ... ({len(rows) - max_lines} more diff lines)"]
    return "\n".join(rows) or "(no line changed)"
# --8<-- [end:edit_file]


# --8<-- [start:list_files]
def list_files(pattern: str, path: str = ".") -> str:
    """Files matching a glob pattern, newest first, without .git and ignored files."""
    base = safe_path(path)
    if not base.is_dir():
        raise ToolError(f"{path} is not a directory.")
    workspace, rules = Path.cwd().resolve(), gitignore_rules(Path.cwd().resolve())
    root = workspace if is_inside(base) else base  # an outside folder the user approved
    found = []
    for name in glob.glob(pattern, root_dir=base, recursive=True):
        full = Path(os.path.normpath(base / name))  # "../x" in a pattern climbs out
        if not inside(full, root) or not inside(full.resolve(), root):
            continue  # outside, or reached through a link that leads out
        rel = display(full)  # absolute if outside the workspace: the user approved that
        if full.is_file() and ".git" not in rel.split("/") and not is_ignored(rel, rules):
            found.append((full.stat().st_mtime, rel))
    if not found:
        return f"No files match '{pattern}' in {'the workspace' if base == workspace else display(base)}."
    found.sort(reverse=True)  # newest first: what you touched last is likely relevant
    rows = [rel for _, rel in found[:LIST_LIMIT]]
    if len(found) > LIST_LIMIT:
        rows.append(f"[... and {len(found) - LIST_LIMIT} more; narrow the pattern or path]")
    return "\n".join(rows)


def inside(path: Path, workspace: Path) -> bool:
    return path == workspace or workspace in path.parents


def gitignore_rules(root: Path) -> list[tuple[str, bool, bool, bool]]:
    """(pattern, negated, directory-only, anchored) for each line of .gitignore.
    A common subset of gitignore: no nested .gitignore files, no `**` subtleties."""
    file = root / ".gitignore"
    rules = []
    for line in file.read_text(errors="replace").splitlines() if file.is_file() else []:
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        negated, line = line.startswith("!"), line.lstrip("!")
        dir_only, line = line.endswith("/"), line.rstrip("/")
        anchored = "/" in line
        rules.append((line.lstrip("/"), negated, dir_only, anchored))
    return rules


def is_ignored(rel: str, rules) -> bool:
    """Does a rule match the file or one of its parent directories? Last match wins."""
    parts, ignored = rel.split("/"), False
    for pattern, negated, dir_only, anchored in rules:
        for k in range(1, len(parts) + 1):
            if dir_only and k == len(parts):
                continue  # a directory-only rule never matches the file itself
            target = "/".join(parts[:k]) if anchored else parts[k - 1]
            if fnmatch.fnmatchcase(target, pattern):
                ignored = not negated
    return ignored
# --8<-- [end:list_files]


# --8<-- [start:grep_search]
def find_rg() -> str | None:
    """ripgrep on PATH, or beside this Python (pip's `ripgrep` in an inactive venv)."""
    beside = Path(sys.executable).parent / "rg"
    return shutil.which("rg") or (str(beside) if beside.exists() else None)


RG = find_rg()


def grep_search(pattern: str, path: str = ".", include: str | None = None) -> str:
    """Lines matching a regular expression, as file:line:text, capped."""
    base = safe_path(path)
    if not base.exists():
        raise ToolError(f"path not found: {path}")
    rel = display(base)
    search = rg_search(pattern, rel, include) if RG else python_search(pattern, base, include)
    shown, total = [], 0
    for line in search:  # subtle: count every match, but keep only the first few
        total += 1
        if total <= GREP_LIMIT:
            shown.append(line)
    if not total:
        return f"No matches for {pattern!r} in {'the workspace' if rel == '.' else rel}."
    if total > GREP_LIMIT:
        shown.append(f"[... and {total - GREP_LIMIT} more matching lines; narrow the search]")
    return "\n".join(shown)


def rg_search(pattern: str, rel: str, include: str | None):
    """Yield ripgrep's output lines as they come: a million matches cost no memory."""
    # `-e` keeps a pattern like "-v" a pattern, and `--` keeps the path a path.
    cmd = [RG, "--line-number", "--with-filename", "--no-heading", "--color=never",
           "--sort=path", "--max-columns=300", "--max-columns-preview",
           "--no-require-git",  # honour .gitignore even outside a git repository
           "-e", pattern]
    if include:
        cmd += ["--glob", include]
    if rel != ".":
        cmd += ["--", rel]
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True,
                                errors="replace", stdin=subprocess.DEVNULL)
        try:
            any_line = False
            for line in proc.stdout:
                any_line = True
                yield line.rstrip("\n")
            if proc.wait(timeout=60) == 2 and not any_line:  # 1 means "no match"
                err.seek(0)
                message = err.read().decode(errors="replace").strip()
                if "No files were searched" not in message:  # nothing to search: no match
                    raise ToolError(f"grep_search failed: {message}")
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            proc.stdout.close()


def python_search(pattern: str, base: Path, include: str | None):
    """The same search without ripgrep: slower, and Python's regex dialect."""
    try:
        regex = re.compile(pattern)
    except re.error as e:
        raise ToolError(f"bad regular expression {pattern!r}: {e}")
    workspace, rules = Path.cwd().resolve(), gitignore_rules(Path.cwd().resolve())
    root = workspace if is_inside(base) else base  # an outside folder the user approved
    files = [base] if base.is_file() else sorted(p for p in base.rglob("*") if p.is_file())
    globs = expand_braces(include) if include else []
    for file in files:
        rel = display(file)
        if file != base and (file.is_symlink() or not inside(file.resolve(), root) or
                             any(p.startswith(".") for p in file.relative_to(base).parts)
                             or is_ignored(rel, rules)):
            continue  # like rg: skip links, hidden and ignored files
        if (globs and not any(fnmatch.fnmatch(file.name, g) for g in globs)) or is_binary(file):
            continue
        with file.open(encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(text_lines(f, 300), start=1):
                if regex.search(line):
                    yield f"{rel}:{number}:{line}"


def expand_braces(pattern: str) -> list[str]:
    """'*.{py,txt}' -> ['*.py', '*.txt'], as ripgrep's globs understand it."""
    match = re.search(r"\{([^{}]*)\}", pattern)
    if not match:
        return [pattern]
    head, tail = pattern[:match.start()], pattern[match.end():]
    return [g for alt in match.group(1).split(",") for g in expand_braces(head + alt + tail)]
# --8<-- [end:grep_search]


# --8<-- [start:web_fetch]
def web_fetch(url: str, max_length: int = MAX_RESULT_CHARS) -> str:
    """An http(s) page as readable text."""
    if urlparse(url).scheme not in ("http", "https") or not urlparse(url).netloc:
        raise ToolError(f"web_fetch takes http:// or https:// URLs only, not {url!r}.")
    request = urllib.request.Request(url, headers={"User-Agent": "course-agent/1.0"})
    try:
        with urllib.request.urlopen(request, timeout=FETCH_TIMEOUT) as response:
            kind = response.headers.get_content_type()
            charset = response.headers.get_content_charset() or "utf-8"
            body = response.read(FETCH_MAX_BYTES)
    except urllib.error.HTTPError as e:
        raise ToolError(f"HTTP {e.code} {e.reason} from {url}")
    except (urllib.error.URLError, OSError) as e:
        raise ToolError(f"cannot fetch {url}: {getattr(e, 'reason', e)}")
    if not (kind.startswith("text/") or kind in ("application/json", "application/xml")
            or kind.endswith("+xml")):
        raise ToolError(f"{url} is {kind}, not text; web_fetch returns text only.")
    page = body.decode(charset, errors="replace")
    page = html_to_text(page) if kind == "text/html" else page
    max_length = max(1, min(max_length, MAX_RESULT_CHARS))
    if len(page) > max_length:
        page = page[:max_length] + f"\n[... cut at {max_length:,} of {len(page):,} characters]"
    return page


class _TextExtractor(HTMLParser):
    SKIP = {"script", "style", "noscript", "template", "svg"}
    BLOCK = {"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6",
             "pre", "section", "article", "header", "footer", "table", "ul", "ol"}

    def __init__(self):
        super().__init__()
        self.parts, self.skipping = [], 0

    def handle_starttag(self, tag, attrs):
        self.skipping += tag in self.SKIP
        if tag in self.BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag):
        self.skipping -= tag in self.SKIP and self.skipping > 0
        if tag in self.BLOCK:
            self.parts.append("\n")

    def handle_data(self, data):
        if not self.skipping:
            self.parts.append(data)


def html_to_text(html: str) -> str:
    """Visible text of an HTML page: scripts and styles dropped, spacing tidied."""
    parser = _TextExtractor()
    parser.feed(html)
    lines = (" ".join(line.split()) for line in "".join(parser.parts).splitlines())
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
# --8<-- [end:web_fetch]


# --8<-- [start:dispatch]
TOOL_HANDLERS = {  # tool name -> function; the input's fields are its arguments
    "run_shell": run_shell,
    "read_file": read_file,
    "write_file": write_file,
    "edit_file": edit_file,
    "list_files": list_files,
    "grep_search": grep_search,
    "web_fetch": web_fetch,
}
SCHEMAS = {tool["name"]: tool["input_schema"] for tool in TOOLS}
JSON_TYPES = {"string": str, "integer": int, "boolean": bool, "number": (int, float),
              "object": dict, "array": list}


def validate_input(schema: dict, args) -> str | None:
    """What is wrong with `args` for `schema`, or None. Names the field at fault."""
    if not isinstance(args, dict):
        return "the input must be a JSON object"
    properties = schema.get("properties", {})
    missing = [name for name in schema.get("required", []) if name not in args]
    if missing:
        return f"missing required field(s): {', '.join(missing)}"
    for name, value in args.items():
        if name not in properties:
            return f"unexpected field '{name}' (expected: {', '.join(properties)})"
        want = properties[name].get("type")
        # subtle: in Python True is an int; JSON does not agree.
        if want in JSON_TYPES and (not isinstance(value, JSON_TYPES[want]) or
                                   (isinstance(value, bool) and want != "boolean")):
            return f"field '{name}' must be of type {want}, not {type(value).__name__} {value!r:.40}"
    return None
# --8<-- [end:dispatch]


# --8<-- [start:bash_parser]
# A careful parser for the part of bash that agents write. It does not run or
# expand anything: it finds every command a string would run (in lists, pipelines
# and substitutions), with quotes removed and `$'\x72\x6d'` decoded, so the checks
# below see `rm` however it is spelled. Whatever it does not understand raises
# BashSyntaxError, and the checks treat that as "cannot prove it safe".
MAX_COMMAND_CHARS = 10_000   # longer commands are not analysed: they ask
MAX_NESTING = 8              # $( $( $( ... ) ) ) deeper than this: not analysed


class BashSyntaxError(Exception):
    pass


@dataclass
class Word:
    text: str                 # the value after quote removal; expansions kept as written
    empty: str                # the value if every expansion were empty ("$X/*" -> "/*")
    expanded: bool = False    # has a $-expansion or substitution: value unknown until run
    raw: str = ""             # the word as written in the command
    subs: list = field(default_factory=list)  # scripts inside $(...), `...`, <(...)


@dataclass
class Command:
    words: list               # [Word]: assignments, then the program and its arguments
    redirects: list           # [(operator, Word)]: ">" "2>" ">>" "<" "<<" "2>&" ...
    functions: tuple = ()     # names of the functions whose body this command is in


Script = list  # [[Command]]: a list of pipelines, each a list of commands

OPERATORS = ("&&", "||", ";;", "|&", "|", ";", "&", "\n", "(", ")")
REDIRECT = re.compile(r"(\d*)(>>|>&|>\||<<<|<<-|<<|<&|<>|>|<)|(&>>|&>)")
ANSI_C = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "e": "\x1b",
          "E": "\x1b", "f": "\f", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}


def parse_bash(command: str) -> Script:
    """Parse `command` into pipelines of commands; raise BashSyntaxError if unsure."""
    if len(command) > MAX_COMMAND_CHARS:
        raise BashSyntaxError(f"longer than {MAX_COMMAND_CHARS:,} characters")
    return BashParser(command).parse_list(closer=None)


class BashParser:
    def __init__(self, src: str, pos: int = 0, depth: int = 0):
        if depth > MAX_NESTING:
            raise BashSyntaxError("substitutions nested too deeply")
        self.src, self.i, self.depth = src, pos, depth
        self.heredocs = []     # [(delimiter Word, strip_tabs, redirect index, Command)]
        self.functions = []    # the function bodies we are inside: [name]
        self.defining = None   # name of a function whose `{` body comes next

    def peek(self, n: int = 1) -> str:
        return self.src[self.i:self.i + n]

    # --- lists, pipelines, commands ---
    def parse_list(self, closer: str | None) -> Script:
        script, pipeline = [], []
        cmd = Command([], [], tuple(self.functions))
        parens = 0  # ( subshells ) we are inside

        def end_command():
            nonlocal cmd
            if cmd.words or cmd.redirects:
                self.track_braces(cmd)
                pipeline.append(cmd)
            cmd = Command([], [], tuple(self.functions))

        def end_pipeline():
            nonlocal pipeline
            end_command()
            if pipeline:
                script.append(pipeline)
            pipeline = []

        while True:
            self.skip_blanks()
            c = self.peek()
            if not c:
                if closer or parens:
                    raise BashSyntaxError("unclosed ( or $(")
                end_pipeline()
                return script
            if c == "#" and (self.i == 0 or self.src[self.i - 1] in " \t\n;&|()"):
                while self.peek() and self.peek() != "\n":
                    self.i += 1
                continue
            if c == ")" and closer == ")" and parens == 0:
                self.i += 1
                end_pipeline()
                return script
            redirect = REDIRECT.match(self.src, self.i)
            if redirect and not self.src.startswith(("<(", ">("), self.i):
                self.i = redirect.end()
                op = redirect.group(0)
                self.skip_blanks()
                if not self.peek() or self.peek() in "\n;&|()":
                    raise BashSyntaxError(f"{op} without a target")
                target = self.parse_word()
                cmd.redirects.append((op, target))
                if op.lstrip("0123456789") in ("<<", "<<-"):
                    self.heredocs.append((target, op.endswith("-"), len(cmd.redirects) - 1, cmd))
                continue
            op = next((o for o in OPERATORS if self.src.startswith(o, self.i)), None)
            if op:
                self.i += len(op)
                if op == "(":
                    if len(cmd.words) == 1 and self.src[self.i:].lstrip(" \t").startswith(")"):
                        self.i = self.src.index(")", self.i) + 1   # name() { ...: a function
                        self.defining = cmd.words[0].text
                        cmd = Command([], [], tuple(self.functions))
                        continue
                    parens += 1
                elif op == ")":
                    if parens == 0:
                        raise BashSyntaxError("unexpected )")
                    parens -= 1
                if op in ("|", "|&"):
                    end_command()
                else:
                    end_pipeline()
                if op == "\n":
                    self.read_heredocs()
                continue
            cmd.words.append(self.parse_word())

    def track_braces(self, cmd: Command) -> None:
        """Remember which function body each command is in (to spot a fork bomb)."""
        first = cmd.words[0].text if cmd.words else ""
        if first == "function" and len(cmd.words) > 1:   # function name { ... }
            self.defining = cmd.words[1].text
            first = "{" if any(w.text == "{" for w in cmd.words) else ""
        if first == "{" and self.defining:
            self.functions.append(self.defining)
            self.defining = None
            cmd.functions = tuple(self.functions)
        elif first == "}" and self.functions:
            self.functions.pop()

    def skip_blanks(self) -> None:
        while True:
            if self.peek() in (" ", "\t"):
                self.i += 1
            elif self.peek(2) == "\\\n":
                self.i += 2
            else:
                return

    def read_heredocs(self) -> None:
        """After a newline: the bodies of pending `<<EOF` redirections."""
        for target, strip_tabs, index, cmd in self.heredocs:
            lines = []
            while self.i < len(self.src):
                end = self.src.find("\n", self.i)
                end = len(self.src) if end == -1 else end
                line, self.i = self.src[self.i:end], min(end + 1, len(self.src))
                if (line.lstrip("\t") if strip_tabs else line) == target.text:
                    break
                lines.append(line)
            body = "\n".join(lines)
            quoted = target.raw != target.text  # <<'EOF', <<"EOF" or <<\EOF
            # An unquoted delimiter means the body is expanded: $(...) in it runs.
            word = Word(body, body) if quoted else BashParser(body, 0, self.depth + 1).body_word()
            cmd.redirects[index] = (cmd.redirects[index][0], word)
        self.heredocs = []

    # --- words ---
    def parse_word(self) -> Word:
        start, text, empty, word = self.i, [], [], Word("", "")
        if self.src.startswith(("<(", ">("), self.i):          # process substitution
            self.i += 2
            word.subs.append(BashParser(self.src, self.i, self.depth + 1).parse_sub(self))
            word.expanded = True
            text.append(self.src[start:self.i])
        while (c := self.peek()) and c not in " \t\n;&|<>()":
            if c == "\\":
                if self.peek(2) == "\\\n":
                    self.i += 2
                    continue
                if self.i + 1 >= len(self.src):
                    raise BashSyntaxError("trailing backslash")
                text.append(self.src[self.i + 1])
                empty.append(self.src[self.i + 1])
                self.i += 2
            elif c == "'":
                end = self.src.find("'", self.i + 1)
                if end == -1:
                    raise BashSyntaxError("unclosed '")
                text.append(self.src[self.i + 1:end])
                empty.append(self.src[self.i + 1:end])
                self.i = end + 1
            elif c == '"':
                self.i += 1
                self.parse_quoted(word, text, empty, closer='"')
            elif c == "$" and self.peek(2) == "$'":
                decoded = self.ansi_c()
                text.append(decoded)
                empty.append(decoded)
            elif c == "$" and self.peek(2) == '$"':
                self.i += 2
                self.parse_quoted(word, text, empty, closer='"')
            elif c in "$`":
                self.parse_expansion(word, text)
            else:
                text.append(c)
                empty.append(c)
                self.i += 1
        word.text, word.empty, word.raw = "".join(text), "".join(empty), self.src[start:self.i]
        return word

    def parse_quoted(self, word: Word, text: list, empty: list, closer: str | None) -> None:
        """The inside of "...", or a here-document body (closer None)."""
        while True:
            c = self.peek()
            if not c:
                if closer:
                    raise BashSyntaxError('unclosed "')
                return
            if c == closer:
                self.i += 1
                return
            if c == "\\" and self.peek(2)[1:] in ("$", "`", '"', "\\", "\n"):
                if self.peek(2)[1:] != "\n":
                    text.append(self.peek(2)[1])
                    empty.append(self.peek(2)[1])
                self.i += 2
            elif c == "`" or re.match(r"\$[({\w@*#?$!-]", self.peek(2)):
                self.parse_expansion(word, text)
            else:
                text.append(c)
                empty.append(c)
                self.i += 1

    def parse_expansion(self, word: Word, text: list) -> None:
        """$name, ${...}, $(...), $((...)), `...`: the value is unknown until run time."""
        start = self.i
        if self.peek(3) == "$((":
            end = self.src.find("))", self.i)
            if end == -1 or "$(" in self.src[self.i + 3:end] or "`" in self.src[self.i + 3:end]:
                raise BashSyntaxError("arithmetic expansion too complex to check")
            self.i = end + 2
        elif self.peek(2) == "$(":
            self.i += 2
            word.subs.append(BashParser(self.src, self.i, self.depth + 1).parse_sub(self))
        elif self.peek() == "`":
            end = self.i + 1
            while end < len(self.src) and self.src[end] != "`":
                end += 2 if self.src[end] == "\\" else 1
            if end >= len(self.src):
                raise BashSyntaxError("unclosed `")
            inner = re.sub(r"\\([$`\\])", r"\1", self.src[self.i + 1:end])
            word.subs.append(BashParser(inner, 0, self.depth + 1).parse_list(closer=None))
            self.i = end + 1
        elif self.peek(2) == "${":
            end = self.src.find("}", self.i)
            inner = self.src[self.i + 2:end]
            if end == -1 or any(s in inner for s in ("$(", "`", "<(", "${")):
                raise BashSyntaxError("parameter expansion too complex to check")
            self.i = end + 1
        else:
            m = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-])").match(self.src, self.i)
            if not m:  # a lone $ is just a dollar sign
                text.append("$")
                self.i += 1
                return
            self.i = m.end()
        word.expanded = True
        text.append(self.src[start:self.i])

    def parse_sub(self, outer: "BashParser") -> Script:
        """The script inside $( ... ) or <( ... ); moves `outer` past the `)`."""
        script = self.parse_list(closer=")")
        outer.i = self.i
        return script

    def body_word(self) -> Word:
        word, text, empty = Word("", ""), [], []
        self.parse_quoted(word, text, empty, closer=None)
        word.text, word.empty = "".join(text), "".join(empty)
        return word

    def ansi_c(self) -> str:
        """Decode $'...' (ANSI-C quoting): \\x72 is r, \\155 is m, \\u2019 is ’."""
        self.i += 2
        out = []
        while True:
            c = self.peek()
            if not c:
                raise BashSyntaxError("unclosed $'")
            self.i += 1
            if c == "'":
                return "".join(out)
            if c != "\\":
                out.append(c)
                continue
            m = re.compile(r"x[0-9a-fA-F]{1,2}|u[0-9a-fA-F]{1,4}|U[0-9a-fA-F]{1,8}|[0-7]{1,3}|c.|.",
                           re.S).match(self.src, self.i)
            if not m:
                raise BashSyntaxError("unclosed $'")
            esc, self.i = m.group(0), m.end()
            if esc[0] in "xuU":
                out.append(chr(int(esc[1:], 16)))
            elif esc[0].isdigit():
                out.append(chr(int(esc, 8) & 0xFF))
            elif esc[0] == "c":
                out.append(chr(ord(esc[1]) & 0x1F))
            else:
                out.append(ANSI_C.get(esc, "\\" + esc))


def all_commands(script: Script):
    """Every command the script would run, those inside substitutions too."""
    for pipeline in script:
        for cmd in pipeline:
            yield cmd
            for word in cmd.words + [w for _, w in cmd.redirects]:
                for sub in word.subs:
                    yield from all_commands(sub)


def all_pipelines(script: Script):
    for pipeline in script:
        yield pipeline
        for cmd in pipeline:
            for word in cmd.words + [w for _, w in cmd.redirects]:
                for sub in word.subs:
                    yield from all_pipelines(sub)


ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=")
KEYWORDS = {"!", "{", "}", "if", "then", "elif", "else", "fi", "while", "until", "do",
            "done", "time"}          # words that only shape the command that follows


def argv(cmd: Command) -> list:
    """The program and its arguments as Words: keywords and assignments dropped."""
    words = list(cmd.words)
    while words and (words[0].raw in KEYWORDS or ASSIGNMENT.match(words[0].raw)):
        words.pop(0)
    return words


def part_text(cmd: Command) -> str:
    """A command as a permission rule sees it: its words, then its redirections."""
    return " ".join([w.text for w in argv(cmd)] +
                    [f"{op} {w.text}" for op, w in cmd.redirects
                     if op.lstrip("0123456789") not in ("<<", "<<-")])  # not a body
# --8<-- [end:bash_parser]


# --8<-- [start:read_only]
# Programs that only read, each with a check of its arguments (None: any argument
# is fine, as long as the paths stay inside the workspace). Anything not listed
# is not read-only: interpreters, `xargs`, `tee`, `awk`, `env cmd`, editors ...
def no_option(*bad: str, short: str = ""):
    """A check that refuses options starting with `bad`, or short-option clusters
    (`-nro`) that contain a letter of `short`."""
    def check(args: list[str]) -> bool:
        for a in args:
            if a.startswith(bad) or (short and re.fullmatch(rf"-[A-Za-z]*[{short}][A-Za-z]*\S*", a)):
                return False
        return True
    return check


SED_ADDRESS = r"(?:\d+(?:~\d+)?|\$|/(?:[^/\\\n]|\\.)*/I?)"
SED_COMMAND = (r"(?:[pdqQ=lnNPDgGhHxz]|s/(?:[^/\\\n]|\\.)*/(?:[^/\\\n]|\\.)*/[gpiIm0-9]*"
               r"|y/(?:[^/\\\n]|\\.)*/(?:[^/\\\n]|\\.)*/)")
SED_STEP = rf"\s*(?:{SED_ADDRESS}(?:\s*,\s*(?:{SED_ADDRESS}|[+~]\d+))?)?\s*!?\s*{SED_COMMAND}\s*"
SED_SAFE_SCRIPT = re.compile(rf"{SED_STEP}(?:[;\n]{SED_STEP})*;?\s*")  # no w, W, e, r, {}


def sed_read_only(args: list[str]) -> bool:
    """`sed -n 5,10p f` reads; `sed -i`, `-f script`, and `w`/`e` commands write or run."""
    scripts, rest = [], []
    it = iter(args)
    for a in it:
        if a in ("-e", "--expression"):
            scripts.append(next(it, ""))
        elif a.startswith("--expression="):
            scripts.append(a.split("=", 1)[1])
        elif a in ("--quiet", "--silent", "--posix", "--regexp-extended", "--debug",
                   "--null-data", "--separate", "--unbuffered", "--sandbox"):
            continue
        elif re.fullmatch(r"-[nErsuz]+", a):
            continue
        elif a.startswith("-") and a != "-":
            return False  # -i, --in-place, -f, anything we do not know
        else:
            rest.append(a)
    if not scripts:
        if not rest:
            return False
        scripts.append(rest.pop(0))
    return all(SED_SAFE_SCRIPT.fullmatch(s) for s in scripts)


GIT_READ_ONLY = {"status", "log", "diff", "show", "blame", "rev-parse", "ls-files",
                 "describe", "shortlog", "grep", "cat-file", "branch", "tag", "remote",
                 "ls-tree", "rev-list", "merge-base", "reflog"}
GIT_LISTING_FLAGS = {"-a", "--all", "-r", "--remotes", "-v", "-vv", "--verbose", "-l",
                     "--list", "--show-current", "--no-color", "--merged", "--no-merged",
                     "--contains", "--sort", "--points-at"}


def git_read_only(args: list[str]) -> bool:
    """`git status/log/diff/show...`, with no option that writes or runs a program."""
    while args and args[0] == "--no-pager":
        args = args[1:]
    if not args or args[0] not in GIT_READ_ONLY:
        return False  # -c, -C, --exec-path, --git-dir ... before the subcommand: no
    sub, rest = args[0], args[1:]
    if any(a.startswith(("--output", "--ext-diff", "--textconv", "-O", "--open-files-in-pager",
                         "--exec")) for a in rest):
        return False
    if sub in ("branch", "tag"):  # listing only: `git branch new` creates one
        return all(a in GIT_LISTING_FLAGS or a.startswith(("--sort=", "--format="))
                   or ("-l" in rest or "--list" in rest) and not a.startswith("-")
                   for a in rest)
    if sub == "remote":
        return rest in ([], ["-v"], ["--verbose"]) or rest[:1] == ["get-url"]
    if sub == "reflog":
        return rest[:1] in ([], ["show"]) or rest[0].startswith("-")
    return True
# >>> EXERCISE ex3


def tar_read_only(args: list[str]) -> bool:
    """`tar ARGS`: does it only list an archive? Fail closed: True only for a listing
    (`t` or `--list`) whose every option is known to be harmless.

    tar spells options three ways, all of which must be understood:
        tar tzf site.tgz              old style: the first word is a bundle of letters,
                                      and `f` takes the next word
        tar -tzf site.tgz, -t -f x    short options; `f` takes the rest of its word
                                      (`-fsite.tgz`) or else the next word
        tar --list --file=x.tar       long options; also `--file x.tar`
    Harmless: t v z j J (list, verbose, gzip, bzip2, xz), f, and --list --verbose
    --gzip --gunzip --bzip2 --xz --zstd --file. Anything else is not read-only: x, c,
    r, u, A, --extract, --delete (they write), -I and --use-compress-program,
    --to-command, --checkpoint-action (they run programs), -C, and every option
    this list does not name. An archive name with a `:` in it is not read-only
    either: tar takes `host:file` as a remote archive, and runs rsh to reach it.
    Other words are member names: the paths of files inside the archive.
    """
    raise NotImplementedError("write tar_read_only(args), then add tar to READ_ONLY_PROGRAMS")
# <<< EXERCISE ex3


FIND_ACTIONS = ("-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0",
                "-fprintf", "-fls")

READ_ONLY_PROGRAMS = {  # program -> check of its arguments (None: any)
    **dict.fromkeys(
        ["cat", "head", "tail", "wc", "ls", "pwd", "echo", "printf", "true", "false",
         "which", "stat", "du", "df", "cut", "tr", "nl", "basename", "dirname", "realpath",
         "readlink", "uname", "whoami", "id", "printenv", "diff", "cmp", "comm", "grep",
         "egrep", "fgrep", "md5sum", "sha1sum", "sha256sum", "sha512sum", "base64",
         "column", "fold", "paste", "rev", "expand", "unexpand", "strings", "od",
         "hexdump", "seq", "sleep", "test", "[", "jq", "uptime", "ps", "free", "tac",
         "nproc", "arch", "groups", "type", "cal"], None),
    "sed": sed_read_only,
    "git": git_read_only,
    "find": lambda args: not any(a in FIND_ACTIONS for a in args),
    "rg": no_option("--pre"),                       # --pre runs a program on each file
    "sort": no_option("-o", "--output", "--compress-program", short="o"),
    "uniq": lambda args: len([a for a in args if not a.startswith("-")]) <= 1,  # uniq in out
    "tree": no_option("-o", "--output"),
    "file": no_option("-C", "--compile"),
    "date": lambda args: no_option("-s", "--set", short="s")(args)
            and all(a.startswith(("-", "+")) for a in args),  # `date MMDDhhmm` sets it
    "hostname": lambda args: args in ([], ["-f"], ["-s"], ["-i"], ["-I"], ["-d"]),
    "env": lambda args: not args,                   # `env rm x` runs rm
    # >>> EXERCISE ex3-program
    # tar: its check of the arguments goes here
    # <<< EXERCISE ex3-program
}


def is_read_only_command(command: str) -> bool:
    """True only if every command in `command` provably changes nothing and reads
    only inside the workspace. Anything we cannot prove is not read-only."""
    try:
        script = parse_bash(command)
    except BashSyntaxError:
        return False
    flags = read_only_parts(script)
    return bool(flags) and all(flags)


def read_only_parts(script: Script) -> list[bool]:
    """For each command of all_commands(script), in order: is it read-only?"""
    cwds = {Path.cwd().resolve()}  # where relative paths may point, after any `cd`
    flags = []
    for cmd in all_commands(script):
        ok, cwds = command_read_only(cmd, cwds)
        flags.append(ok)
    return flags


def command_read_only(cmd: Command, cwds: set) -> tuple[bool, set]:
    words = argv(cmd)
    leading = cmd.words[:len(cmd.words) - len(words)]
    if any(ASSIGNMENT.match(w.raw) for w in leading) or any(w.expanded for w in cmd.words):
        return False, cwds  # `PAGER=x git log`, `$(...)`, `$HOME`: not provable
    for op, target in cmd.redirects:
        if not redirect_read_only(op, target, cwds):
            return False, cwds
    if not words:
        return True, cwds
    program, args = words[0].text, [w.text for w in words[1:]]
    if program == "cd":  # changes where later relative paths point: keep track
        if len(args) != 1 or not all(stays_inside(args[0], cwd) for cwd in cwds):
            return False, cwds
        return True, cwds | {(cwd / os.path.expanduser(args[0])).resolve() for cwd in cwds}
    if program not in READ_ONLY_PROGRAMS:
        return False, cwds  # unknown programs, /bin/ls, ./script, for, case ...
    check = READ_ONLY_PROGRAMS[program]
    if check is not None and not check(args):
        return False, cwds
    return all(stays_inside(a, cwd) for a in path_args(program, args) for cwd in cwds), cwds


NO_FILES = {"echo", "printf", "true", "false", "pwd", "seq", "sleep", "date", "uname",
            "whoami", "id", "nproc", "arch", "groups", "type", "which", "basename",
            "dirname", "cal", "uptime", "free", "ps", "printenv", "hostname", "env"}
PATTERN_FIRST = {"grep", "egrep", "fgrep", "rg", "sed", "jq"}  # first argument: not a path


def path_args(program: str, args: list[str]) -> list[str]:
    """The arguments that may name files to read (patterns and scripts are not)."""
    if program in NO_FILES:
        return []
    if program not in PATTERN_FIRST:
        return args
    out, skip, given = [], False, False
    for a in args:
        if skip:
            skip = False
        elif a in ("-e", "--regexp", "--expression"):
            skip = given = True
        elif a.startswith(("--regexp=", "--expression=")):
            given = True
        elif a in ("-f", "--file") or a.startswith("--file="):
            given = True  # patterns read from a file: the next word is a path
            out.append(a)
        elif not a.startswith("-") and not given:
            given = True  # the pattern or script itself
        else:
            out.append(a)
    return out


def redirect_read_only(op: str, target: Word, cwds: set) -> bool:
    """Only `>/dev/null`, `2>&1`, `< file-in-workspace` and here-documents."""
    op = op.lstrip("0123456789")
    if op in (">&", "<&"):
        return target.text.isdigit() or target.text == "-"
    if op in ("<<", "<<-", "<<<"):
        return not target.expanded
    if op == "<":
        return all(stays_inside(target.text, cwd) for cwd in cwds)
    return target.text == "/dev/null"  # > >> &> >| <>: a write, unless to nowhere


def stays_inside(arg: str, cwd: Path) -> bool:
    """Does a path-like argument (or an option's value: --file=x, -fx) resolve
    inside the workspace? Globs are expanded; symbolic links are followed."""
    workspace = Path.cwd().resolve()
    candidates = {arg, arg.split("=", 1)[-1]}
    if re.match(r"-[A-Za-z]", arg):
        candidates.add(arg[2:])
    for cand in candidates:
        if cand in ("", "-", "/dev/null"):
            continue
        full = os.path.join(cwd, os.path.expanduser(cand))
        for match in (glob.glob(full) if glob.has_magic(full) else []) + [full]:
            real = Path(match).resolve()
            if real != workspace and workspace not in real.parents:
                return False
    return True
# --8<-- [end:read_only]


# --8<-- [start:dangerous]
# Commands that always ask, in every mode, even bypassPermissions. They are checked
# on the parsed commands, after quotes, `\rm`, `$'\x72\x6d'`, `/bin/rm` and wrappers
# like `sudo` are undone, so `echo "rm -rf /"` (just text) does not trip them.
WRAPPERS = {  # program -> its options that take a value
    "sudo": {"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U"}, "doas": {"-u", "-C"},
    "env": {"-u", "-C", "-S"}, "nice": {"-n"}, "nohup": set(), "time": set(),
    "timeout": {"-s", "-k", "--signal", "--kill-after"}, "command": set(),
    "builtin": set(), "exec": {"-a"}, "stdbuf": {"-i", "-o", "-e"}, "setsid": set(),
    "ionice": {"-c", "-n", "-p"}, "xargs": {"-I", "-n", "-P", "-d", "-L", "-s", "-E", "-a"},
    "busybox": set(), "unbuffer": set(), "chroot": set(), "strace": {"-o", "-e", "-p"},
}
SHELLS = {"sh", "bash", "zsh", "dash", "ksh", "fish", "csh", "tcsh", "ash", "busybox"}
INTERPRETERS = {"python", "python2", "python3", "perl", "ruby", "node", "nodejs", "php",
                "lua", "deno", "bun", "Rscript", "osascript"}
DOWNLOADERS = {"curl", "wget", "fetch", "aria2c", "http", "https", "xh", "nc", "ncat",
               "netcat", "socat", "ftp", "tftp", "lynx", "links"}
NETWORK = DOWNLOADERS | {"scp", "sftp", "rsync", "ssh", "telnet", "mail", "sendmail"}
CREDENTIALS = re.compile(
    r"(\.ssh/|\bid_(rsa|dsa|ecdsa|ed25519)\b|\.aws/credentials|\.netrc|\.git-credentials"
    r"|\.npmrc|\.pypirc|\.docker/config\.json|\.kube/config|\.gnupg/|(^|[/@=])\.env\b"
    r"|\$\{?\w*(TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|ACCESS_KEY|PRIVATE_KEY|CREDENTIAL)\w*)",
    re.IGNORECASE)
GIT_PROGRAM_SETTINGS = re.compile(  # git settings whose value is a program git will run
    r"(core\.(hookspath|fsmonitor|sshcommand|pager|editor|askpass|gitproxy)|diff\.external"
    r"|sequence\.editor|gpg\.(\w+\.)?program|credential\.helper|uploadpack\.packobjectshook"
    r"|(diff|merge|filter)\.[^=]+\.(textconv|command|driver|clean|smudge|process)"
    r"|pager\.[^=]+|alias\.[^=]+=\s*!.*)(=|$)", re.IGNORECASE)
SIMPLE_DANGERS = {  # program -> why it is dangerous, whatever its arguments
    "shutdown": "it stops the machine", "reboot": "it restarts the machine",
    "halt": "it stops the machine", "poweroff": "it stops the machine",
    "killall5": "it kills every process", "visudo": "it edits sudoers",
    "mkswap": "it writes a file system", "fdisk": "it changes disk partitions",
    "sfdisk": "it changes disk partitions", "cfdisk": "it changes disk partitions",
    "gdisk": "it changes disk partitions", "sgdisk": "it changes disk partitions",
    "parted": "it changes disk partitions", "wipefs": "it wipes file system signatures",
    "blkdiscard": "it discards a whole disk",
}


def dangerous_reason(command: str) -> str | None:
    """Why `command` is dangerous enough to always ask, or None."""
    try:
        script = parse_bash(command)
    except BashSyntaxError as e:
        return f"the command cannot be parsed ({e}), so it cannot be checked"
    return script_danger(script, depth=0)


def script_danger(script: Script, depth: int) -> str | None:
    if depth > MAX_NESTING:
        return "commands nested too deeply to check"
    commands = list(all_commands(script))
    for cmd in commands:
        if reason := command_danger(cmd, depth):
            return reason
    for pipeline in all_pipelines(script):
        if reason := pipeline_danger(pipeline, depth):
            return reason
    network = any(program_of(unwrap(argv(c))) in NETWORK for c in commands)
    if network and (reason := credentials_sent(commands)):
        return reason
    return None


def unwrap(words: list) -> list:
    """`sudo -u x nice -n 5 /bin/rm` -> [rm ...]: the program that really runs."""
    while words and program_of(words) in WRAPPERS:
        takes_value, words = WRAPPERS[program_of(words)], words[1:]
        while words and (words[0].text.startswith("-") or ASSIGNMENT.match(words[0].raw)):
            flag, words = words[0].text, words[1:]
            if flag in takes_value and words:
                words = words[1:]
        if words and words[0].text[:1].isdigit() and program_of(words) not in WRAPPERS:
            words = words[1:]  # `timeout 5 rm`: the duration
    return words


def program_of(words: list) -> str:
    return os.path.basename(words[0].text) if words else ""


def command_danger(cmd: Command, depth: int) -> str | None:
    if program_of(argv(cmd)) in cmd.functions:
        return "fork bomb: a function that starts itself"
    for op, target in cmd.redirects:
        if op.lstrip("0123456789") in (">", ">>", "&>", "&>>", ">|", "<>") or (
                op.endswith(">&") and not (target.text.isdigit() or target.text == "-")):
            if reason := protected_write(target.text):
                return reason
    return words_danger(unwrap(argv(cmd)), cmd, depth)


def words_danger(words: list, cmd: Command, depth: int) -> str | None:
    """The checks on one program and its arguments (also used for `find -exec ...`)."""
    if not words:
        return None
    if words[0].expanded:
        return "the program to run is only known at run time"
    prog, args = program_of(words), [w.text for w in words[1:]]
    if prog in SIMPLE_DANGERS or prog.startswith(("mkfs", "mke2fs")):
        return SIMPLE_DANGERS.get(prog, "it makes a file system (erases a disk)")
    if prog in SHELLS | INTERPRETERS | {"eval", "source", "."}:
        if reason := shell_danger(prog, words, depth):
            return reason
    if prog in ("rm", "shred", "unlink", "rmdir", "mv", "srm"):
        for w in words[1:]:
            if not w.text.startswith("-") and (what := critical_target(w)):
                return f"{prog} {w.text!r} deletes {what}"
    if prog == "find":
        return find_danger(words, cmd, depth)
    if prog == "rsync" and any(a.startswith("--delete") for a in args):
        if any(critical_target(w) for w in words[1:] if not w.text.startswith("-")):
            return "rsync --delete onto the root, home or the workspace"
    if prog in ("chmod", "chown", "chgrp", "setfacl"):
        if reason := permission_danger(prog, words, args):
            return reason
    if prog == "dd":
        out = [a[3:] for a in args if a.startswith("of=")]
        if out and (reason := protected_write(out[0])):
            return reason
    if prog == "git":
        return git_danger(args)
    if prog in ("kill", "pkill") and kill_all(args):
        return "it kills every process (kill -1)"
    if prog in ("init", "telinit") and args[:1] in (["0"], ["6"]):
        return "it stops the machine"
    if prog == "systemctl" and set(args) & {"poweroff", "reboot", "halt", "kexec"}:
        return "it stops the machine"
    if prog == "crontab" and any(re.fullmatch(r"-\w*r\w*", a) or a == "/dev/null" for a in args):
        return "it wipes the crontab"
    if prog.startswith(("iptables", "ip6tables")) and set(args) & {"-F", "--flush", "-X"}:
        return "it wipes firewall rules"
    if (prog == "nft" and "flush" in args) or (prog == "ufw" and args[:1] in (["disable"], ["reset"])):
        return "it wipes firewall rules"
    return infrastructure_danger(prog, args) or write_danger(prog, words, args)


def critical_target(word: Word) -> str:
    """If this path is the root, home, the workspace, one of its parents, a system
    directory, or everything inside one of those (`/*`, `~/*`, `*`): which one.
    Else ""."""
    workspace = Path.cwd().resolve()
    home = Path.home().resolve()
    critical = {Path("/"), home, workspace, *workspace.parents, *home.parents} | {
        Path("/", d) for d in ("bin", "boot", "dev", "etc", "home", "lib", "lib64", "opt",
                               "proc", "root", "sbin", "srv", "sys", "usr", "var")}
    for spelling in (word.text, word.empty):  # "$UNSET/*" is "/*" when UNSET is empty
        value = re.sub(r"\$\{?HOME\}?", str(home), re.sub(r"\$\{?PWD\}?", str(workspace), spelling))
        if not value or "$" in value:
            continue
        path = os.path.expanduser(value)
        while path.endswith(("/*", "/.*", "/")) and len(path) > 1:
            path = path.rstrip("*").rstrip(".").rstrip("/") or "/"
        if path in ("*", ".*"):
            path = "."
        full = Path(os.path.normpath(os.path.join(workspace, path)))
        for hit in (full, full.resolve()):
            if hit in critical:
                name = ("the root" if hit == Path("/") else "your home" if hit == home
                        else "the workspace" if hit == workspace else str(hit))
                unset = " if the variable is unset" if spelling == word.empty != word.text else ""
                return f"{name}{unset}"
    return ""


def find_danger(words: list, cmd: Command, depth: int) -> str | None:
    """`find / -delete`, `find ~ -exec rm -rf {} +`, or a dangerous -exec command."""
    args = words[1:]
    starts = []
    for w in args:
        if w.text.startswith(("-", "(", "!")):
            break
        starts.append(w)
    texts = [w.text for w in args]
    acts = [i for i, t in enumerate(texts) if t in FIND_ACTIONS]
    workspace = Path.cwd().resolve()
    filtered = any(t in ("-name", "-iname", "-path", "-ipath", "-regex", "-newer", "-mtime",
                         "-mmin", "-size", "-empty", "-perm") for t in texts)
    # `find . -name '*.pyc' -delete` tidies the workspace; `find . -delete` empties it
    critical = [w for w in starts if critical_target(w)
                and not (filtered and Path(os.path.normpath(workspace / w.text)) == workspace)]
    if acts and critical and any(
            texts[i] == "-delete" or i + 1 < len(texts) and texts[i + 1] in ("rm", "shred", "unlink")
            or texts[i].startswith(("-exec", "-ok")) for i in acts):
        return "find deletes in the root, home or the workspace"
    for i in acts:
        if texts[i].startswith(("-exec", "-ok")):
            end = next((j for j in range(i + 1, len(texts)) if texts[j] in (";", "+")), len(texts))
            if reason := words_danger(unwrap(args[i + 1:end]), cmd, depth):
                return f"find -exec: {reason}"
    return None


def shell_danger(prog: str, words: list, depth: int) -> str | None:
    """Code a shell or interpreter runs: `bash -c "..."`, `eval`, `bash <(curl ...)`."""
    for w in words[1:]:
        for sub in w.subs:
            if any(program_of(unwrap(argv(c))) in DOWNLOADERS or is_decoder(c)
                   for c in all_commands(sub)):
                return "it runs a downloaded or decoded script"
    for code in inline_code(prog, words):
        if code.expanded:
            return "it runs code that is only known at run time"
        if prog in SHELLS | {"eval"}:
            try:
                reason = script_danger(parse_bash(code.text), depth + 1)
            except BashSyntaxError as e:
                reason = f"its inner command cannot be parsed ({e})"
        else:
            reason = interpreter_danger(code.text, depth)
        if reason:
            return reason
    return None


CODE_FLAGS = {"perl": "eE", "ruby": "e", "node": "ep", "nodejs": "ep", "deno": "e",
              "bun": "e", "php": "r", "lua": "e", "Rscript": "e", "osascript": "e"}


def inline_code(prog: str, words: list) -> list:
    """The code given on the command line: `sh -c CODE`, `python -c CODE`,
    `perl -ne CODE`, `node --eval CODE`, `eval ...`."""
    if prog == "eval":
        return [Word(" ".join(w.text for w in words[1:]), "", any(w.expanded for w in words[1:]))]
    letters = "c" if prog in SHELLS or prog.startswith("python") else CODE_FLAGS.get(prog, "")
    codes = []
    for flag, code in zip(words[1:], words[2:]):
        if letters and (re.fullmatch(rf"-[a-zA-Z]*[{letters}]", flag.text)
                        or flag.text in ("--eval", "--print", "--command")):
            codes.append(code)
    return codes


def interpreter_danger(code: str, depth: int) -> str | None:
    """An interpreter one-liner that deletes outside the workspace, runs a
    dangerous shell command, or forks forever."""
    strings = [m.group(2) for m in re.finditer(r"""(['"])(.*?)(?<!\\)\1""", code)]
    for s in strings:  # os.system("rm -rf /") and friends
        try:
            if reason := script_danger(parse_bash(s), depth + 1):
                return f"its code runs a dangerous command: {reason}"
        except BashSyntaxError:
            pass
    deletes = re.search(r"\brm\b|rmtree|rm_rf|rm_r\b|rmSync|rmdirSync|rimraf|unlink|remove|"
                        r"rmdir|delete", code)
    home = re.search(r"expanduser|Path\.home|homedir|HOME|getenv|environ", code)
    paths = re.findall(r"(?:^|[\s(\[{'\"=,])(~[\w./*-]*|/[\w./*-]*)", code)
    outside = any(not stays_inside(p, Path.cwd()) for p in paths)
    if deletes and (home or outside):
        return "its code deletes files outside the workspace"
    if "fork" in code and re.search(r"\b(while|for|loop)\b", code):
        return "fork bomb: code that forks in a loop"
    return None


def is_decoder(cmd: Command) -> bool:
    words = unwrap(argv(cmd))
    prog, args = program_of(words), [w.text for w in words[1:]]
    return (prog in ("base64", "base32", "basenc") and bool({"-d", "-D", "--decode"} & set(args))
            or prog == "xxd" and "-r" in args or prog in ("uudecode", "gunzip", "zcat")
            or prog == "openssl" and "-d" in args or prog == "gzip" and "-d" in args)


def pipeline_danger(pipeline: list, depth: int) -> str | None:
    """`curl ... | sh`, `base64 -d payload | bash`, `echo "rm -rf /" | sh`."""
    for i, cmd in enumerate(pipeline[1:], start=1):
        words = unwrap(argv(cmd))
        prog = program_of(words)
        if prog not in SHELLS | INTERPRETERS or inline_code(prog, words):
            continue
        if any(not w.text.startswith("-") for w in words[1:]) and prog not in SHELLS:
            continue  # `python script.py` reads the script, not the pipe
        for before in pipeline[:i]:
            source = unwrap(argv(before))
            if program_of(source) in DOWNLOADERS or is_decoder(before):
                return f"it pipes a download or decoded data into {prog}"
            if program_of(source) in ("echo", "printf") and prog in SHELLS:
                text = " ".join(w.text for w in source[1:] if not w.text.startswith("-"))
                try:
                    if reason := script_danger(parse_bash(text), depth + 1):
                        return f"it pipes a dangerous command into {prog}: {reason}"
                except BashSyntaxError:
                    return f"it pipes text that cannot be parsed into {prog}"
    return None


def credentials_sent(commands: list) -> str | None:
    """A network program in a command that also names a key, token or secret."""
    for cmd in commands:
        words = unwrap(argv(cmd))
        for i, w in enumerate(words):
            if i > 0 and words[i - 1].text == "-i" and program_of(words) in ("ssh", "scp", "sftp"):
                continue  # `ssh -i key`: the key proves who you are; it is not sent
            if CREDENTIALS.search(w.text) or CREDENTIALS.search(w.raw):
                return f"it may send credentials over the network ({w.text[:40]})"
        if [w.text for w in argv(cmd)] in (["env"], ["printenv"]):
            return "it may send every environment variable (tokens) over the network"
        for _, target in cmd.redirects:
            if CREDENTIALS.search(target.text):
                return f"it may send credentials over the network ({target.text[:40]})"
    return None


def permission_danger(prog: str, words: list, args: list[str]) -> str | None:
    """chmod/chown -R on / or ~; setuid and setgid bits."""
    recursive = any(a in ("-R", "--recursive") or re.fullmatch(r"-[a-zA-Z]*R[a-zA-Z]*", a) for a in args)
    if recursive and any(critical_target(w) for w in words[1:] if not w.text.startswith("-")):
        return f"{prog} -R on the root, home or the workspace"
    mode = next((a for a in args if not a.startswith("-")), "")
    if prog == "chmod" and (re.fullmatch(r"[ugoa]*[+=][rwxXt]*s[rwxXst]*(,.*)?", mode)
                            or re.fullmatch(r"0?[2467][0-7]{3}", mode)):
        return "it sets a setuid/setgid bit"
    for w in words[1:]:
        if not w.text.startswith("-") and w.text != mode and (reason := protected_write(w.text)):
            return reason
    return None


def kill_all(args: list[str]) -> bool:
    """`kill -9 -1`, `kill -s KILL -1`, `kill -- -1`: -1 as a target means everyone."""
    targets, i = [], 0
    if args and args[0].startswith("-") and args[0] != "--":  # the signal
        i = 2 if args[0] in ("-s", "-n") else 1
    targets = [a for a in args[i:] if a != "--"]
    return "-1" in targets


def git_danger(args: list[str]) -> str | None:
    """Settings that make git run programs, and commands that destroy history."""
    i = 0
    while i < len(args) and args[i].startswith("-"):  # git's own options
        if args[i] == "-c" and i + 1 < len(args) and GIT_PROGRAM_SETTINGS.match(args[i + 1]):
            return f"git -c {args[i + 1]} makes git run a program"
        i += 2 if args[i] in ("-c", "-C", "--git-dir", "--work-tree", "--namespace") else 1
    sub, rest = (args[i], args[i + 1:]) if i < len(args) else ("", [])
    if sub == "config" and not set(rest) & {"--get", "--get-all", "--get-regexp", "-l",
                                             "--list", "--unset", "--unset-all"}:
        keys = [a for a in rest if not a.startswith("-")]
        if keys and GIT_PROGRAM_SETTINGS.match(keys[0] + ("=" + keys[1] if len(keys) > 1 else "")):
            return f"git config {keys[0]} makes git run a program"
    short = "".join(a[1:] for a in rest if re.fullmatch(r"-[a-zA-Z]+", a))
    if sub == "push" and ("f" in short or "d" in short or any(
            a.startswith(("--force", "--delete", "--mirror", "--prune", "+", ":")) for a in rest)):
        return "git push that rewrites or deletes remote history"
    if sub == "reset" and "--hard" in rest:
        return "git reset --hard discards work"
    if sub == "clean" and ("f" in short or "--force" in rest) and "n" not in short and "--dry-run" not in rest:
        return "git clean deletes untracked files"
    if sub in ("filter-branch", "filter-repo") or (sub == "reflog" and rest[:1] == ["expire"]):
        return f"git {sub} rewrites history"
    return None


def infrastructure_danger(prog: str, args: list[str]) -> str | None:
    joined = " ".join([prog] + args)
    if (prog in ("terraform", "tofu", "terragrunt") and ("destroy" in args or "-destroy" in args)
            or prog == "pulumi" and set(args) & {"destroy", "down"}
            or prog in ("docker", "podman") and re.search(r"\b(system|volume|image) prune", joined)
            or prog == "kubectl" and "delete" in args and set(args) & {"--all", "namespace", "ns", "-A"}
            or prog == "aws" and re.search(r"s3 (rb|rm .*--recursive)", joined)
            or prog == "gcloud" and re.search(r"projects delete", joined)
            or prog == "az" and re.search(r"group delete", joined)):
        return "it tears down infrastructure"
    return None


def write_danger(prog: str, words: list, args: list[str]) -> str | None:
    """Programs that write into a protected place (`cp x ~/.ssh/`, `tee .git/hooks/...`)."""
    targets = []
    if prog in ("tee", "touch", "truncate", "mkdir", "ln", "cp", "mv", "install", "rsync"):
        targets = [a for a in args if not a.startswith("-")]
    if prog in ("sed", "perl") and any(a.startswith(("-i", "--in-place")) for a in args):
        targets = [a for a in args[1:] if not a.startswith("-")]
    for target in targets:
        if reason := protected_write(target):
            return reason
    return None


def protected_write(target: str) -> str | None:
    """Why writing to `target` is dangerous, or None: places that run code, hold
    keys, control the agent's own permissions, or are disks."""
    home = Path.home()
    path = Path(os.path.normpath(Path.cwd() / os.path.expanduser(target)))
    parts = path.parts
    if any(parts[k:k + 2] == (".git", "hooks") for k in range(len(parts))):
        return "it writes a git hook (hooks run programs)"
    if parts[-2:] == (".git", "config"):
        return "it writes git's config (which can run programs)"
    if parts[-2:-1] == (".claude",) and parts[-1].startswith("settings"):
        return "it writes the agent's own permission settings"
    if path == home / ".ssh" or home / ".ssh" in path.parents:
        return "it writes into ~/.ssh"
    if path.parent == home and path.name in (".bashrc", ".bash_profile", ".bash_login",
                                             ".profile", ".zshrc", ".zprofile", ".zshenv",
                                             ".zlogin", ".bash_logout"):
        return f"it writes the shell start-up file ~/{path.name}"
    if str(path).startswith(("/etc/sudoers", "/etc/passwd", "/etc/shadow", "/etc/profile",
                             "/etc/bash.bashrc", "/etc/environment")):
        return f"it writes {path}"
    if parts[:2] == ("/", "dev") and path.name not in ("null", "zero", "stdout", "stderr", "tty") \
            and "fd" not in parts:
        return f"it writes to the device {path} (a disk?)"
    return None
# --8<-- [end:dangerous]


# --8<-- [start:metadata]
# What the gate needs to know about each tool, decided per input: `run_shell` is
# read-only for `git status`, not for `git push`. `is_destructive` returns why a
# call is dangerous (a non-empty string) or None.
def path_of(tool_input: dict) -> str:
    return tool_input.get("file_path") or tool_input.get("path") or "."


TOOL_META = {  # tool name -> its safety metadata and the Claude Code names rules use
    "run_shell": {"names": ("Bash",),
                  "is_read_only": lambda i: is_read_only_command(i["command"]),
                  "is_destructive": lambda i: dangerous_reason(i["command"])},
    "read_file": {"names": ("Read",), "is_read_only": lambda i: True,
                  "is_destructive": lambda i: None},
    "write_file": {"names": ("Write", "Edit"), "is_read_only": lambda i: False,
                   "is_destructive": lambda i: protected_write(str(resolve_path(path_of(i))))},
    "edit_file": {"names": ("Edit",), "is_read_only": lambda i: False,
                  "is_destructive": lambda i: protected_write(str(resolve_path(path_of(i))))},
    "list_files": {"names": ("Glob", "Read"), "is_read_only": lambda i: True,
                   "is_destructive": lambda i: None},
    "grep_search": {"names": ("Grep", "Read"), "is_read_only": lambda i: True,
                    "is_destructive": lambda i: None},
    "web_fetch": {"names": ("WebFetch",), "is_read_only": lambda i: True,
                  "is_destructive": lambda i: None},
}
# subtle: a tool that declares nothing gets these. Both err on the safe side: if we
# guessed "read-only" for a tool that deletes, plan mode would run it unasked. A
# wrong "not read-only" only costs a question.
SAFE_DEFAULTS = {"names": (), "is_read_only": lambda i: False,
                 "is_destructive": lambda i: "the tool declares no safety metadata"}
PATH_TOOLS = {"read_file", "write_file", "edit_file", "list_files", "grep_search"}
EDIT_TOOLS = {"write_file", "edit_file"}


def tool_meta(name: str) -> dict:
    """Our tool's metadata, found by our name or its Claude Code name."""
    for tool, meta in TOOL_META.items():
        if name == tool or name in meta["names"][:1]:
            return {**SAFE_DEFAULTS, **meta, "tool": tool}
    return {**SAFE_DEFAULTS, "tool": name}


def ask_meta(meta: dict, question: str, tool_input: dict, failed):
    """Ask a metadata function; if it fails, take the safe answer."""
    try:
        return meta[question](tool_input)
    except Exception:
        return failed
# --8<-- [end:metadata]


# --8<-- [start:rules]
PERMISSION_MODES = ("default", "acceptEdits", "plan", "bypassPermissions")
SETTINGS_FILES = (".claude/settings.json", ".claude/settings.local.json")


def load_settings() -> dict:
    """The `permissions` of the workspace's settings files, merged: rules add up,
    the local file's defaultMode wins. A broken file is reported, not guessed at."""
    merged = {"allow": [], "deny": [], "ask": [], "defaultMode": None, "problems": []}
    for name in SETTINGS_FILES:
        file = Path.cwd() / name
        if not file.is_file():
            continue
        try:
            permissions = json.loads(file.read_text(encoding="utf-8")).get("permissions", {})
            if not isinstance(permissions, dict):
                raise ValueError("'permissions' is not an object")
        except (ValueError, OSError, AttributeError) as e:
            merged["problems"].append(f"{name}: {e}")
            continue
        for key in ("allow", "deny", "ask"):
            rules = permissions.get(key, [])
            merged[key] += [r for r in rules if isinstance(r, str)] if isinstance(rules, list) else []
        merged["defaultMode"] = permissions.get("defaultMode") or merged["defaultMode"]
    return merged


def parse_rule(rule: str) -> tuple[str, str | None]:
    """"Bash(npm test:*)" -> ("Bash", "npm test:*"); "Read" -> ("Read", None)."""
    rule = rule.strip()
    if rule.endswith(")") and "(" in rule:
        name, content = rule[:-1].split("(", 1)
        return name.strip(), content
    return rule, None


def rule_applies(rule: str, tool: str, tool_input: dict, parts: list | None = None) -> bool:
    """Does a deny or ask rule match this call? (Allow rules: see allowed_by_rules.)"""
    name, content = parse_rule(rule)
    if name != tool and name not in tool_meta(tool)["names"]:
        return False
    if content is None or content in ("*", ""):
        return True  # a bare tool name matches every call
    if tool == "run_shell":
        if parts is None:  # unparseable: match the raw text, so a deny still bites
            return command_rule_matches(content, tool_input["command"])
        return any(command_rule_matches(content, text) for texts in parts for text in texts)
    if tool in PATH_TOOLS:
        return any(path_rule_matches(content, p) for p in rule_paths(tool_input, deny=True))
    if tool == "web_fetch":
        return content.startswith("domain:") and url_host(tool_input["url"]) == content[7:].lower()
    return False


def command_rule_matches(pattern: str, command: str) -> bool:
    """Claude Code's Bash rule forms: `npm test` exactly; `npm run test:*` and
    `ls *` by prefix with a word boundary (so not `lsof`); `*` elsewhere spans
    anything, spaces and arguments included."""
    if pattern.endswith(":*"):
        prefix = pattern[:-2]
        return command == prefix or command.startswith(prefix + " ")
    if "*" not in pattern:
        return command == pattern
    regex = ".*".join(re.escape(piece) for piece in pattern.split("*"))
    if pattern.endswith(" *") and pattern.count("*") == 1:
        regex = regex[:-len(re.escape(" ") + ".*")] + "(?: .*)?"  # `ls *` also matches `ls`
    return re.fullmatch(regex, command, re.DOTALL) is not None


def command_parts(command: str) -> list | None:
    """For each command in `command`: the texts a rule may match (as written, and
    unwrapped: `sudo /bin/rm -rf x` is also `rm -rf x`). None if unparseable."""
    try:
        script = parse_bash(command)
    except BashSyntaxError:
        return None
    parts = []
    for cmd in all_commands(script):
        plain = unwrap(argv(cmd))
        unwrapped = " ".join([program_of(plain)] + [w.text for w in plain[1:]])
        parts.append((part_text(cmd), unwrapped))
    return parts


def rule_paths(tool_input: dict, deny: bool) -> list[Path]:
    """The path as written (normalised) and as resolved; allow rules use only the
    resolved one, so a symbolic link cannot launder a path into an allow rule."""
    resolved = resolve_path(path_of(tool_input))
    written = Path(os.path.normpath(Path.cwd() / os.path.expanduser(path_of(tool_input))))
    return [resolved, written] if deny else [resolved]


def path_rule_matches(pattern: str, path: Path) -> bool:
    """gitignore-style: `//abs/**`, `~/in-home/**`, `/from-workspace-root`, `./x`
    or `x` from the workspace. A pattern without a slash matches a name at any
    depth; a matching directory covers everything under it."""
    workspace, anchored = Path.cwd().resolve(), True
    if pattern.startswith("//"):
        base, pattern = Path("/"), pattern[2:]
    elif pattern.startswith("~/"):
        base, pattern = Path.home().resolve(), pattern[2:]
    elif pattern.startswith("./"):
        base, pattern = workspace, pattern[2:]
    elif pattern.startswith("/"):  # from the directory that holds .claude/
        base, pattern = workspace, pattern[1:]
    else:
        base, anchored = workspace, "/" in pattern.rstrip("/")
    try:
        rel = path.relative_to(base).parts
    except ValueError:
        return False
    regex = re.compile(glob_regex(pattern.rstrip("/") or "**"), re.DOTALL)
    for k in range(1, len(rel) + 1):
        if regex.fullmatch("/".join(rel[:k]) if anchored else rel[k - 1]):
            return True
    return False


def glob_regex(pattern: str) -> str:
    """`**` spans directories, `*` and `?` stay within one, `[...]` is a class."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.endswith("/**") and i == len(pattern) - 3:
            out.append("(?:/.*)?")  # `docs/**` also covers docs itself (a search of it)
            i += 3
        elif pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and "]" in pattern[i + 1:]:
            end = pattern.index("]", i + 1)
            out.append("[" + pattern[i + 1:end].replace("!", "^", 1) + "]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out)


def url_host(url: str) -> str:
    return (urlparse(url).hostname or "").lower()


def allowed_by_rules(allow: list, tool: str, tool_input: dict, parts) -> str | None:
    """The allow rule(s) that cover this call, or None. A compound command is
    allowed only if every part is: by some allow rule, or by being read-only."""
    bare = [r for r in allow if parse_rule(r)[1] in (None, "*", "")
            and rule_applies(r, tool, tool_input)]
    if bare:
        return bare[0]
    if tool != "run_shell":
        for rule in allow:
            name, content = parse_rule(rule)
            if name != tool and name not in tool_meta(tool)["names"]:
                continue
            if tool in PATH_TOOLS and any(path_rule_matches(content, p)
                                          for p in rule_paths(tool_input, deny=False)):
                return rule
            if tool == "web_fetch" and rule_applies(rule, tool, tool_input):
                return rule
        return None
    if not parts:
        return None  # unparseable: no allow rule can vouch for it
    flags = read_only_parts(parse_bash(tool_input["command"]))
    used = []
    for (text, _), read_only in zip(parts, flags):
        rule = next((r for r in allow if parse_rule(r)[0] in ("run_shell", "Bash")
                     and parse_rule(r)[1] and command_rule_matches(parse_rule(r)[1], text)), None)
        if rule is None and not read_only:
            return None
        if rule and rule not in used:
            used.append(rule)
    return " + ".join(used) if used else None
# --8<-- [end:rules]


# --8<-- [start:decide_permission]
def decide_permission(tool_name: str, tool_input: dict, mode: str, rules: dict) -> tuple[str, str]:
    """("allow" | "deny" | "ask", reason) for one call, before anyone is asked."""
    decision, reason, _ = decide(tool_name, tool_input, mode, rules)
    return decision, reason


def decide(tool_name: str, tool_input: dict, mode: str, rules: dict) -> tuple[str, str, str]:
    """The gate, in order; the first step that decides wins. The third value says
    which kind of step decided (it tells whether "always" may be remembered)."""
    meta = tool_meta(tool_name)
    tool = meta["tool"]
    if mode not in PERMISSION_MODES:
        return "deny", f"unknown permission mode {mode!r}", "mode"
    parts = command_parts(tool_input.get("command", "")) if tool == "run_shell" else None
    read_only = ask_meta(meta, "is_read_only", tool_input, False)
    danger = ask_meta(meta, "is_destructive", tool_input, "its safety check failed")
    # 1. deny rules, then ask rules: first match wins, specificity does not matter.
    for rule in rules.get("deny", []):
        if rule_applies(rule, tool, tool_input, parts):
            return "deny", f"deny rule {rule}", "rule"
    # 2. plan mode: nothing but read-only calls, whatever the allow rules say.
    if mode == "plan" and not read_only:
        return "deny", f"plan mode: only read-only calls run, and this {tool} call is not one", "mode"
    for rule in rules.get("ask", []):
        if rule_applies(rule, tool, tool_input, parts):
            return "ask", f"ask rule {rule}", "rule"
    # 3. dangerous calls always ask, in every mode.
    if danger:
        return "ask", f"dangerous: {danger}", "danger"
    # 4. allow rules.
    if rule := allowed_by_rules(rules.get("allow", []), tool, tool_input, parts):
        return "allow", f"allow rule {rule}", "rule"
    # 5. the mode decides the rest.
    if mode == "bypassPermissions":
        return "allow", "bypassPermissions mode", "mode"
    if tool in PATH_TOOLS and not is_inside(resolve_path(path_of(tool_input))):
        return "ask", f"{path_of(tool_input)} is outside the workspace", "outside"
    if tool == "web_fetch":
        return "ask", f"web_fetch reaches the network ({url_host(tool_input['url'])})", "mode"
    if read_only:
        return "allow", "read-only command" if tool == "run_shell" else "read-only tool", "mode"
    if mode == "acceptEdits" and tool in EDIT_TOOLS:
        return "allow", "acceptEdits mode: a file edit inside the workspace", "mode"
    return "ask", f"{mode} mode: {not_read_only_part(tool, tool_input)}", "mode"


def not_read_only_part(tool: str, tool_input: dict) -> str:
    """Say which part of a command is not read-only: the reason a user can act on."""
    if tool != "run_shell":
        return f"{tool} changes files"
    try:
        script = parse_bash(tool_input["command"])
    except BashSyntaxError as e:
        return f"the command cannot be parsed ({e}), so it is not provably read-only"
    for cmd, read_only in zip(all_commands(script), read_only_parts(script)):
        if not read_only:
            return f"'{part_text(cmd)[:80]}' is not read-only"
    return "the command is not read-only"
# --8<-- [end:decide_permission]


# --8<-- [start:ask]
def current_mode(settings: dict) -> str:
    mode = SESSION["mode"] or settings.get("defaultMode") or "default"
    return mode if mode in PERMISSION_MODES else "default"


def stdin_is_interactive() -> bool:
    try:
        return sys.stdin is not None and not sys.stdin.closed and sys.stdin.isatty()
    except (ValueError, OSError):
        return False


def ask_user(tool_name: str, tool_input: dict, reason: str, allow_always: bool) -> tuple[str, str]:
    """Ask on the terminal: ("yes" | "no" | "always", why). No terminal, no yes."""
    if not stdin_is_interactive():
        return "no", "it needs approval and no one can answer (stdin is not a terminal)"
    print(f"\n? Allow {describe_call(tool_name, tool_input)}\n  because it asks: {reason}")
    choices = "[y]es / [n]o" + (" / [a]lways this session" if allow_always else "")
    while True:
        try:
            answer = input(f"  {choices}: ").strip().lower()
        except EOFError:
            return "no", "stdin was closed before an answer"
        if answer in ("y", "yes"):
            return "yes", "the user approved it"
        if answer in ("n", "no"):
            return "no", "the user said no"
        if allow_always and answer in ("a", "always"):
            return "always", "the user approved it for this session"


def describe_call(tool_name: str, tool_input: dict) -> str:
    args = ", ".join(f"{k}={v!r}" for k, v in tool_input.items())
    return f"{tool_name}({args if len(args) <= 300 else args[:297] + '...'})"


def approval_key(tool: str, tool_input: dict) -> tuple:
    if tool == "run_shell":
        return tool, tool_input["command"]
    if tool == "web_fetch":
        return tool, url_host(tool_input["url"])
    return tool, str(resolve_path(path_of(tool_input)))


def check_permission(tool_name: str, tool_input: dict) -> str | None:
    """None if the call may run; else the message that tells the model why not."""
    settings = load_settings()
    mode = current_mode(settings)
    decision, reason, source = decide(tool_name, tool_input, mode, settings)
    tool = tool_meta(tool_name)["tool"]
    key = approval_key(tool, tool_input)
    if decision == "ask" and source in ("mode", "outside") and key in SESSION["approved"]:
        decision, reason = "allow", "approved earlier this session (always)"
    elif decision == "ask":
        answer, why = ask_user(tool_name, tool_input, reason, source in ("mode", "outside"))
        if answer == "always":
            SESSION["approved"].add(key)
        decision, reason = ("allow" if answer != "no" else "deny"), f"{reason}; {why}"
    show_decision(decision, reason)
    if decision != "allow":
        return (f"Permission denied: {describe_call(tool_name, tool_input)} was not run. "
                f"Why: {reason}. Do not retry the same call; find another way or ask the user.")
    if tool in PATH_TOOLS and not is_inside(resolve_path(path_of(tool_input))):
        SESSION["granted"].add(resolve_path(path_of(tool_input)))  # approved: let it through
    return None
# --8<-- [end:ask]


# --8<-- [start:read_before_edit]
def fingerprint(path: Path) -> tuple[int, str]:
    """mtime and a hash of the content: a touch changes the first only."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return path.stat().st_mtime_ns, digest.hexdigest()


def check_read_before_edit(tool: str, tool_input: dict) -> str | None:
    """Refuse to change an existing file the agent has not read, or that changed
    on disk since it did: its edit would be based on text that is not there."""
    if tool not in EDIT_TOOLS:
        return None
    path = resolve_path(tool_input["file_path"])
    if not path.is_file():
        return None  # a new file: nothing to have read
    seen = SESSION["read"].get(path)
    if seen is None:
        return (f"{tool_input['file_path']} exists and has not been read in this session. "
                "Read it first with read_file, then edit it.")
    if path.stat().st_mtime_ns != seen[0]:
        now = fingerprint(path)
        if now[1] != seen[1]:
            return (f"{tool_input['file_path']} was modified since you read it (by the user or "
                    "a command). Read it again before editing.")
        SESSION["read"][path] = now  # only touched: the content is what we read
    return None


def remember_file(tool: str, tool_input: dict) -> None:
    """After a successful read or write: this is the file as the agent knows it."""
    if tool in ("read_file", "write_file", "edit_file"):
        path = resolve_path(tool_input["file_path"])
        if path.is_file():
            SESSION["read"][path] = fingerprint(path)
# --8<-- [end:read_before_edit]


# --8<-- [start:pipeline]
def execute_tool(block) -> tuple[str, bool]:
    """The one path every tool call takes: look up, validate, check read-before-
    edit, decide permission, run, remember, shape. Returns (output, is_error)."""
    handler = TOOL_HANDLERS.get(block.name)
    if handler is None:
        return f"Error: unknown tool '{block.name}'. Available: {', '.join(TOOL_HANDLERS)}.", True
    problem = validate_input(SCHEMAS[block.name], block.input)
    if problem:
        return f"Error: invalid input for {block.name}: {problem}.", True
    try:
        problem = check_read_before_edit(block.name, block.input)
        denied = None if problem else check_permission(block.name, block.input)
    except Exception as e:  # subtle: a bug in the gate must fail closed, not open
        problem = f"the permission check failed ({type(e).__name__}: {e}); nothing was run."
    if problem:
        return f"Error: {problem}", True
    if denied:
        return denied, True
    try:
        output, is_error = handler(**block.input), False
        remember_file(block.name, block.input)
    except ToolError as e:
        output, is_error = f"Error: {e}", True
    except Exception as e:  # a bug or an OS error: still data for the model
        output, is_error = f"Error: {type(e).__name__}: {e}", True
    return shape_result(block.name, output, block.id), is_error
# --8<-- [end:pipeline]


# --8<-- [start:show]
def show_call(block) -> None:
    """Print a tool call the way the model asked for it."""
    args = block.input if isinstance(block.input, dict) else {"input": block.input}
    call = f"{block.name}({', '.join(f'{k}={v!r}' for k, v in args.items())})"
    call = call if len(call) <= 200 else call[:197] + "..."
    print(f"\033[36m> {call}\033[0m" if COLOR else f"> {call}")


def show_result(output: str, is_error: bool, lines: int = 6) -> None:
    """Print the first few lines of a tool_result, indented."""
    rows = output.splitlines() or [""]
    preview = rows[:lines] + ([f"... (+{len(rows) - lines} lines)"] if len(rows) > lines else [])
    mark = "! " if is_error else "  "
    for row in preview:
        row = mark + (row if len(row) <= 160 else row[:157] + "...")
        print(f"\033[2m{row}\033[0m" if COLOR else row)
        mark = "  "


def show_decision(decision: str, reason: str) -> None:
    """Print what the permission gate decided about a call, and why."""
    row = f"  [{decision}] {reason}"
    row = row if len(row) <= 160 else row[:157] + "..."
    print(f"\033[33m{row}\033[0m" if COLOR and decision != "allow" else row)
# --8<-- [end:show]


# --8<-- [start:loop]
def agent_loop(messages: list, client, model: str = DEFAULT_MODEL,
               max_turns: int = MAX_TURNS) -> str:
    """Run the model and its tools until it answers without a tool_use.

    `messages` is extended in place; the final text is returned.
    """
    system = SYSTEM.format(cwd=Path.cwd())
    for _ in range(max_turns):
        response = client.messages.create(
            model=model, system=system, messages=messages,
            tools=TOOLS, max_tokens=MAX_TOKENS,
        )
        messages.append({"role": "assistant", "content": response.content})
        tool_uses = [b for b in response.content if b.type == "tool_use"]
        for block in response.content:
            if block.type == "text" and block.text.strip() and tool_uses:
                print(block.text)
        # subtle: we stop on "no tool_use", not on stop_reason. A reply cut off by
        # max_tokens can still hold complete tool_use blocks that need results.
        if not tool_uses:
            return "".join(b.text for b in response.content if b.type == "text")
        results = []
        for block in tool_uses:  # one tool_result per tool_use, same id, same order
            show_call(block)
            output, is_error = execute_tool(block)
            show_result(output, is_error)
            results.append({"type": "tool_result", "tool_use_id": block.id,
                            "content": output, "is_error": is_error})
        messages.append({"role": "user", "content": results})
    return f"[stopped: the task used {max_turns} model turns; raise --max-turns to allow more]"
# --8<-- [end:loop]


# --8<-- [start:main]
def run_task(prompt: str, messages: list, client, args) -> None:
    """Add the user's prompt, run the loop, print the answer."""
    messages.append({"role": "user", "content": prompt})
    print(agent_loop(messages, client, model=args.model, max_turns=args.max_turns))


def repl(client, args) -> int:
    messages: list = []  # the conversation, kept across prompts
    while True:
        try:
            prompt = input(f"{CHAPTER} >> ")
        except EOFError:
            print()
            return 0
        if prompt.strip() in ("exit", "q", "quit"):
            return 0
        if not prompt.strip():
            continue
        mark = len(messages)
        try:
            run_task(prompt, messages, client, args)
        except KeyboardInterrupt:
            # subtle: a cut-off turn may hold a tool_use with no tool_result; drop
            # the whole exchange so the transcript stays valid for the next prompt.
            del messages[mark:]
            print("\n(interrupted; that task was dropped)")


def run_offline_demo(args) -> int:
    """No API key: play this chapter's scripted demo through the real SDK."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from offline.demo import scripted_demo  # support code, not part of the lesson

    with scripted_demo(CHAPTER) as prompts:  # starts the server, sets the env, cd's
        client = make_client()
        print(permission_summary())
        messages: list = []
        for prompt in prompts:
            print(f"{CHAPTER} >> {prompt}")
            run_task(prompt, messages, client, args)
    return 0


def permission_summary() -> str:
    """One line: the mode in force, where it came from, and the rules loaded."""
    settings = load_settings()
    mode = current_mode(settings)
    source = ("--permission-mode" if SESSION["mode"] else
              ".claude/settings" if settings["defaultMode"] == mode else "the default")
    rules = ", ".join(f"{len(settings[k])} {k}" for k in ("allow", "deny", "ask"))
    problems = "".join(f"\n  ignored a broken settings file: {p}" for p in settings["problems"])
    return f"permission mode: {mode} (from {source}); rules: {rules}{problems}"


def make_client():
    from anthropic import Anthropic
    # Reads ANTHROPIC_API_KEY / ANTHROPIC_AUTH_TOKEN and ANTHROPIC_BASE_URL.
    return Anthropic()


def parse_args(argv):
    p = argparse.ArgumentParser(description="s03: permissions.")
    p.add_argument("prompt", nargs="*", help="a task to run once (omit for the REPL)")
    p.add_argument("--offline", action="store_true", help="play the scripted demo")
    p.add_argument("--max-turns", type=int, default=MAX_TURNS)
    p.add_argument("--permission-mode", choices=PERMISSION_MODES, default=None,
                   help="default: settings' permissions.defaultMode, else 'default'")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    from dotenv import load_dotenv
    load_dotenv(Path(__file__).resolve().parent.parent / ".env")  # the environment wins
    args.model = os.environ.get("MODEL_ID") or DEFAULT_MODEL
    SESSION["mode"] = args.permission_mode
    has_key = os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN")
    try:
        if args.offline or not has_key:
            return run_offline_demo(args)
        client = make_client()
        print(permission_summary())
        if args.prompt:
            run_task(" ".join(args.prompt), [], client, args)
            return 0
        return repl(client, args)
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
    except Exception as e:
        print(f"error: {explain(e)}", file=sys.stderr)
        return 1


def explain(e: Exception) -> str:
    """One clear line for the errors a user can fix."""
    import anthropic
    if isinstance(e, anthropic.AuthenticationError):
        return "the API key was rejected (401). Check ANTHROPIC_API_KEY in your environment or .env."
    if isinstance(e, anthropic.NotFoundError):
        return f"not found (404): is MODEL_ID right? ({e.message})"
    if isinstance(e, anthropic.APIConnectionError):
        where = os.environ.get("ANTHROPIC_BASE_URL") or "the Anthropic API"
        return f"cannot reach {where}: {e.__cause__ or e}. Check your network or ANTHROPIC_BASE_URL."
    if isinstance(e, anthropic.APIStatusError):
        return f"the API answered {e.status_code}: {e.message}"
    return f"{type(e).__name__}: {e}"


if __name__ == "__main__":
    sys.exit(main())
# --8<-- [end:main]
