"""mcp_client: MCP servers over stdio, driven from a synchronous agent (s05 on).

code.py decides the policy: which servers start (trusted folder, approved), whether a
call may run. This file reads `.mcp.json`, names each tool as the API accepts it
(`mcp__server__tool`), and does the talking, with the official `mcp` SDK's session
over a pipe of its own; a first reading can skip it. It expects hostile servers:
- Every field of `.mcp.json` is checked against Claude Code's documented shape: a bad
  entry is one line naming the server and the field, and the others start. ${VAR} is
  filled from the environment, but never with the agent's own credentials, and a
  server's environment holds only a few harmless variables and what `env` gives it.
- The SDK is asynchronous (asyncio); the agent loop is not. One background thread
  runs one event loop for the whole agent. Each server lives in a task of its own;
  they start side by side, within one budget, and Ctrl-C while they start skips
  those still starting. A call waits in the agent's thread, with a timeout, and
  Ctrl-C (or interrupt(), from any thread) ends it at once.
- The pipe reads the server's stdout in time linear in a line's length (the SDK's
  reader is quadratic), refuses a line over MAX_MESSAGE_BYTES without parsing it,
  answers a call whose reply cannot be parsed with an error at once, and leaves out
  a tool whose schema the API would refuse, alone.
- Errors are data: a server that does not start is one line; a tool that fails, a
  server that died, a call that timed out raise McpError with the text (the tool's
  proxy hands it on as the tool's error); the SDK's own complaints become one line
  each, never a traceback.
- close() ends every server with its whole process tree, a `setsid` grandchild
  included; exit_on_signal() makes `kill` and a closed terminal run that cleanup.

Reading map:
  s05 · mcp: the servers .mcp.json names    read_config(), check_server(), expand()
  s05 · mcp: a tool's name in the pool      pool_names(), tool_problem()
  s05 · mcp: a pipe a server cannot jam     bounded_stdio(), Pipe: read, capped
  s05 · mcp: one thread, one event loop     McpServers.run(), one_line_logs()
  s05 · mcp: servers, alive in their tasks  start_all(), serve(): side by side
  s05 · mcp: calling a tool                 call(), as_text(): text, images, files
  s05 · mcp: closing                        close(), kill_all(): none left
"""

import asyncio
import base64
import concurrent.futures
import contextlib
import contextvars
import json
import logging
import os
import re
import signal
import subprocess
import tempfile
import threading
import uuid
from pathlib import Path

from command_line import AGENT_CREDENTIALS


# === s05 · mcp: the servers .mcp.json names ===
# ${VAR} or ${VAR:-default}: the two forms Claude Code expands in .mcp.json's command,
# args and env (and an http server's url and headers); a bare $VAR stays as written.
VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
# Claude Code's transports; this chapter starts the stdio ones (the default type).
TRANSPORTS = ("stdio", "sse", "http", "ws", "sse-ide", "ws-ide", "sdk")


def expand(text: str, missing: list) -> str:
    """`text` with each ${VAR} replaced as Claude Code does: by the variable's value
    when it is set, even to "" (the shell's `:-` would take the default then), else
    by the default after `:-`; a variable with neither joins `missing`, and so does
    one of AGENT_CREDENTIALS (the agent's own credentials), which is never filled in."""
    def value(match: re.Match) -> str:
        name, default = match.groups()
        if name in AGENT_CREDENTIALS:
            missing.append(name)
            return match[0]
        if name in os.environ:
            return os.environ[name]
        if default is None:
            missing.append(name)
            return match[0]
        return default
    return VARIABLE.sub(value, text)


def read_config(file: Path) -> tuple[dict, list[str]]:
    """({name: {"command", "args", "env", "shown"}}, problems) from `file`: the
    stdio servers, checked and with ${VAR} filled in; "shown" is the server as the
    file writes it (${VAR} as written, the names of env only), for the question.
    Each entry that cannot start is one problem, and the others still start."""
    try:
        text = file.read_text(encoding="utf-8") if file.is_file() else "{}"
        servers = json.loads(text).get("mcpServers", {})
        if not isinstance(servers, dict):
            raise ValueError("mcpServers is not an object")
    except (ValueError, OSError, AttributeError) as e:
        return {}, [f"{file.name} ignored: {e}"]
    found, problems = {}, []
    for name, spec in servers.items():
        problem = check_server(spec)
        if problem is None:
            found[name], problem = filled_in(spec)
        if problem:
            problems.append(f"{name}: not started: {problem}")
            found.pop(name, None)
    return found, problems


def check_server(spec) -> str | None:
    """What is wrong with one server's entry, against Claude Code's shape for it (a
    stdio server: command, a string; args, strings; env, strings by name), or None."""
    if not isinstance(spec, dict):
        return "its entry is not an object"
    kind = spec.get("type", "stdio")
    if kind not in TRANSPORTS:
        return f'"type" is {kind!r}, not one of {", ".join(TRANSPORTS)}'
    if kind != "stdio":
        return f"a {kind} server (this chapter starts stdio servers only)"
    if not isinstance(spec.get("command"), str) or not spec["command"].strip():
        return '"command" must be a string that names a program'
    args, env = spec.get("args", []), spec.get("env", {})
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        return '"args" must be a list of strings'
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        return '"env" must be an object whose values are strings'
    return None


def filled_in(spec: dict) -> tuple[dict, str | None]:
    """A checked entry with ${VAR} filled in, and why it cannot start, if it cannot:
    started with the text `${API_KEY}` for a key, it would fail later, less clearly."""
    missing = []  # the variables it names that are unset, or are the agent's own
    args, env = spec.get("args", []), spec.get("env", {})
    server = {"command": expand(spec["command"], missing),
              "args": [expand(a, missing) for a in args],
              "env": {k: expand(v, missing) for k, v in env.items()},
              "shown": " ".join([spec["command"], *args]) + (
                  f"  (env: {', '.join(env)})" if env else "")}
    own = [v for v in dict.fromkeys(missing) if v in AGENT_CREDENTIALS]
    unset = [f"${{{v}}}" for v in dict.fromkeys(missing)
             if v not in AGENT_CREDENTIALS]
    if own:
        return server, (f"it asks for {', '.join(own)}, the agent's own credential, "
                        "which is never given to a server")
    if unset:
        return server, (f"{', '.join(unset)} not set in the environment (nor a "
                        "default, as in ${VAR:-default})")
    return server, None


def server_commands(file: Path) -> dict[str, list[str]]:
    """{name: [command, *args]} of each server `file` would start: the programs the
    sandbox keeps read-only (code.py asks this, for its protected paths)."""
    return {name: [spec["command"], *spec["args"]]
            for name, spec in read_config(file)[0].items()}


# === s05 · mcp: a tool's name in the pool ===
# The Messages API takes a tool name of 1 to 64 letters, digits, `_` and `-`, and
# refuses the whole request when one name breaks that rule, or two are the same.
NAME_LIMIT = 64


def pool_names(server: str, tools: list) -> tuple[dict, str]:
    """({"mcp__server__tool": tool}, what was left out and why, or ""). Spelled as
    Claude Code spells it: a character the API refuses becomes `_`. A name over
    NAME_LIMIT is left out, and so is a second tool spelled like an earlier one:
    either would make the API refuse every request. (Claude Code 2.1 sends a long
    name as it is; of two spelled alike, it keeps the first.)"""
    named, left_out = {}, []
    for tool in tools:
        name = "mcp__" + "__".join(re.sub(r"[^A-Za-z0-9_-]", "_", part)
                                   for part in (server, tool.name))
        if len(name) > NAME_LIMIT:
            left_out.append(f"{tool.name} ({name} has {len(name)} characters, "
                            f"over the API's {NAME_LIMIT})")
        elif name in named:
            left_out.append(f"{tool.name} ({name} is an earlier tool's name)")
        else:
            named[name] = tool
    return named, ("tools left out: " + "; ".join(left_out)) if left_out else ""


def tool_problem(tool) -> str | None:
    """Why one tool of a listing cannot join the pool (the SDK's model refuses it, or
    the API would refuse its input schema, and with it every request), or None."""
    import mcp_types  # the SDK's protocol types, installed with it
    try:
        mcp_types.Tool.model_validate(tool)
    except ValueError as e:  # pydantic's ValidationError is one
        return first_line(e)
    schema = tool.get("inputSchema")
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return 'its inputSchema is not a JSON Schema of "type": "object"'
    return None


def first_line(e: Exception) -> str:
    """An exception in one line of at most 300 characters: pydantic's run to many
    (its first error is where and what: `inputSchema: Input should be ...`)."""
    with contextlib.suppress(Exception):  # not pydantic's, or not as expected
        first = e.errors()[0]
        return f"{'.'.join(map(str, first['loc'])) or 'it'}: {first['msg']}"[:300]
    text = str(e).split("\n")[0] or type(e).__name__
    return text[:300]


# === s05 · mcp: a pipe a server cannot jam ===
MAX_MESSAGE_BYTES = 32_000_000  # one line of a server's stdout; past it, not parsed
ID = re.compile(rb'"id"\s*:\s*(-?\d+|"[^"\\]{0,80}")')  # a JSON-RPC id, near an end
ENDS = 256                      # bytes kept of each end of a line too long to parse
STOP_GRACE = 0.5                # seconds a server has to exit, then to die on SIGTERM
# The only variables a server inherits (the SDK's list), with what its env adds.
INHERITED = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "SYSTEMROOT",
             "TEMP", "APPDATA", "LOCALAPPDATA", "USERPROFILE")
MARK = "MCP_COURSE_SERVER"      # in each server's environment: how its tree is found


class Pipe:
    """What one server's stdout becomes for the SDK's session: JSON-RPC messages,
    each line parsed once. It knows the requests in flight (id -> method) from what
    the session sends, so that a reply it refuses still ends its call, at once."""

    def __init__(self, say):
        self.asked = {}  # request id -> method, until its reply
        self.say = say   # one line for the user

    def sent(self, message) -> None:
        """A message on its way to the server: a request is in flight till its reply."""
        if getattr(message, "method", None) and getattr(message, "id", None) \
                is not None:
            self.asked[message.id] = message.method

    def messages(self, line: bytes | None, size: int, ends: bytes) -> list:
        """The session's messages from one line (None: it was over the limit)."""
        if line is None:
            return self.refuse(self.id_in(ends), f"its reply ({size:,} bytes) is over "
                               f"the {MAX_MESSAGE_BYTES:,} this client reads")
        try:
            raw = json.loads(line)
        except ValueError as e:  # a stray print to stdout, or a reply cut short
            self.say(f"a line of its stdout is not JSON, ignored ({e})")
            return []
        if isinstance(raw, dict) and self.asked.get(raw.get("id")) == "tools/list":
            self.keep_usable_tools(raw)
        import mcp_types
        from mcp.shared.message import SessionMessage
        try:
            message = mcp_types.jsonrpc_message_adapter.validate_python(raw)
        except ValueError as e:
            why = f"its reply was refused by the SDK's parser: {first_line(e)}"
            return self.refuse(raw.get("id") if isinstance(raw, dict) else None, why)
        if getattr(message, "method", None) is None:  # a reply: no longer in flight
            self.asked.pop(getattr(message, "id", None), None)
        return [SessionMessage(message)]

    def refuse(self, request_id, why: str) -> list:
        """An error reply for the request `request_id` (for every request in flight
        when no id could be read): its caller reads `why` at once."""
        import mcp_types
        from mcp.shared.message import SessionMessage
        ids = [request_id] if request_id in self.asked else list(self.asked)
        if not ids:
            self.say(f"{why}; it answers no request, ignored")
        replies = []
        for each in ids:
            self.asked.pop(each)
            replies.append(SessionMessage(mcp_types.JSONRPCError(
                jsonrpc="2.0", id=each,
                error=mcp_types.ErrorData(code=-32603, message=why))))
        return replies

    @staticmethod
    def id_in(ends: bytes):
        found = ID.search(ends)
        return json.loads(found[1]) if found else None

    def keep_usable_tools(self, raw: dict) -> None:
        """A tools/list reply without the tools that cannot join, one line each."""
        result = raw.get("result")
        if not isinstance(result, dict) or not isinstance(result.get("tools"), list):
            return
        kept = []
        for tool in result["tools"]:
            if problem := tool_problem(tool):
                name = tool.get("name") if isinstance(tool, dict) else None
                self.say(f"tool {name!r} left out: {problem}")
            else:
                kept.append(tool)
        result["tools"] = kept


async def read_lines(stream, deliver) -> None:
    """Hand each line of `stream` to `deliver(line, size, ends)`, in time linear in
    its length; a line over MAX_MESSAGE_BYTES is passed as None, with its size and
    the bytes of its two ends (where its id is). subtle: the SDK's reader joins its
    buffer to each new chunk, so a 20 MB line costs it seconds of copying."""
    parts, size, head, tail = [], 0, b"", b""
    async for chunk in stream:
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            if parts is not None and size + len(piece) > MAX_MESSAGE_BYTES:
                head, parts = (b"".join(parts) + piece)[:ENDS], None
            elif parts is not None:
                parts.append(piece)
            size, tail = size + len(piece), (tail + piece)[-ENDS:]
            if end < 0:
                break
            if size:
                await deliver(b"".join(parts) if parts is not None else None,
                              size, head + tail)
            parts, size, head, tail, start = [], 0, b"", b"", end + 1


@contextlib.asynccontextmanager
async def bounded_stdio(params: dict, log, pipe: Pipe):
    """The SDK's stdio_client, rebuilt around Pipe: start the server, bridge its
    stdin and stdout to the session's streams; on the way out, end its tree."""
    import anyio
    env = {k: os.environ[k] for k in INHERITED if k in os.environ}
    env |= {**params["env"], MARK: params["mark"]}
    process = await anyio.open_process([params["command"], *params["args"]], env=env,
                                       stderr=log, cwd=params["cwd"],
                                       start_new_session=True)
    (to_session, read), (write, from_session) = (
        anyio.create_memory_object_stream(0), anyio.create_memory_object_stream(0))

    async def reader():
        async def deliver(line, size, ends):
            for message in pipe.messages(line, size, ends):
                await to_session.send(message)
        async with to_session:
            with contextlib.suppress(anyio.ClosedResourceError,
                                     anyio.BrokenResourceError, OSError):
                await read_lines(process.stdout, deliver)

    async def writer():
        async with from_session:
            with contextlib.suppress(anyio.ClosedResourceError,
                                     anyio.BrokenResourceError, OSError):
                async for session_message in from_session:
                    message = getattr(session_message.message, "root",
                                      session_message.message)
                    pipe.sent(message)
                    data = message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send(data.encode() + b"\n")
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(reader)
        tasks.start_soon(writer)
        try:
            yield read, write
        finally:
            with anyio.CancelScope(shield=True):  # a Ctrl-C must not skip this
                await end_process(process, params["mark"])
            tasks.cancel_scope.cancel()


async def end_process(process, mark: str) -> None:
    """Close its stdin (MCP's way to say stop), give it STOP_GRACE, then SIGTERM
    and at last SIGKILL to every process of its tree, found before it exits (then
    its children are still its own) and again after."""
    import anyio
    tree = process_tree(process.pid, mark)
    with contextlib.suppress(Exception):
        await process.stdin.aclose()
    for signum in (signal.SIGTERM, getattr(signal, "SIGKILL", signal.SIGTERM)):
        with anyio.move_on_after(STOP_GRACE):
            while process.returncode is None:
                await anyio.sleep(0.02)
        if process.returncode is not None:
            break
        for pid in {process.pid} | tree:
            with contextlib.suppress(OSError):
                os.kill(pid, signum)
    # what is left of its tree: children that outlive it, and all that bear its mark
    await kill_all(tree | process_tree(process.pid, mark),
                   lambda: process_tree(process.pid, mark))
    with contextlib.suppress(Exception):
        await process.stdout.aclose()



# === s05 · mcp: one thread, one event loop ===
class McpError(Exception):
    """A server could not be started, or a call failed (an isError result, a dead
    server, a timeout); the message says why."""


SERVER = contextvars.ContextVar("server", default="mcp")  # whose task logs a line
SDK_LOGGERS = ("mcp", "client", "mcp_types")  # the SDK's session logs as "client"


class OneLine(logging.Handler):
    """The SDK's log records (a warning and up), each as one line naming the server:
    the SDK logs a traceback where a hostile server sends what it cannot read."""

    def __init__(self, say):
        super().__init__(logging.WARNING)
        self.say = say

    def emit(self, record: logging.LogRecord) -> None:
        error = record.exc_info[1] if record.exc_info else None
        why = f" ({type(error).__name__}: {first_line(error)})" if error else ""
        with contextlib.suppress(Exception):
            self.say(f"{SERVER.get()}: {record.getMessage()}{why}"[:400])


def one_line_logs(say) -> None:
    """From now on, the SDK's loggers print through OneLine only (once a process)."""
    for name in SDK_LOGGERS:
        logger = logging.getLogger(name)
        if not any(type(h).__name__ == "OneLine" for h in logger.handlers):
            logger.addHandler(OneLine(say))
            logger.propagate = False


class McpServers:
    """The MCP servers one agent started, all on one event loop in one thread. Built
    with nothing running: the thread starts with the first server. `say(text)` shows
    one line (what a server did wrong)."""

    def __init__(self, say=print):
        self.loop = None     # asyncio loop, run by self.thread
        self.thread = None
        self.servers = {}    # name -> {"task", "ready", "log", "session"}
        self.calls = set()   # the calls in flight (concurrent futures), any thread's
        self.say = say

    def submit(self, coroutine) -> concurrent.futures.Future:
        """Hand `coroutine` to the loop (started on first use); its future."""
        if self.thread is None:
            one_line_logs(self.say)
            self.loop = asyncio.new_event_loop()
            self.thread = threading.Thread(target=self.loop.run_forever, daemon=True,
                                           name="mcp-servers")
            self.thread.start()
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop)

    def run(self, coroutine, timeout: float):
        """Run `coroutine` on the loop; wait at most `timeout` seconds for it
        (concurrent.futures.TimeoutError after that, and the coroutine is cancelled)."""
        future = self.submit(coroutine)
        try:
            return future.result(timeout)
        except BaseException:  # a timeout, or Ctrl-C while we waited: stop it there
            future.cancel()
            raise

# === s05 · mcp: servers, alive in their tasks ===
    def start_all(self, servers: dict, cwd: str, budget: float) -> dict:
        """Start every server of `servers` ({name: {"command", "args", "env"}}) side
        by side, all within `budget` seconds: {name: its tools (the SDK's Tool
        objects), or the McpError that says why not}. Ctrl-C while they start skips
        those not started yet; the others stay, and the agent goes on."""
        if not servers:
            return {}

        async def launch_all():
            for name, spec in servers.items():
                self.launch(name, spec, cwd)
            readies = [self.servers[name]["ready"] for name in servers]
            await asyncio.wait(readies, timeout=budget)
        why = f"no answer within {budget:g} s"
        try:
            self.run(launch_all(), budget + 5)
        except KeyboardInterrupt:
            why = "skipped: Ctrl-C while it started"
        except concurrent.futures.TimeoutError:
            pass
        outcomes = self.run(self.outcomes(list(servers), why), 10)
        self.stop([n for n, o in outcomes.items() if isinstance(o, McpError)])
        return outcomes

    def launch(self, name: str, spec: dict, cwd: str) -> None:
        """(On the loop) a task that starts one server; its "ready" future gets
        (session, tools), or the exception that stopped it."""
        # its stderr, where the reason for a failure is; closed when it stops
        log = tempfile.TemporaryFile(  # noqa: SIM115
            "w+", encoding="utf-8", errors="replace")
        params = {**spec, "cwd": cwd, "mark": f"{os.getpid()}-{uuid.uuid4().hex}"}
        ready = asyncio.get_running_loop().create_future()
        context = contextvars.copy_context()
        context.run(SERVER.set, name)  # the name its lines carry
        # subtle: a task runs in a copy of the context it was made in: this one
        task = context.run(asyncio.ensure_future, self.serve(params, log, ready))
        self.servers[name] = {"task": task, "ready": ready, "log": log}

    async def outcomes(self, names: list, why: str) -> dict:
        """(On the loop) each server's tools, or an McpError: why it is not up."""
        found = {}
        for name in names:
            server = self.servers[name]
            error = server["ready"].exception() if server["ready"].done() else None
            if server["ready"].done() and error is None:
                server["session"], found[name] = server["ready"].result()
            elif error is None:  # still starting: out of time, or Ctrl-C
                server["ready"].cancel()  # nobody waits for it now: it never fails
                found[name] = McpError(why)
            elif isinstance(error, McpError):
                found[name] = error
            else:  # its last words on stderr say why best, when it left some
                found[name] = McpError(last_words(server["log"]) or
                                       f"{type(error).__name__}: {first_line(error)}")
        return found

    async def serve(self, params: dict, log, ready: asyncio.Future) -> None:
        """The server's task: start it, initialize, list its tools (every page), hand
        them to start_all(), then hold the connection open until cancelled."""
        from mcp import ClientSession, types
        pipe = Pipe(lambda text: self.say(f"{SERVER.get()}: {text}"))
        try:
            async with (bounded_stdio(params, log, pipe) as (read, write),
                        ClientSession(read, write) as session):
                await session.initialize()
                tools, cursor = [], None
                while True:
                    more = cursor and types.PaginatedRequestParams(cursor=cursor)
                    page = await session.list_tools(params=more)
                    tools += page.tools
                    if not (cursor := page.next_cursor):
                        break
                ready.set_result((session, tools))
                await asyncio.Event().wait()  # until close() cancels this task
        except BaseException as e:  # subtle: start_all() waits on `ready`, not on this
            if not ready.done():
                ready.set_exception(e if isinstance(e, Exception) else McpError(
                    "stopped while starting"))
            if not isinstance(e, Exception):
                raise

# === s05 · mcp: calling a tool ===
    def call(self, name: str, tool: str, arguments: dict, timeout: float,
             save=None) -> tuple[str, list]:
        """Call a tool of server `name`: (its answer as text, its images as the API's
        image blocks), or McpError, with the text, if it failed: one form for every
        failure, to the tool's proxy. `save(data, name)` keeps what the API cannot take
        (audio, other files) and says where. Ctrl-C, or interrupt() from another
        thread, ends the call at once."""
        server = self.servers.get(name, {})
        if "session" not in server:
            raise McpError(f"the MCP server {name} is not running")
        mark = os.fstat(server["log"].fileno()).st_size  # its stderr, so far
        future = self.submit(server["session"].call_tool(tool, arguments))
        self.calls.add(future)
        try:
            result = future.result(timeout)
        except concurrent.futures.TimeoutError:
            raise McpError(f"the MCP server {name} did not answer within {timeout:g} "
                           "s; the call was cancelled") from None
        except concurrent.futures.CancelledError:
            raise McpError("the call was interrupted (Ctrl-C) before it "
                           "finished") from None
        except Exception as e:  # the server died, broke the protocol, was refused
            why = last_words(server["log"], since=mark)
            raise McpError(f"the MCP server {name} failed: {first_line(e)}"
                           + (f" (its last words: {why})" if why else "")) from None
        finally:
            future.cancel()  # done already, or a timeout, or Ctrl-C: it stops there
            self.calls.discard(future)
        text, images = as_text(result, save)
        if result.is_error:
            raise McpError(text)
        return text, images

    def interrupt(self) -> None:
        """From any thread: end every call in flight now (each returns an error);
        the servers stay."""
        for future in list(self.calls):
            future.cancel()

# === s05 · mcp: closing ===
    def stop(self, names: list) -> None:
        """End these servers, side by side: cancel their tasks, which leaves the
        SDK's `async with` blocks, and those end each process tree."""
        servers = [self.servers.pop(n) for n in names if n in self.servers]
        tasks = [s["task"] for s in servers if not s["task"].done()]
        if tasks and self.loop:
            async def cancelled():
                for server in servers:
                    self.cancel(server)
                await asyncio.wait(tasks, timeout=10)
            with contextlib.suppress(BaseException):  # what we can do is done
                self.run(cancelled(), 12)
        for server in servers:
            server["log"].close()

    def cut(self) -> None:
        """From any thread, without waiting: cancel every server's task, so that each
        call in flight ends now, as an error, and each process tree ends."""
        if self.loop is not None:
            for server in list(self.servers.values()):
                self.loop.call_soon_threadsafe(self.cancel, server)

    @staticmethod
    def cancel(server: dict) -> None:
        """Cancel a server's task (on the loop), once. subtle: a second cancel would
        land while its process tree is being ended, and cut that short."""
        if not server.get("cancelled"):
            server["cancelled"] = True
            server["task"].cancel()

    def close(self) -> None:
        """End every server, then the loop and its thread."""
        self.stop(list(self.servers))
        if self.thread is not None:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(5)
            self.loop, self.thread = None, None


def process_tree(root: int, mark: str) -> set[int]:
    """The processes `root` started, as far as the OS tells: its descendants, and
    (Linux) every process whose environment still carries `mark`: a `setsid`
    grandchild leaves the group, and after its parent exits, the tree too."""
    table = parent_pids()  # pid -> parent pid
    found, todo = set(), [root]
    while todo:
        parent = todo.pop()
        children = [pid for pid, ppid in table.items() if ppid == parent]
        todo += [pid for pid in children if pid not in found]
        found.update(children)
    needle = f"{MARK}={mark}\0".encode()
    for pid in table:
        with contextlib.suppress(OSError), open(f"/proc/{pid}/environ", "rb") as f:
            if needle in f.read() + b"\0":
                found.add(pid)
    return found - {os.getpid()}


def parent_pids() -> dict[int, int]:
    """{pid: parent pid} of every process: /proc where there is one, else `ps`."""
    table = {}
    if os.path.isdir("/proc/self"):
        for entry in os.listdir("/proc"):
            with contextlib.suppress(OSError, ValueError, IndexError), \
                    open(f"/proc/{entry}/stat", "rb") as f:
                table[int(entry)] = int(f.read().rsplit(b")", 1)[1].split()[1])
        return table
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        out = subprocess.run(["ps", "-A", "-o", "pid=,ppid="], capture_output=True,
                             text=True, timeout=5, check=False).stdout
        table = {int(p): int(q) for p, q in (row.split() for row in out.splitlines())}
    return table

async def kill_all(found: set[int], look, rounds: int = 50) -> None:
    """SIGKILL what was `found`, wait until it has ended, then `look()` again: a
    process may start another between a look at the process table and the kill
    that reaches it (a busy machine showed it). Done when a look finds nothing new
    once all it killed have ended (an ended process starts nothing more)."""
    import anyio
    killed = set()
    while (found := found - killed) and rounds:
        for pid in found:
            with contextlib.suppress(OSError):
                os.kill(pid, getattr(signal, "SIGKILL", signal.SIGTERM))
        killed |= found
        with anyio.move_on_after(STOP_GRACE):
            while any(map(running, found)):
                await anyio.sleep(0.01)
        found, rounds = look(), rounds - 1


def running(pid: int) -> bool:
    """Whether `pid` still runs: not ended, not a zombie (ended, and left for its
    parent to collect). Without /proc, there is no telling: False."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except (OSError, IndexError):
        return False


# `kill PID`, and a terminal that closes (Windows has no SIGHUP)
EXIT_SIGNALS = [getattr(signal, n) for n in ("SIGTERM", "SIGHUP") if hasattr(signal, n)]


def exit_on_signal() -> None:
    """From now on, EXIT_SIGNALS end the agent as an error would: with SystemExit,
    raised in the main thread, so every `finally` on the way out runs, main()'s
    too, which stops the servers (and, in s06, the tool runner's interrupt() ends
    the calls that other threads wait for). Python's default is to die on the spot:
    each server, in a session of its own, is then left to notice that its stdin
    closed, and one busy with a call, or one that does not look, runs on."""
    def leave(signum, frame):
        for each in EXIT_SIGNALS:  # a second signal must not cut the cleanup short
            signal.signal(each, signal.SIG_IGN)
        raise SystemExit(128 + signum)  # the status a shell shows for that signal
    for each in EXIT_SIGNALS:
        signal.signal(each, leave)


# The image types the Messages API takes in a tool_result, and its size limit.
IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
MAX_IMAGE_BYTES = 5_000_000


def as_text(result, save=None) -> tuple[str, list]:
    """A CallToolResult as (text, image blocks): text as it is, structured content
    as JSON, an image the API takes as an image block, a resource link as a line;
    audio and other files are saved by `save(data, name)`, and a line says where."""
    parts, images = [], []
    for block in result.content or []:
        data, mime = getattr(block, "data", None), getattr(block, "mime_type", "")
        if block.type == "resource":  # embedded: text, or a blob (a file)
            data, mime = getattr(block.resource, "blob", None), block.resource.mime_type
            if data is None:
                parts.append(getattr(block.resource, "text", ""))
                continue
        if block.type == "text":
            parts.append(block.text)
        elif block.type == "resource_link":
            about = "".join([f" ({block.mime_type})" * bool(block.mime_type),
                             f": {block.description}" * bool(block.description)])
            parts.append(f"[resource link: {block.name} <{block.uri}>{about}]")
        elif mime in IMAGE_TYPES and len(data or "") * 3 // 4 <= MAX_IMAGE_BYTES:
            images.append({"type": "image", "source": {
                "type": "base64", "media_type": mime, "data": data}})
            parts.append(f"[{mime} image {len(images)}: attached]")
        else:
            parts.append(saved(block.type, mime, data, save))
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content))
    return "\n".join(parts) or "(no output)", images


def saved(kind: str, mime: str, data: str | None, save) -> str:
    """A line for a block the API cannot take (audio, a file): kept by `save`."""
    try:
        raw = base64.b64decode(data or "", validate=True)
    except ValueError:
        return f"[{kind} content ({mime}): not valid base64, left out]"
    where = save(raw, f"mcp-{kind}-{uuid.uuid4().hex[:8]}") if save else "not kept"
    return (f"[{kind} content ({mime}, {len(raw):,} bytes), which the API cannot "
            f"take: {where}]")


def last_words(log, since: int = 0) -> str:
    """The last line a server wrote to its stderr (after byte `since`), or ''."""
    try:
        log.seek(max(since, os.fstat(log.fileno()).st_size - 4000))
        lines = [ln.strip() for ln in log.read().splitlines() if ln.strip()]
    except (OSError, ValueError):
        return ""
    return lines[-1][:300] if lines else ""
