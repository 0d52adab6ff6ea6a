#!/usr/bin/env python3
"""s02_tool_use: a registry of tools, and the file tools with their safeguards.

s01 gave the model one tool. Real work needs more: read a file, search, change one
line without rewriting the file. This chapter adds:
- one registration block: `register(handler, description, fields)` declares each
  tool in one place, its schema (`TOOLS`, what the model sees) and its handler
  (`TOOL_HANDLERS`); `execute_tool` looks the tool up, checks the input against its
  schema, and turns every failure into an `is_error` tool_result.
- `safe_path`: every file tool stays inside the workspace (no `..`, absolute paths,
  `~` or symbolic links that lead out).
- read_file, write_file (atomic), edit_file (exact match, refuses an ambiguous one,
  forgives curly quotes and CRLF, keeps the file's own style), list_files and
  grep_search (both ripgrep, which honours every .gitignore) and web_fetch.
- result shaping: a result too long for the context keeps its head and tail, and is
  saved whole under `.tool-results/` (never through a symbolic link) so nothing is lost.

Reading map (search for "s02 ·" to find what is new):
  New here:
    s02 · settings: the limits of the file tools
    s02 · safe_path: every path stays in the workspace
    s02 · result shaping: head and tail kept, the whole saved
    s02 · read_file: numbered lines, a window at a time
    s02 · write_file: atomic, or not at all
    s02 · edit_file: one exact match, quotes and line endings forgiven
    s02 · ripgrep: what list_files and grep_search run
    s02 · list_files: files by glob, newest first
    s02 · grep_search: ripgrep, streamed and capped
    s02 · web_fetch: a page as text
    s02 · registration: each tool in one place
    s02 · dispatch: look up, validate, run, shape
  Changed here: `SYSTEM` names the new tools; `TOOLS` is filled by register() (s01's
    tools section gives way to the registration block); `execute_tool` looks the
    tool up in the registry and validates and shapes what it returns;
    `head_and_tail` saves a cut output in the new way (no link followed);
    `parse_args` describes this chapter.
  Unchanged: the agent loop, the display, the REPL and the offline demo.
  Left for later: whether a call may run at all (s03 permissions), hooks (s04),
    deferred tools (s05), concurrency (s06).

Run:  python s02_tool_use/code.py            (REPL; offline demo if no API key)
      python s02_tool_use/code.py "task"     (one task, then exit)
      python s02_tool_use/code.py --offline  (force the scripted demo)
"""

import bisect
import contextlib
import difflib
import os
import re
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

import pathspec
from markdownify import markdownify

from command_line import explain, key_problem, make_client, parser, survive

# === s01 · settings: the model, the limits, the system prompt ===
CHAPTER = "s02"
DEFAULT_MODEL = "claude-sonnet-5-5"
MAX_TOKENS = 8000
MAX_TURNS = 50               # model calls per task before we give up on a runaway loop
DEFAULT_TIMEOUT = 120_000    # milliseconds a command may run (as Claude Code) ...
MAX_TIMEOUT = 600_000        # ... and the most the model may ask for
MAX_OUTPUT_CHARS = 30_000    # per stream; beyond this we keep the head and the tail
MAX_OUTPUT_BYTES = 32_000_000  # a command's output on disk: past this, it stops
RESULTS_DIR = ".tool-results"  # where cut results are saved, inside the workspace
COLOR = sys.stdout.isatty() and not os.environ.get("NO_COLOR")

SYSTEM = ("You are a coding agent working in the directory {cwd}. Use the tools to "
          "inspect and change files: read before you edit, prefer edit_file over "
          "rewriting a whole file, and check your work. Act, then report briefly what "
          "you did.")


# === s01 · the agent: one object holds a run's state ===
@dataclass
class Agent:
    """What one agent holds while it runs, handed to the loop and to every tool call.

    Nothing about a run lives in a global: a test, or a second agent, builds its own.
    Each later chapter adds the fields its mechanism needs, each with a note on why.
    """

    client: object                # anthropic.Anthropic: how the loop reaches the model
    model: str = DEFAULT_MODEL    # MODEL_ID
    max_turns: int = MAX_TURNS    # model calls a task may make (--max-turns)
    shell: Path | None = None     # where the next command starts; None: the workspace
    window: int = 200_000         # the most tokens a request may hold (the API says)
    warned: bool = False          # the user was told that the window is nearly full


# === s01 · the agent loop ===
def agent_loop(messages: list, agent: Agent) -> str:
    """Run the model and its tools until a reply ends the turn (see STOP_REASONS);
    `messages` is extended in place, the final text returned."""
    system = SYSTEM.format(cwd=Path.cwd())
    for _ in range(agent.max_turns):
        response = agent.client.messages.create(
            model=agent.model, system=system, messages=messages, tools=TOOLS,
            max_tokens=MAX_TOKENS)
        count_tokens(response.usage, agent)
        action = STOP_REASONS.get(response.stop_reason, "unknown")
        if action == "refused":  # the API's advice: drop the refused turn, then go on
            raise Refused(refusal_line(response))
        if response.content:  # subtle: an empty message makes every later request a 400
            messages.append({"role": "assistant", "content": response.content})
        tool_uses = [b for b in response.content if b.type == "tool_use"]
        for block in response.content if tool_uses or action == "go on" else ():
            if block.type == "text" and block.text.strip():  # (an answer: below)
                print(printable(block.text))
        if tool_uses:  # one tool_result per tool_use, same id, same order, run or not
            to_run, held = split_calls(tool_uses, response, action)
            results = []
            for block in to_run:
                show_call(block)
                output, is_error = execute_tool(block, agent)
                show_result(output, is_error)
                results.append({"type": "tool_result", "tool_use_id": block.id,
                                "content": output, "is_error": is_error})
            results += [held_result(b, response) for b in held]
            messages.append({"role": "user", "content": results})
        if action == "go on" or (tool_uses and action != "unknown"):
            continue
        return final_text(response, action)
    return (f"[stopped: the task used {agent.max_turns} model turns; "
            "raise --max-turns to allow more]")



# === s02 · settings: the limits of the file tools ===
MAX_RESULT_CHARS = 50_000    # any tool_result; longer ones are cut and saved whole
READ_LIMIT = 2000            # lines read_file returns by default
MAX_LINE_CHARS = 2000        # read_file shortens longer lines
MAX_READ_CHARS = 40_000      # read_file stops before this much text
LIST_LIMIT = 100             # paths list_files returns
GREP_LIMIT = 100             # matching lines grep_search returns
FETCH_TIMEOUT = 30           # seconds for web_fetch
FETCH_MAX_BYTES = 5_000_000  # web_fetch reads at most this much of a page
SEARCH_TIMEOUT = 20          # seconds list_files or grep_search may take
PREVIEW_LINES = 10           # lines of a new file write_file shows back


# === s02 · safe_path: every path stays in the workspace ===
class ToolError(Exception):
    """An expected failure; its message goes to the model as an is_error result."""


def safe_path(path: str) -> Path:
    """Resolve `path` against the workspace; refuse anything that ends outside it."""
    workspace = Path.cwd().resolve()
    try:
        # resolve() follows symbolic links and `..`; for a new file it resolves
        # the parent, so a link to a directory outside is caught too.
        full = (workspace / Path(path).expanduser()).resolve()
    except (OSError, RuntimeError) as e:  # e.g. a symlink loop
        raise ToolError(f"cannot resolve '{path}': {e}")
    if full != workspace and workspace not in full.parents:
        raise ToolError(f"'{path}' resolves to {full}, outside the workspace "
                        f"{workspace}. File tools only work inside the workspace.")
    return full


def display(path: Path) -> str:
    """A path as the model should see it: relative to the workspace."""
    return str(path.relative_to(Path.cwd().resolve())) or "."


# === s02 · result shaping: head and tail kept, the whole saved ===
def save_result(source, name: str) -> str:
    """Save a whole result (a string, or a file to copy) under RESULTS_DIR. Returns
    what the note on the cut result says: where it is, or why it could not be saved."""
    # subtle: the name comes from the model (a tool_use id); keep it a plain name.
    file = re.sub(r"[^\w.-]", "_", name).lstrip(".") + ".txt"
    try:
        fd = create_result_file(file)
    except OSError as e:  # a link where the folder should be, a full disk ...
        why = "it is a symbolic link" if os.path.islink(RESULTS_DIR) else e.strerror
        return f"could not be saved in {RESULTS_DIR} ({why})"
    with open(fd, "wb") as dst:
        if isinstance(source, str):
            dst.write(source.encode("utf-8"))
        else:
            source.seek(0)  # a command's output: at most MAX_OUTPUT_BYTES of it
            while dst.tell() < MAX_OUTPUT_BYTES and (chunk := source.read(1 << 20)):
                dst.write(chunk[:MAX_OUTPUT_BYTES - dst.tell()])
    return f"is saved in {RESULTS_DIR}/{file}: read it with read_file offset/limit"


def create_result_file(file: str) -> int:
    """A new, empty `file` in RESULTS_DIR, open to write; OSError if the folder is
    a symbolic link: a command may plant one there, to lead our writes outside."""
    # subtle: O_NOFOLLOW refuses a link instead of following it, even one planted
    # after any check, and dir_fd keeps us in the folder we opened. An old file at
    # the name goes (a link is removed, not what it points to); O_EXCL makes anew.
    with contextlib.suppress(FileExistsError):
        os.mkdir(RESULTS_DIR)  # relative: in the workspace, the current directory
    folder = os.open(RESULTS_DIR, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(file, dir_fd=folder)
        return os.open(file, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                       0o666, dir_fd=folder)
    finally:
        os.close(folder)


def shape_result(tool_name: str, output: str, tool_use_id: str) -> str:
    """Keep a result within MAX_RESULT_CHARS: its head and tail, the whole saved."""
    # subtle: read_file bounds its own output and is never saved, or reading a
    # saved result back would save it again, and again.
    if len(output) <= MAX_RESULT_CHARS or tool_name == "read_file":
        return output
    saved, half = save_result(output, tool_use_id), MAX_RESULT_CHARS // 2
    return (f"{output[:half]}\n\n[... {len(output) - 2 * half:,} characters cut from "
            f"the middle; the whole result ({len(output):,} characters) {saved} "
            f"...]\n\n{output[-half:]}")


# === s01 · run_shell: a shell that cannot hang ===
# Settings that stop programs from waiting for a human: pagers, editors, prompts.
NON_INTERACTIVE_ENV = {"PAGER": "cat", "GIT_PAGER": "cat", "MANPAGER": "cat",
                       "LESS": "-FRX", "GIT_TERMINAL_PROMPT": "0", "GIT_EDITOR": "true",
                       "EDITOR": "true", "TERM": "dumb", "PYTHONUNBUFFERED": "1"}
# Where the next command starts: where the last ended, so a `cd` sticks (Claude
# Code's). The agent keeps it (agent.shell).


def shell_dir(agent: Agent) -> Path:
    """The folder the agent's next command starts in: agent.shell while it exists,
    else the workspace (Path.cwd(), with links resolved, as getcwd() gives it)."""
    if agent.shell and agent.shell.is_dir():
        return agent.shell
    return Path.cwd()


def move_shell(agent: Agent, where) -> str:
    """Keep the folder the command ended in (its EXIT trap wrote it to the file
    `where`) if it lies in the workspace; else go back there, and say so."""
    ended = os.pread(where.fileno(), 4096, 0).decode().strip()
    workspace = Path.cwd()
    if ended and not Path(ended).is_relative_to(workspace):  # `cd /`, a link out
        agent.shell = None
        return f"\n[shell cwd was reset to {workspace}: {ended} is outside it]"
    if ended:  # "": the command was killed, and its trap with it
        agent.shell = Path(ended)
    return ""


def recorded(command: str, where) -> str:
    """`command` after a trap that, as bash exits however it ends, writes where it
    stands (pwd -P: links followed) to the file `where`; the exit status stays."""
    return f"trap 'pwd -P >&{where.fileno()}' EXIT; {command}"


class CommandFailed(Exception):
    """The command ran and failed (a non-zero exit, a timeout): its output goes back
    to the model marked is_error, as Claude Code marks a failed Bash call."""


# Programs whose exit 1 is an answer, not a failure (Claude Code's command semantics):
# program -> what exit 1 means. Any other non-zero exit, 2 and up included, fails.
EXIT_1_MEANS = {"grep": "no match", "egrep": "no match", "fgrep": "no match",
                "rg": "no match", "diff": "files differ", "cmp": "files differ",
                "test": "false", "[": "false", "find": "some folders were unreadable"}


def last_program(command: str) -> str | None:
    """The program whose exit status the line returns: the first word of its last
    simple command (`cat a | grep x` -> grep). None when unsure: several lines,
    brackets, an unclosed quote, or `a && b` (a's failure ends the line early)."""
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True  # words as bash splits them, operators apart
        words = list(lexer)
    except ValueError:  # an unclosed quote
        return None
    start = max((i + 1 for i, word in enumerate(words)  # after the last operator
                 if word in (";", "&", "|", "|&", "||", "&&")), default=0)
    if ("\n" in command.strip() or {"(", ")"} & set(words) or start == len(words)
            or (start and words[start - 1] == "&&")):
        return None
    return words[start]


def run_shell(agent: Agent, command: str, timeout: int = DEFAULT_TIMEOUT) -> str:
    """Run `command` with bash where the agent's shell stands: its stdout, stderr and
    exit code; CommandFailed with that text if it exits non-zero or times out."""
    seconds = max(1, min(int(timeout), MAX_TIMEOUT)) / 1000  # milliseconds, as Bash
    # subtle: output goes to temporary files, not pipes. A pipe would hold the whole
    # output in memory, and a background child that keeps the pipe open would make
    # us wait for it. Files cost no memory and we only wait for bash itself.
    with (tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err,
          tempfile.TemporaryFile() as where):
        proc = subprocess.Popen(
            ["bash", "-c", recorded(command, where)], stdin=subprocess.DEVNULL,
            stdout=out, stderr=err, cwd=shell_dir(agent), pass_fds=[where.fileno()],
            env={**os.environ, **NON_INTERACTIVE_ENV},
            start_new_session=True)  # its own process group, so we can kill all of it
        try:
            status = wait_for(proc, seconds, out, err)
        except BaseException:  # Ctrl-C: never leave the command running behind us
            kill_group(proc)
            raise
        stdout = head_and_tail(out, name="stdout")
        stderr = head_and_tail(err, name="stderr")
        moved = move_shell(agent, where)
    parts = [stdout] if stdout else []
    parts += [f"--- stderr ---\n{stderr}"] if stderr else []
    text = "\n".join((parts or ["(no output)"]) + [f"[{ending(status, command)}]"])
    if not succeeded(status, command):  # as Claude Code: a failure is an error
        raise CommandFailed(text + moved)
    return text + moved


def succeeded(status: int | str, command: str) -> bool:
    """Exit 0, or an exit 1 that answers (grep found nothing); not a kill."""
    return status == 0 or status == 1 and bool(EXIT_1_MEANS.get(last_program(command)))


def ending(status: int | str, command: str) -> str:
    """How the command ended, as the model reads it: `exit code: 1 (no match)`."""
    if isinstance(status, str):  # killed: why
        return status
    answer = EXIT_1_MEANS.get(last_program(command)) if status == 1 else None
    return f"exit code: {status}" + (f" ({answer})" if answer else "")


def kill_group(proc: subprocess.Popen) -> None:
    """Kill the process and every process it started (they share its group)."""
    with contextlib.suppress(ProcessLookupError):  # it may have exited already
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def wait_for(proc: subprocess.Popen, seconds: float, *files) -> int | str:
    """Wait for the command: its exit code, or (a str) why it was killed. Past
    `seconds`, or past MAX_OUTPUT_BYTES of output on disk (`seq 1 20000000` writes
    169 MB), kill it and all it started."""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        try:
            return proc.wait(timeout=min(left, 0.1))
        except subprocess.TimeoutExpired:
            if sum(os.fstat(f.fileno()).st_size for f in files) > MAX_OUTPUT_BYTES:
                kill_group(proc)
                return (f"stopped: its output passed {MAX_OUTPUT_BYTES // 10**6} MB; "
                        "the command and everything it started were killed")
    kill_group(proc)
    return (f"timed out after {seconds:g}s: the command and everything it started "
            "were killed")


# Escape sequences: a terminal obeys them (colours, titles), a model only reads noise.
ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves
                  r"|\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC: a title, a link, ...
                  r"|[ -/]*[0-~])")  # the rest: ESC and one or more characters


def clean(data: bytes) -> str | None:
    """Output as the model should read it, ANSI sequences removed; None if it is
    binary (a NUL byte, or more than a tenth of it undecodable)."""
    text = data.decode(errors="replace")
    binary = "\0" in text or text.count("\ufffd") > len(text) / 10
    return None if binary else ANSI.sub("", text)


def head_and_tail(f, limit: int = MAX_OUTPUT_CHARS, name: str = "output") -> str:
    """The output in file `f`, cleaned; if longer than `limit`, its head and tail,
    and the whole of it saved under RESULTS_DIR (copied from disk, never in memory)."""
    size = f.seek(0, os.SEEK_END)
    f.seek(0)
    head = clean(f.read(limit if size <= limit else limit // 2))
    if head is None:  # bytes a model cannot read: say what there was instead
        return f"[binary output: {size:,} bytes, not shown]"
    if size <= limit:
        return head.rstrip("\n")
    saved, half = save_result(f, f"shell-{uuid.uuid4().hex[:8]}-{name}"), limit // 2
    f.seek(size - half)
    whole = (f"the whole {name}" if size <= MAX_OUTPUT_BYTES else
             f"the first {MAX_OUTPUT_BYTES // 10**6} MB of the {name}")
    return (f"{head}\n\n[... {size - 2 * half:,} bytes cut from the middle; {whole} "
            f"{saved} ...]\n\n{clean(f.read()) or ''}").rstrip("\n")


# === s02 · read_file: numbered lines, a window at a time ===
def read_file(agent: Agent, file_path: str, offset: int = 1,
              limit: int = READ_LIMIT) -> str:
    """Numbered lines of a text file, from line `offset`, at most `limit` of them."""
    path = safe_path(file_path)
    if not path.exists():
        raise ToolError(f"file not found: {file_path}")
    if path.is_dir():
        raise ToolError(f"{file_path} is a directory; use list_files to see inside it.")
    if is_binary(path):
        raise ToolError(f"{file_path} looks like a binary file "
                        f"({path.stat().st_size:,} bytes); read_file shows text only.")
    offset, limit = max(1, offset), max(1, min(limit, READ_LIMIT))
    rows, chars, number = [], 0, 0
    with open(open_regular(path), encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(text_lines(f), start=1):
            if number < offset:
                continue  # subtle: we stream past these; a 1 GB file costs no memory
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
            line = (f"{line[:cap]} [... line cut, "
                    f"{len(line) - cap + rest:,} more characters]")
        yield line.rstrip("\r\n")


def is_binary(path: Path) -> bool:
    """A NUL byte in the first 8 KB: what git and grep also take as binary."""
    with open(open_regular(path), "rb") as f:
        return b"\0" in f.read(8192)


# st_mode's file type -> its name; "" for a regular file, the only kind we read
FILE_KINDS = {stat.S_IFREG: "", stat.S_IFDIR: "a directory", stat.S_IFIFO: "a FIFO",
              stat.S_IFSOCK: "a socket", stat.S_IFCHR: "a character device",
              stat.S_IFBLK: "a block device"}


def open_regular(path: Path) -> int:
    """A descriptor to read `path` with, if it is a regular file: a FIFO would block
    open() and read() forever, and a device such as /dev/zero never ends."""
    # subtle: stat first, so no socket or device is ever opened; then O_NONBLOCK, so
    # opening a FIFO cannot wait for a writer, and fstat of what was opened, so a
    # path swapped for a FIFO after the first look is refused too.
    kind = FILE_KINDS.get(stat.S_IFMT(path.stat().st_mode), "a special file")
    if not kind:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
        mode = os.fstat(fd).st_mode
        if not (kind := FILE_KINDS.get(stat.S_IFMT(mode), "a special file")):
            return fd  # (a regular file reads the same with O_NONBLOCK)
        os.close(fd)
    raise ToolError(f"{path.name} is not a regular file: it is {kind}. Only regular "
                    "files can be read.")


# === s02 · write_file: atomic, or not at all ===
def write_file(agent: Agent, file_path: str, content: str) -> str:
    path = safe_path(file_path)
    if path.is_dir():
        raise ToolError(f"{file_path} is a directory.")
    verb = "Overwrote" if path.exists() else "Created"
    try:  # what was there, to show the change (a file that is not text: no diff)
        before = path.read_text(encoding="utf-8") if path.is_file() else None
    except (OSError, UnicodeDecodeError):
        before = None
    atomic_write(path, content.encode("utf-8"))
    lines = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
    said = f"{verb} {display(path)} ({lines} lines, {len(content.encode()):,} bytes)"
    if before is None:  # new: its first lines, so the model sees what it wrote
        return f"{said}:\n{numbered_diff('', content, max_lines=PREVIEW_LINES)}"
    return f"{said}; what changed:\n{numbered_diff(before, content)}"


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


# === s02 · edit_file: one exact match, quotes and line endings forgiven ===
CURLY_TO_STRAIGHT = str.maketrans({"‘": "'", "’": "'", "“": '"', "”": '"',
                                   "′": "'", "″": '"'})  # primes: feet and inches
QUOTES_FOLDED = (" (old_string matched once its quotes were made straight; the file's "
                 "own quotes were kept)")


def edit_file(agent: Agent, file_path: str, old_string: str, new_string: str,
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
    if not old and text:
        raise ToolError("old_string is empty but the file is not; "
                        "give the text to replace.")
    updated = replace_text(text, old, new, replace_all, file_path) if old else new
    atomic_write(path,
                 (updated.replace("\n", "\r\n") if crlf else updated).encode("utf-8"))
    folded = old_string.replace("\r\n", "\n") not in text  # found by its quotes
    return (f"Edited {display(path)}{QUOTES_FOLDED if folded else ''}:\n"
            f"{numbered_diff(text, updated)}")


def read_text_for_edit(path: Path, file_path: str) -> str:
    if path.is_dir():
        raise ToolError(f"{file_path} is a directory.")
    with open(open_regular(path), "rb") as f:
        data = f.read()
    if b"\0" in data[:8192]:
        raise ToolError(f"{file_path} looks like a binary file; "
                        "edit_file edits text only.")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ToolError(f"{file_path} is not valid UTF-8 "
                        f"({e.reason} at byte {e.start}); refusing to edit it rather "
                        "than risk corrupting it.")


def replace_text(text: str, old: str, new: str, replace_all: bool,
                 file_path: str) -> str:
    """Replace the exact matches of `old` (or, failing that, its curly-quote
    variants) in `text`. New text is inserted literally: no regex, no `$1`."""
    haystack, needle = text, old
    if text.count(old) == 0:  # the model typed ' or " where the file has curly quotes
        haystack, needle = (s.translate(CURLY_TO_STRAIGHT) for s in (text, old))
    starts = [m.start() for m in re.finditer(re.escape(needle), haystack)]
    if not starts:
        raise ToolError(not_found_message(text, old, file_path))
    if len(starts) > 1 and not replace_all:
        raise ToolError(f"old_string was found {len(starts)} times in {file_path}. "
                        "Include more surrounding lines to make it unique, or set "
                        "replace_all.")
    out, pos = [], 0
    for start in starts:  # folding keeps lengths, so positions hold in the real text
        found = text[start:start + len(old)]
        out += [text[pos:start], keep_quote_style(new, old, found)]
        pos = start + len(old)
    return "".join(out + [text[pos:]])


def keep_quote_style(new: str, old: str, found: str) -> str:
    """`new`, with the file's own characters wherever it repeats `old`, and curly
    quotes in the inserted parts if the file used them there."""
    if found == old:
        return new
    double = "“" in found or "”" in found  # the file's own quote style
    single = "‘" in found or "’" in found
    out, matcher = [], difflib.SequenceMatcher(None, old, new, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            out.append(found[i1:i2])  # what the file really has at these places
        else:  # inserted text: in the file's quote style
            out.append(curl_quotes(new[j1:j2], double, single))
    return "".join(out)


def curl_quotes(s: str, double: bool, single: bool) -> str:
    """Quotes in the file's style: straight, or curly where the file has curly ones
    (opening after a space or bracket, else closing)."""
    out = []
    for i, ch in enumerate(s.translate(CURLY_TO_STRAIGHT)):
        opening = i == 0 or s[i - 1].isspace() or s[i - 1] in "([{"
        if ch == '"' and double:
            ch = "“" if opening else "”"
        elif ch == "'" and single:
            ch = "‘" if opening else "’"  # ’ is also the apostrophe in don’t
        out.append(ch)
    return "".join(out)


def not_found_message(text: str, old: str, file_path: str) -> str:
    message = (f"old_string was not found in {file_path}. It must match the file "
               "exactly, including whitespace, indentation and line endings; read "
               "the file again and copy the text.")
    first = old.strip().splitlines()[0].strip() if old.strip() else ""
    at = [n for n, line in enumerate(text.splitlines(), 1) if first and first in line]
    return message + (f" (Its first line appears at line {at[0]}; check the lines "
                      "around it.)" if at else "")


def numbered_diff(before: str, after: str, context: int = 1,
                  max_lines: int = 40) -> str:
    """The changed lines with line numbers: `-` old line, `+` new line."""
    a, b = before.splitlines(), after.splitlines()
    rows, matcher = [], difflib.SequenceMatcher(None, a, b, autojunk=False)
    for group in matcher.get_grouped_opcodes(context):
        if rows:
            rows.append("   ...")
        for op, i1, i2, j1, j2 in group:
            mark = " " if op == "equal" else "+"  # a change: its old lines, then new
            rows += [f"{i + 1:>6} - {a[i]}" for i in range(i1, i2) if mark == "+"]
            rows += [f"{j + 1:>6} {mark} {b[j]}" for j in range(j1, j2)]
    if len(rows) > max_lines:
        rows = rows[:max_lines] + [f"   ... ({len(rows) - max_lines} more diff lines)"]
    return "\n".join(rows) or "(no line changed)"


# === s02 · ripgrep: what list_files and grep_search run ===
# ripgrep (`rg`) lists and searches a tree faster than Python can, and honours every
# .gitignore, nested ones too, as git does; the `ripgrep` package ships the binary,
# on PATH or beside this Python (pip's `ripgrep` in a venv that is not activated).
RG = shutil.which("rg") or shutil.which("rg", path=Path(sys.executable).parent)


def ripgrep(args: list, cwd: Path | None = None):
    """Yield ripgrep's output lines as bytes, as they come: a million cost no memory."""
    if RG is None:
        raise ToolError("ripgrep (rg) is missing: `pip install -r requirements.txt` "
                        "installs it, or see https://github.com/BurntSushi/ripgrep.")
    with tempfile.TemporaryFile() as err, subprocess.Popen(
            [RG, "--no-require-git", "--color=never", *args], cwd=cwd,
            stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL) as proc:
        timer, start = threading.Timer(SEARCH_TIMEOUT, proc.kill), time.monotonic()
        timer.start()  # a search of a huge tree (or a slow disk) is stopped, not waited
        try:
            printed = proc.stdout.peek(1)  # waits for ripgrep's first line, or its end
            yield from proc.stdout  # each line as ripgrep wrote it, b"\n" and all
            if time.monotonic() - start >= SEARCH_TIMEOUT:
                raise ToolError(f"the search took over {SEARCH_TIMEOUT}s and was "
                                "stopped; search a smaller folder or a narrower glob.")
            if proc.wait(timeout=60) == 2 and not printed:  # 1 means "no match"
                err.seek(0)
                message = err.read().decode(errors="replace").strip()
                if "No files were searched" not in message:  # none to search: no match
                    raise ToolError(f"ripgrep failed: {message}")
        finally:
            timer.cancel()
            proc.kill()  # if the caller stopped reading early (a no-op otherwise)


# === s02 · list_files: files by glob, newest first ===
def list_files(agent: Agent, pattern: str, path: str = ".") -> str:
    """Files matching a glob under `path`, newest first; no .git, no ignored files."""
    base = safe_path(path)
    if not base.is_dir():
        raise ToolError(f"{path} is not a directory.")
    # The pattern is anchored at `path` ("/" + pattern) and read as gitignore reads
    # its patterns; ripgrep lists the files (it never follows a link out).
    match = pathspec.GitIgnoreSpec.from_lines(["/" + pattern.lstrip("/")]).match_file
    hidden = ["--hidden", "--glob", "!.git"] if re.search(r"(^|/)\.", pattern) else []
    found = [rel for line in ripgrep(["--files", *hidden], cwd=base)
             if match(rel := line.rstrip(b"\r\n").decode(errors="replace"))]
    if not found:
        return (f"No files match '{pattern}' in "
                f"{'the workspace' if path == '.' else display(base)}.")
    found.sort(key=lambda p: (os.stat(f"{base}/{p}").st_mtime_ns, p), reverse=True)
    rows = [display(base / rel) for rel in found[:LIST_LIMIT]]  # newest first
    if len(found) > LIST_LIMIT:
        rows.append(f"[... and {len(found) - LIST_LIMIT} more; "
                    "narrow the pattern or path]")
    return "\n".join(rows)


# === s02 · grep_search: ripgrep, streamed and capped ===
def grep_search(agent: Agent, pattern: str, path: str = ".",
                include: str | None = None) -> str:
    """Lines matching a regular expression, as file:line:text, capped."""
    base = safe_path(path)
    if not base.exists():
        raise ToolError(f"path not found: {path}")
    if not base.is_dir():  # a FIFO named here would keep ripgrep waiting forever
        os.close(open_regular(base))
    rel = display(base)
    # `-e` keeps a pattern like "-v" a pattern, and `--` keeps the path a path.
    # `--null` ends each file name with a NUL: a name may hold ":1:" itself.
    args = ["--line-number", "--with-filename", "--null", "--no-heading",
            "--max-columns=300", "--max-columns-preview", "-e", pattern,
            *(["--glob", include] if include else []),
            *(["--", rel] if rel != "." else [])]
    # ripgrep searches on every core, so files come in any order. `kept` holds the
    # first GREP_LIMIT lines by path (insort is stable, a file's lines come in order).
    # subtle: NUL sorts first, so `line < after` is "from a file before the last kept".
    kept, total, after = [], 0, b""
    for line in ripgrep(args):  # subtle: count every match, but keep only a few
        total += 1
        if len(kept) < GREP_LIMIT or line < after:
            bisect.insort(kept, line, key=lambda ln: ln.partition(b"\0")[0])
            del kept[GREP_LIMIT:]
            after = kept[-1].partition(b"\0")[0] + b"\0"
    if not total:
        return (f"No matches for {pattern!r} in "
                f"{'the workspace' if rel == '.' else rel}.")
    shown = [ln.rstrip(b"\r\n").decode(errors="replace").replace("\0", ":", 1)
             for ln in kept]
    if total > GREP_LIMIT:
        shown.append(f"[... and {total - GREP_LIMIT} more matching lines; "
                     "narrow the search]")
    return "\n".join(shown)


# === s02 · web_fetch: a page as text ===
def web_fetch(agent: Agent, url: str, max_length: int = MAX_RESULT_CHARS) -> str:
    """An http(s) page as text, its HTML as Markdown."""
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
    if kind == "text/html":  # as Markdown, which is what Claude Code's WebFetch reads
        try:  # lxml closes what HTML may leave open (<p>, <li>): the tree stays shallow
            page = markdownify(page, heading_style="ATX", bs4_options="lxml").strip()
        except RecursionError:  # tags nested deeper than Python's recursion goes
            raise ToolError(f"{url}: its HTML nests too deeply to turn into text.")
    max_length = max(1, min(max_length, MAX_RESULT_CHARS))
    if len(page) > max_length:  # the whole page saved first: the cut loses nothing
        saved = save_result(page, f"web-{uuid.uuid4().hex[:8]}")
        page = (page[:max_length] + f"\n[... cut at {max_length:,} of {len(page):,} "
                f"characters; the whole page {saved}]")
    return page


# === s02 · registration: each tool in one place ===
# A tool is two things declared together: the schema the model sees (a description,
# and a type and a description for each field) and the function that runs it.
TOOLS: list = []          # the schemas sent to the API, in the order registered
TOOL_HANDLERS: dict = {}  # tool name -> function(agent, **the input's fields)
TOOL_BY_NAME: dict = {}   # tool name -> its schema, as in TOOLS
FIELD_TYPES = {str: "string", int: "integer", bool: "boolean"}


def register(handler, description: str, fields: dict, required: tuple = ()) -> None:
    """Declare a tool: `fields` maps each input field to (type, description); the
    type is str, int or bool, or a JSON schema of its own."""
    properties = {name: {**(kind if isinstance(kind, dict)
                            else {"type": FIELD_TYPES[kind]}),
                         "description": text} for name, (kind, text) in fields.items()}
    tool = {"name": handler.__name__, "description": description,
            "input_schema": {"type": "object", "properties": properties,
                             "required": list(required)}}
    TOOLS.append(tool)
    TOOL_HANDLERS[tool["name"]], TOOL_BY_NAME[tool["name"]] = handler, tool


PATH = (str, "A path inside the workspace; relative paths start at its root.")
register(run_shell, "Run a shell command where the last one ended (a `cd` sticks, "
         "inside the workspace); returns stdout, stderr and the exit code "
         "(non-zero: an error, but exit 1 of grep, diff or test answers). Stdin is "
         "closed. Default timeout "
         f"{DEFAULT_TIMEOUT} ms, at most {MAX_TIMEOUT} ms.",
         {"command": (str, "The command to run."),
          "timeout": (int, "Milliseconds before it is killed.")},
         ["command"])
register(read_file, f"Read a text file with line numbers. Returns up to {READ_LIMIT} "
         "lines from `offset`; use offset/limit to read on.",
         {"file_path": PATH, "offset": (int, "The 1-based line to start at."),
          "limit": (int, "How many lines to read.")}, ["file_path"])
register(write_file, "Create or overwrite a file with `content` (atomically). Prefer "
         "edit_file to change part of an existing file.",
         {"file_path": PATH, "content": (str, "The whole new content.")},
         ["file_path", "content"])
register(edit_file, "Replace `old_string` with `new_string` in a file. `old_string` "
         "must match exactly once (include surrounding lines to make it unique) "
         "unless `replace_all` is true. An empty `old_string` creates a new file.",
         {"file_path": PATH, "old_string": (str, "The exact text to replace."),
          "new_string": (str, "The text to put in its place."),
          "replace_all": (bool, "Replace every match, not just one.")},
         ["file_path", "old_string", "new_string"])
register(list_files, "Find files by glob pattern (e.g. '**/*.py'), newest first. Skips "
         ".git and git-ignored files.",
         {"pattern": (str, "A glob, from `path`: '*.md' at its top, '**/*.md' below."),
          "path": (str, "The folder to search (default: the workspace).")}, ["pattern"])
register(grep_search, "Search file contents with a regular expression; returns "
         "file:line:text.",
         {"pattern": (str, "A regular expression (ripgrep's dialect)."),
          "path": (str, "A file or folder to search (default: the workspace)."),
          "include": (str, "Only files whose names match this glob, e.g. '*.py'.")},
         ["pattern"])
register(web_fetch, "Fetch an http(s) URL and return its text (HTML turned into "
         "Markdown).",
         {"url": (str, "The http(s) URL to fetch."),
          "max_length": (int, "The most characters to return.")}, ["url"])


# === s02 · dispatch: look up, validate, run, shape ===
JSON_TYPES = {"string": str, "integer": int, "boolean": bool, "number": (int, float),
              "object": dict, "array": list}


def validate_input(schema: dict, args) -> str | None:
    """What is wrong with `args` for `schema`, or None. Names the field at fault."""
    if not isinstance(args, dict):
        return "the input must be a JSON object"
    properties = schema.get("properties", {})
    if missing := [name for name in schema.get("required", []) if name not in args]:
        return f"missing required field(s): {', '.join(missing)}"
    for name, value in args.items():
        if name not in properties:
            return f"unexpected field '{name}' (expected: {', '.join(properties)})"
        want = properties[name].get("type")
        # subtle: in Python True is an int; JSON does not agree.
        if want in JSON_TYPES and (not isinstance(value, JSON_TYPES[want]) or
                                   (isinstance(value, bool) and want != "boolean")):
            return (f"field '{name}' must be of type {want}, "
                    f"not {type(value).__name__} {value!r:.40}")
    return None


def execute_tool(block, agent: Agent) -> tuple[str, bool]:
    """Run one tool_use block for `agent`. Returns (output, is_error); never raises."""
    handler = TOOL_HANDLERS.get(block.name)
    if handler is None:
        return (f"Error: unknown tool '{block.name}'. "
                f"Available: {', '.join(TOOL_HANDLERS)}."), True
    if problem := validate_input(TOOL_BY_NAME[block.name]["input_schema"], block.input):
        return f"Error: invalid input for {block.name}: {problem}.", True
    try:
        output, is_error = handler(agent, **block.input), False  # (see register)
    except CommandFailed as e:  # a shell command ran and failed: its output, as is
        output, is_error = str(e), True
    except ToolError as e:
        output, is_error = f"Error: {e}", True
    except Exception as e:  # a bug or an OS error: still data for the model
        output, is_error = f"Error: {type(e).__name__}: {e}", True
    return shape_result(block.name, output, block.id), is_error


# === s01 · display: each call and its result ===
def printable(text: str) -> str:
    """`text` as the user may see it: control characters but newline and tab escaped
    (ESC as \\x1b), else a terminal obeys them: OSC 52 writes the clipboard, ESC[8m
    hides what follows; a tool's output or the model's text could hold them."""
    return re.sub(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", lambda m: repr(m[0])[1:-1], text)


def show_call(block) -> None:
    """Print a tool call the way the model asked for it, long values cut short."""
    args = block.input if isinstance(block.input, dict) else {"input": block.input}
    call = printable(f"{block.name}("
                     f"{', '.join(f'{k}={short(v)}' for k, v in args.items())})")
    print(f"\033[36m> {call}\033[0m" if COLOR else f"> {call}")


def short(value, limit: int = 70) -> str:
    """repr(value), or its head and how long it is: one call stays on one line."""
    text = repr(value)
    return (text if len(text) <= limit
            else f"{text[:limit - 18]}... ({len(text):,} chars)")


def show_result(output: str, is_error: bool, lines: int = 6) -> None:
    """Print the first few lines of a tool_result, indented."""
    rows = printable(output).splitlines() or [""]  # after: CR is shown, not a break
    preview = rows[:lines] + ([f"... (+{len(rows) - lines} lines)"]
                              if len(rows) > lines else [])
    mark = "! " if is_error else "  "
    for row in preview:
        row = mark + (row if len(row) <= 160 else row[:157] + "...")
        print(f"\033[2m{row}\033[0m" if COLOR else row)
        mark = "  "


# === s01 · stop reasons: what the loop does with each reply ===
# Why the model stopped (response.stop_reason) -> what the loop does next. Every value
# the API documents is here; any other ends the turn with a line that names it.
STOP_REASONS = {
    "tool_use": "run the calls",   # it asked for tools: run them, send the results back
    "end_turn": "answer",          # it is done: its text is the answer
    "stop_sequence": "answer",     # one of our stop_sequences came (we set none)
    "max_tokens": "cut off",       # it reached MAX_TOKENS, perhaps inside a tool call
    "model_context_window_exceeded": "cut off",  # it filled the model's context window
    "pause_turn": "go on",         # the API paused a long turn: send it back as it is
    "refusal": "refused",          # it declined; stop_details may say why
}
ENDS_WELL = ("run the calls", "answer")  # it ended as meant: its last block is whole
CUT_SHORT = ("Not run: your reply stopped (stop_reason: {reason}) in this call, so "
             "its input may be cut short. Make the call again; if its input is long, "
             "split it (write a big file in several parts).")


class Refused(Exception):
    """The model declined the request (stop_reason "refusal"): the task ends."""


def refusal_line(response) -> str:
    """What to tell the user about a refusal, with the API's stop_details if any."""
    details = getattr(response, "stop_details", None)  # newer APIs say why
    why = ": ".join(filter(None, (getattr(details, k, None)
                                  for k in ("category", "explanation"))))
    return (f"the model declined this request{f' ({why})' if why else ''}. "
            "Rephrase it, or ask something else.")


def split_calls(tool_uses: list, response, action: str) -> tuple[list, list]:
    """The calls to run, and the one to hold back: the last block, if a tool_use in a
    reply that did not end as meant (max_tokens): its input may be cut short."""
    ends_in_a_call = bool(tool_uses) and response.content[-1] is tool_uses[-1]
    if ends_in_a_call and action not in ENDS_WELL:
        return tool_uses[:-1], tool_uses[-1:]
    return tool_uses, []


def held_result(block, response) -> dict:
    """The tool_result of a call that was held back, shown like any other."""
    show_call(block)
    output = CUT_SHORT.format(reason=response.stop_reason)
    show_result(output, True)
    return {"type": "tool_result", "tool_use_id": block.id, "content": output,
            "is_error": True}


def final_text(response, action: str) -> str:
    """The answer that ends the turn, and a note when it ended in an unusual way."""
    said = "\n\n".join(b.text for b in response.content  # one paragraph a block
                       if b.type == "text" and b.text.strip())
    note = {"cut off": f"[cut off: the reply stopped at {response.stop_reason}; "
                       "ask it to go on]",
            "unknown": f"[stopped: stop_reason '{response.stop_reason}' is one this "
                       "agent does not know]"}.get(action)
    if not said.strip() and not note:
        note = "[the model ended its turn without a word]"
    return "\n".join(part for part in (said, note) if part)


# === s01 · long sessions: the context window ===
# The most tokens a request may hold: agent.window (the API's "prompt is too long"
# names it, and survive() in command_line.py learns it from there).


def window_tokens(usage) -> int | None:
    """What the next request will carry, as the API counted this reply: the tokens of
    its last sampling. subtle: a reply that ran server tools (web search) sampled often
    and sums them all; `usage.iterations` lists each, and without it: no window."""
    steps = getattr(usage, "iterations", None)
    ran = getattr(usage, "server_tool_use", None)
    if not steps and ran and any(isinstance(n, int) and n for n in vars(ran).values()):
        return None
    last = steps[-1] if steps else usage
    last = last if isinstance(last, dict) else vars(last)
    kinds = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens",
             "output_tokens")
    return sum(last.get(k) or 0 for k in kinds)


def count_tokens(usage, agent: Agent) -> None:
    """Warn once when the window, as the API counted this reply, nears its size."""
    used = window_tokens(usage)
    if used and used > 0.8 * agent.window and not agent.warned:
        agent.warned = True
        print(f"[context window: {used:,} of {agent.window:,} tokens used; when it "
              "is full the oldest exchanges go, or type /clear]", file=sys.stderr)


# === s01 · the command line: a REPL, one task, or the offline demo ===
def run_task(prompt: str, messages: list, agent: Agent) -> None:
    """Add the user's prompt, run the loop, print the answer."""
    messages.append({"role": "user", "content": prompt})
    answer = agent_loop(messages, agent)
    print(printable(answer))


def repl(agent: Agent) -> int:
    messages: list = []  # the conversation, kept across prompts
    while True:
        try:
            prompt = input(f"{CHAPTER} >> ")
        except EOFError:
            print()
            return 0
        if prompt.strip() in ("exit", "q", "quit"):
            return 0
        if prompt.strip() == "/clear":  # start over: a new, empty conversation
            messages.clear()
            agent.warned = False
            agent.shell = None  # and the shell goes home
            print("(conversation cleared)")
            continue
        if not prompt.strip():
            continue
        mark = len(messages)
        try:
            run_task(prompt, messages, agent)
        except KeyboardInterrupt:
            # subtle: a cut-off turn may hold a tool_use with no tool_result; drop
            # the whole exchange so the transcript stays valid for the next prompt.
            del messages[mark:]
            print("\n(interrupted; that task was dropped)")
        except Exception as e:  # an API error or a refusal ends the task, not the REPL
            print("error: " + printable(survive(e, messages, mark, agent)),
                  file=sys.stderr)


def run_offline_demo(args) -> int:
    """No API key: play this chapter's scripted demo through the real SDK."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from offline.demo import scripted_demo  # support code, not part of the lesson
    with scripted_demo(CHAPTER) as prompts:  # starts the server, sets the env, cd's
        agent = new_agent(make_client(), args)
        messages: list = []
        for prompt in prompts:
            print(f"{CHAPTER} >> {prompt}")
            run_task(prompt, messages, agent)
    return 0


def new_agent(client, args) -> Agent:
    """The agent a run of the command line starts with."""
    return Agent(client, model=args.model, max_turns=args.max_turns)


def parse_args(argv):
    p = parser("s02: dispatch and file tools.", MAX_TURNS, DEFAULT_MODEL)
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    env_file = Path(__file__).resolve().parent.parent / ".env"
    problem = None if args.offline else key_problem(env_file)
    if problem:  # before .env is loaded: we need to know where the key came from
        print(f"error: {problem}", file=sys.stderr)
        return 1
    from dotenv import load_dotenv
    load_dotenv(env_file)  # the environment wins
    args.model = os.environ.get("MODEL_ID") or DEFAULT_MODEL
    has_key = (os.environ.get("ANTHROPIC_API_KEY")
               or os.environ.get("ANTHROPIC_AUTH_TOKEN"))
    try:
        if args.offline or not has_key:
            if args.prompt and not args.offline:  # never replace a task silently
                print(f"Your task was not run: no ANTHROPIC_API_KEY in the environment "
                      f"or in {env_file}. Here is the offline demo instead.",
                      flush=True)
            return run_offline_demo(args)
        agent = new_agent(make_client(), args)
        if args.prompt:
            run_task(" ".join(args.prompt), [], agent)
            return 0
        return repl(agent)
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `code.py | head`: the reader left, so stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as e:
        print("error: " + printable(explain(e)), file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
