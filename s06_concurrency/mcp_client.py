"""mcp_client: MCP servers over stdio, driven from a synchronous agent (s05 on).

code.py decides the policy: which servers start (`.mcp.json`, approved), whether a
call may run. This file reads `.mcp.json` (${VAR} filled in), names each tool as the
API accepts it (`mcp__server__tool`), and does the talking, with the official `mcp`
SDK; a first reading can skip it:
- The SDK is asynchronous (asyncio); the agent loop is not. One background thread
  runs one event loop for the whole agent. Each server lives in a task of its own on
  that loop (the SDK's `async with` blocks must be entered and left by one task),
  and the loop's thread hands each request over with
  `asyncio.run_coroutine_threadsafe`, then waits for the answer, with a timeout.
- Errors are data: a server that does not start raises one clear McpError; a tool
  that fails, a server that died, a call that timed out come back as
  (text, is_error=True), never as an exception into the loop.
- close() ends every server (the SDK closes its stdin, then terminates its process
  group) and the thread; exit_on_signal() makes `kill` and a closed terminal end
  the agent through that same cleanup. The same file stands in every chapter from
  s05 on.

Reading map:
  s05 · mcp: the servers .mcp.json names     expand(), read_config(): ${VAR} filled
  s05 · mcp: a tool's name in the pool       pool_names(): as the API accepts them
  s05 · mcp: one thread, one event loop      McpServers.run(): a coroutine, waited for
  s05 · mcp: a server, alive in its task     start(), serve(): started, tools listed
  s05 · mcp: calling a tool                  call(), as_text(): the answer as text
  s05 · mcp: closing                         close(), exit_on_signal(): none left
"""

import asyncio
import concurrent.futures
import contextlib
import json
import os
import re
import signal
import tempfile
import threading
from pathlib import Path


# === s05 · mcp: the servers .mcp.json names ===
# ${VAR} or ${VAR:-default}: the two forms Claude Code expands in .mcp.json's command,
# args and env (and an http server's url and headers); a bare $VAR stays as written.
VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def expand(text: str, missing: list) -> str:
    """`text` with each ${VAR} replaced as Claude Code does: by the variable's value
    when it is set, even to "" (the shell's `:-` would take the default then), else
    by the default after `:-`; a variable with neither joins `missing`."""
    def value(match: re.Match) -> str:
        name, default = match.groups()
        if name in os.environ:
            return os.environ[name]
        if default is None:
            missing.append(name)
            return match[0]
        return default
    return VARIABLE.sub(value, text)


def read_config(file: Path) -> tuple[dict, list[str]]:
    """({name: {"command", "args", "env"}}, problems) from `file`: the stdio servers
    (the type Claude Code assumes when a server has a command), ${VAR} filled in. A
    server that names a variable nobody set, with no default, is left out: started
    with the text `${API_KEY}` for a key, it would fail later, and less clearly."""
    found, problems = {}, []
    try:
        text = file.read_text(encoding="utf-8") if file.is_file() else "{}"
        servers = json.loads(text).get("mcpServers") or {}
        entries = list(servers.items())
    except (ValueError, OSError, AttributeError) as e:
        return {}, [f"{file.name} ignored: {e}"]
    for name, spec in entries:
        spec = spec if isinstance(spec, dict) else {}
        if spec.get("type", "stdio") != "stdio" or not isinstance(
                spec.get("command"), str):
            problems.append(f"{name}: skipped (a stdio server needs a command; "
                            "this chapter starts no http or sse servers)")
            continue
        missing = []  # the variables it names that are unset, with no default
        server = {"command": expand(spec["command"], missing),
                  "args": [expand(str(a), missing) for a in spec.get("args") or []],
                  "env": {str(k): expand(str(v), missing)
                          for k, v in (spec.get("env") or {}).items()}}
        if missing:
            unset = ", ".join(f"${{{v}}}" for v in dict.fromkeys(missing))
            problems.append(f"{name}: not started: {unset} not set in the environment "
                            "(nor a default, as in ${VAR:-default})")
            continue
        found[name] = server
    return found, problems


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


# === s05 · mcp: one thread, one event loop ===
class McpError(Exception):
    """A server could not be started; the message says why, in one line."""


class McpServers:
    """The MCP servers one agent started, all on one event loop in one thread. Built
    with nothing running: the thread starts with the first server."""

    def __init__(self):
        self.loop = None     # asyncio loop, run by self.thread
        self.thread = None
        self.servers = {}    # name -> {"session", "task", "log"}

    def run(self, coroutine, timeout: float):
        """Run `coroutine` on the loop; wait at most `timeout` seconds for it
        (concurrent.futures.TimeoutError after that, and the coroutine is cancelled)."""
        if self.thread is None:
            self.loop = asyncio.new_event_loop()
            self.thread = threading.Thread(target=self.loop.run_forever, daemon=True,
                                           name="mcp-servers")
            self.thread.start()
        future = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        try:
            return future.result(timeout)
        except BaseException:  # a timeout, or Ctrl-C while we waited: stop it there
            future.cancel()
            raise

# === s05 · mcp: a server, alive in its task ===
    def start(self, name: str, command: str, args: list, env: dict, cwd: str,
              timeout: float) -> list:
        """Start a server and return its tools (the SDK's Tool objects), or raise
        McpError. Its stderr goes to a temporary file: the last line explains a
        failure."""
        from mcp import StdioServerParameters  # imported when a server is configured
        params = StdioServerParameters(command=command, args=args, env=env, cwd=cwd)
        # its stderr, where the reason for a failure is; closed when it stops
        log = tempfile.TemporaryFile(  # noqa: SIM115
            "w+", encoding="utf-8", errors="replace")

        async def started():
            ready = asyncio.get_running_loop().create_future()
            task = asyncio.ensure_future(self.serve(params, log, ready))
            self.servers[name] = {"task": task, "log": log}
            return await ready
        try:
            session, tools = self.run(started(), timeout)
        except BaseException as e:
            self.stop(name)
            if isinstance(e, concurrent.futures.TimeoutError):
                raise McpError(f"no answer within {timeout:g} s") from None
            if not isinstance(e, Exception):
                raise  # Ctrl-C: the server is stopped; the agent stops too
            raise McpError(last_words(log) or f"{type(e).__name__}: {e}") from None
        self.servers[name]["session"] = session
        return tools

    async def serve(self, params, log, ready: asyncio.Future) -> None:
        """The server's task: start it, initialize, list its tools (every page), hand
        them to start(), then hold the connection open until cancelled."""
        from mcp import ClientSession, stdio_client, types
        try:
            async with (stdio_client(params, errlog=log) as (read, write),
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
        except BaseException as e:  # subtle: start() waits on `ready`, never on this
            if not ready.done():
                ready.set_exception(e if isinstance(e, Exception) else McpError(
                    "stopped while starting"))
            if not isinstance(e, Exception):
                raise

# === s05 · mcp: calling a tool ===
    def call(self, name: str, tool: str, arguments: dict,
             timeout: float) -> tuple[str, bool]:
        """Call a tool of server `name`: (its answer as text, is_error)."""
        server = self.servers.get(name, {})
        if "session" not in server:
            return f"the MCP server {name} is not running", True
        mark = os.fstat(server["log"].fileno()).st_size  # its stderr, so far
        try:
            result = self.run(server["session"].call_tool(tool, arguments), timeout)
        except concurrent.futures.TimeoutError:
            return (f"the MCP server {name} did not answer within {timeout:g} s; "
                    "the call was cancelled"), True
        except Exception as e:  # the server died, or broke the protocol
            why = last_words(server["log"], since=mark)
            return (f"the MCP server {name} failed: {e}"
                    + (f" (its last words: {why})" if why else "")), True
        return as_text(result), bool(result.is_error)

# === s05 · mcp: closing ===
    def stop(self, name: str) -> None:
        """End one server: cancel its task, which leaves the SDK's `async with`
        blocks, and they stop the process."""
        server = self.servers.pop(name, None)
        if server and self.loop and not server["task"].done():
            async def cancelled():
                self.cancel(server)
                await asyncio.wait([server["task"]], timeout=10)
            with contextlib.suppress(Exception):  # what we can do is done
                self.run(cancelled(), 12)
            server["log"].close()

    def cut(self) -> None:
        """From any thread, without waiting: cancel every server's task, so that each
        call in flight ends now, as an error, and the SDK stops each process."""
        if self.loop is not None:
            for server in list(self.servers.values()):
                self.loop.call_soon_threadsafe(self.cancel, server)

    @staticmethod
    def cancel(server: dict) -> None:
        """Cancel a server's task (on the loop), once. subtle: a second cancel would
        land while the SDK closes the server's stdin and waits for it to end, and
        cut that short: the server would run on."""
        if not server.get("cancelled"):
            server["cancelled"] = True
            server["task"].cancel()

    def close(self) -> None:
        """End every server, then the loop and its thread."""
        for name in list(self.servers):
            self.stop(name)
        if self.thread is not None:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(5)
            self.loop, self.thread = None, None


# `kill PID`, and a terminal that closes (Windows has no SIGHUP)
EXIT_SIGNALS = [getattr(signal, n) for n in ("SIGTERM", "SIGHUP") if hasattr(signal, n)]


def exit_on_signal(servers: McpServers) -> None:
    """From now on, EXIT_SIGNALS end the agent as an error would: with SystemExit,
    raised in the main thread, so every `finally` on the way out runs, main()'s
    too, which stops the servers. Python's default is to die on the spot: each
    server, in a session of its own, is then left to notice that its stdin closed,
    and one busy with a call, or one that does not look, runs on."""
    def leave(signum, frame):
        for each in EXIT_SIGNALS:  # a second signal must not cut the cleanup short
            signal.signal(each, signal.SIG_IGN)
        servers.cut()  # a call waited for in another thread (s06) ends now, too
        raise SystemExit(128 + signum)  # the status a shell shows for that signal
    for each in EXIT_SIGNALS:
        signal.signal(each, leave)

def as_text(result) -> str:
    """A CallToolResult as text: text blocks as they are, structured content as
    JSON, anything else (an image, audio) named by its type."""
    parts = []
    for block in result.content or []:
        if block.type == "text":
            parts.append(block.text)
        elif block.type == "resource" and hasattr(block.resource, "text"):
            parts.append(block.resource.text)
        else:
            parts.append(f"[{block.type} content, not shown to the model here]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content))
    return "\n".join(parts) or "(no output)"


def last_words(log, since: int = 0) -> str:
    """The last line a server wrote to its stderr (after byte `since`), or ''."""
    try:
        log.seek(max(since, os.fstat(log.fileno()).st_size - 4000))
        lines = [ln.strip() for ln in log.read().splitlines() if ln.strip()]
    except (OSError, ValueError):
        return ""
    return lines[-1][:300] if lines else ""
