"""A warm interpreter for the tests' chapter runs (issue 39: the test command's time).

`python sNN/code.py` spends ~3 processor-seconds before its first line, importing the
anthropic SDK (and mcp): hundreds of pydantic models are built each time. The tests
start a chapter as a process about a hundred times, so each test worker keeps one
interpreter that has imported those libraries, and nothing of the course's, and forks
it for each run (Linux only). The child sets the run's arguments, environment, working
directory, session and standard streams, then runs the chapter's file as `__main__`,
as `python code.py` does: the chapter's own modules are imported fresh, its exit
status, signals and output are its own. What it shares is the libraries' import.

    from warm import Popen      # subprocess.Popen's interface; run() as subprocess.run

A run falls back to a real `python` start (cold) when it is not `sys.executable
script.py ...`, when it asks for what only a fresh process can give (preexec_fn,
pass_fds, another user or group, a umask), when a variable Python reads at start
(PYTHON*, LANG, LC_*) differs from the warm one's, on macOS and Windows, and always
with COURSE_TESTS_COLD=1 (a whole run cold, to compare). The tests that are about a
learner's own start (the README's command, a missing key, `--help`) call
subprocess directly.

Reading map:
  the worker's side      Popen (its _execute_child asks the warm interpreter), run()
  the warm interpreter   serve(): preload, accept, fork, reap; become(): the child
"""

from __future__ import annotations

import atexit
import contextlib
import inspect
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading

PRELOAD = ["anthropic", "httpx", "mcp", "mcp.client.session", "mcp.client.stdio",
           "mcp.shared.message", "mcp_types", "anyio", "yaml", "tree_sitter",
           "tree_sitter_bash", "dotenv", "pathspec", "markdownify", "bs4"]
# What Python reads as it starts, before any line of the script: a run whose value
# differs from the warm interpreter's starts cold.
AT_START = ("PYTHON", "LANG", "LC_")
MADE_HERE = {"PYTHONIOENCODING", "PYTHONUNBUFFERED",  # become() sets up the streams
             "PYTHONDONTWRITEBYTECODE"}             # and sys.dont_write_bytecode
# Room for the run's command line: `ps` and `pgrep -f` show the chapter's, as a cold
# run's (the tests look for leftover processes by it).
ROOM = 8192
ENV_ROOM = 65536  # and for its environment (/proc/PID/environ: MCP servers are found by it)
ENABLED = sys.platform == "linux" and not os.environ.get("COURSE_TESTS_COLD")
# Processor seconds of this process's warm runs that have ended (theirs and their
# children's): the fork's parent is the warm interpreter, so they are not in this
# process's RUSAGE_CHILDREN (conftest's TEST_CPU_REPORT adds them).
FORKED_CPU = [0.0]


# --- the worker's side ----------------------------------------------------------------


class _Warm:
    """This process's warm interpreter: started on first use, ended with us (it
    reads its stdin, and leaves when that closes)."""

    def __init__(self):
        self.lock, self.proc, self.path, self.failed = (
            threading.Lock(), None, None, False)

    def address(self) -> str | None:
        with self.lock:
            if self.proc is None and not self.failed:
                self.start()
            return None if self.failed else self.path

    def start(self) -> None:
        folder = tempfile.mkdtemp(prefix="course-warm-")
        self.path = os.path.join(folder, "socket")
        try:
            self.proc = subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), "--serve", self.path,
                 "-" * ROOM],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                env={**os.environ, "COURSE_WARM_ROOM": "-" * ENV_ROOM},
                cwd=folder)
            ready = self.proc.stdout.readline()
        except OSError:
            ready = b""
        if ready.strip() != b"ready":
            self.failed = True
            return
        atexit.register(self.stop)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


WARM = _Warm()
_CHILD_ARGS = list(inspect.signature(subprocess.Popen._execute_child).parameters)[1:]


def coerced(env: dict) -> bool:
    """Whether Python's start turns this environment's C locale into C.UTF-8 (PEP 538:
    LC_CTYPE, else LANG, is C or POSIX or unset, and LC_ALL is not set)."""
    return not env.get("LC_ALL") and (env.get("LC_CTYPE") or env.get("LANG") or "C") \
        in ("C", "POSIX")


def locale_of(env: dict) -> str:
    """The locale a run started with `env` has its characters in."""
    return "C.UTF-8" if coerced(env) else (
        env.get("LC_ALL") or env.get("LC_CTYPE") or env.get("LANG"))


def why_cold(env: dict) -> str | None:
    """Why a run with `env` must start afresh: what Python reads at its start differs
    from this warm interpreter's (None: it may be forked)."""
    def at_start(e):
        return {k: v for k, v in e.items()
                if k.startswith(AT_START) and k not in MADE_HERE
                and not k.startswith(("LANG", "LC_"))}
    if at_start(env) != at_start(os.environ):
        return "a PYTHON* variable differs"
    if locale_of(env) != locale_of(os.environ):
        return "the locale differs"
    if sum(len(k) + len(v) + 2 for k, v in env.items()) > ENV_ROOM:
        return "its environment is too large"
    return None


class Popen(subprocess.Popen):
    """subprocess.Popen, but `[sys.executable, script.py, ...]` forks the warm
    interpreter (see the module's docstring for when it starts cold instead)."""

    _warm = None  # the socket the warm interpreter says the run's end on

    def _execute_child(self, *args):
        a = dict(zip(_CHILD_ARGS, args))
        if not self._can_be_warm(a) or (path := WARM.address()) is None:
            return super()._execute_child(*args)
        given = [a["p2cread"], a["c2pwrite"], a["errwrite"]]
        fds = [fd if fd != -1 else std for fd, std in zip(given, (0, 1, 2))]
        env = dict(a["env"] if a["env"] is not None else os.environ)
        request = {"argv": [os.fsdecode(x) for x in a["args"][1:]],
                   "cwd": os.fsdecode(a["cwd"]) if a["cwd"] is not None else os.getcwd(),
                   "env": {os.fsdecode(k): os.fsdecode(v) for k, v in env.items()},
                   "session": bool(a["start_new_session"])}
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            conn.connect(path)
            socket.send_fds(conn, [json.dumps(request).encode()], fds)
            answer = conn.recv(4096)
        except OSError:
            answer = b""
        if "pid" not in json.loads(answer or "{}"):  # it said why cold, or is gone
            conn.close()
            return super()._execute_child(*args)
        self.pid, self._child_created, self._warm = json.loads(answer)["pid"], True, conn
        self._warm_status = None
        self._close_pipe_fds(a["p2cread"], a["p2cwrite"], a["c2pread"], a["c2pwrite"],
                             a["errread"], a["errwrite"])

    @staticmethod
    def _can_be_warm(a: dict) -> bool:
        args = a["args"]
        if not ENABLED or a["shell"] or isinstance(args, (str, bytes, os.PathLike)):
            return False
        args = [os.fsdecode(x) for x in args]
        return (len(args) >= 2 and args[0] == sys.executable
                and a["executable"] in (None, sys.executable)
                and args[1].endswith(".py") and os.path.isfile(args[1])
                and sum(len(os.fsencode(x)) + 1 for x in args) < ROOM
                and a["preexec_fn"] is None and not a["pass_fds"]
                and a.get("gid") is None and a.get("gids") is None
                and a.get("uid") is None and a.get("umask", -1) < 0
                and a.get("process_group", -1) in (None, -1)
                and a["restore_signals"]
                and (a["cwd"] is None or os.path.isdir(a["cwd"])))

    # Its end comes from the warm interpreter (its parent), not from os.waitpid.
    def _status(self, block: bool):
        if self._warm_status is None:
            self._warm.setblocking(block)
            try:
                data = self._warm.recv(4096)
            except BlockingIOError:
                return None
            except OSError:
                data = b""
            # the warm interpreter died: say the run was killed
            end = json.loads(data) if data else {"status": signal.SIGKILL}
            self._warm_status = end["status"]
            FORKED_CPU[0] += end.get("cpu", 0.0)
            self._warm.close()
        return self._warm_status

    def _try_wait(self, wait_flags):
        if self._warm is None:
            return super()._try_wait(wait_flags)
        status = self._status(block=not wait_flags & os.WNOHANG)
        return (0, 0) if status is None else (self.pid, status)

    def _internal_poll(self, _deadstate=None, **kwargs):
        if self._warm is None:
            return super()._internal_poll(_deadstate, **kwargs)
        if self.returncode is None and (status := self._status(block=False)) is not None:
            self._handle_exitstatus(status)
        return self.returncode

    def _wait(self, timeout):
        if self._warm is None:
            return super()._wait(timeout)
        if self.returncode is None:
            if timeout is not None and self._warm_status is None and \
                    not select.select([self._warm], [], [], timeout)[0]:
                raise subprocess.TimeoutExpired(self.args, timeout)
            self._handle_exitstatus(self._status(block=True))
        return self.returncode


def run(*popenargs, input=None, capture_output=False, timeout=None, check=False,
        **kwargs) -> subprocess.CompletedProcess:
    """subprocess.run, through Popen above."""
    if input is not None:
        kwargs["stdin"] = subprocess.PIPE
    if capture_output:
        kwargs["stdout"] = kwargs["stderr"] = subprocess.PIPE
    with Popen(*popenargs, **kwargs) as process:
        try:
            stdout, stderr = process.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            process.kill()
            exc.stdout, exc.stderr = process.communicate()
            raise
        except BaseException:
            process.kill()
            raise
        retcode = process.poll()
        if check and retcode:
            raise subprocess.CalledProcessError(retcode, process.args, output=stdout,
                                                stderr=stderr)
    return subprocess.CompletedProcess(process.args, retcode, stdout, stderr)


# --- the warm interpreter ---------------------------------------------------------------


def serve(path: str):
    """Import PRELOAD, then fork a child per request until stdin closes. Returns
    only in a child: (its request, its three standard fds)."""
    import importlib
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    # What is imported stays, untouched: the garbage collector leaves it out of every
    # collection, so that a fork's first collection neither walks those objects nor
    # makes the kernel copy the pages they sit on (~1 processor-second a run before).
    import gc
    gc.collect()
    gc.freeze()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(path)
    listener.listen(64)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    runs: dict[int, socket.socket] = {}  # pid -> the connection told its end
    try:  # a kernel that forbids writing one's own /proc/self/mem: every run cold
        show_command_line([sys.executable, *sys.argv])
        show_environment(os.environ)
    except OSError:
        return None
    print("ready", flush=True)
    while True:
        ready = select.select([listener, wake_r, sys.stdin], [], [])[0]
        if sys.stdin in ready and not os.read(sys.stdin.fileno(), 512):
            return None  # the worker is gone
        if wake_r in ready:
            os.read(wake_r, 4096)
        reap(runs)
        if listener not in ready:
            continue
        conn, _ = listener.accept()
        try:
            message, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
            request = json.loads(message)
        except (OSError, ValueError):
            conn.close()
            continue
        if cold := why_cold(request["env"]):
            conn.send(json.dumps({"cold": cold}).encode())
            conn.close()
            for fd in fds:
                os.close(fd)
            continue
        assert threading.active_count() == 1, "fork with threads"
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:  # the run
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            for s in (listener, conn, *runs.values()):
                s.close()
            os.close(wake_r)
            os.close(wake_w)
            return request, fds
        for fd in fds:
            os.close(fd)
        try:
            conn.send(json.dumps({"pid": pid}).encode())
        except OSError:
            pass
        runs[pid] = conn


def reap(runs: dict) -> None:
    while runs:
        try:
            pid, status, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = runs.pop(pid, None)
        if conn is not None:
            try:
                conn.send(json.dumps({"status": status, "cpu": usage.ru_utime
                                      + usage.ru_stime}).encode())
            except OSError:
                pass
            conn.close()


def become(request: dict, fds: list) -> dict:
    """In the forked child: the run's session, streams, place and environment, as
    `python script.py` would have them. Returns the globals to run the script in."""
    import builtins
    import codecs
    import io
    import types
    if request["session"]:
        os.setsid()
    for std, fd in enumerate(fds):
        if fd != std:
            os.dup2(fd, std)
    for fd in set(fds) - {0, 1, 2}:
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    if coerced(os.environ):
        os.environ["LC_CTYPE"] = "C.UTF-8"  # as Python's start coerces the C locale
    show_environment(os.environ)
    sys.dont_write_bytecode = bool(os.environ.get("PYTHONDONTWRITEBYTECODE"))
    tempfile.tempdir = None  # it reads TMPDIR afresh
    encoding, _, errors = os.environ.get("PYTHONIOENCODING", "").partition(":")
    encoding = codecs.lookup(encoding).name if encoding else sys.stdout.encoding
    unbuffered = bool(os.environ.get("PYTHONUNBUFFERED"))

    def stream(fd, mode, errs, line):  # as Python makes sys.stdin and the others
        raw = io.FileIO(fd, mode, closefd=False)
        buffered = io.BufferedReader(raw) if mode == "r" else io.BufferedWriter(raw)
        return io.TextIOWrapper(buffered, encoding, errors or errs, newline="\n",
                                line_buffering=line and not unbuffered,
                                write_through=unbuffered and mode == "w")
    sys.stdin = sys.__stdin__ = stream(0, "r", "strict", False)
    sys.stdout = sys.__stdout__ = stream(1, "w", sys.stdout.errors, os.isatty(1))
    sys.stderr = sys.__stderr__ = stream(2, "w", "backslashreplace", True)
    script = request["argv"][0]
    sys.argv = request["argv"]
    show_command_line([sys.executable, *sys.argv])
    sys.path[0] = os.path.dirname(os.path.realpath(script))
    main = types.ModuleType("__main__")
    main.__file__, main.__cached__, main.__builtins__ = script, None, builtins
    sys.modules["__main__"] = main
    return main.__dict__


def show_command_line(args: list) -> None:
    """Write `args` over this process's own (Linux keeps them in its memory, where
    /proc/PID/cmdline reads them): ps and pgrep -f show the run, not this file."""
    _write_over(45, [os.fsencode(a) for a in args])  # arg_start, arg_end (48, 49)


def show_environment(env) -> None:
    """The same for /proc/PID/environ, which shows the environment a process started
    with: the run's, not this interpreter's (an MCP client finds its servers by it)."""
    _write_over(47, [os.fsencode(f"{k}={v}") for k, v in env.items()])  # 50, 51


def _write_over(field: int, items: list) -> None:
    with open("/proc/self/stat", "rb") as f:
        stat = f.read()
    fields = stat[stat.rindex(b")") + 2:].split()  # field 3 on: after "(comm) "
    start, end = int(fields[field]), int(fields[field + 1])
    data = b"".join(item + b"\0" for item in items)
    with open("/proc/self/mem", "r+b", buffering=0) as mem:
        mem.seek(start)
        mem.write(data[:end - start].ljust(end - start, b"\0"))


def command(script: str, *args: str) -> list:
    """The command line for a config file (an MCP server's in .mcp.json) that runs
    `script` forked warm: this file as a small launcher (`python -S`: no site
    packages, started in milliseconds) that hands its stdin, stdout and stderr to the
    fork, passes signals on, and ends as it ends; cold where warm runs are off."""
    if not ENABLED or (path := WARM.address()) is None:
        return [sys.executable, script, *args]
    return [sys.executable, "-S", os.path.abspath(__file__), "--run", path, script, *args]


def launch(path: str, argv: list) -> None:
    """The launcher's life: the fork runs argv as this process would have."""
    passed = [getattr(signal, name) for name in ("SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT",
                                                  "SIGUSR1", "SIGUSR2")]
    # subtle: held until the run's pid is known, else a SIGTERM that came meanwhile
    # (the run may print, and be told to stop, before this line) ended this launcher
    # alone and left the run behind (a busy machine's run of test_warm caught it)
    held = signal.pthread_sigmask(signal.SIG_BLOCK, passed)
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    request = {"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ), "session": False}
    try:
        conn.connect(path)
        socket.send_fds(conn, [json.dumps(request).encode()], [0, 1, 2])
        pid = json.loads(conn.recv(4096) or "{}").get("pid")
    except OSError:
        pid = None
    if pid is None:  # cold: become the run itself
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        os.execv(sys.executable, [sys.executable, *argv])

    def pass_on(signum, _frame):
        with contextlib.suppress(OSError):
            os.kill(pid, signum)
    for signum in passed:
        signal.signal(signum, pass_on)
    signal.pthread_sigmask(signal.SIG_SETMASK, held)  # what came meanwhile goes on now
    answer = conn.recv(4096)
    code = os.waitstatus_to_exitcode(json.loads(answer)["status"]) if answer else 1
    if code < 0:
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    sys.exit(code)


if __name__ == "__main__" and sys.argv[1:2] == ["--run"]:
    launch(sys.argv[2], sys.argv[3:])

if __name__ == "__main__" and sys.argv[1:2] == ["--serve"]:
    child = serve(sys.argv[2])
    if child is None:
        sys.exit(0)
    namespace = become(*child)
    with open(sys.argv[0], "rb") as source:
        code = compile(source.read(), sys.argv[0], "exec")
    del child, source
    exec(code, namespace)  # noqa: S102  (the chapter, as `python code.py` runs it)
