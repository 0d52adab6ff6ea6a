#!/usr/bin/env python3
"""s01_agent_loop: the loop that turns a language model into an agent.

A model can only write text. It acts through *tools*: it answers with `tool_use`
blocks ("run this command"), we run them, and send back one `tool_result` per call.
Repeat until a reply asks for no tool. That loop is the whole agent:

    while True:
        reply = model(messages, tools)
        if reply has no tool_use: return reply text
        messages += [reply, tool_results(reply)]

This chapter gives the model one tool, `run_shell`, and gets the loop right:
- every `tool_use` gets exactly one `tool_result`, same id, same order;
- the loop stops when a reply has no `tool_use` (stop_reason alone is not trusted);
- a turn limit ends a runaway loop with a clear message;
- the shell cannot wait for input or hang: stdin closed, PAGER=cat, a timeout that
  kills the whole process group, output cut to its head and tail.

Reading map (every section is new; search for "s01 ·" to find each):
  New here:
    s01 · settings: the model, the limits, the system prompt
    s01 · tools: what the model may call
    s01 · run_shell: a shell that cannot hang
    s01 · execute_tool: every tool_use gets its tool_result
    s01 · display: each call and its result
    s01 · the agent loop
    s01 · the command line: a REPL, one task, or the offline demo
  Left for later: a registry of tools and the file tools (s02), permissions (s03),
    hooks (s04), deferred tools (s05), concurrency (s06). This chapter runs every
    command it is given.

Run:  python s01_agent_loop/code.py            (REPL; offline demo if no API key)
      python s01_agent_loop/code.py "task"     (one task, then exit)
      python s01_agent_loop/code.py --offline  (force the scripted demo)
"""

import argparse
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

# === s01 · settings: the model, the limits, the system prompt ===
CHAPTER = "s01"
DEFAULT_MODEL = "claude-sonnet-5-5"
MAX_TOKENS = 8000
MAX_TURNS = 50               # model calls per task before we give up on a runaway loop
DEFAULT_TIMEOUT = 120        # seconds a shell command may run ...
MAX_TIMEOUT = 600            # ... and the most the model may ask for
MAX_OUTPUT_CHARS = 30_000    # per stream; beyond this we keep the head and the tail
COLOR = sys.stdout.isatty() and not os.environ.get("NO_COLOR")

SYSTEM = (
    "You are a coding agent working in the directory {cwd}. Use the run_shell tool "
    "to inspect and change files. Act, then report briefly what you did."
)

# === s01 · tools: what the model may call ===
TOOLS = [
    {
        "name": "run_shell",
        "description": (
            "Run a shell command in the workspace and return its exit code, stdout and "
            "stderr. Stdin is closed, so interactive commands fail instead of waiting. "
            f"Default timeout {DEFAULT_TIMEOUT}s, at most {MAX_TIMEOUT}s."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The command to run."},
                "timeout": {"type": "integer",
                            "description": "Seconds before it is killed."},
            },
            "required": ["command"],
        },
    },
]


# === s01 · run_shell: a shell that cannot hang ===
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
            status = (f"timed out after {timeout}s: the command and everything "
                      "it started were killed")
        except BaseException:  # Ctrl-C: never leave the command running behind us
            kill_group(proc)
            raise
        stdout, stderr = head_and_tail(out), head_and_tail(err)
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


def head_and_tail(f, limit: int = MAX_OUTPUT_CHARS) -> str:
    """The output in file `f`, or its first and last limit/2 bytes if it is longer."""
    size = f.seek(0, os.SEEK_END)
    f.seek(0)
    if size <= limit:
        return f.read().decode(errors="replace").rstrip("\n")
    half = limit // 2
    head = f.read(half).decode(errors="replace")
    f.seek(size - half)
    tail = f.read().decode(errors="replace")
    return (f"{head}\n\n[... {size - 2 * half:,} bytes cut from the middle ...]\n\n"
            f"{tail}").rstrip("\n")


# === s01 · execute_tool: every tool_use gets its tool_result ===
def execute_tool(block) -> tuple[str, bool]:
    """Run one tool_use block. Returns (output, is_error); never raises."""
    if block.name != "run_shell":
        return f"Error: unknown tool '{block.name}'. Available: run_shell.", True
    args = block.input if isinstance(block.input, dict) else {}
    command, timeout = args.get("command"), args.get("timeout", DEFAULT_TIMEOUT)
    if not isinstance(command, str) or not command.strip():
        return "Error: run_shell needs 'command', a non-empty string.", True
    if not isinstance(timeout, int) or isinstance(timeout, bool):
        return "Error: 'timeout' must be an integer number of seconds.", True
    try:
        return run_shell(command, timeout), False
    except Exception as e:  # errors are data: the model reads them and adapts
        return f"Error: {type(e).__name__}: {e}", True


# === s01 · display: each call and its result ===
def show_call(block) -> None:
    """Print a tool call the way the model asked for it."""
    args = block.input if isinstance(block.input, dict) else {"input": block.input}
    call = f"{block.name}({', '.join(f'{k}={v!r}' for k, v in args.items())})"
    call = call if len(call) <= 200 else call[:197] + "..."
    print(f"\033[36m> {call}\033[0m" if COLOR else f"> {call}")


def show_result(output: str, is_error: bool, lines: int = 6) -> None:
    """Print the first few lines of a tool_result, indented."""
    rows = output.splitlines() or [""]
    preview = rows[:lines] + ([f"... (+{len(rows) - lines} lines)"]
                              if len(rows) > lines else [])
    mark = "! " if is_error else "  "
    for row in preview:
        row = mark + (row if len(row) <= 160 else row[:157] + "...")
        print(f"\033[2m{row}\033[0m" if COLOR else row)
        mark = "  "


# === s01 · the agent loop ===
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
    return (f"[stopped: the task used {max_turns} model turns; "
            "raise --max-turns to allow more]")


# === s01 · the command line: a REPL, one task, or the offline demo ===
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
        messages: list = []
        for prompt in prompts:
            print(f"{CHAPTER} >> {prompt}")
            run_task(prompt, messages, client, args)
    return 0


def make_client():
    from anthropic import Anthropic
    # Reads ANTHROPIC_API_KEY / ANTHROPIC_AUTH_TOKEN and ANTHROPIC_BASE_URL.
    return Anthropic()


def parse_args(argv):
    p = argparse.ArgumentParser(description="s01: the agent loop with one shell tool.")
    p.add_argument("prompt", nargs="*", help="a task to run once (omit for the REPL)")
    p.add_argument("--offline", action="store_true", help="play the scripted demo")
    p.add_argument("--max-turns", type=int, default=MAX_TURNS)
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    from dotenv import load_dotenv
    load_dotenv(Path(__file__).resolve().parent.parent / ".env")  # the environment wins
    args.model = os.environ.get("MODEL_ID") or DEFAULT_MODEL
    has_key = (os.environ.get("ANTHROPIC_API_KEY")
               or os.environ.get("ANTHROPIC_AUTH_TOKEN"))
    try:
        if args.offline or not has_key:
            return run_offline_demo(args)
        client = make_client()
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
        return ("the API key was rejected (401). "
                "Check ANTHROPIC_API_KEY in your environment or .env.")
    if isinstance(e, anthropic.NotFoundError):
        return f"not found (404): is MODEL_ID right? ({e.message})"
    if isinstance(e, anthropic.APIConnectionError):
        where = os.environ.get("ANTHROPIC_BASE_URL") or "the Anthropic API"
        return (f"cannot reach {where}: {e.__cause__ or e}. "
                "Check your network or ANTHROPIC_BASE_URL.")
    if isinstance(e, anthropic.APIStatusError):
        return f"the API answered {e.status_code}: {e.message}"
    return f"{type(e).__name__}: {e}"


if __name__ == "__main__":
    sys.exit(main())
