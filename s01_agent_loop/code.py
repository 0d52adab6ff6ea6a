#!/usr/bin/env python3
"""s01_agent_loop: the loop that turns a language model into an agent.

A model can only write text. It acts through *tools*: it answers with `tool_use`
blocks ("run this command"), we run them, and send back one `tool_result` per call.
Repeat until a reply asks for no tool. That loop is the whole agent:

    while True:
        reply = model(messages, tools)
        if reply has no tool_use: return reply text
        messages += [reply, tool_results(reply)]

This chapter gives the model one tool, `run_shell`, and gets the loop right.
Reading map (every section is new; search for "s01 ·" to find each):
    s01 · settings: the model, the limits, the system prompt
    s01 · the agent: one object holds a run's state (client, model, the shell's
      folder ...), passed to the loop and to each tool call
    s01 · the agent loop: the whole lesson, first (a turn limit ends a runaway
      loop); the rest is what it calls
    s01 · tools: what the model may call
    s01 · run_shell: a shell that cannot hang (stdin closed, PAGER=cat, a timeout
      kills its process group) and keeps its folder (a `cd` sticks); output clean,
      cut to head+tail (the whole saved); grep's exit 1 answers
    s01 · execute_tool: every tool_use gets exactly one tool_result, same id, order
    s01 · display: shown, never obeyed (control characters escaped)
    s01 · stop reasons: a row per stop_reason says what the loop does; a call cut
      off by max_tokens is never run, an empty reply never kept
    s01 · long sessions: the context window (the oldest exchanges go, or /clear)
    s01 · the command line: a REPL, one task, or the offline demo; an API error
      ends the task, not the REPL
  Beside it, command_line.py (the same file in every chapter; a first reading
    skips it): the flags and --help, the key's checks, the client and its
    retries shown, an API error said in one line, a failed task dropped.
  Left for later: a registry of tools and the file tools (s02), permissions (s03),
    hooks (s04), deferred tools (s05), concurrency (s06). Here every command runs.

Run:  python s01_agent_loop/code.py            (REPL; offline demo if no API key)
      python s01_agent_loop/code.py "task"     (one task, then exit)
      python s01_agent_loop/code.py --offline  (force the scripted demo)
"""

import contextlib
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from command_line import explain, key_problem, make_client, parser, survive

# === s01 · settings: the model, the limits, the system prompt ===
CHAPTER = "s01"
DEFAULT_MODEL = "claude-sonnet-5-5"
MAX_TOKENS = 8000
MAX_TURNS = 50               # model calls per task before we give up on a runaway loop
DEFAULT_TIMEOUT = 120_000    # milliseconds a command may run (as Claude Code) ...
MAX_TIMEOUT = 600_000        # ... and the most the model may ask for
MAX_OUTPUT_CHARS = 30_000    # per stream; beyond this we keep the head and the tail
MAX_OUTPUT_BYTES = 32_000_000  # a command's output on disk: past this, it stops
RESULTS_DIR = ".tool-results"  # where cut results are saved, inside the workspace
COLOR = sys.stdout.isatty() and not os.environ.get("NO_COLOR")

SYSTEM = ("You are a coding agent working in the directory {cwd}. Use the run_shell "
          "tool to inspect and change files. Act, then report briefly what you did.")


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



# === s01 · tools: what the model may call ===
TOOLS = [{
    "name": "run_shell",
    "description": (
        "Run a shell command where the last one ended (a `cd` sticks, inside the "
        "workspace); returns its exit code, stdout and stderr. Stdin is closed, so "
        "interactive commands fail instead of waiting. Default timeout "
        f"{DEFAULT_TIMEOUT} ms, at most {MAX_TIMEOUT} ms."),
    "input_schema": {"type": "object", "required": ["command"], "properties": {
        "command": {"type": "string", "description": "The command to run."},
        "timeout": {"type": "integer",
                    "description": "Milliseconds before it is killed."}}},
}]


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
    and the whole of it copied to RESULTS_DIR, where the model can read it."""
    size = f.seek(0, os.SEEK_END)
    f.seek(0)
    head = clean(f.read(limit if size <= limit else limit // 2))
    if head is None:  # bytes a model cannot read: say what there was instead
        return f"[binary output: {size:,} bytes, not shown]"
    if size <= limit:
        return head.rstrip("\n")
    half = limit // 2
    saved = Path(RESULTS_DIR, f"shell-{uuid.uuid4().hex[:8]}-{name}.txt")
    saved.parent.mkdir(exist_ok=True)  # (s02 saves it without following a link)
    f.seek(0)
    saved.write_bytes(f.read())  # at most MAX_OUTPUT_BYTES, held for a moment
    f.seek(size - half)
    return (f"{head}\n\n[... {size - 2 * half:,} bytes cut from the middle; the whole "
            f"{name} is saved in {saved} ...]\n\n{clean(f.read()) or ''}").rstrip("\n")


# === s01 · execute_tool: every tool_use gets its tool_result ===
def execute_tool(block, agent: Agent) -> tuple[str, bool]:
    """Run one tool_use block for `agent`. Returns (output, is_error); never raises."""
    if block.name != "run_shell":
        return f"Error: unknown tool '{block.name}'. Available: run_shell.", True
    args = block.input if isinstance(block.input, dict) else {}
    command, timeout = args.get("command"), args.get("timeout", DEFAULT_TIMEOUT)
    if not isinstance(command, str) or not command.strip():
        return "Error: run_shell needs 'command', a non-empty string.", True
    if not isinstance(timeout, int) or isinstance(timeout, bool):
        return "Error: 'timeout' must be an integer number of milliseconds.", True
    try:
        return run_shell(agent, command, timeout), False
    except CommandFailed as e:  # it ran and failed: its output, marked as an error
        return str(e), True
    except Exception as e:  # errors are data: the model reads them and adapts
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
    p = parser("s01: the agent loop with one shell tool.", MAX_TURNS, DEFAULT_MODEL)
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
