"""Shared fixtures: every test runs offline, in its own workspace, against the real
anthropic SDK talking to the scripted local Messages API server.

- No network but loopback (a guard refuses any other connection).
- No API key in the environment.
- Each test runs in a fresh temporary workspace, which is the current directory.
- The scripted server is as strict as the real API: a request that breaks one of the
  API's rules is answered 400 in the API's words (offline/server.py, RULES). To count
  requests and invalid ones without rejecting any, run the suite with
  SCRIPTED_SERVER_AUDIT=/tmp/audit.jsonl, then `python -m offline.server /tmp/audit.jsonl`.
"""

from __future__ import annotations

import atexit
import io
import json
import os
import re
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import anthropic
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import warm  # noqa: E402  (tests/warm.py)
from offline import chapters
from offline.server import ScriptedServer

# Every chapter directory that exists, in course order.
CHAPTERS = sorted(p.parent.name for p in ROOT.glob("s0*_*/code.py"))


def chapters_from(first: str) -> list[str]:
    """This chapter and every later one: a mechanism, once taught, stays."""
    return [c for c in CHAPTERS if c[:3] >= first[:3]]


def load_chapter(name: str):
    """A chapter's code.py as a module (no side effects at import), loaded as a learner
    runs it: its own modules beside it (sandbox.py ...), as `name`.sandbox, never
    another chapter's copy (offline/chapters.py)."""
    return chapters.load_chapter(name)


def beside(chapter: str, module: str):
    """A module beside the chapter's code.py ("command_line", "sandbox" ...), the very
    copy its code.py uses."""
    load_chapter(chapter)
    return sys.modules[f"{chapter}.{module}"]


def at_a_terminal(monkeypatch, mod) -> None:
    """Someone sits at the terminal: the chapter's stdin_is_interactive says so, in
    code.py and in asking.py (s03 on), whose ask_user puts the question."""
    monkeypatch.setattr(mod, "stdin_is_interactive", lambda: True)
    if (Path(mod.__file__).parent / "asking.py").exists():
        monkeypatch.setattr(beside(mod.__package__, "asking"), "stdin_is_interactive",
                            lambda: True)


def sandbox_missing_by_default(mod) -> str | None:
    """What the chapter's sandbox lacks on this machine under the default settings
    (its own sandbox.py's), or None: the sandbox can run."""
    return mod.sandbox_missing(beside(mod.__package__, "sandbox").sandbox_settings([]))


def chapter_params(first: str):
    """pytest params for a `chapter` fixture: ids are the chapter names. Every case
    in every chapter: for what the chapters do differently."""
    return [pytest.param(c, id=c[:3]) for c in chapters_from(first)]


# --- each thing tested once, where it lives ------------------------------------------
# A chapter's code.py carries, copied, what the chapters before it taught, and the
# modules are byte-identical copies (tests/test_chapters_read.py checks both the copies
# and the banners). So a test need not play every case in every chapter:
# - teaching_and_last(first): every case in the chapter that teaches the mechanism and
#   in the last chapter (which carries everything); in the chapters between, a smoke:
#   the test's first case only. For code.py's mechanisms.
# - where_it_lives(first): every case in the chapter whose module it tests; a smoke in
#   every later chapter (code.py there imports the same module, byte for byte). For
#   tests whose cases exercise a module (bash_safety.py, rules.py, sandbox.py ...).
# between=False leaves the chapters between out: for a costly test (a process, a demo,
# a fuzz run), when another test of the file is the smoke there.
# chapter_params(first) keeps every case in every chapter, where the chapters differ.
# `pytest --every-chapter` plays every case in every chapter, whichever helper a test uses.
SMOKE = "chapter_smoke"


def teaching_and_last(first: str, between: bool = True):
    """pytest params: every case in `first` and in the last chapter, a smoke between."""
    chapters = chapters_from(first)
    ends = (chapters[0], chapters[-1])
    return [pytest.param(c, id=c[:3], marks=() if c in ends
                         else getattr(pytest.mark, SMOKE)(c))
            for c in chapters if between or c in ends]


def where_it_lives(first: str, between: bool = True):
    """pytest params: every case in `first`, the module's home; a smoke after it."""
    chapters = chapters_from(first)
    return [pytest.param(c, id=c[:3], marks=() if c == chapters[0]
                         else getattr(pytest.mark, SMOKE)(c))
            for c in chapters if between or c in (chapters[0], chapters[-1])]


def pytest_addoption(parser):
    parser.addoption("--every-chapter", action="store_true",
                     help="play every case of every test in every chapter, not a smoke "
                          "in the chapters a mechanism is carried through")


def pytest_configure(config):
    config.addinivalue_line("markers", f"{SMOKE}(chapter): only the test's first case "
                            "runs in this chapter (see teaching_and_last in conftest.py)")
    # A run started in the background by a script (`pytest ... &` where the shell has no
    # job control) ignores SIGINT, and so would every process it starts: the Ctrl-C
    # tests would wait in vain. The tests' processes take Python's own handler back,
    # so that what they start can be interrupted as at a terminal.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_collection_modifyitems(config, items):
    """A smoke: in a chapter a test marks SMOKE, its first case stays; the others
    are deselected (pytest counts them so), and --every-chapter plays them too."""
    if config.getoption("--every-chapter"):
        return
    first: set = set()
    kept, carried = [], []
    for item in items:
        mark = item.get_closest_marker(SMOKE)
        if mark is not None:
            key = (item.nodeid.split("[")[0], mark.args[0])
            if key in first:
                carried.append(item)
                continue
            first.add(key)
        kept.append(item)
    if carried:
        config.hook.pytest_deselected(items=carried)
        items[:] = kept


# --- where the processor time goes (issue 39) -------------------------------------
# TEST_CPU_REPORT=/tmp/cpu.jsonl: each test appends one line, its processor seconds in
# the test's process and in the child processes it waited for (setup, call and
# teardown together), so that `python -m tests.cpu_report /tmp/cpu.jsonl` can sum them
# by file. Wall-clock durations mislead on a machine with more workers than cores.
@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    report = os.environ.get("TEST_CPU_REPORT")
    if not report:
        yield
        return
    import resource

    def spent():  # the runs forked warm are the warm interpreter's children
        me, kids = (resource.getrusage(w) for w in (resource.RUSAGE_SELF,
                                                      resource.RUSAGE_CHILDREN))
        return (me.ru_utime + me.ru_stime,
                kids.ru_utime + kids.ru_stime + warm.FORKED_CPU[0])
    before = spent()
    yield
    after = spent()
    with open(report, "a", encoding="utf-8") as f:
        f.write(json.dumps({"test": item.nodeid, "self": round(after[0] - before[0], 3),
                            "children": round(after[1] - before[1], 3)}) + "\n")


# --- parallel runs (pytest -n auto) ------------------------------------------------
# A file whose `pytestmark` names an xdist_group builds something once (the exercises'
# checker runs): all the tests of a group go to one worker. (The site is built once a
# run by a lock instead, so that its tests spread over the workers: test_docs.py.) pytest-xdist 3.8
# loses the mark on pytest >= 9.2 (pytest-xdist issue 1386), and then each worker built
# the site and ran the checkers again; so the scheduler reads the groups from the files.
def xdist_groups(folder: Path = Path(__file__).parent) -> dict[str, str]:
    """'tests/test_docs.py' -> 'docs': each test file's xdist_group, from its source
    (the folders below too: tests/fidelity/test_fidelity.py)."""
    marks = {path: re.search(r'^pytestmark\b.*xdist_group\("(\w+)"\)',
                             path.read_text(encoding="utf-8"), re.MULTILINE)
             for path in sorted(folder.rglob("test_*.py"))}
    return {f"{folder.name}/{path.relative_to(folder).as_posix()}": m.group(1)
            for path, m in marks.items() if m}


def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling
    groups = xdist_groups()

    class GroupsOnOneWorker(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            group = groups.get(nodeid.split("::")[0])
            return f"@{group}" if group else super()._split_scope(nodeid)

    return GroupsOnOneWorker(config, log)


def pytest_xdist_auto_num_workers(config) -> int:
    """`-n auto`: two workers a core (at most four more than the cores). Many tests
    wait more than they compute (a shell timeout, a scripted slow model, a child
    process starting), and the extra workers keep the cores busy meanwhile. Measured
    from a fresh clone on 2 quiet cores, on an earlier and smaller suite: 3 workers
    3 min 13 s, 4 workers 2 min 41 s, 5 workers 2 min 43 s. Each worker has its own
    warm interpreter (tests/warm.py): about 5 processor-seconds to start."""
    cores = os.cpu_count() or 1
    return max(2, min(2 * cores, cores + 4))


# --- isolation -------------------------------------------------------------------


def one_certificate() -> None:
    """The tests speak plain HTTP to loopback only, yet every anthropic client (a
    test's, a chapter's main(), a chapter run as a process) loads the system's whole
    trust store to build its SSL context: 50 ms, thousands of times a run. With
    SSL_CERT_FILE (which the SDK's HTTP client reads) naming a file of one of those
    certificates, it takes 5 ms. Also where SSL_CERT_FILE already names the whole
    bundle (CI's machine sets it so). A file of its own per run, written once: the
    workers inherit the one their controller wrote."""
    given = os.environ.get("SSL_CERT_FILE", "")
    if Path(given).name.startswith("course-tests-"):
        return
    paths = ssl.get_default_verify_paths()
    for bundle in (given, paths.cafile, paths.openssl_cafile,
                   "/etc/ssl/certs/ca-certificates.crt", "/etc/ssl/cert.pem"):
        try:
            text = Path(bundle or "").read_text(encoding="ascii", errors="replace")
        except OSError:
            continue
        found = re.search(r"-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----\n",
                          text, re.S)
        if found:
            handle, name = tempfile.mkstemp(prefix="course-tests-", suffix=".pem")
            with os.fdopen(handle, "w") as f:
                f.write(found[0])
            atexit.register(os.unlink, name)
            os.environ["SSL_CERT_FILE"] = name
            return


one_certificate()


_LOOPBACK = {"127.0.0.1", "::1", "localhost"}
_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _guard(address) -> None:
    if isinstance(address, tuple) and address[0] not in _LOOPBACK:
        raise ConnectionRefusedError(f"tests may only reach loopback, not {address[0]}")


def _connect(self, address):
    _guard(address)
    return _real_connect(self, address)


def _connect_ex(self, address):
    _guard(address)
    return _real_connect_ex(self, address)


@pytest.fixture(autouse=True)
def offline_and_isolated(tmp_path, monkeypatch):
    """No network but loopback, no key, a fresh workspace as the current directory."""
    monkeypatch.setattr(socket.socket, "connect", _connect)
    monkeypatch.setattr(socket.socket, "connect_ex", _connect_ex)
    for key in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "MODEL_ID"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    monkeypatch.chdir(workspace)
    yield workspace


# --- the agent: each test builds its own ----------------------------------------------
# A chapter keeps a run's state in one object (Agent), passed to the loop and to every
# tool call; modules hold no session. A test's calls in one chapter share the agent
# the_agent() built for it (a read_file, then an edit_file), as one run's calls do.
AGENTS: dict = {}  # chapter module's name -> this test's agent in it


def the_agent(mod, client=None, **fields):
    """This test's agent in the chapter `mod`, built on first use (no client until a
    loop needs one); `fields` set its fields (max_turns=3, model=...)."""
    agent = AGENTS.get(mod.__name__)
    if agent is None:
        agent = AGENTS[mod.__name__] = mod.Agent(client)
    if client is not None:
        agent.client = client
    for name, value in fields.items():
        setattr(agent, name, value)
    return agent


@pytest.fixture(autouse=True)
def agents_end_with_their_test():
    """A test's agents go with it: what they started (background commands, s06) is
    stopped, and the next test builds new ones."""
    yield
    for agent in AGENTS.values():
        if hasattr(agent, "close"):
            agent.close()
    AGENTS.clear()


@pytest.fixture
def workspace(offline_and_isolated) -> Path:
    return offline_and_isolated


def write_settings(workspace: Path, permissions: dict) -> Path:
    """Claude Code's own .claude/settings.json with these permissions."""
    folder = workspace / ".claude"
    folder.mkdir(exist_ok=True)
    (folder / "settings.json").write_text(json.dumps({"permissions": permissions}) + "\n")
    return workspace


@pytest.fixture
def trusted(workspace) -> Path:
    """Settings that accept edits inside the workspace: later chapters (s03+) then run
    edits without asking; s02 has no permissions and ignores the file."""
    return write_settings(workspace, {"defaultMode": "acceptEdits"})


# --- trust (s04 on): a folder's own programs run once it is trusted ----------------


@pytest.fixture(autouse=True)
def trust_answers_aside(tmp_path, monkeypatch):
    """The chapters keep their trust answers in this test's own file (never the
    user's config), and forget this run's answers after it: a test's folder starts
    untrusted, as a cloned project does."""
    monkeypatch.setenv("AGENT_COURSE_TRUST_FILE", str(tmp_path / "trust.json"))
    yield
    for name in CHAPTERS:
        if (trust := sys.modules.get(f"{name}.trust")) is not None:
            trust.THIS_RUN.clear()


@pytest.fixture
def trusted_folder(workspace) -> Path:
    """The workspace, trusted as if you had said yes at a terminal: the hooks and MCP
    servers its files name may run (s04 on). Not needed by a chapter's offline demo,
    which trusts the scratch copy it made."""
    answer = {"trusted": True, "when": "the test"}
    Path(os.environ["AGENT_COURSE_TRUST_FILE"]).write_text(json.dumps(
        {"folders": {str(workspace.resolve()): answer}}))
    return workspace


# --- the scripted model ------------------------------------------------------------


@pytest.fixture
def server():
    """A scripted Messages API server; add turns with server.add(...)."""
    with ScriptedServer() as s:
        yield s


@pytest.fixture
def client(server):
    """The real SDK, pointed at the scripted server."""
    return anthropic.Anthropic(api_key="test-key", base_url=server.url, max_retries=0)


def tool_use_block(name: str, id: str = "toolu_test", **tool_input):
    """A real SDK ToolUseBlock, for calling a chapter's execute_tool directly."""
    return anthropic.types.ToolUseBlock(type="tool_use", id=id, name=name, input=tool_input)


def call_tool(mod, name: str, **tool_input) -> tuple[str, bool]:
    """Run one tool call through the chapter's own execute_tool, with this test's
    agent (the_agent): (output, is_error)."""
    return mod.execute_tool(tool_use_block(name, **tool_input), the_agent(mod))


def run_agent(mod, client, prompt: str, **fields) -> tuple[list, str]:
    """Run the chapter's agent_loop on one prompt, with this test's agent (`fields`
    set its fields: max_turns=3 ...); return (messages, final text)."""
    messages = [{"role": "user", "content": prompt}]
    final = mod.agent_loop(messages, the_agent(mod, client, **fields))
    return messages, final


def gate(mod, tool: str, tool_input, mode: str = "default", rules: dict | None = None,
         agent=None) -> tuple[str, str]:
    """The chapter's guarded decision (decide_permission, what check_permission asks)
    on one call, before anyone is asked: (behavior, reason)."""
    call = mod.Call(tool, tool_input, "toolu_test", agent or the_agent(mod))
    return tuple(mod.decide_permission(call, mode, rules or {})[:2])


def concurrency_safe(mod, tool: str, tool_input) -> bool:
    """s06: may this call (as this test's agent makes it) run beside others?"""
    return mod.is_concurrency_safe(mod.Call(tool, tool_input, "toolu_test",
                                            the_agent(mod)))


def sent_tool_results(request: dict) -> list[dict]:
    """The tool_result blocks in the last user message of a request body."""
    content = request["messages"][-1]["content"]
    return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]


def result_text(block: dict) -> str:
    content = block.get("content", "")
    if isinstance(content, list):
        return "".join(c.get("text", "") for c in content)
    return content


# --- running a chapter as a user does ------------------------------------------------


# No test waits on the clock: a test waits for an event (a file, a line, a request, a
# process that starts or ends). The clock only guards against a hang: GUARD seconds,
# far past what any wait takes on a busy machine, and a test's wait ends as soon as
# what it waits for can no longer happen (`unless`: the process ended, the turn ended).
GUARD = 300.0


def wait_until(condition, unless=lambda: False, guard: float = GUARD) -> bool:
    """Wait for `condition()`: True once it holds; False as soon as `unless()` holds
    (it can no longer come), or after `guard` seconds (a hang). It looks again after
    10 ms, then less and less often (at most every 0.2 s): a long wait on a busy
    machine costs little processor time."""
    import time
    deadline, pause = time.monotonic() + guard, 0.01
    while not condition():
        if unless() or time.monotonic() > deadline:
            return bool(condition())
        time.sleep(pause)
        pause = min(pause * 1.5, 0.2)
    return True


def command_lines(pattern: str = "") -> list[str]:
    """The command lines of the machine's processes that match the regular expression
    `pattern` (as `pgrep -f` matches them), but this process's. Read from /proc where
    there is one (no `ps` started each time a test looks), else from `ps`."""
    if not Path("/proc/self/cmdline").exists():
        listed = subprocess.run(["ps", "-axo", "pid=,args="], capture_output=True,
                                text=True).stdout.splitlines()
        lines = [(pid, args) for pid, _, args in (l.strip().partition(" ") for l in listed)]
    else:
        lines = []
        for pid in (name for name in os.listdir("/proc") if name.isdigit()):
            try:
                raw = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:  # it ended as we looked
                continue
            lines.append((pid, raw.rstrip(b"\0").replace(b"\0", b" ").decode(
                errors="replace")))
    return [args for pid, args in lines
            if args and pid != str(os.getpid()) and re.search(pattern, args)]


def assert_no_process(pattern: str, within: float = GUARD) -> None:
    """No process's command line matches `pattern` (as pgrep -f): a killed one may
    take a moment to go, so this waits for it to go (`within`: a guard against a hang,
    not a claim about speed)."""
    if not wait_until(lambda: not command_lines(pattern), guard=within):
        raise AssertionError(f"still running ({pattern}): {command_lines(pattern)}")


def clean_env(**extra) -> dict:
    """The environment for a chapter subprocess: no key unless given, no colour."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env.pop("MODEL_ID", None)
    # subtle: an empty value counts as set, so a developer's .env cannot add a key.
    env.update(ANTHROPIC_API_KEY="", ANTHROPIC_AUTH_TOKEN="", NO_COLOR="1")
    env.update(extra)
    return env


def run_main(chapter: str, *args: str, cwd: Path, input: str | None = None,
             timeout: float | None = None, **env) -> subprocess.CompletedProcess:
    """Call the chapter's main() in this process, as run_cli runs the file: the same
    arguments, environment, working directory and stdin, with stdout and stderr
    captured. For command-line contracts that need no process of their own; each
    contract still has one test that runs the file (a process costs ~1 s of SDK start).
    `timeout` is run_cli's, accepted and unused here."""
    module = load_chapter(chapter)
    saved = dict(os.environ), os.getcwd(), sys.stdin, tempfile.tempdir
    out, err = io.StringIO(), io.StringIO()
    environment = clean_env(**env)
    os.environ.clear()
    os.environ.update(environment)
    os.chdir(cwd)
    sys.stdin = io.StringIO(input or "")
    tempfile.tempdir = env.get("TMPDIR")  # subtle: tempfile reads TMPDIR once, then caches
    try:
        with redirect_stdout(out), redirect_stderr(err):
            try:
                status = module.main(list(args))
            except SystemExit as e:  # argparse, or a chapter that exits
                status = e.code if isinstance(e.code, int) else int(e.code is not None)
    finally:
        os.environ.clear()
        os.environ.update(saved[0])
        os.chdir(saved[1])
        sys.stdin, tempfile.tempdir = saved[2], saved[3]
    return subprocess.CompletedProcess([chapter, *args], status, out.getvalue(), err.getvalue())


def run_cli(chapter: str, *args: str, cwd: Path, input: str | None = None,
            timeout: float = 60, cold: bool = False, **env) -> subprocess.CompletedProcess:
    """Run `python sNN_x/code.py args...` in `cwd`, like a learner would: forked from
    this worker's warm interpreter (tests/warm.py: the SDK imported once), or with
    `cold`, a fresh `python` as the learner's own start."""
    return (subprocess.run if cold else warm.run)(
        [sys.executable, str(ROOT / chapter / "code.py"), *args],
        cwd=cwd, env=clean_env(**env), input=input, text=True,
        capture_output=True, timeout=timeout,
        stdin=None if input is not None else subprocess.DEVNULL,
    )
