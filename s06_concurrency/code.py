#!/usr/bin/env python3
"""s06_concurrency: independent tools run side by side, even while the model streams.

Until now the loop ran a reply's tool calls one after another. Five reads that each
wait a second take five seconds; a sub-task that needs its own long conversation
fills the parent's context. This chapter adds:
- `partition_tool_calls`: the calls, in order, cut into batches: a run of calls
  `is_concurrency_safe` (per tool and input, failing closed) in parallel, any other
  call alone; results in call order, each call through the whole `execute_tool`.
- streaming: the text printed as it arrives, a safe call started as soon as its
  tool_use block is whole; after Ctrl-C every call still gets a tool_result.
- `agent`: a child agent's loop, its final answer the result: a fork (the caller's
  context, from the prompt cache), general-purpose (the prompt alone), or a type
  from .claude/agents (subagents.py); run_in_background, for commands too: an id
  now, a <task-notification> later, `task_stop` (background.py).
- the task list (task_create ... task_list): one per session, shared with every
  subagent (tasks.py). The terminal the threads share: shared_terminal.py.

Reading map (search for "s06 ·" to find what is new):
  New here:
    s06 · concurrency: what each running call knows
    s06 · concurrency: which calls may run together
    s06 · concurrency: the tool runner
    s06 · concurrency: starting calls while the reply streams
    s06 · background commands: started now, heard of later
    s06 · tasks: a plan the agents share
    s06 · subagents
  Changed here: `READS`, `SAFE_DEFAULTS`, run_shell's and skill's registration say
    whether a call may run beside others; `agent_loop` streams the reply to a
    ToolRunner, tells of background tasks that ended, and gives auto mode's
    reviewer the parents' conversations too; `run_shell`, `run_hook` (`run_hooks`'s)
    record their processes in the agent (Ctrl-C kills them); `check_permission`
    asks under the terminal lock; `decide` lets an agent type write its memory
    folder; `show_call`, `show_result`, `show_decision`, `show_usage`,
    `show_hook_line` print through say(); `run_task` prints what was not streamed;
    `parse_args` names this chapter; `Agent` adds a child's depth, name, tools,
    shell, system prompt and memory, Ctrl-C, the processes and tasks, the task
    list, the last request (a fork repeats it), which `repl` (/clear: a new list),
    `main` and `run_offline_demo` stop.
  Unchanged: the pipeline (`execute_tool`: validation, hooks, permissions, deferred
    tools) and the tools' own work.
  Left for later: nothing; this is the last chapter.

Run:  python s06_concurrency/code.py            (REPL; offline demo if no API key)
      python s06_concurrency/code.py "task"     (one task, then exit)
      python s06_concurrency/code.py --offline  (force the scripted demo)
"""

import bisect
import contextlib
import contextvars
import difflib
import functools
import hashlib
import io
import json
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import textwrap
import threading
import urllib.error
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor, wait
import dataclasses
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import NamedTuple
from urllib.parse import urlparse

import pathspec
from markdownify import markdownify

from command_line import (AGENT_CREDENTIALS, explain, key_problem, make_client,
                          parser, survive)
from asking import ask_user, describe_call, stdin_is_interactive
from bash_safety import (dangerous_reason, is_read_only_command, program,
                         shell_effects, unwrapped, within_budget)
from sandbox import (SandboxError, argv_for, end_group, home_problem,
                     placeholders, sandbox_missing, sandbox_summary, walk_workspace,
                     write_unfollowed)
from rules import (SETTINGS_FILES, command_rule_matches, denied_inside, load_settings,
                   parse_rule, path_rule_matches, read_denied, read_deny_patterns,
                   read_settings, reviewer_rules, sandbox_config, settings_problem,
                   shell_path_rule, shell_rule_applies, url_host)
from protected import (PROTECTED_NAMES, is_inside, protected_set, protected_write,
                       resolve_path, rule_paths, written_path)
from auto_mode import AutoMode, block_message
from trust import THIS_RUN, folder_trusted, is_trusted
from mcp_client import (McpError, McpServers, exit_on_signal, pool_names,
                        read_config, server_commands)
from skills import SkillError, parse_skill_md
from background import (AGENT_STARTED, STARTED, STOPPED, TASK_STOP, start_agent,
                        start_task, stop_all, stop_task, tell_ended)
from shared_terminal import (TERMINAL_LOCK, labelled, lines_of_a_call, say,
                             show_batch, write)
from tasks import TASK_TOOLS, TaskError, TaskList
from subagents import (AGENT_TOOL, FRESH, AgentError, agent_types, chosen_tools,
                       find_type, fork_setup, in_memory, model_of, system_of,
                       type_setup, waits_for_reply)


# === s01 · settings: the model, the limits, the system prompt ===
CHAPTER = "s06"
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
    # s03: Permissions: the mode, the answers "always", the files read (the gate)
    permissions: object = field(default_factory=lambda: Permissions())
    transcript: list = field(default_factory=list)  # s03: what auto mode reviews
    # s04: sent to every hook, as Claude Code's session id
    session_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    stop: str | None = None  # s04: a hook's stopReason, once one said "continue": false
    quiet: dict = field(default_factory=dict)  # s04: {hook: runs} that said nothing
    loaded: list = field(default_factory=list)  # s05: deferred tools loaded, in order
    # s05: its MCP servers, started by connect_mcp_servers (none until then)
    mcp: McpServers = field(default_factory=lambda: mcp_servers())
    depth: int = 0          # s06: 0 the main agent, 1 its subagents, 2 theirs
    prefix: str = ""        # s06: "[name] " before each line a subagent prints
    tools: list | None = None    # s06: the schemas it offers; None: all (the main)
    allowed: list | None = None  # s06: the tools it may call; None: any offered
    # s06: set by Ctrl-C; a subagent shares its parent's, so one press stops all
    cancel: threading.Event = field(default_factory=threading.Event)
    running: set = field(default_factory=set)  # s06: processes alive now, to kill
    tasks: dict = field(default_factory=dict)  # s06: {task id: task} in background
    # s06: the session's task list: every subagent gets this same object
    task_list: TaskList = field(default_factory=lambda: TaskList())
    name: str = "main"              # s06: a task's owner when this agent starts it
    system: str | None = None       # s06: a fork's or an agent type's own prompt
    memory: Path | None = None      # s06: an agent type's memory folder (writable)
    last_request: dict | None = None  # s06: what it sent last, and the reply: forks

    def child(self, name: str, tools: list, limited: bool, **own) -> "Agent":
        """s06: a subagent. It shares what is the session's (the client, the gate's
        memory, hooks, servers, processes, tasks, the task list, Ctrl-C) and has its
        own shell, which starts where ours stands, its depth, name and tools
        (`limited`: it may call only those); `own`: what its kind sets (system ...)."""
        return dataclasses.replace(self, **{
            "shell": shell_dir(self), "warned": False, "stop": None,
            "max_turns": SUBAGENT_MAX_TURNS, "depth": self.depth + 1, "name": name,
            "prefix": f"{self.prefix}[{name}] ", "tools": tools,
            "allowed": [t["name"] for t in tools] if limited else self.allowed,
            "system": None, "memory": None, **own})

    def close(self) -> None:
        """s06: the agent ends: no background command, no server outlives it."""
        stop_all(self.tasks, kill_group)
        disconnect_mcp_servers(self)


# === s01 · the agent loop ===
def agent_loop(messages: list, agent: Agent) -> str:
    """Run the model and its tools until a reply ends the turn (see STOP_REASONS);
    `messages` is extended in place, the final text returned."""
    system = system_of(agent.system, system_prompt, parse_skill_md)  # s06
    agent.transcript = agent.transcript[:agent.depth] + [messages]  # s06: parents' too
    for _ in range(agent.max_turns):
        offered = offered_tools(agent)  # loaded tools join
        if not agent.depth:  # the main agent hears of what ended since
            tell_ended(agent.tasks, messages, say)
        with ToolRunner(agent) as runner:  # it may run calls mid-stream
            response = stream_reply(agent, system, messages, offered, runner)
            show_usage(response.usage, agent)
            action = STOP_REASONS.get(response.stop_reason, "unknown")
            if action == "refused":  # the API's advice: drop the refused turn
                raise Refused(refusal_line(response))
            if response.content:  # subtle: an empty message makes later requests a 400
                messages.append({"role": "assistant", "content": response.content})
            tool_uses = [b for b in response.content if b.type == "tool_use"]
            to_run, held = split_calls(tool_uses, response, action)  # held: never run
            # one tool_result per tool_use, same id, same order, even after Ctrl-C
            results, interrupted = runner.run_all(to_run)
        if tool_uses:
            results += [held_result(b, response) for b in held]
            messages.append({"role": "user", "content": results})
        if agent.stop:  # a hook said {"continue": false}: for the user only
            reason, agent.stop = agent.stop, None
            return f"[stopped by a hook: {reason}]"
        if interrupted:
            return "[interrupted: the tool calls that had not finished were stopped]"
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


# === s03 · permissions: what the session remembers ===
@dataclass
class Permissions:
    """What the permission gate remembers in one session (a subagent, s06, shares
    its parent's)."""

    mode: str | None = None  # --permission-mode; None: defaultMode, else "default"
    # {(tool, command | path | host)}: calls the user answered "always"
    approved: set = field(default_factory=set)
    granted: set = field(default_factory=set)  # {Path}: outside, the user let a call in
    read: dict = field(default_factory=dict)  # {Path: (mtime_ns, sha256)}: as last seen
    auto: AutoMode = field(default_factory=AutoMode)  # the reviewer (auto_mode.py)
    before_plan: str | None = None  # s05: the mode to go back to when plan mode ends


# === s03 · permissions: one record per call ===
@dataclass
class Call:
    """One tool call, as the gate, the rules, the sandbox and the tool see it. Its
    facts are worked out once, here, when first asked for, and handed on: nothing
    reads the settings or parses the command line again for the same call."""

    name: str      # the tool, as it was called (ours, or Claude Code's name)
    input: dict    # its input, checked against the tool's schema
    id: str        # the tool_use id
    agent: Agent   # whose call: its shell, its session

    @functools.cached_property
    def meta(self) -> dict:
        """The tool's safety metadata (SAFE_DEFAULTS for what it does not say)."""
        return tool_meta(self.name)

    @property
    def tool(self) -> str:
        """The tool by our name (`Bash` -> `run_shell`)."""
        return self.meta["tool"]

    @functools.cached_property
    def path(self) -> Path:
        """Where its path really leads (`..`, `~`, links followed), worked out once:
        the gate, an "always" answer and read-before-edit judge this one."""
        return resolve_path(path_of(self.input))

    @functools.cached_property
    def settings(self) -> dict:
        """The permissions of the settings files, as they are for this call."""
        return load_settings()

    @functools.cached_property
    def effects(self):
        """A shell command's reading (bash_safety.ShellEffects, one parse): what
        it runs, reads and writes, from where the agent's shell stands."""
        return shell_effects(self.input["command"], shell_dir(self.agent))


def reads_only(call: Call) -> bool:
    """A shell command that provably changes nothing and reads inside the workspace
    (bash_safety's is_read_only_command, on the call's one reading)."""
    return not call.effects.problem and not call.effects.writes


# === s05 · deferred tools: known by name, loaded on demand ===
# Known by name only until the model loads them with tool_search: rarely needed, and
# every schema left out is a few hundred bytes less in every request.
DEFERRED_TOOLS = ("web_fetch", "enter_plan_mode", "exit_plan_mode")


def is_deferred(name: str) -> bool:
    """DEFERRED_TOOLS, and every MCP server's tool: a server may bring dozens."""
    return name in DEFERRED_TOOLS or name.startswith("mcp__")


def deferred_names() -> list[str]:
    """The deferred tools, in TOOLS order: the built-ins, then the MCP tools sorted."""
    return [tool["name"] for tool in TOOLS if is_deferred(tool["name"])]


def tools_for_request(agent: Agent) -> list[dict]:
    """The `tools` of the next request: every tool that is not deferred, in TOOLS
    order, then the loaded deferred ones in the order they were loaded."""
    stable = [tool for tool in TOOLS if not is_deferred(tool["name"])]
    # The stable part is the same in every request: mark its end for prompt caching.
    # subtle: a copy, so TOOLS itself never carries the marker.
    stable[-1] = {**stable[-1], "cache_control": {"type": "ephemeral"}}
    return stable + [TOOL_BY_NAME[name] for name in agent.loaded]


# === s03 · permissions: protected paths ===
# What no write may reach unasked, whichever tool writes, in every mode (git's hooks,
# the agent's settings and programs, ~/.ssh ...): protected.py names and finds it.
def protected_target(target: str) -> str | None:
    """Why a write to `target` asks in every mode, whichever tool writes: PROTECTED
    and system files (protected_write), a protected name on its way (.git, .claude
    ..., there or not), or the one protected set the sandbox keeps read-only. Both
    the path as written and where its links lead now are checked."""
    written = written_path(target)
    paths, workspace = dict.fromkeys([written, resolve_path(target)]), Path.cwd()
    if why := next(filter(None, (protected_write(str(p)) for p in paths)), None):
        return why
    inside = [p for p in paths if p.is_relative_to(workspace)]
    if names := PROTECTED_NAMES & {
            part for p in inside for part in p.relative_to(workspace).parts}:
        return f"it writes in {min(names)}, a name protected at any depth"
    try:
        held = protected_set(agent_programs()) if inside else {}
    except SandboxError as e:  # the walk gave up, a protected name is a link ...
        return str(e)
    hit = next((h for h in held for p in inside if h == p or h in p.parents), None)
    return hit and (f"it writes {display(hit)}, which the sandbox keeps read-only "
                    "(git, the agent or its hooks run it later)")


def write_target(agent: Agent, file_path: str) -> Path:
    """safe_path for a file tool's write. The gate checked the path as written and
    where it led then; if a link on the way leads elsewhere now, that place is
    checked here, so a link swapped in since cannot lead the write anywhere
    protected (and atomic_write follows no link that appears after this)."""
    path = safe_path(agent, file_path)
    if path != written_path(file_path) and (why := protected_target(str(path))):
        raise ToolError(f"{file_path} leads through a symbolic link to "
                        f"{display(path)}, and {why}: write it by its own path.")
    return path


# === s02 · safe_path: every path stays in the workspace ===
class ToolError(Exception):
    """An expected failure; its message goes to the model as an is_error result."""


def safe_path(agent: Agent, path: str) -> Path:
    """Resolve `path` against the workspace; refuse anything that ends outside it,
    unless the permission gate let this call reach it (agent.permissions.granted)."""
    workspace = Path.cwd().resolve()
    try:
        # resolve() follows symbolic links and `..`; for a new file it resolves
        # the parent, so a link to a directory outside is caught too.
        full = (workspace / Path(path).expanduser()).resolve()
    except (OSError, RuntimeError) as e:  # e.g. a symlink loop
        raise ToolError(f"cannot resolve '{path}': {e}")
    if not is_inside(full) and full not in agent.permissions.granted:
        raise ToolError(f"'{path}' resolves to {full}, outside the workspace "
                        f"{workspace}. File tools only work inside the workspace.")
    return full


def display(path: Path) -> str:
    """A path as the model should see it: relative to the workspace, else absolute."""
    if not is_inside(path):
        return str(path)
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


def run_shell(agent: Agent, command: str, timeout: int = DEFAULT_TIMEOUT,
              dangerouslyDisableSandbox: bool = False,
              run_in_background: bool = False) -> str:
    """Run `command` with bash where the agent's shell stands: its stdout, stderr and
    exit code; CommandFailed with that text if it exits non-zero or times out."""
    if run_in_background:  # s06: started now, heard of later
        return start_in_background(agent, command, dangerouslyDisableSandbox)
    seconds = max(1, min(int(timeout), MAX_TIMEOUT)) / 1000  # milliseconds, as Bash
    cwd = shell_dir(agent)
    # subtle: output goes to temporary files, not pipes. A pipe would hold the whole
    # output in memory, and a background child that keeps the pipe open would make
    # us wait for it. Files cost no memory and we only wait for bash itself.
    with (tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err,
          tempfile.TemporaryFile() as where,
          confine(command, cwd, dangerouslyDisableSandbox,
                  run=recorded(command, where)) as argv):
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, cwd=cwd,
            pass_fds=[where.fileno()], env=command_env(),
            start_new_session=True)  # its own process group, so we can kill all of it
        agent.running.add(proc)  # Ctrl-C, caught in another thread, kills it too
        try:
            status = wait_for(proc, seconds, out, err)
        except BaseException:  # Ctrl-C: never leave the command running behind us
            kill_group(proc)
            raise
        finally:
            agent.running.discard(proc)
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
    """Kill the process and every process it started (they share its group; a
    sandbox's own, too: sandbox.py's end_group())."""
    end_group(proc.pid)
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
    path = safe_path(agent, file_path)
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
    path = write_target(agent, file_path)
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
    see the old file or the new one, never half of one, even if we crash midway.
    s03: in the folder reached from the workspace through no link (sandbox.py), so
    a folder swapped for a link since the gate's check leads the write nowhere."""
    try:
        write_unfollowed(path, Path.cwd().resolve(), data)
    except SandboxError as e:
        raise ToolError(str(e))


# === s02 · edit_file: one exact match, quotes and line endings forgiven ===
CURLY_TO_STRAIGHT = str.maketrans({"‘": "'", "’": "'", "“": '"', "”": '"',
                                   "′": "'", "″": '"'})  # primes: feet and inches
QUOTES_FOLDED = (" (old_string matched once its quotes were made straight; the file's "
                 "own quotes were kept)")


def edit_file(agent: Agent, file_path: str, old_string: str, new_string: str,
              replace_all: bool = False) -> str:
    """Replace `old_string` with `new_string`; refuse anything ambiguous."""
    path, text, updated, data = plan_edit(agent, file_path, old_string, new_string,
                                          replace_all)
    atomic_write(path, data)
    if text is None:  # empty old_string, no file: a new file
        return f"Created {display(path)}."
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
    base = safe_path(agent, path)
    if not base.is_dir():
        raise ToolError(f"{path} is not a directory.")
    # The pattern is anchored at `path` ("/" + pattern) and read as gitignore reads
    # its patterns; ripgrep lists the files (it never follows a link out).
    match = pathspec.GitIgnoreSpec.from_lines(["/" + pattern.lstrip("/")]).match_file
    hidden = ["--hidden", "--glob", "!.git"] if re.search(r"(^|/)\.", pattern) else []
    denied = read_deny_patterns(load_settings())  # a Read deny rule hides them
    found = [rel for line in ripgrep(["--files", *hidden], cwd=base)
             if match(rel := line.rstrip(b"\r\n").decode(errors="replace"))
             and not (denied and read_denied(denied, display(base / rel)))]
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
    base = safe_path(agent, path)
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
    kept, total, after, denied = [], 0, b"", read_deny_patterns(load_settings())
    for line in ripgrep(args):  # subtle: count every match, but keep only a few
        if denied and read_denied(denied, os.fsdecode(line.partition(b"\0")[0])):
            continue  # a Read deny rule covers that file: its lines are not shown
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


# === s03 · web_fetch: the gate sees every host it reaches ===
class SameHostRedirects(urllib.request.HTTPRedirectHandler):
    """Follow a redirect on the same host only; one to another host goes back to the
    model (as in Claude Code's WebFetch), so a page cannot lead it past the gate."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        if url_host(newurl) != url_host(req.full_url):
            raise ToolError(f"{req.full_url} redirects (HTTP {code}) to another host: "
                            f"{newurl}. To follow it, call web_fetch with that URL.")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


# === s02 · web_fetch: a page as text ===
def web_fetch(agent: Agent, url: str, max_length: int = MAX_RESULT_CHARS) -> str:
    """An http(s) page as text, its HTML as Markdown."""
    if urlparse(url).scheme not in ("http", "https") or not urlparse(url).netloc:
        raise ToolError(f"web_fetch takes http:// or https:// URLs only, not {url!r}.")
    request = urllib.request.Request(url, headers={"User-Agent": "course-agent/1.0"})
    opener = urllib.request.build_opener(SameHostRedirects)  # s03
    try:
        with opener.open(request, timeout=FETCH_TIMEOUT) as response:
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
# A tool is declared once, with everything about it: the schema the model sees (a
# description, and a type and a description for each field), the function that runs
# it, and (s03) the safety metadata the permission gate asks, per input.
TOOLS: list = []          # the schemas sent to the API, in the order registered
TOOL_HANDLERS: dict = {}  # tool name -> function(agent, **the input's fields)
TOOL_BY_NAME: dict = {}   # tool name -> its schema, as in TOOLS
TOOL_META: dict = {}      # tool name -> {"names": Claude Code's, "is_read_only": ...}
FIELD_TYPES = {str: "string", int: "integer", bool: "boolean"}


def register(handler, description: str, fields: dict, required: tuple = (),
             name: str = "", input_schema: dict | None = None, **meta) -> None:
    """Declare a tool: `fields` maps each field to (type, description), the type str,
    int, bool or a JSON schema; `meta` is its safety metadata (see SAFE_DEFAULTS).
    An MCP server's tool (s05) comes in by the same door, with its own `name` and
    `input_schema`."""
    properties = {field: {**(kind if isinstance(kind, dict)
                             else {"type": FIELD_TYPES[kind]}), "description": text}
                  for field, (kind, text) in fields.items()}
    tool = {"name": name or handler.__name__, "description": description,
            "input_schema": input_schema or {"type": "object", "properties": properties,
                                             "required": list(required)}}
    TOOLS.append(tool)
    TOOL_HANDLERS[tool["name"]], TOOL_BY_NAME[tool["name"]] = handler, tool
    TOOL_META[tool["name"]] = meta


PATH = (str, "A path inside the workspace; relative paths start at its root.")
SANDBOX_OFF = ("Run outside the sandbox (network, writes outside the workspace). Only "
               "when a command failed in it; the user is always asked.")  # s03
READS = {"is_read_only": lambda call: True,  # s03
         "is_destructive": lambda call: None,
         "is_concurrency_safe": lambda call: True}  # s06: reads may run side by side
EDITS = {"is_read_only": lambda call: False,  # s03: dangerous where an edit runs code
         "is_destructive": lambda call: protected_target(path_of(call.input))}
register(run_shell, "Run a shell command where the last one ended (a `cd` sticks, "
         "inside the workspace); returns stdout, stderr and the exit code "
         "(non-zero: an error, but exit 1 of grep, diff or test answers). Stdin is "
         "closed. Default timeout "
         f"{DEFAULT_TIMEOUT} ms, at most {MAX_TIMEOUT} ms.",
         {"command": (str, "The command to run."),
          "timeout": (int, "Milliseconds before it is killed."),
          "dangerouslyDisableSandbox": (bool, SANDBOX_OFF),
          "run_in_background": (bool, ("Return at once with a task id and an output "
                                 "file; you are told when it ends (s06)."))},
         ["command"], names=("Bash",),
         is_read_only=lambda call: reads_only(call) and not unsandboxed(call),
         is_destructive=lambda call: ("it asks to run outside the sandbox"
                                      if unsandboxed(call) else dangerous_reason(
                                          call.input["command"], protected_target,
                                          shell_dir(call.agent))),
         is_concurrency_safe=lambda call: reads_only(call)
         and stays_put(call.effects))  # s06: a `cd` moves where the next call starts
register(read_file, f"Read a text file with line numbers. Returns up to {READ_LIMIT} "
         "lines from `offset`; use offset/limit to read on.",
         {"file_path": PATH, "offset": (int, "The 1-based line to start at."),
          "limit": (int, "How many lines to read.")}, ["file_path"],
         names=("Read",), **READS)
register(write_file, "Create or overwrite a file with `content` (atomically). Prefer "
         "edit_file to change part of an existing file.",
         {"file_path": PATH, "content": (str, "The whole new content.")},
         ["file_path", "content"], names=("Write", "Edit"), **EDITS)
register(edit_file, "Replace `old_string` with `new_string` in a file. `old_string` "
         "must match exactly once (include surrounding lines to make it unique) "
         "unless `replace_all` is true. An empty `old_string` creates a new file.",
         {"file_path": PATH, "old_string": (str, "The exact text to replace."),
          "new_string": (str, "The text to put in its place."),
          "replace_all": (bool, "Replace every match, not just one.")},
         ["file_path", "old_string", "new_string"], names=("Edit",), **EDITS)
register(list_files, "Find files by glob pattern (e.g. '**/*.py'), newest first. Skips "
         ".git and git-ignored files.",
         {"pattern": (str, "A glob, from `path`: '*.md' at its top, '**/*.md' below."),
          "path": (str, "The folder to search (default: the workspace).")}, ["pattern"],
         names=("Glob", "Read"), **READS)
register(grep_search, "Search file contents with a regular expression; returns "
         "file:line:text.",
         {"pattern": (str, "A regular expression (ripgrep's dialect)."),
          "path": (str, "A file or folder to search (default: the workspace)."),
          "include": (str, "Only files whose names match this glob, e.g. '*.py'.")},
         ["pattern"], names=("Grep", "Read"), **READS)
register(web_fetch, "Fetch an http(s) URL and return its text (HTML turned into "
         "Markdown).",
         {"url": (str, "The http(s) URL to fetch."),
          "max_length": (int, "The most characters to return.")}, ["url"],
         names=("WebFetch",), **READS)


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


# === s03 · permissions: tool metadata and its safe defaults ===
# What the gate needs to know about each tool (registered with it, in TOOL_META),
# decided per call (its Call record): `run_shell` is read-only for `git status`, not
# for `git push`. `is_destructive` says why a call is dangerous (a non-empty string)
# or None.
def path_of(tool_input: dict) -> str:
    return tool_input.get("file_path") or tool_input.get("path") or "."


# subtle: a tool that declares nothing gets these. Both err on the safe side: if we
# guessed "read-only" for a tool that deletes, plan mode would run it unasked. A
# wrong "not read-only" only costs a question.
SAFE_DEFAULTS = {"names": (), "is_read_only": lambda call: False,
                 "is_destructive": lambda call: "the tool declares no safety metadata",
                 "is_concurrency_safe": lambda call: False}
PATH_TOOLS = {"read_file", "write_file", "edit_file", "list_files", "grep_search"}
EDIT_TOOLS = {"write_file", "edit_file"}


def tool_meta(name: str) -> dict:
    """Our tool's metadata, found by our name or its Claude Code name."""
    for tool, meta in TOOL_META.items():
        if name == tool or name in meta["names"][:1]:
            return {**SAFE_DEFAULTS, **meta, "tool": tool}
    return {**SAFE_DEFAULTS, "tool": name}


def ask_meta(call: Call, question: str, failed):
    """Ask a metadata function about this call; if it fails, take the safe answer."""
    try:
        return call.meta[question](call)
    except Exception:
        return failed


# === s03 · permissions: rules in Claude Code's format ===
PERMISSION_MODES = ("default", "acceptEdits", "plan", "bypassPermissions", "auto")


def rule_applies(rule: str, call: Call, deny=True) -> str | None:
    """Does a rule match this call? None if not, else a note on how ("" when it
    plainly matches). A shell command answers Bash rules for every command it
    runs, Read rules for the paths it reads, Edit rules for its writes."""
    name, content = parse_rule(rule)
    tool, tool_input = call.tool, call.input
    if tool == "run_shell" and name in ("Read", "Edit", "Write") and content:
        return shell_path_rule(name, content, call.input["command"],
                               effects=call.effects)
    server = name.removesuffix("__*") + "__"  # s05: `mcp__server`: its every tool
    if name != tool and name not in tool_meta(tool)["names"] and not (
            name.startswith("mcp__") and tool.startswith(server)):
        return None
    if content in (None, "*", ""):
        return ""  # a bare tool name matches every call
    if tool == "run_shell":
        return shell_rule_applies(content, tool_input["command"])
    if tool in PATH_TOOLS:
        matched = any(path_rule_matches(content, p)
                      for p in rule_paths(path_of(tool_input), deny))
        return "" if matched else None
    if tool == "web_fetch" and content.startswith("domain:"):
        return "" if url_host(tool_input["url"]) == url_host(
            "http://" + content[7:]) else None
    return None


def permission_summary(agent: Agent) -> str:
    """One line: the mode in force, where it came from, and the rules loaded."""
    settings = load_settings()
    mode = current_mode(agent, settings)
    source = ("from --permission-mode" if agent.permissions.mode
              else "from .claude/settings" if settings["defaultMode"] == mode
              else "no flag or setting chose one")
    rules = ", ".join(f"{len(settings[k])} {k}" for k in ("allow", "deny", "ask"))
    problems = "".join(f"\n  ignored a broken settings file: {p}"
                       for p in settings["problems"])
    if mode == "auto":  # the reviewer, its rules
        problems += "\n" + agent.permissions.auto.summary(*reviewer_rules())
    return (f"permission mode: {mode} ({source}); rules: {rules}{problems}\n"
            f"{sandbox_summary(sandbox_config())}")


# === s03 · sandbox: what a shell command can touch ===
# The gate decides whether to ask; the operating system decides what a command can
# touch (sandbox.py: bubblewrap on Linux, Seatbelt on macOS). Every command runs
# confined, however it was allowed: on a read-only verdict it writes nothing (the
# workspace is read-only too), else only the workspace; always a private /tmp, no
# network, no home (but the workspace) and no path a Read rule denies, at any depth.
# A writing command can change nothing that runs later outside the sandbox: the
# PROTECTED names (at any depth, and held while missing), each repository's git
# config and hooks, the programs the agent runs. The classifier may be wrong; the
# sandbox makes that cheap. What needs more fails with the system's own error; the
# model may ask to run it outside (`dangerouslyDisableSandbox`: always asks, in
# every mode). Settings: Claude Code's `sandbox` keys.
@contextlib.contextmanager
def confine(command: str, cwd: Path, unsandboxed: bool = False,
            run: str | None = None):
    """What runs `command` (as the text `run`, if given), for as long as it runs: bash
    inside the sandbox, in `cwd` (where the shell stands), or bash alone if the user
    let it out or no sandbox can start (an error if sandbox.failIfUnavailable is
    set)."""
    settings = sandbox_config()
    missing = sandbox_missing(settings)
    if missing and settings["enabled"] and settings["failIfUnavailable"]:
        raise ToolError(f"no sandbox ({missing}) and sandbox.failIfUnavailable is set")
    if missing or unsandboxed and settings["allowUnsandboxedCommands"]:
        yield ["bash", "-c", run or command]
        return
    workspace, files = Path.cwd().resolve(), settings["filesystem"]
    writes = not is_read_only_command(command, cwd)
    programs = agent_programs() if writes else []  # in the workspace: read-only
    try:  # sandbox.py finds the paths; fail closed if it cannot (nothing runs)
        denied, named = walk_workspace(
            workspace, read_deny_patterns(load_settings()), path_rule_matches,
            PROTECTED_NAMES if writes else set(), programs)
        protected = protected_set(programs, named) if writes else {}
    except SandboxError as e:
        raise ToolError(str(e))
    writable = [workspace, *(p for p in named if p.name == ".git" and p.is_dir()),
                *(resolve_path(p) for p in files.get("allowWrite", []))]
    hidden = [Path.home().resolve(), *denied,
              *(resolve_path(p) for p in files.get("denyRead", []))]
    read_only = [*protected, *(resolve_path(p) for p in files.get("denyWrite", []))]
    with placeholders(protected):
        yield argv_for(run or command, writable if writes else [], read_only, hidden,
                       workspace, cwd)


def agent_programs() -> list:
    """The folders of what the agent runs outside the sandbox: its Python (and every
    module it may import), this chapter, ripgrep, bubblewrap, and every folder on
    PATH (where a program named later is looked up)."""
    found = [shutil.which(p) for p in ("rg", "bwrap")]
    return [Path(p).resolve() for p in [sys.prefix, Path(__file__).parent,
                                        *os.environ.get("PATH", "").split(os.pathsep),
                                        *(Path(f).parent for f in found if f)]
            if p] + hook_programs() + mcp_programs()  # s04, s05: hooks', servers'


def command_env() -> dict:
    """The environment a command runs with: ours but AGENT_CREDENTIALS (what the
    agent pays with never reaches a command: `env` would print it; Claude Code keeps
    its key out too), and NON_INTERACTIVE_ENV (no pager, no editor, no prompt)."""
    return {**{k: v for k, v in os.environ.items() if k not in AGENT_CREDENTIALS},
            **NON_INTERACTIVE_ENV}


def unsandboxed(call: Call) -> bool:
    """Does this call ask to run outside a sandbox that could start, and may it?"""
    if not call.input.get("dangerouslyDisableSandbox"):
        return False
    settings = sandbox_config()
    return not sandbox_missing(settings) and settings["allowUnsandboxedCommands"]


# === s03 · permissions: decide_permission, the order is the policy ===
class Source(Enum):
    """Which step of the gate decided: an "always" answer skips only some."""

    MODE = "mode"        # the permission mode
    RULE = "rule"        # an allow, deny or ask rule
    DANGER = "danger"    # a dangerous call: it asks in every mode
    OUTSIDE = "outside"  # a path outside the workspace
    HOOK = "hook"        # s04: a PreToolUse hook's decision
    GUARD = "guard"      # a check failed on this input: the guard asks instead


class Decision(NamedTuple):
    behavior: str   # "allow" | "deny" | "ask", as Claude Code says it
    reason: str     # why, in words the user and the model read
    source: Source  # which step decided


def decide_permission(call: Call, mode: str, rules: dict) -> Decision:
    """The decision for one call, before anyone is asked: what the gate calls, and
    the one guard around it. It never raises: a check that fails, on any input,
    asks."""
    try:
        return decide(call, mode, rules)
    except NotImplementedError:  # unfinished code (an exercise's stub), not bad input
        raise
    except Exception as e:  # subtle: fail closed
        why = f"the permission check failed ({type(e).__name__}: {e})"
        return Decision("ask", why, Source.GUARD)


@within_budget  # past DECISION_SECONDS every check is Unanalysable: it asks
def decide(call: Call, mode: str, rules: dict) -> Decision:
    """The gate, in order; the first step to decide wins."""
    tool, tool_input = call.tool, call.input
    if mode not in PERMISSION_MODES:
        return Decision("deny", f"unknown permission mode {mode!r}", Source.MODE)
    read_only = ask_meta(call, "is_read_only", False)
    danger = ask_meta(call, "is_destructive", "its safety check failed")
    # 1. deny rules, in every mode; first match wins, specificity does not matter.
    if rule := first_rule(rules.get("deny", []), call):
        return Decision("deny", f"deny rule {rule}", Source.RULE)
    if tool == "run_shell" and (hidden := denied_inside(
            tool_input["command"], rules, effects=call.effects)):
        # `grep -r x .` would read a file a rule denies
        return Decision("ask", hidden, Source.RULE)
    # 2. plan mode: nothing but read-only calls, whatever the allow rules say.
    if mode == "plan" and not read_only:
        return Decision("deny", ("plan mode: only read-only calls run, "
                                 f"and this {tool} call is not one"), Source.MODE)
    # 3. ask rules, then dangerous calls: both ask in every mode.
    if rule := first_rule(rules.get("ask", []), call):
        return Decision("ask", f"ask rule {rule}", Source.RULE)
    if tool in EDIT_TOOLS and in_memory(call.agent.memory, path_of(tool_input),
                                        call.path, protected_write):  # s06
        return Decision("allow", "the agent's own memory folder", Source.MODE)
    if danger:
        return Decision("ask", f"dangerous: {danger}", Source.DANGER)
    # 4. allow rules; a shell command is judged part by part.
    if tool == "run_shell" and mode != "bypassPermissions":
        return shell_decision(call, mode, rules)
    if rule := first_rule(rules.get("allow", []), call, deny=False):
        return Decision("allow", f"allow rule {rule}", Source.RULE)
    # 5. the mode decides the rest.
    return mode_decision(call, mode, read_only)


def mode_decision(call: Call, mode: str, read_only: bool) -> Decision:
    """The last step: no rule decided, so the mode does."""
    tool, tool_input = call.tool, call.input
    if mode == "bypassPermissions":
        return Decision("allow", "bypassPermissions mode", Source.MODE)
    if tool in PATH_TOOLS and not is_inside(call.path):
        return Decision("ask", f"{path_of(tool_input)} is outside the workspace",
                        Source.OUTSIDE)
    if tool == "web_fetch":
        host = url_host(tool_input["url"])
        return Decision("ask", f"web_fetch reaches the network ({host})", Source.MODE)
    if read_only and not call.meta.get("claims_read_only"):  # s05: a server's claim
        return Decision("allow", "read-only tool", Source.MODE)
    if mode in ("acceptEdits", "auto") and tool in EDIT_TOOLS:  # auto: its fast path
        return Decision("allow", f"{mode} mode: a file edit inside the workspace",
                        Source.MODE)
    asks = call.meta.get("asks", "changes files")  # s05: an MCP tool says why
    return Decision("ask", f"{mode} mode: {tool} {asks}", Source.MODE)


def first_rule(rules: list, call: Call, deny=True) -> str | None:
    for rule in rules:
        if (note := rule_applies(rule, call, deny)) is not None:
            return rule + note
    return None


def shell_decision(call: Call, mode: str, rules: dict) -> Decision:
    """A command line runs unasked only if every command in it is read-only or
    allowed by a Bash rule, and every redirection writes where an Edit rule or
    acceptEdits lets it."""
    effects, used = call.effects, []
    if not effects.parts:
        return Decision("ask", f"{mode} mode: {effects.problem}", Source.MODE)
    for cmd, problem in effects.parts:
        text = " ".join(w.text for w in cmd.words)
        inner = " ".join(w.text for w in unwrapped(cmd).words)  # timeout 30 x -> x
        rule = next((r for r in rules.get("allow", [])
                     if parse_rule(r)[0] in ("Bash", "run_shell")
                     and command_rule_matches(parse_rule(r)[1] or "*", inner)), None)
        if rule is None and problem:
            why = f"{mode} mode: '{text[:80]}' is not read-only: {problem}"
            return Decision("ask", why, Source.MODE)
        used += [rule] if rule and rule not in used else []
    for path in effects.writes:
        rule = next((r for r in rules.get("allow", [])
                     if parse_rule(r)[0] in ("Edit", "Write")
                     and path_rule_matches(parse_rule(r)[1] or "**", path)), None)
        if rule is None and not (mode in ("acceptEdits", "auto")
                                 and is_inside(path.resolve())):
            return Decision("ask", f"{mode} mode: it writes {display(path)}",
                            Source.MODE)
        used += [rule] if rule and rule not in used else []
    if used:
        return Decision("allow", f"allow rule {' + '.join(used)}", Source.RULE)
    if effects.problem:  # a loop, a function, an assignment ...
        return Decision("ask", f"{mode} mode: {effects.problem}", Source.MODE)
    if effects.writes:
        return Decision("allow", f"{mode} mode: its redirections write inside "
                        "the workspace", Source.MODE)
    return Decision("allow", "read-only command", Source.MODE)


# === s06 · concurrency: what each running call knows ===
# What a call knows comes with its agent (see Agent). What differs per thread, as two
# calls of one agent run at once, is in context variables: where its lines go
# (shared_terminal.py's LINES), and here, the tool_use block it runs (its id).
CURRENT = contextvars.ContextVar("CURRENT", default=None)


# === s03 · permissions: asking the user ===
def current_mode(agent: Agent, settings: dict) -> str:
    mode = agent.permissions.mode or settings.get("defaultMode") or "default"
    return mode if mode in PERMISSION_MODES else "default"


def approval_key(call: Call) -> tuple:
    """What an "always" answer covers: this command, host or path, for this tool."""
    if call.tool == "run_shell":
        return call.tool, call.input["command"]
    if call.tool == "web_fetch":
        return call.tool, url_host(call.input["url"])
    return call.tool, str(call.path)


DENIED = ("Permission denied: ", "Blocked by a PreToolUse hook: ")  # shown already


# The steps whose question an "always" answer may skip next time in this session
REMEMBERED = (Source.MODE, Source.OUTSIDE)


def check_permission(call: Call, hook: dict | None = None) -> str | None:
    """None if the call may run; else the message that tells the model why not."""
    permissions, mode = call.agent.permissions, current_mode(call.agent, call.settings)
    gate = decide_permission(call, mode, call.settings)
    decision, reason, source = hook_and_gate(hook, gate)
    key, shown = approval_key(call), None
    if decision == "ask" and source in REMEMBERED and key in permissions.approved:
        decision, reason = "allow", "approved earlier this session (always)"
    elif decision == "ask" and source in REMEMBERED and mode == "auto":  # no question:
        decision, reason = permissions.auto.decide(  # the reviewer (auto_mode.py)
            call.agent.client, call.name, call.input, call.agent.transcript,
            reviewer_rules()[0])
    if decision == "ask":
        with TERMINAL_LOCK:  # one question at a time, and nothing printed over it
            answer, why = ask_user(call.name, call.input, reason, source in REMEMBERED,
                                   lambda t: print(printable(t)))
        if answer == "always":
            permissions.approved.add(key)
        permissions.auto.answered(answer)  # a yes ends the reviewer's row of blocks
        shown = why if stdin_is_interactive() else None  # it showed the reason
        decision, reason = ("allow" if answer != "no" else "deny"), f"{reason}; {why}"
    show_decision(decision, shown or reason)
    if decision == "block":  # auto mode: the reviewer's reason, and nobody was asked
        return block_message(reason)
    if decision != "allow":
        return (f"{DENIED[0]}{describe_call(call.name, call.input)} "
                f"was not run. Why: {reason}. Do not retry the same call; "
                "find another way or ask the user.")
    if call.tool in PATH_TOOLS and not is_inside(call.path):
        permissions.granted.add(call.path)  # let it through
    return None


def show_decision(decision: str, reason: str) -> None:
    row = printable(f"  [{decision}] {reason}")
    say(f"\033[33m{row}\033[0m" if COLOR and decision != "allow" else row)


# === s05 · deferred tools: tool_search ===
# The most tools one search loads: each stays in every later request. (Claude Code
# 2.1.331 takes any max_results; its keyword search cuts a query at 32 words.)
MAX_SEARCH_RESULTS = 20


def tool_search(agent: Agent, query: str, max_results: int = 5) -> str:
    """Find deferred tools, load them, and return their full definitions."""
    if query.strip().lower().startswith("select:"):
        wanted = [w.strip() for w in query.strip()[len("select:"):].split(",")
                  if w.strip()]
        if len(wanted) > MAX_SEARCH_RESULTS:
            raise ToolError(f"select: at most {MAX_SEARCH_RESULTS} tools at a time.")
        names = [tool_meta(w)["tool"] for w in wanted]  # Claude Code names work too
        unknown = [w for w, name in zip(wanted, names) if name not in TOOL_BY_NAME]
        if unknown or not wanted:
            raise ToolError(f"no tool named {', '.join(unknown) or '(none given)'}. "
                            f"Deferred tools: {', '.join(deferred_names())}.")
    else:
        names = rank_tools(query)[:min(max(1, max_results), MAX_SEARCH_RESULTS)]
        if not names:
            return (f"No deferred tool matches {query!r}. Deferred tools: "
                    f"{', '.join(deferred_names())}. Load one by name with "
                    "'select:<name>'.")
    new = [n for n in dict.fromkeys(names) if is_deferred(n)
           and n not in agent.loaded]
    agent.loaded += new  # never sorted: see tools_for_request
    keys = ("name", "description", "input_schema")
    definitions = [{k: TOOL_BY_NAME[n][k] for k in keys} for n in dict.fromkeys(names)]
    cost = sum(len(json.dumps(TOOL_BY_NAME[n])) for n in new)  # what the API is sent
    return (f"Loaded {len(definitions)} tool(s); you can call them now (every later "
            f"request carries {cost:,} more characters of schemas):\n"
            + "\n".join(json.dumps(d) for d in definitions))


STOP_WORDS = {"a", "an", "the", "to", "of", "in", "on", "for", "and", "or", "with",
              "it", "is", "be", "by", "my", "me", "i", "you", "tool", "tools", "use"}


def rank_tools(query: str) -> list[str]:
    """Deferred tools by keyword matches: a word of the name (ours or Claude Code's)
    counts 3, a word of the description 1. Best first; ties in TOOLS order."""
    words = set(re.findall(r"[a-z0-9]+", query.lower())) - STOP_WORDS
    scores = {}
    for name in deferred_names():
        own = name.split("__", 2)[-1]  # subtle: `mcp` or a server's name matches all
        in_name = set(own.split("_")) | {own.replace("_", "")}
        in_name |= {cc.lower() for cc in tool_meta(name)["names"]}
        in_text = set(re.findall(r"[a-z0-9]+",
                                 TOOL_BY_NAME[name]["description"].lower()))
        if score := sum(3 * (w in in_name) + (w in in_text) for w in words):
            scores[name] = score
    return sorted(scores, key=lambda n: -scores[n])  # sorted() is stable


def brief(row: str) -> str:
    """A row of a tool_result, for the user: a tool definition (tool_search's) as its
    name and the first sentence of its description, any other row as it is."""
    if not row.startswith('{"name": '):
        return row
    try:
        tool = json.loads(row)
        return f"{tool['name']}: {tool['description'].split('. ')[0].rstrip('.')}."
    except (ValueError, TypeError, KeyError, AttributeError):
        return row


# === s05 · plan mode ===
def enter_plan_mode(agent: Agent) -> str:
    """Switch the session to plan mode, remembering the mode to return to."""
    permissions = agent.permissions
    if current_mode(agent, load_settings()) == "plan":
        return "You are already in plan mode."
    permissions.before_plan, permissions.mode = permissions.mode, "plan"
    return ("Plan mode is on. Explore with read-only tools and change nothing: writes, "
            "edits and commands that are not read-only are denied. When you know what "
            "to do, present your plan with exit_plan_mode and wait for the user.")


def plan_mode_hint(agent: Agent) -> str:
    """What a denial adds in plan mode: the way out of it."""
    if current_mode(agent, load_settings()) != "plan":
        return ""
    return (" Plan mode is on: keep exploring with read-only tools, then present your "
            "plan with exit_plan_mode; once the user approves it, you can make "
            "changes.")


def exit_plan_mode(agent: Agent, plan: str) -> str:
    """Show the plan and ask the user; approved restores the mode we had before."""
    permissions = agent.permissions
    if current_mode(agent, load_settings()) != "plan":
        raise ToolError("not in plan mode; there is no plan to approve.")
    show_plan(plan)
    approved, said = ask_plan_approval()
    if not approved:
        raise ToolError(f"the user did not approve the plan ({said}). You are still in "
                        "plan mode: revise the plan and present it again with "
                        "exit_plan_mode.")
    permissions.mode, permissions.before_plan = permissions.before_plan, None
    if current_mode(agent, load_settings()) == "plan":  # subtle: defaultMode may be too
        permissions.mode = "default"
    return (f"The user approved your plan. Permission mode is back to "
            f"'{current_mode(agent, load_settings())}'. Carry the plan out now.")


def show_plan(plan: str) -> None:
    """The plan in a frame, wrapped to the terminal, so it reads as one document."""
    width = max(40, min(shutil.get_terminal_size((88, 20)).columns, 100) - 4)
    print("+-- the plan, for your approval " + "-" * (width - 29))
    for line in printable(plan).strip().splitlines() or [""]:
        indent = " " * (len(line) - len(line.lstrip()))
        for row in textwrap.wrap(line, width, subsequent_indent=indent) or [""]:
            bold = COLOR and row.startswith("#")  # a Markdown heading stands out
            print(f"| \033[1m{row}\033[0m" if bold else f"| {row}")
    print("+" + "-" * (width + 2))


def ask_plan_approval() -> tuple[bool, str]:
    """(approved, what the user said). No one to ask: not approved."""
    if not stdin_is_interactive():
        return False, "no one could answer: stdin is not a terminal"
    try:
        answer = input("Approve this plan? [y]es, [n]o, "
                       "or type what to change: ").strip()
    except EOFError:
        return False, "no answer: end of input"
    if answer.lower() in ("y", "yes"):
        return True, "approved"
    if answer.lower() in ("", "n", "no"):
        return False, "no feedback given"
    return False, f"the user's feedback: {answer}"


# === s05 · skills ===
SKILLS_DIR = ".claude/skills"  # in the workspace: one folder per skill, with a SKILL.md


def find_skills() -> tuple[dict, list[str]]:
    """({name: {"name", "description", "body", "folder", ...}}, [errors]) for each
    .claude/skills/*/SKILL.md; a broken skill is one error, the others still load."""
    skills, errors = {}, []
    for path in sorted(Path.cwd().glob(f"{SKILLS_DIR}/*/SKILL.md")):
        where = path.relative_to(Path.cwd()).as_posix()
        try:
            if not readable(path):
                raise SkillError("it is outside the workspace or a Read rule denies it")
            with open(open_regular(path), "rb") as f:  # a FIFO there: not waited on
                meta, body = parse_skill_md(f.read().decode("utf-8-sig"))
            name = str(meta.get("name") or path.parent.name).strip()
            description = " ".join(str(meta.get("description") or "").split())
            if not description:
                raise SkillError("no description in the front matter")
            if name in skills:
                raise SkillError(f"a second skill named {name!r}")
        except (SkillError, ToolError, UnicodeDecodeError, OSError) as e:
            errors.append(f"{where}: {e}")
            continue
        skills[name] = {**meta, "name": name, "description": description, "body": body,
                        "folder": path.parent.relative_to(Path.cwd()).as_posix()}
    return skills, errors


def readable(path: Path) -> bool:
    """What a skill may show the model: a file that is inside the workspace, links
    followed, and that no Read deny rule covers (read_file would refuse the rest)."""
    real, patterns = resolve_path(str(path)), read_deny_patterns(load_settings())
    return is_inside(real) and not any(read_denied(patterns, str(p))
                                       for p in (path, real))


def skill(agent: Agent, name: str, args: str = "") -> str:
    """A skill's instructions, with its folder so the model can read what it bundles."""
    skills, errors = find_skills()
    if name not in skills:
        broken = [e for e in errors if f"/{name}/" in e]
        raise ToolError(broken[0] if broken else f"no skill named {name!r}. Skills: "
                        f"{', '.join(skills) or '(none)'}.")
    found, body = skills[name], skills[name]["body"]
    if args:  # Claude Code's convention: $ARGUMENTS in the body, else appended
        body = body.replace("$ARGUMENTS", args) if "$ARGUMENTS" in body else \
            f"{body}\n\nARGUMENTS: {args}"
    folder = Path(found["folder"])
    files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")
                   if p.is_file() and readable(p))
    return (f"Skill {name!r}, from the folder {found['folder']}/ (files: "
            f"{', '.join(files[:20])}). Follow its instructions:\n\n{body}")


def system_prompt() -> str:
    """SYSTEM, plus each skill's name and description: bodies load on demand."""
    skills, errors = find_skills()
    text = SYSTEM.format(cwd=Path.cwd())
    if skills:
        text += ("\n\nSkills: when a task matches one, load it with the skill tool "
                 "first.\n" + "\n".join(f"- {s['name']}: {s['description']}"
                                         for s in skills.values()))
    if errors:
        text += ("\n\nSkills that could not be loaded (tell the user if one matters):\n"
                 + "\n".join(f"- {e}" for e in errors))
    if mcp := [name for name in deferred_names() if name.startswith("mcp__")]:
        text += ("\n\nTools of the MCP servers, deferred (load one with tool_search "
                 "before you call it): " + ", ".join(mcp))
    return text


# === s05 · registration: the new tools ===
# None of them changes a file, so plan mode lets them all run. (s06: tool_search may
# not run beside others: in [tool_search "select:web_fetch", web_fetch] the second
# needs the first done; the plan-mode tools change the mode under their neighbours.)
CHANGES_NOTHING = {"is_read_only": lambda call: True,
                   "is_destructive": lambda call: None}
register(tool_search, "Load the full definitions of deferred tools so that you can "
         "call them. Deferred tools, known here by name only: "
         f"{', '.join(DEFERRED_TOOLS)}. Calling one before it is loaded fails. "
         "A loaded tool stays available for the rest of the session.",
         {"query": (str, ("'select:name1,name2' loads tools by exact name; any other "
                          "query finds deferred tools by words of their names and "
                          "descriptions.")),
          "max_results": (int, ("The most tools a keyword query loads (default 5, "
                                 f"at most {MAX_SEARCH_RESULTS})."))},
         ["query"], names=("ToolSearch",), **CHANGES_NOTHING)
register(enter_plan_mode, "Switch to plan mode before a change that needs thought: "
         "explore with read-only tools, change nothing, then present your plan to the "
         "user with exit_plan_mode.", {}, names=("EnterPlanMode",), **CHANGES_NOTHING)
register(exit_plan_mode, "In plan mode: present your plan (Markdown) to the user for "
         "approval. Approved: plan mode ends and you carry the plan out. Not approved: "
         "you stay in plan mode, with the user's feedback.",
         {"plan": (str, "The plan, in Markdown.")}, ["plan"], names=("ExitPlanMode",),
         **CHANGES_NOTHING)
register(skill, "Load a skill by name: its instructions, and the folder of the files "
         "it bundles. The skills available are listed in the system prompt.",
         {"name": (str, "The skill's name."), "args": (str, "Passed to the skill.")},
         ["name"], names=("Skill",), **CHANGES_NOTHING,
         is_concurrency_safe=lambda call: True)  # s06: loading a skill only reads


# === s05 · MCP servers: approved before they start ===
# An MCP server is a program that offers tools over the Model Context Protocol (here:
# JSON-RPC on its stdin and stdout). The project's `.mcp.json` names its servers, in
# Claude Code's format. A server runs outside the sandbox, with your rights, as a
# hook does: it starts only in a folder you trust (s04 · trust), and only once
# approved, in the settings or by you at a terminal.
MCP_CONFIG = ".mcp.json"   # at the workspace root
MCP_START_TIMEOUT = 30     # seconds the servers have, all together, to start
MCP_CALL_TIMEOUT = 60      # seconds one tool call may take
MCP_OUTPUT_TOKENS = 25_000  # a result's text, at most: Claude Code's default, which
#                            MAX_MCP_OUTPUT_TOKENS changes (about 4 characters each)
APPROVALS = {"enableAllProjectMcpServers": bool, "enabledMcpjsonServers": list,
             "disabledMcpjsonServers": list}  # the settings' fields, and their shape


def show_mcp_line(text: str, error: bool = False) -> None:
    row = printable(f"mcp: {text}")
    print(f"\033[33m{row}\033[0m" if COLOR and error else row, flush=True)


def mcp_servers() -> McpServers:
    """A new agent's MCP client: none started yet (connect_mcp_servers)."""
    return McpServers(lambda text: show_mcp_line(text, error=True))


def mcp_settings() -> dict:
    """The approvals of both settings files (lists add up, the local file's switch
    wins), each checked against Claude Code's shape: a list of exact server names, or
    true/false. A field of another shape is one line, and counts for nothing."""
    found = {"enabledMcpjsonServers": [], "disabledMcpjsonServers": []}
    for file in SETTINGS_FILES:
        with contextlib.suppress(ValueError, OSError, AttributeError):
            settings = json.loads((Path.cwd() / file).read_text(encoding="utf-8"))
            for field, shape in APPROVALS.items():
                value = settings.get(field, found.get(field))
                if shape is list and isinstance(value, list) and all(
                        isinstance(v, str) for v in value):
                    found[field] = list(dict.fromkeys(found[field] + value))
                elif shape is bool and isinstance(value, bool):
                    found[field] = value
                elif value is not None:
                    show_mcp_line(f"{file}: {field} ignored: it must be "
                                  + ("a list of server names" if shape is list
                                     else "true or false"), error=True)
    return found


def mcp_approved(name: str, spec: dict, settings: dict) -> tuple[bool, str]:
    """May this project server start? (yes/no, why not). The settings decide
    (disabledMcpjsonServers first; names match exactly), else you do; no terminal,
    no start."""
    if name in settings["disabledMcpjsonServers"]:
        return False, "disabledMcpjsonServers in the settings"
    if settings.get("enableAllProjectMcpServers") is True or name in settings[
            "enabledMcpjsonServers"]:
        return True, ""
    if not stdin_is_interactive():
        return False, ("not approved: list it in enabledMcpjsonServers in "
                       ".claude/settings.local.json, or start the agent at a terminal")
    print(printable(f"\n? Start the MCP server {name} from {MCP_CONFIG}: "
                    f"{spec['shown']}\n  It runs outside the sandbox, with your "
                    "rights."))
    answer = None
    while answer not in ("y", "yes", "n", "no"):
        try:
            answer = input("  [y]es / [n]o: ").strip().lower()
        except EOFError:
            answer = "n"
    return answer.startswith("y"), "you said no"


def mcp_programs() -> list:
    """The workspace files a server's command names (`python3 tools/server.py`), or
    their folder: a server runs outside the sandbox, which keeps them read-only."""
    workspace = Path.cwd().resolve()
    words = [w for argv in server_commands(Path.cwd() / MCP_CONFIG).values()
             for w in argv]
    paths = [(workspace / w).resolve() for w in words if w]
    return [p.parent if p.parent != workspace else p for p in paths
            if p.is_file() and p.is_relative_to(workspace)]


# === s05 · MCP servers: their tools join the pool ===
# Each tool of a server becomes `mcp__SERVER__TOOL`, with the server's own schema and
# a proxy that forwards the call. They go after the built-in tools, sorted by name,
# and deferred: the built-ins' cache mark (tools_for_request) stays where it was,
# and a new server changes only the list of names in the system prompt. The gate,
# the rules and the hooks see the MCP name like any other. A tool's readOnlyHint is
# its server's claim: plan mode lets it through, but the gate still asks you, as
# Claude Code does, because only you can vouch for a server.
def connect_mcp_servers(agent: Agent) -> None:
    """Start the approved servers of .mcp.json, side by side, and add their tools to
    the pool; one line per server. One that does not start leaves the agent as it
    was; Ctrl-C while they start skips those still starting."""
    servers, problems = read_config(Path.cwd() / MCP_CONFIG)  # checked, ${VAR} in
    for problem in problems:
        show_mcp_line(problem, error=True)
    if servers and not is_trusted(Path.cwd().resolve()):
        return show_mcp_line(f"{MCP_CONFIG}: no server started: this folder is not "
                             "trusted (s04 · trust)")
    settings, approved = mcp_settings(), {}
    for name, spec in servers.items():
        yes, why = mcp_approved(name, spec, settings)
        if yes:
            approved[name] = spec
        else:
            show_mcp_line(f"{name}: not started ({why})")
    added = []
    for name, tools in agent.mcp.start_all(approved, str(Path.cwd()),
                                           MCP_START_TIMEOUT).items():
        if isinstance(tools, McpError):
            show_mcp_line(f"{name}: did not start: {tools}", error=True)
            continue
        tools, left_out = pool_names(name, tools)  # {"mcp__name__tool": tool}
        added += [mcp_tool(agent.mcp, name, *named) for named in tools.items()]
        show_mcp_line(f"{name}: {len(tools)} tools, deferred (mcp__{name}__...)")
        if left_out:  # names the API would refuse: one line, and the rest go on
            show_mcp_line(f"{name}: {left_out}", error=True)
    for schema, handler, meta in sorted(added, key=lambda t: t[0]["name"]):
        register(handler, schema["description"], {}, name=schema["name"],  # last: the
                 input_schema=schema["input_schema"], **meta)  # order stays stable


def mcp_tool(servers: McpServers, server: str, name: str,
             tool) -> tuple[dict, object, dict]:
    """A server's tool for the pool: (its schema, named `name`, the proxy that calls
    it, its safety metadata from its annotations)."""
    claims = bool(tool.annotations and tool.annotations.read_only_hint is True)

    def proxy(agent: Agent, /, **arguments) -> str:  # any field name may come
        try:
            text, images = servers.call(server, tool.name, arguments,
                                        MCP_CALL_TIMEOUT, save=save_media)
        except McpError as e:  # an isError result, a dead server, a timeout: data
            raise ToolError(capped_output(str(e))) from None
        return with_images(capped_output(text), images)
    schema = {"name": name, "description": tool.description or tool.title or name,
              "input_schema": tool.input_schema}
    asks = ("claims to be read-only (its server's readOnlyHint): only you can vouch "
            "for that" if claims else "is not marked read-only (readOnlyHint)")
    return schema, proxy, {"names": (), "is_read_only": lambda call: claims,
                           "is_destructive": lambda call: None,  # why it asks (decide):
                           "asks": asks, "claims_read_only": claims}


def capped_output(text: str) -> str:
    """A result's text within MAX_MCP_OUTPUT_TOKENS (and any result's limit), as
    Claude Code counts tokens (4 characters each): past it, the head, and where the
    whole was saved, as for any cut result."""
    value = os.environ.get("MAX_MCP_OUTPUT_TOKENS", "")
    tokens = int(value) if value.isdigit() and int(value) else MCP_OUTPUT_TOKENS
    limit = min(4 * tokens, MAX_RESULT_CHARS - 500)
    if len(text) <= limit:
        return text
    saved = save_result(text, f"mcp-{uuid.uuid4().hex[:12]}")
    return (f"{text[:limit]}\n\n[... cut at {limit:,} characters (MAX_MCP_OUTPUT_TOKENS"
            f" is {tokens:,} tokens): the whole result ({len(text):,} characters) "
            f"{saved} ...]")


def save_media(data: bytes, name: str) -> str:
    """Where a file the API cannot take (audio, say) was saved, as a cut result is."""
    return save_result(io.BytesIO(data), name)


MEDIA = {}  # {key: [image blocks]}: a result's images, until its tool_result is sent
ATTACHED = re.compile(r"\[\d+ image\(s\) attached \(([0-9a-f]{32})\)\]")


def with_images(text: str, images: list) -> str:
    """The text of a result, with a line that stands for its images."""
    if not images:
        return text
    MEDIA[key := uuid.uuid4().hex] = images  # subtle: random, so no server forges it
    return f"{text}\n[{len(images)} image(s) attached ({key})]"


def result_content(output: str):
    """A tool_result's content: the text, then the images its line stands for, as
    the API's image blocks (a result with none: the text alone)."""
    images = [block for key in ATTACHED.findall(output)
              for block in MEDIA.pop(key, [])]
    return [{"type": "text", "text": output}, *images] if images else output


def disconnect_mcp_servers(agent: Agent) -> None:
    """Stop every server (no server, nor what it started, outlives the agent) and
    take its tools out."""
    agent.mcp.close()
    for name in [tool["name"] for tool in TOOLS if tool["name"].startswith("mcp__")]:
        unregister(name)
    agent.loaded = [n for n in agent.loaded if not n.startswith("mcp__")]


def unregister(name: str) -> None:
    """Take a tool out of what register() filled (a stopped server's tool)."""
    TOOLS[:] = [tool for tool in TOOLS if tool["name"] != name]
    for registry in (TOOL_HANDLERS, TOOL_BY_NAME, TOOL_META):
        registry.pop(name, None)


# === s03 · permissions: read before edit ===
def fingerprint(path: Path) -> tuple[int, str]:
    """mtime and a hash of the content: a touch changes the first only."""
    digest = hashlib.sha256()
    with open(open_regular(path), "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return path.stat().st_mtime_ns, digest.hexdigest()


def check_read_before_edit(call: Call) -> str | None:
    """Refuse to change an existing file the agent has not read, or that changed
    on disk since it did: its edit would be based on text that is not there."""
    if call.tool not in EDIT_TOOLS:
        return None
    tool_input, agent = call.input, call.agent
    path = call.path
    if not path.is_file():
        return None  # a new file: nothing to have read
    seen = agent.permissions.read.get(path)
    if seen is None:
        return (f"{tool_input['file_path']} exists and has not been read in this "
                "session. Read it first with read_file, then edit it.")
    if path.stat().st_mtime_ns != seen[0]:
        now = fingerprint(path)
        if now[1] != seen[1]:
            return (f"{tool_input['file_path']} was modified since you read it (by the "
                    "user or a command). Read it again before editing.")
        agent.permissions.read[path] = now  # only touched: the content is what we read
    return None


def remember_file(call: Call) -> None:
    """After a successful read or write: this is the file as the agent knows it."""
    if call.tool in ("read_file", "write_file", "edit_file") and call.path.is_file():
        call.agent.permissions.read[call.path] = fingerprint(call.path)


# === s04 · hooks: the settings ===
HOOK_EVENTS = ("PreToolUse", "PostToolUse", "PostToolUseFailure")
HOOK_TIMEOUT = 60             # seconds a hook may run unless its settings say otherwise
MAX_HOOK_CONTEXT = 10_000     # characters hooks may add to one tool_result
MAX_HOOK_OUTPUT = 10_000_000  # bytes of a hook's stdout or stderr we read, at most


def load_hooks() -> dict:
    """{event: [matcher group, ...]} from both settings files (SETTINGS_FILES, as for
    the permission rules): the groups add up. A broken file is reported and skipped."""
    merged = {event: [] for event in HOOK_EVENTS}
    for name, data in read_settings(SETTINGS_FILES).items():
        try:
            if isinstance(data, Exception):
                raise data
            hooks = data.get("hooks") or {}
            found = {event: [g for g in hooks.get(event) or [] if isinstance(g, dict)]
                     for event in dict.fromkeys([*HOOK_EVENTS, *hooks])}
        except (ValueError, OSError, AttributeError, TypeError) as e:
            show_hook_line(f"hooks in {name} ignored: {e}", error=True)
            continue
        for event, groups in found.items():
            merged[event] = merged.get(event, []) + groups
    return merged


def hook_programs() -> list:
    """The workspace files a hook command names (`python3 hooks/check.py`), or their
    folder: a hook runs outside the sandbox, which keeps them read-only."""
    workspace = Path.cwd().resolve()
    groups = [g for gs in load_hooks().values() for g in gs]
    commands = " ".join(str(h.get("command")) for g in groups
                        for h in g.get("hooks") or [] if isinstance(h, dict))
    commands = re.sub(r"\$\{?CLAUDE_PROJECT_DIR}?", ".", commands)  # the workspace
    paths = [(workspace / w).resolve() for w in re.split(r"[\s=;&|()<>\"']+", commands)]
    return [p.parent if p.parent != workspace else p for p in paths
            if p.is_file() and p.is_relative_to(workspace)]


def claude_code_name(tool_name: str) -> str:
    """`run_shell` -> `Bash`: the first Claude Code name in the tool's metadata."""
    names = TOOL_META.get(tool_name, {}).get("names", ())
    return names[0] if names else tool_name


def matcher_matches(matcher, tool_name: str) -> bool:
    """Claude Code's three matcher forms, tried on our name and on Claude Code's."""
    names = {tool_name, claude_code_name(tool_name)}
    if matcher in (None, "", "*"):
        return True  # no matcher: every tool
    if not isinstance(matcher, str) or re.fullmatch(r"\w+\(.*\)", matcher, re.DOTALL):
        return False  # subtle: `Bash(git *)` is a permission rule, never a matcher
    if re.fullmatch(r"[A-Za-z0-9_|]+", matcher):
        return any(name in matcher.split("|") for name in names)  # exact names
    try:
        return any(re.search(matcher, name) for name in names)  # an unanchored regex
    except re.error:
        return False


def hooks_for(event: str, tool_name: str) -> list[tuple[str, float]]:
    """(command, timeout) of each hook for this event and tool; a command once.
    None in a folder you do not trust (see s04 · trust)."""
    if not is_trusted(Path.cwd().resolve()):
        return []
    found = {}  # command -> timeout; a dict keeps the order of first appearance
    for group in load_hooks()[event]:
        if not matcher_matches(group.get("matcher"), tool_name):
            continue
        for hook in group.get("hooks") or []:
            if not isinstance(hook, dict) or hook.get("type", "command") != "command":
                continue  # Claude Code also has prompt and http hooks; we run commands
            command, timeout = hook.get("command"), hook.get("timeout")
            if isinstance(command, str) and command.strip() and command not in found:
                valid = type(timeout) in (int, float) and timeout > 0
                found[command] = float(timeout) if valid else HOOK_TIMEOUT
    return list(found.items())


def hooks_summary() -> str:
    """One line for the start of a run: the hooks registered, and for what."""
    counts = [f"{sum(len(g['hooks']) for g in gs if isinstance(g.get('hooks'), list))} "
              f"{event}{'' if event in HOOK_EVENTS else ' (not run by this chapter)'}"
              for event, gs in load_hooks().items() if gs]
    untrusted = counts and not is_trusted(Path.cwd().resolve())
    return (f"hooks: {', '.join(counts) or 'none'} (from .claude/settings*.json)"
            + ", not run: this folder is not trusted" * bool(untrusted))


# === s04 · trust: the folder's programs run once you trust it ===
# A hook is a program the project's files name, run with your rights, outside the
# sandbox: a repository you clone could name anything. So hooks run only in a folder
# you trust; trust.py asks once, showing what would run, and keeps the answer
# outside the workspace. No one to ask (stdin is not a terminal): they do not run.
def project_programs() -> list[str]:
    """What the project's files would start, as they write it: each hook command,
    and (s05) each MCP server that could start: ${VAR} as written, env by name."""
    servers = read_config(Path.cwd() / MCP_CONFIG)[0]
    return [f"hook {event}: {hook['command']}"
            for event, groups in load_hooks().items() for group in groups
            for hook in group.get("hooks") or []
            if isinstance(hook, dict) and isinstance(hook.get("command"), str)] + [
        f"MCP server {name}: {spec['shown']}" for name, spec in servers.items()]


def trust_the_folder() -> bool:
    """Before anything of the project runs: is this folder trusted? Asks once."""
    return folder_trusted(Path.cwd().resolve(), project_programs(),
                          stdin_is_interactive(), say=lambda t: print(printable(t)))


def show_start(agent: Agent) -> None:
    """How a run starts: the folder's trust asked (once), then the rules and the
    hooks in force, which say whether they run."""
    trust_the_folder()
    print(permission_summary(agent), hooks_summary(), sep="\n")


# === s04 · hooks: running one hook ===
def hook_payload(event: str, call: Call, **extra) -> dict:
    """What a hook reads on stdin: Claude Code's fields, with absolute paths."""
    absolute = {k: os.path.normpath(Path.cwd() / os.path.expanduser(v))
                if k in ("file_path", "path") and isinstance(v, str) else v
                for k, v in call.input.items()}
    agent = call.agent
    return {"session_id": agent.session_id,
            "transcript_path": "",  # we keep no transcript file
            "cwd": str(shell_dir(agent)),
            "permission_mode": current_mode(agent, call.settings),
            "hook_event_name": event, "tool_name": claude_code_name(call.name),
            "tool_input": absolute, "tool_use_id": call.id, **extra}


def run_hook(command: str, payload: dict, timeout: float, running: set) -> dict:
    """Run one hook through the shell in the workspace, the payload on its stdin.
    {"exit": code, "stdout": ..., "stderr": ...}; exit None: it could not start or
    timed out, and "stderr" says which."""
    env = {**command_env(), "CLAUDE_PROJECT_DIR": str(Path.cwd())}  # no agent key
    # subtle: stdin is a file, not a pipe. Writing a big payload into a pipe that
    # the hook never reads would block us forever.
    with tempfile.TemporaryFile() as stdin, tempfile.TemporaryFile() as out, \
            tempfile.TemporaryFile() as err:
        stdin.write(json.dumps(payload).encode())
        stdin.seek(0)
        try:
            proc = subprocess.Popen(["bash", "-c", command], stdin=stdin, stdout=out,
                                    stderr=err, env=env, start_new_session=True)
        except OSError as e:
            return {"exit": None, "stdout": "", "stderr": f"could not start: {e}"}
        running.add(proc)  # Ctrl-C, caught in another thread, kills it too
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_group(proc)
            why = f"timed out after {timeout:g}s; killed with all it started"
            return {"exit": None, "stdout": "", "stderr": why}
        except BaseException:  # Ctrl-C: never leave a hook running behind us
            kill_group(proc)
            raise
        finally:
            running.discard(proc)
        kill_group(proc)  # anything it left running in the background goes too
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(MAX_HOOK_OUTPUT + 1), err.read(MAX_HOOK_OUTPUT)
        return {"exit": code, "cut": len(stdout) > MAX_HOOK_OUTPUT,
                "stdout": stdout[:MAX_HOOK_OUTPUT].decode(errors="replace"),
                "stderr": stderr.decode(errors="replace")}


# === s04 · hooks: reading its answer ===
def read_answer(event: str, command: str, run: dict) -> dict:
    """What one hook's exit code and output mean, as an answer: decision ("allow" |
    "deny" | "ask" | None) and its reason, updated_input, context and feedback (texts
    for the model), stop (a stopReason), and shown (the line the user sees)."""
    answer = {"decision": None, "reason": "", "updated_input": None, "context": "",
              "feedback": "", "stop": None, "shown": f"exit {run['exit']}",
              "error": False}
    stderr = run["stderr"].strip()
    if run.get("cut"):  # never drop output silently: JSON cut short cannot be read
        answer.update(error=True, shown=f"exit {run['exit']}, output too long, cut")
    if run["exit"] == 2:  # a blocking error: stderr is the message, stdout is ignored
        why = stderr or f"hook `{command}` exited 2 with nothing on stderr"
        if event == "PreToolUse":
            answer.update(decision="deny", reason=why)
        else:  # the tool has already run (or failed): the model hears about it
            answer["feedback"] = why
        told = "blocked" if event == "PreToolUse" else "told the model"
        answer["shown"] = f"exit 2, {told}: {why.splitlines()[0]}"
        return answer
    output = run["stdout"].strip()
    try:
        data = json.loads(output) if output.startswith("{") else None
    except ValueError:
        data = None
    if run["exit"] != 0:  # 1, 127, a timeout...: a non-blocking error, the call goes on
        first = (stderr.splitlines() or ["(nothing on stderr)"])[0]
        status = "error" if run["exit"] is None else f"exit {run['exit']}"
        answer.update(shown=f"{status}, a non-blocking error: {first}", error=True)
    # subtle: as in Claude Code, JSON counts on any exit but 2 (`exit 1` + a deny)
    if not isinstance(data, dict) or run["exit"] is None:
        if output and not answer["error"]:  # plain text: the user's log, not the model
            answer["shown"] += f", said: {output.splitlines()[0]}"
        return answer
    return read_json_answer(event, command, data, answer)


def read_json_answer(event: str, command: str, data: dict, answer: dict) -> dict:
    """Claude Code's JSON fields, from a hook that did not exit 2."""
    if data.get("continue") is False:
        answer["stop"] = str(data.get("stopReason") or f"hook `{command}` said stop")
    specific = data.get("hookSpecificOutput")
    if not isinstance(specific, dict) or specific.get("hookEventName") != event:
        specific = {}  # subtle: it must name its event, or it is not read at all
    if isinstance(specific.get("additionalContext"), str):
        answer["context"] = specific["additionalContext"]
    if event == "PreToolUse":
        # subtle: a permissionDecision at the top level is NOT read, only inside
        # hookSpecificOutput. The older top-level {"decision": "block"} means deny.
        if specific.get("permissionDecision") in ("allow", "deny", "ask"):
            answer["decision"] = specific["permissionDecision"]
            answer["reason"] = str(specific.get("permissionDecisionReason") or "")
        elif data.get("decision") == "block":
            answer.update(decision="deny", reason=str(data.get("reason") or ""))
        if isinstance(specific.get("updatedInput"), dict):
            answer["updated_input"] = specific["updatedInput"]
    elif data.get("decision") == "block":  # PostToolUse: the reason goes to the model
        answer["feedback"] = str(data.get("reason") or f"hook `{command}` blocked")
    if answer["decision"] and not answer["reason"]:
        answer["reason"] = f"hook `{command}` said {answer['decision']}"
    said = [f"{answer['decision']}: {answer['reason']}" if answer["decision"] else "",
            "changed the input" if answer["updated_input"] is not None else "",
            "added context" if answer["context"] else "",
            f"feedback: {answer['feedback']}" if answer["feedback"] else "",
            f"stop: {answer['stop']}" if answer["stop"] else "",
            f"message: {data['systemMessage']}" if data.get("systemMessage") else ""]
    answer["shown"] += ", JSON" + "".join(f"; {s}" for s in said if s)
    return answer


# === s04 · hooks: every hook of an event ===
STRENGTH = {"deny": 3, "ask": 2, "allow": 1, None: 0}  # several hooks: strongest wins


def run_hooks(event: str, call: Call, **extra) -> dict:
    """Run every hook for this event and tool, then combine their answers so that
    their order never matters: deny > ask > allow, any stop stops, texts add up."""
    payload = hook_payload(event, call, **extra)
    answers, quiet = [], call.agent.quiet
    for command, timeout in hooks_for(event, call.name):
        answer = read_answer(event, command, run_hook(command, payload, timeout,
                                                   call.agent.running))
        label = hook_label(command)
        if answer["shown"] == "exit 0":  # passed, said nothing: counted for the task
            quiet[label] = quiet.get(label, 0) + 1
        else:
            show_hook_line(f"{event} {label}: {answer['shown']}", answer["error"])
        answers.append(answer)
    strongest = max([STRENGTH[a["decision"]] for a in answers], default=0)
    deciders = [a for a in answers
                if a["decision"] and STRENGTH[a["decision"]] == strongest]
    updates = {json.dumps(a["updated_input"], sort_keys=True): a["updated_input"]
               for a in answers if a["updated_input"] is not None}
    combined = {
        "decision": deciders[0]["decision"] if deciders else None,
        "reason": "; ".join(a["reason"] for a in deciders),
        "updated_input": next(iter(updates.values())) if len(updates) == 1 else None,
        "context": "\n".join(a["context"] for a in answers if a["context"]),
        "feedback": "\n".join(a["feedback"] for a in answers if a["feedback"]),
        "stop": "; ".join(a["stop"] for a in answers if a["stop"]) or None,
    }
    if len(updates) > 1 and combined["decision"] != "deny":  # which one? fail closed
        combined.update(decision="deny",
                        reason="two hooks rewrote the input differently")
        show_hook_line(f"{event}: denied, {combined['reason']}", error=True)
    return combined


def capped(text: str) -> str:
    """Hook text for the model, capped: a chatty hook must not flood the context."""
    if len(text) <= MAX_HOOK_CONTEXT:
        return text
    show_hook_line(f"hook text cut to {MAX_HOOK_CONTEXT:,} characters of {len(text):,}")
    return (text[:MAX_HOOK_CONTEXT] + f"\n[... {len(text) - MAX_HOOK_CONTEXT:,} "
            f"characters cut: hooks may add at most {MAX_HOOK_CONTEXT:,}]")


def hook_note(title: str, text: str) -> str:
    """Text from hooks, to put after a tool's result, marked as theirs."""
    return f"\n\n<{title}>\n{capped(text)}\n</{title}>" if text else ""


def hook_label(command: str) -> str:
    """A short name for a hook in the user's log: its script's name, if it has one."""
    if scripts := re.findall(r"[\w.-]+\.(?:py|sh|js|ts|rb)\b", command):
        return scripts[-1]
    return f"`{command}`" if len(command) <= 40 else f"`{command[:37]}...`"


def show_quiet_hooks(agent: Agent) -> None:
    """After a task, in one line: the hooks that passed without a word."""
    if agent.quiet:  # an audit hook on every call would fill the screen
        show_hook_line("hooks that passed without a word: " + ", ".join(
            f"{label} x{runs}" for label, runs in agent.quiet.items()))
    agent.quiet = {}


def show_hook_line(text: str, error: bool = False) -> None:
    """One line for the user about a hook; the model never sees these."""
    row = printable(f"  {'!' if error else '~'} {text}")
    row = row if len(row) <= 200 else row[:197] + "..."
    say(f"\033[35m{row}\033[0m" if COLOR else row)


# === s04 · hooks: in the gate, and after the call ===
def pre_tool_use(call: Call) -> dict:
    """PreToolUse hooks for one call. Adds to their combined answer: "call" (the
    record the call runs with: a new one for a hook's input) and "blocked" (the
    is_error text if it must not run)."""
    hook = run_hooks("PreToolUse", call)
    hook.update(call=call, blocked=None)
    if hook["stop"]:
        call.agent.stop = hook["stop"]
        hook["blocked"] = "Not run: a hook stopped the agent."
    elif hook["decision"] == "deny":  # its hook line said why: not said again
        hook["blocked"] = f"{DENIED[1]}{capped(hook['reason'])}"
    elif hook["updated_input"] is not None:
        if problem := validate_input(TOOL_BY_NAME[call.name]["input_schema"],
                                     hook["updated_input"]):
            hook["blocked"] = ("Error: a PreToolUse hook's updatedInput is invalid: "
                               f"{problem}.")
        else:  # another input: its facts are worked out anew
            hook["call"] = Call(call.name, hook["updated_input"], call.id, call.agent)
            show_hook_line(f"input now: {describe_call(call.name, hook['call'].input)}")
    if hook["blocked"]:
        hook["blocked"] += hook_note("hook-context", hook["context"])
    return hook


def hook_and_gate(hook: dict | None, gate: Decision) -> Decision:
    """Join a PreToolUse hook's decision to the gate's. A hook's ask forces a prompt;
    its allow saves the prompt that the mode asks for, never a deny or an ask rule."""
    if not hook or not hook["decision"] or gate.behavior == "deny":
        return gate
    if hook["decision"] == "ask":
        return Decision("ask", f"PreToolUse hook asks: {hook['reason']}", Source.HOOK)
    if (hook["decision"] == "allow" and gate.behavior == "ask"
            and gate.source in REMEMBERED):
        return Decision("allow", (f"PreToolUse hook allowed it: {hook['reason']} "
                                  f"(else: {gate.reason})"), Source.HOOK)
    return gate


def post_tool_use(call: Call, output: str, is_error: bool,
                  context: str = "") -> tuple[str, bool]:
    """PostToolUse (or PostToolUseFailure) hooks: the result stands. What hooks
    said for the model (`context` from PreToolUse, then theirs) comes after it."""
    event, field = (("PostToolUseFailure", "error") if is_error
                    else ("PostToolUse", "tool_response"))  # Claude Code's payloads
    hook = run_hooks(event, call, **{field: output})
    if hook["stop"]:
        call.agent.stop = hook["stop"]
    said = "\n".join(text for text in (context, hook["feedback"], hook["context"])
                     if text)
    return output + hook_note("hook-feedback", said), is_error


# === s03 · permissions: checks before the question ===
def plan_edit(agent: Agent, file_path: str, old_string: str, new_string: str,
              replace_all: bool = False) -> tuple:
    """The edit worked out, nothing written: (path, text before or None for a new
    file, text after, the bytes to write). ToolError if it cannot apply."""
    path = write_target(agent, file_path)
    old, new = old_string.replace("\r\n", "\n"), new_string.replace("\r\n", "\n")
    if old == new:
        raise ToolError("old_string and new_string are the same; nothing to change.")
    if not path.exists():
        if old:
            raise ToolError(f"file not found: {file_path}")
        return path, None, new_string, new_string.encode("utf-8")
    original = read_text_for_edit(path, file_path)
    # Match on LF text when the file is consistently CRLF; write CRLF back below.
    crlf = "\r\n" in original and original.count("\r\n") == original.count("\n")
    text = original.replace("\r\n", "\n") if crlf else original
    if not old and text:
        raise ToolError("old_string is empty but the file is not; "
                        "give the text to replace.")
    updated = replace_text(text, old, new, replace_all, file_path) if old else new
    return (path, text, updated,
            (updated.replace("\n", "\r\n") if crlf else updated).encode("utf-8"))


# The files the agent reads its own settings from, and what each must hold.
AGENT_SETTINGS = {**dict.fromkeys(SETTINGS_FILES, "settings"), ".mcp.json": "mcp"}


def check_input(call: Call) -> str | None:
    """Why this call would fail, found before anyone is asked (Claude Code validates
    a tool's input before its permission check), cheapest first; None if it may go
    on. A call that cannot work is never put to the user."""
    tool, tool_input = call.tool, call.input
    if tool == "run_shell" and not tool_input["command"].strip():  # s01's own check
        return "run_shell needs 'command', a non-empty string."
    if problem := check_read_before_edit(call):
        return problem  # (a file changed since it was read: its edit is stale)
    if tool not in EDIT_TOOLS or not is_inside(call.path):
        return None  # outside the workspace, the gate asks first: the tool checks later
    try:
        if tool == "edit_file":  # unchanged, not found, found twice: edit_file's words
            path, _, after, _ = plan_edit(call.agent, **tool_input)
        else:
            path = safe_path(call.agent, tool_input["file_path"])
            after = tool_input["content"]
    except ToolError as e:
        return str(e)
    kind = next((k for name, k in AGENT_SETTINGS.items()
                 if resolve_path(name) == path), None)  # one of the agent's own?
    problem = kind and settings_problem(kind, after)
    return problem and (f"{display(path)} would {problem}, and the agent would lose "
                        "its own settings; nothing was written. Fix it and try again.")


# === s03 · permissions: the one path every call takes ===
def execute_tool(block, agent: Agent) -> tuple[str, bool]:
    """The one path every tool call takes: look up, validate, PreToolUse hooks, check
    read-before-edit, decide permission, run, remember, shape, PostToolUse hooks."""
    handler = TOOL_HANDLERS.get(block.name)
    if handler is None:
        return (f"Error: unknown tool '{block.name}'. "
                f"Available: {', '.join(TOOL_HANDLERS)}."), True
    if is_deferred(block.name) and block.name not in agent.loaded:
        return (f"Error: {block.name} is a deferred tool and is not loaded yet. "
                f"Load it first with tool_search (query 'select:{block.name}'), "
                "then call it."), True
    if problem := validate_input(TOOL_BY_NAME[block.name]["input_schema"], block.input):
        return f"Error: invalid input for {block.name}: {problem}.", True
    if agent.stop:  # a hook stopped the agent earlier in this batch
        return "Not run: a hook stopped the agent.", True
    hook = pre_tool_use(Call(block.name, block.input, block.id, agent))
    if hook["blocked"]:
        return hook["blocked"], True
    call = hook["call"]  # with a hook's updatedInput, or the model's own input
    try:
        problem = check_input(call)  # before any question
    except Exception as e:  # subtle: a bug in a check must fail closed, not open
        problem = f"the input check failed ({type(e).__name__}: {e}); nothing ran."
    if problem:
        return f"Error: {problem}", True
    if denied := check_permission(call, hook):  # (decide_permission: guarded)
        return (denied + hook_note("hook-context", hook["context"])
                + plan_mode_hint(agent), True)
    output, is_error = run_handler(handler, call)
    output = shape_result(block.name, output, block.id)
    return post_tool_use(call, output, is_error, hook["context"])


def run_handler(handler, call: Call) -> tuple[str, bool]:
    """Run the tool's own function on the call: (output, is_error); never raises."""
    try:
        output = handler(call.agent, **call.input)
        remember_file(call)  # the file as the agent now knows it
        return output, False
    except CommandFailed as e:  # a shell command ran and failed: its output, as is
        return str(e), True
    except ToolError as e:
        return f"Error: {e}", True
    except Exception as e:  # a bug or an OS error: still data for the model
        return f"Error: {type(e).__name__}: {e}", True


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
    say(f"\033[36m> {call}\033[0m" if COLOR else f"> {call}")


def short(value, limit: int = 70) -> str:
    """repr(value), or its head and how long it is: one call stays on one line."""
    text = repr(value)
    return (text if len(text) <= limit
            else f"{text[:limit - 18]}... ({len(text):,} chars)")


def show_result(output: str, is_error: bool, lines: int = 6) -> None:
    """Print the first few lines of a tool_result, indented."""
    if is_error and output.startswith(DENIED):  # the gate showed why: once is enough
        return
    rows = [brief(row) for row in printable(output).splitlines()] or [""]
    preview = rows[:lines] + ([f"... (+{len(rows) - lines} lines)"]
                              if len(rows) > lines else [])
    mark, shown = ("! " if is_error else "  "), []
    for row in preview:
        row = mark + (row if len(row) <= 160 else row[:157] + "...")
        shown.append(f"\033[2m{row}\033[0m" if COLOR else row)
        mark = "  "
    say("\n".join(shown))  # one say: parallel results never interleave their lines


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


# === s05 · prompt caching: the conversation cached, the cache shown ===
# Automatic caching: a cache_control at the top of the request marks its last block,
# so each request caches the whole conversation and the next one, an exchange longer,
# reads it back. (Sent as extra_body: SDKs older than the field send it all the same.)
AUTO_CACHE = {"cache_control": {"type": "ephemeral"}}


def show_usage(usage, agent: Agent) -> None:
    """One dim line per model call: the input tokens read from the cache, written to
    it, and neither (everything after the last mark)."""
    line = (f"  [input tokens: {usage.cache_read_input_tokens or 0:,} read from the "
            f"cache, {usage.cache_creation_input_tokens or 0:,} written to it, "
            f"{usage.input_tokens:,} uncached]")
    say(f"\033[2m{line}\033[0m" if COLOR else line)  # a subagent's is labelled
    count_tokens(usage, agent)  # near the context window: a warning, once


# === s06 · concurrency: which calls may run together ===
# Calls of one batch running at once, Claude Code's limit. They mostly wait (on disk,
# network, a model), so the number of cores does not matter.
MAX_PARALLEL = 10


def is_concurrency_safe(call: Call) -> bool:
    """May this call run at the same time as its neighbours? The tool's metadata says,
    per input. Fails closed: an unknown tool, a tool that does not say, bad input, a
    failing check all mean no. A wrong "no" costs time; a wrong "yes" loses a write.
    An MCP tool (s05) is safe when it is read-only: its readOnlyHint says so."""
    mcp = call.name.startswith("mcp__")
    question = "is_read_only" if mcp else "is_concurrency_safe"
    return isinstance(call.input, dict) and ask_meta(call, question, False) is True


def stays_put(effects) -> bool:
    """It leaves the shell where it is (no `cd`), so it may run beside other calls."""
    return all(program(c) != "cd" for c, _ in effects.parts)


def partition_tool_calls(blocks: list, agent: Agent) -> list[list]:
    """Cut the agent's calls, in their order, into consecutive batches of their
    records (Call): a run of safe calls is one batch, every other call is a batch of
    its own. Never reorders: [read a, write a, read a] -> [[read a], [write a],
    [read a]]."""
    batches, last_safe = [], False
    for block in blocks:
        call = Call(block.name, block.input, block.id, agent)
        safe = is_concurrency_safe(call)
        if safe and last_safe:
            batches[-1].append(call)
        else:
            batches.append([call])
        last_safe = safe
    return batches


# === s06 · concurrency: the tool runner ===
INTERRUPTED = ("Interrupted: the user pressed Ctrl-C before this call finished. It may "
               "have partly run; its processes were killed.")
NOT_RUN = "Not run: the user pressed Ctrl-C before this call started."


class Interrupted(Exception):
    """Raised in a worker thread (a subagent) when the user pressed Ctrl-C."""


def run_call(block, agent: Agent) -> tuple[str, bool]:
    """One call through the whole pipeline, shown when it starts and when it ends."""
    if agent.cancel.is_set():
        return NOT_RUN, True
    show_call(block)
    if (allowed := agent.allowed) is not None and block.name not in allowed:
        output, is_error = (f"Error: {block.name} is not among this agent's tools: "
                            f"{', '.join(allowed)}."), True
    else:
        output, is_error = execute_tool(block, agent)  # the same pipeline as ever
    stopped = agent.cancel.is_set()  # its line still gets one under it
    show_result(*((INTERRUPTED, True) if stopped else (output, is_error)))
    return output, is_error


def result_of(future):
    """future.result(), waited for in short slices. subtle: a wait with no timeout
    is not woken by Ctrl-C on every platform; a short one always returns to Python."""
    while not future.done():
        wait([future], timeout=0.25)
    return future.result()


class ToolRunner:
    """Runs one reply's tool calls: batch after batch, safe batches on a thread pool,
    results in call order. Safe calls may be offered while the reply still streams."""

    def __init__(self, agent: Agent):
        self.agent = agent  # whose calls: its tools, its Ctrl-C (a subagent's parent's)
        self.pool = ThreadPoolExecutor(MAX_PARALLEL, thread_name_prefix="tool")
        self.cancel = agent.cancel
        if not agent.depth:  # the main agent: a new reply, nothing cancelled yet
            self.cancel.clear()
        self.futures = {}   # call index -> Future, for calls handed to the pool
        self.spans = {}     # call index -> (start, end): what each call took
        self.open = True    # every call offered so far was safe

    def __enter__(self):
        return self

    def __exit__(self, kind, *rest):
        ctrl_c = kind is not None and issubclass(kind, KeyboardInterrupt)
        if ctrl_c or (kind is not None and not self.agent.depth):  # or the main's
            self.interrupt()  # reply failed (mid-stream, say): stop what started early
        # subtle: a subagent whose reply failed lets its early calls end (their results
        # are not sent); interrupt() would also stop its siblings and parent.
        self.pool.shutdown(wait=not ctrl_c, cancel_futures=True)

    def submit(self, index: int, block) -> None:
        context = contextvars.copy_context()  # its lines: this agent's (LINES)
        self.futures[index] = self.pool.submit(context.run, self.run, index, block)

    def run(self, index: int, block, alone: bool = False) -> tuple[str, bool]:
        """run_call, timed; beside others, its lines are held, then shown together."""
        began, current = time.monotonic(), CURRENT.set(block)
        # an agent call's show as its subagent starts (labelled): before its work
        with lines_of_a_call(held=not alone):
            outcome = run_call(block, self.agent)
        CURRENT.reset(current)
        self.spans[index] = (began, time.monotonic())
        return outcome

    def offer(self, block) -> None:
        """A tool_use block has just streamed in whole: start it now if it, and every
        call before it, is safe. Anything else waits for the end of the reply."""
        call = Call(block.name, block.input, block.id, self.agent)
        self.open = (self.open and is_concurrency_safe(call)
                     and not waits_for_reply(block))  # a fork needs the whole reply
        if self.open:
            self.submit(len(self.futures), block)

    def interrupt(self) -> None:
        """Ctrl-C: stop what runs. Workers see the event; processes are killed."""
        self.cancel.set()
        self.agent.mcp.interrupt()  # s05's calls in flight end now, as errors
        for proc in list(self.agent.running):
            kill_group(proc)

    def run_all(self, blocks: list) -> tuple[list, bool]:
        """Every call's tool_result, in call order, and whether Ctrl-C cut in."""
        outcomes = [None] * len(blocks)  # (output, is_error) per call
        index, inline, interrupted = 0, None, False  # inline: the unsafe call run here
        names = [printable(b.name) for b in blocks]  # for each batch's line
        early = ", ".join(b.name for b in blocks[:len(self.futures)])
        if early and not self.agent.depth:  # the main agent's head start, on its line
            say(f"  [reply complete: {early} started while it streamed]")
        try:
            batches = partition_tool_calls(blocks, self.agent)
            for number, batch in enumerate(batches, 1):
                span, began = range(index, index + len(batch)), time.monotonic()
                index += len(batch)
                if is_concurrency_safe(batch[0]):
                    for i in span:  # some may have started while the reply streamed
                        if i not in self.futures:
                            self.submit(i, blocks[i])
                    for i in span:  # wait for the whole batch before the next one
                        outcomes[i] = result_of(self.futures[i])
                else:  # an unsafe call runs alone, in this thread
                    inline = span[0]
                    outcomes[inline] = self.run(inline, blocks[inline], alone=True)
                show_batch(number, span, names, self.spans, began, bool(early))
        except KeyboardInterrupt:
            for i, future in self.futures.items():  # what finished before Ctrl-C counts
                if outcomes[i] is None and future.done():
                    outcomes[i] = future.result()
            self.interrupt()
            interrupted = True
        results = []
        for i, block in enumerate(blocks):
            began = i in self.futures or i == inline
            output, is_error = outcomes[i] or (INTERRUPTED if began else NOT_RUN, True)
            results.append({"type": "tool_result", "tool_use_id": block.id,
                            "content": result_content(output),  # s05: images
                            "is_error": is_error})
        return results, interrupted


# === s06 · concurrency: starting calls while the reply streams ===
def stream_reply(agent: Agent, system: str, messages: list, tools: list,
                 runner: ToolRunner):
    """Call the model, streaming: print its text as it arrives and offer each tool_use
    block to the runner the moment it is known whole. Returns the whole message."""
    last_call = None  # the tool_use that streamed in last: whole, or cut off?
    shown = not agent.depth  # the main agent's words are shown, a subagent's not
    request = {"model": agent.model, "system": system, "messages": messages,
               "tools": tools, "max_tokens": MAX_TOKENS, "extra_body": AUTO_CACHE}
    with agent.client.messages.stream(**request) as stream:
        for event in stream:
            if runner.cancel.is_set():  # a subagent whose parent was interrupted
                raise Interrupted("the user pressed Ctrl-C")
            if event.type in ("content_block_start", "message_delta") and last_call:
                # subtle: a block cut off by max_tokens is closed like a whole one. It
                # was whole if another block follows, or if the reply ended well.
                if event.type == "content_block_start" or \
                        STOP_REASONS.get(event.delta.stop_reason) in ENDS_WELL:
                    runner.offer(last_call)
                last_call = None
            if event.type == "text" and shown:
                write(printable(event.text))  # the main agent's words, as they come
            elif event.type == "content_block_stop":
                block = event.content_block
                if block.type == "tool_use":
                    last_call = block
                elif block.type == "text" and block.text.strip() and shown:
                    write("\n")  # end the line the main agent's text was on
        reply = stream.get_final_message()  # (a subagent's words are not shown)
    # s06: what a fork repeats: this request, as sent, and the reply it got
    agent.last_request = {**request, "messages": list(messages),
                          "reply": reply.content}
    return reply


# === s06 · background commands: started now, heard of later ===
# A dev server never ends; a long build need not hold up the model. It starts under
# the same decision, sandbox and batching as any other; background.py does the rest.
def start_in_background(agent: Agent, command: str, unsandboxed: bool = False) -> str:
    """Start `command`, confined and bounded; return at once its task id and file."""
    cwd = shell_dir(agent)  # it starts where the shell stands; its `cd` stays its own
    task_id = start_task(
        agent.tasks, command, RESULTS_DIR, confine(command, cwd, unsandboxed),
        output=create_result_file, env=command_env(),
        wait=lambda proc, out: wait_for(proc, float("inf"), out), cwd=cwd)
    return STARTED.format(id=task_id, file=f"{RESULTS_DIR}/{task_id}.output")


def task_stop(agent: Agent, task_id: str) -> str:
    """End a background command and every process it started, for good."""
    if (status := stop_task(agent.tasks, task_id, kill_group)) != "running":
        raise ToolError(f"task {task_id!r} is not running (status: {status}); the "
                        f"tasks: {', '.join(agent.tasks) or 'none'}.")
    return STOPPED.format(id=task_id, command=agent.tasks[task_id]["command"])


register(task_stop, *TASK_STOP,  # no file changes: no question
         names=("TaskStop", "KillShell"), **CHANGES_NOTHING)


# === s06 · tasks: a plan the agents share ===
# A plan that outlives a long context, and the way agents split work: one list per
# session (agent.task_list), every subagent on the same one; tasks.py keeps it. A
# change runs alone: in [create #1, start #1] the second needs the first.
def on_the_list(name: str):
    """tasks.py's tool `name` as one of ours: it works on the calling agent's list,
    and what the list refuses (a TaskError) is an is_error result."""
    def tool(agent: Agent, **fields) -> str:
        try:
            return TASK_TOOLS[name][0](agent, **fields)
        except TaskError as e:
            raise ToolError(str(e)) from None
    tool.__name__ = name
    return tool


register(on_the_list("task_create"), *TASK_TOOLS["task_create"][1:],
         names=("TaskCreate",), **CHANGES_NOTHING)
register(on_the_list("task_update"), *TASK_TOOLS["task_update"][1:],
         names=("TaskUpdate",), **CHANGES_NOTHING)
register(on_the_list("task_get"), *TASK_TOOLS["task_get"][1:], names=("TaskGet",),
         **CHANGES_NOTHING, is_concurrency_safe=lambda call: True)
register(on_the_list("task_list"), *TASK_TOOLS["task_list"][1:],
         names=("TaskList",), **CHANGES_NOTHING, is_concurrency_safe=lambda call: True)


# === s06 · subagents ===
# Four kinds: a fork (the caller's context), general-purpose (a fresh one), a type
# from .claude/agents (subagents.py reads it); any of them in the background.
MAX_AGENT_DEPTH = 2       # main agent's subagents may start subagents; theirs may not
SUBAGENT_MAX_TURNS = 25   # model calls a subagent gets before it is stopped


def agent(parent: Agent, description: str, prompt: str,
          subagent_type: str | None = None, run_in_background: bool = False,
          tools: list | None = None) -> str:
    """Start a child agent on `prompt`, of the kind subagent_type names; its final
    answer is this call's result, or in the background: its id now, its answer
    later (a <task-notification>)."""
    if parent.client is None:  # no model to run it with
        raise ToolError("agent runs only inside an agent loop.")
    if parent.depth + 1 > MAX_AGENT_DEPTH:
        raise ToolError(f"subagents nest at most {MAX_AGENT_DEPTH} deep; this would be "
                        f"level {parent.depth + 1}: do this sub-task yourself.")
    try:
        child, messages = new_child(parent, printable(description), prompt,
                                    subagent_type, tools)
    except AgentError as e:  # (subagents.py: what cannot start, and why)
        raise ToolError(str(e)) from None
    if not run_in_background:
        return run_child(child, messages, description)
    block, procs = CURRENT.get(), set()  # built here: the fork's copy is taken now
    task_id = start_agent(parent.tasks, lambda cancel: run_child(
        dataclasses.replace(child, cancel=cancel, running=procs), messages,
        description), description, block.id if block else "", procs)
    return AGENT_STARTED.format(id=task_id)


def new_child(parent: Agent, name: str, prompt: str, kind: str | None,
              tools: list | None) -> tuple[Agent, list]:
    """The child an agent call starts, and its first messages."""
    if kind in (None, "fork"):  # the parent's last request and reply, byte for byte
        block = CURRENT.get()
        request, allowed = fork_setup(parent.last_request, block and block.id,
                                      prompt, tools, parent.allowed)
        return (parent.child(name, request["tools"], False, system=request["system"],
                             allowed=allowed), request["messages"])
    offered = offered_tools(parent)
    if kind == FRESH:  # the prompt is its only message
        child = parent.child(name, chosen_tools(offered, tools), tools is not None)
        return child, [{"role": "user", "content": prompt}]
    kind = find_type(agent_types(parse_skill_md)[0], kind)
    names, system, folder = type_setup(kind, Path.cwd(), Path.home(),
                                       lambda n: tool_meta(n)["tool"])
    child = parent.child(name, chosen_tools(offered, names), names is not None,
                         system=system, memory=folder,  # with memory: its folder
                         model=model_of(kind, parent.model))
    return child, [{"role": "user", "content": prompt}]


def run_child(child: Agent, messages: list, description: str) -> str:
    """Run the child's loop to its final answer."""
    # its lines carry its name, and show as its calls end, not held in this one's
    answer = labelled(child.prefix, lambda: agent_loop(messages, child))
    if messages[-1]["role"] != "assistant":  # the turn limit, or Ctrl-C
        raise ToolError(f"subagent '{description}' gave no final answer: {answer}")
    return answer.strip() or "(the subagent finished without a final text)"


def offered_tools(agent: Agent) -> list:
    """The schemas an agent's next request offers: its own (a subagent's), or every
    tool not deferred and those loaded (tools_for_request)."""
    return tools_for_request(agent) if agent.tools is None else agent.tools


register(agent, *AGENT_TOOL, names=("Agent", "Task"),
         # it only delegates: each call it makes passes the gate itself
         **CHANGES_NOTHING, is_concurrency_safe=lambda call: True)


# === s01 · the command line: a REPL, one task, or the offline demo ===
def run_task(prompt: str, messages: list, agent: Agent) -> None:
    """Add the user's prompt, run the loop, print what did not stream: a notice."""
    messages.append({"role": "user", "content": prompt})
    answer = agent_loop(messages, agent)
    last = messages[-1]
    streamed = "\n\n".join(b.text for b in last["content"] if b.type == "text"
                           and b.text.strip()) if last["role"] == "assistant" else ""
    if answer[len(streamed):].strip():  # the text came as it streamed; a notice did not
        print(printable(answer[len(streamed):].strip()))
    show_quiet_hooks(agent)


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
            agent.task_list = TaskList()  # s06: a new session, a new list (as Claude)
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
            stop_all(agent.tasks, kill_group)  # s06: its background commands too
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
        THIS_RUN[Path.cwd().resolve()] = True  # s04: it wrote them itself
        print("trust: the demo trusts its scratch copy for this run (it wrote the\n"
              "programs it runs); in a folder of yours, the agent asks once first")
        show_start(agent)
        connect_mcp_servers(agent)
        messages: list = []
        try:
            for prompt in prompts:
                print(f"{CHAPTER} >> {prompt}")
                run_task(prompt, messages, agent)
        finally:  # before the scratch folder goes: the servers run in it
            agent.close()
    return 0


def new_agent(client, args) -> Agent:
    """The agent a run of the command line starts with."""
    return Agent(client, model=args.model, max_turns=args.max_turns,
                 permissions=Permissions(mode=args.permission_mode))


def parse_args(argv):
    p = parser("s06: parallel tools, streaming, subagents.", MAX_TURNS, DEFAULT_MODEL)
    p.add_argument("--permission-mode", choices=PERMISSION_MODES, default=None,
                   help="this session's permission mode (default: the settings' "
                        "permissions.defaultMode, else default; auto: a reviewer "
                        "model, AUTO_MODE_MODEL, decides what would ask you)")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    env_file = Path(__file__).resolve().parent.parent / ".env"
    if not args.offline and (problem := key_problem(env_file)):  # before .env loads
        print(f"error: {problem}", file=sys.stderr)
        return 1
    from dotenv import load_dotenv
    load_dotenv(env_file)  # the environment wins
    args.model = os.environ.get("MODEL_ID") or DEFAULT_MODEL
    has_key = any(os.environ.get(name) for name in AGENT_CREDENTIALS)
    agent = None
    try:
        if args.offline or not has_key:
            if args.prompt and not args.offline:  # never replace a task silently
                print(f"Your task was not run: no ANTHROPIC_API_KEY in the environment "
                      f"or in {env_file}. Here is the offline demo instead.",
                      flush=True)
            return run_offline_demo(args)
        if problem := home_problem(Path.cwd().resolve()):
            print(f"error: {problem}", file=sys.stderr)
            return 1
        agent = new_agent(make_client(), args)
        show_start(agent)  # s04: the folder's trust first, then what is in force
        connect_mcp_servers(agent)
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
    finally:  # Ctrl-C included: no server, no background command outlives the agent
        if agent is not None:
            agent.close()


if __name__ == "__main__":
    exit_on_signal()  # s05: `kill` or a closed terminal: main()'s cleanup runs
    sys.exit(main())
