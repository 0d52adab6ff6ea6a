"""What every exercise checker shares: your file, the scripted model, plain-words failures.

A checker (`exercises/sNN/test_exK.py`) tests the file you edit, `exercises/sNN/exK.py`.
To check another file, name it in EXERCISE_FILE; to check a whole folder laid out like
exercises/ (the solutions, or a learner's copy), name it in EXERCISE_DIR:

    EXERCISE_FILE=exercises/solutions/s01/ex1.py pytest exercises/s01/test_ex1.py
    EXERCISE_DIR=exercises/solutions pytest exercises/

Like the course's own tests (tests/conftest.py), every check runs offline, in a fresh
temporary workspace, against the real `anthropic` SDK talking to the scripted local
Messages API server in `offline/server.py`.

A failed check reads like a teacher's note: what it checks (its docstring), what is
wrong (the checker's message), then what it expected and what it got. A file that does
not import is reported once, as Python shows it; the other checks of that file are
skipped, since none of them can run.

A run ends with one line if a checker, or the code it stands on, is not the course's
(exercises/seal.py compares each with its recorded digest): a green check from an
edited checker says nothing about your code.
"""

from __future__ import annotations

import itertools
import json
import operator
import os
import socket
import sys
import traceback
from pathlib import Path

import anthropic
import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from exercises import seal  # noqa: E402
from exercises.make import chapter_of, is_copy, make  # noqa: E402
from offline.chapters import load_file  # noqa: E402
from offline.server import ScriptedServer  # noqa: E402

# The starters and solutions are made from code.py and their patches: make the
# missing starters (an existing one is your work and stays) and every solution.
make(quiet=True)

_loaded = itertools.count(1)
START_DIR = Path.cwd()  # where pytest was started; checks later run in a scratch workspace


# --- your file ----------------------------------------------------------------------

def exercise_file(checker: Path) -> Path:
    """The file a checker tests: test_ex1.py in exercises/s01/ tests
    - $EXERCISE_FILE, if set (one file, for one checker);
    - else $EXERCISE_DIR/s01/ex1.py, if set (a folder laid out like exercises/: the
      solutions, or a learner's own copy of the exercises);
    - else the starter beside the checker, exercises/s01/ex1.py."""
    name = checker.name.removeprefix("test_")
    choices = (("EXERCISE_FILE", Path()), ("EXERCISE_DIR", Path(checker.parent.name, name)))
    for variable, path in choices:
        if os.environ.get(variable):
            base = Path(os.environ[variable]).expanduser()
            return (base if base.is_absolute() else START_DIR / base) / path
    return checker.with_name(name)


@pytest.fixture
def exercise_path(request) -> Path:
    return exercise_file(Path(request.path))


# --- a file that does not import: said once, as Python says it -----------------------

_BROKEN: dict[Path, str] = {}  # your file -> how Python shows why it does not import
_SHOWN: set[Path] = set()      # ... and that error was shown once already


def pytest_collection_modifyitems(config, items):
    """Try each exercise file once, before any check runs. One that does not import
    keeps its first check, which shows Python's error; its other checks are deselected."""
    seen, dropped = set(), []
    for item in items:
        path = exercise_file(Path(str(item.path)))
        if path in seen:
            dropped += [item] if path in _BROKEN else []
            continue
        seen.add(path)
        problem = import_problem(path, Path(str(item.path))) if path.is_file() else None
        if problem is not None:
            _BROKEN[path] = python_says(problem, path)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if item not in dropped]


def import_problem(path: Path, checker: Path) -> BaseException | None:
    """Why `path` does not import, or None. A standalone file (a hook script, run as a
    program by its checker) is only compiled."""
    try:
        compile(path.read_bytes(), str(path), "exec")
        if is_copy(path):
            load(path, checker)
    except Exception as e:
        return e
    return None


def load(path: Path, checker: Path):
    """Your file, imported afresh, as `python exK.py` runs it: what it imports from its
    chapter's folder (command_line.py, sandbox.py ...) comes in fresh copies of its own,
    so that nothing one check changed there reaches the next."""
    name = f"exercise_{path.stem}_{next(_loaded)}"
    return load_file(path, name, chapter_of(checker).parent)


@pytest.fixture(autouse=True)
def your_file_imports(request):
    """The check of a file that does not compile: fails with Python's own words."""
    path = exercise_file(Path(request.path))
    if path in _BROKEN:
        does_not_import(path)


def does_not_import(path: Path) -> None:
    """Fail the first check of a file that does not import, with Python's error (file,
    line, the line, a caret); skip the file's other checks: none of them can run."""
    if path in _SHOWN:
        pytest.skip(f"{path} does not import: see the first failed check")
    _SHOWN.add(path)
    pytest.fail(f"Your file {path} does not import, so no check can run. "
                f"Python says:\n\n{_BROKEN[path]}", pytrace=False)


def python_says(error: BaseException, path: Path) -> str:
    """The error as Python prints it, from the first frame in your file on: not the
    import machinery's frames, not the checker's, no chained errors."""
    shown = traceback.TracebackException.from_exception(error, capture_locals=False)
    frames = list(shown.stack)
    mine = next((i for i, f in enumerate(frames) if Path(f.filename) == path), len(frames))
    shown.stack = traceback.StackSummary.from_list(frames[mine:])
    shown.__cause__ = shown.__context__ = None
    return "".join(shown.format()).rstrip()


@pytest.fixture
def mod(exercise_path, request):
    """Your file, imported afresh for each check (importing it has no side effects)."""
    if not exercise_path.is_file():
        pytest.fail(f"there is no file {exercise_path} to check.", pytrace=False)
    problem = None
    try:
        module = load(exercise_path, Path(request.path))
    except Exception as e:
        problem = e
    if problem is not None:  # subtle: out of the except block, or pytest chains them
        _BROKEN[exercise_path] = python_says(problem, exercise_path)
        does_not_import(exercise_path)
    return module


# --- offline and isolated, as in tests/conftest.py -----------------------------------

_LOOPBACK = {"127.0.0.1", "::1", "localhost"}
_real_connect = socket.socket.connect


def _connect(self, address):
    if isinstance(address, tuple) and address[0] not in _LOOPBACK:
        raise ConnectionRefusedError(f"checkers may only reach loopback, not {address[0]}")
    return _real_connect(self, address)


@pytest.fixture(autouse=True)
def workspace(tmp_path, monkeypatch) -> Path:
    """No network but loopback, no API key, a fresh workspace as the current directory."""
    monkeypatch.setattr(socket.socket, "connect", _connect)
    for key in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "MODEL_ID"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    folder = tmp_path / "workspace"
    folder.mkdir()
    monkeypatch.chdir(folder)
    # the checks' hooks and servers run: this scratch folder is trusted (s04 on), in a
    # trust file of its own, never yours
    answers = tmp_path / "trust.json"
    monkeypatch.setenv("AGENT_COURSE_TRUST_FILE", str(answers))
    answers.write_text(json.dumps({"folders": {str(folder.resolve()): {"trusted": True}}}))
    return folder


@pytest.fixture(scope="session")
def _shared_server():
    with ScriptedServer() as s:
        yield s


@pytest.fixture
def server(_shared_server):
    """A scripted Messages API server; add the model's turns with server.add(...)."""
    # One server for the whole run, emptied for each check: stopping a server takes
    # about half a second, which adds up over many small checks.
    _shared_server.turns.clear()
    _shared_server.requests.clear()
    _shared_server.rejected.clear()
    _shared_server.cache.clear()  # each check starts with a cold prompt cache
    return _shared_server


@pytest.fixture
def client(server):
    """The real SDK, pointed at the scripted server."""
    return anthropic.Anthropic(api_key="test-key", base_url=server.url, max_retries=0)


# --- helpers the checkers share ---------------------------------------------------------

def tool_use_block(name: str, /, id: str = "toolu_check", **tool_input):
    """A real SDK ToolUseBlock, as the loop would receive it. (`name` is positional
    only, so a tool input may have a field called `name`, as `skill`'s does.)"""
    return anthropic.types.ToolUseBlock(type="tool_use", id=id, name=name, input=tool_input)


AGENTS: dict = {}  # your module -> this check's Agent in it (the_agent)


def the_agent(mod, client=None):
    """This check's agent in your file, built on first use: the calls of one check
    share it (a read, then an edit), as one run's calls do."""
    agent = AGENTS.get(id(mod))
    if agent is None:
        agent = AGENTS[id(mod)] = mod.Agent(client)
    if client is not None:
        agent.client = client
    return agent


@pytest.fixture(autouse=True)
def agents_end_with_their_check():
    """A check's agents go with it: what they started is stopped (s06)."""
    yield
    for agent in AGENTS.values():
        if hasattr(agent, "close"):
            agent.close()
    AGENTS.clear()


def call_tool(mod, name: str, /, **tool_input) -> tuple[str, bool]:
    """One call through your execute_tool: (output, is_error). A stub that raised
    NotImplementedError inside a handler comes back as an error result; we raise it
    again so that the check says "not done yet" instead of something vaguer."""
    output, is_error = mod.execute_tool(tool_use_block(name, **tool_input),
                                        the_agent(mod))
    if is_error and "NotImplementedError" in output:
        raise NotImplementedError(output.split("NotImplementedError:", 1)[1].strip())
    # The two slips everyone makes when adding a tool or a field, said plainly:
    assert not (is_error and f"unknown tool '{name}'" in output), (
        f"execute_tool does not know the tool {name!r}: register it in TOOL_HANDLERS.")
    field = next((f for f in tool_input if f"unexpected field '{f}'" in output), None)
    assert not (is_error and field), (
        f"validate_input refused the field {field!r}: add it to {name}'s input_schema "
        "in TOOLS (the schema is the contract: a field it does not list is refused).")
    return output, is_error


def run_agent(mod, client, prompt: str, **kwargs) -> tuple[list, str]:
    """Your agent_loop on one prompt, with this check's agent: (messages, final
    text). A keyword agent_loop takes goes to it (token_budget=...); any other sets
    a field of the agent (max_turns=...)."""
    import inspect
    agent, messages = the_agent(mod, client), [{"role": "user", "content": prompt}]
    takes = inspect.signature(mod.agent_loop).parameters
    for name, value in kwargs.items():
        if name not in takes:
            setattr(agent, name, value)
    loop_kwargs = {k: v for k, v in kwargs.items() if k in takes}
    return messages, mod.agent_loop(messages, agent, **loop_kwargs)


def decide(mod, tool: str, tool_input: dict, mode: str, rules: dict) -> tuple:
    """Your gate's decision (decide_permission) on one call of this check's agent."""
    call = mod.Call(tool, tool_input, "toolu_check", the_agent(mod))
    return tuple(mod.decide_permission(call, mode, rules))


def blocks(message: dict) -> list[dict]:
    """A message's content blocks as plain dicts (SDK objects or dicts alike)."""
    content = message["content"]
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b.model_dump() if hasattr(b, "model_dump") else b for b in content]


def result_text(block: dict) -> str:
    content = block.get("content", "")
    if isinstance(content, list):
        return "".join(c.get("text", "") for c in content)
    return content


def transcript_problem(messages: list) -> str | None:
    """What breaks the API's rules in `messages`, or None: every tool_use must be
    answered by a tool_result with its id, in order, at the start of the next message."""
    for i, message in enumerate(messages):
        if message["role"] != "assistant":
            continue
        ids = [b["id"] for b in blocks(message) if b["type"] == "tool_use"]
        if not ids:
            continue
        if i + 1 == len(messages):
            return (f"the transcript ends with the model's tool_use {ids} and no "
                    "tool_result for it: the next request to the API would be refused (400).")
        following = blocks(messages[i + 1])
        answered = [b.get("tool_use_id") for b in following[:len(ids)]]
        if messages[i + 1]["role"] != "user" or answered != ids:
            found = [b.get("tool_use_id") or b.get("type") for b in following[:len(ids)]]
            return (f"the message after the model's tool_use {ids} should start with one "
                    f"tool_result for each, in that order, but starts with {found}.")
    return None


# --- failures in plain words ------------------------------------------------------------

class Described(str):
    """A row's value that is already words ("a value > 3"), shown without quotes."""


COMPARED: list[tuple[str, object]] = []  # the running check's failed comparisons: rows
HOLDS = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
         ">": operator.gt, ">=": operator.ge, "is": operator.is_, "is not": operator.is_not,
         "in": lambda a, b: a in b, "not in": lambda a, b: a not in b}


def pytest_assertrepr_compare(config, op, left, right):
    """Note a failed comparison in a checker as what was expected and what was got
    (the report shows it under the checker's message); pytest's own explanation stays.
    The checkers write `assert got == expected`, and `assert part in whole`.
    subtle: pytest asks about every comparison of a failed `assert a == b and c`,
    the one that held too: that one is not what went wrong."""
    try:
        held = bool(HOLDS[op](left, right))
    except Exception:  # noqa: BLE001 - a comparison that cannot be redone: keep it
        held = False
    if held:
        return
    rows = {"==": [("Expected", right), ("Got", left)],
            "!=": [("Expected anything but", right)],
            "in": [("Expected to find", left), ("In", right)],
            "not in": [("Expected not to find", left), ("But found it in", right)],
            "is": [("Expected", right), ("Got", left)],
            "is not": [("Expected anything but", right)]}.get(op)
    if rows is None:  # <, <=, >, >=
        rows = [("Expected", Described(f"a value {op} {right!r}")), ("Got", left)]
    COMPARED.extend(rows)


def shown(value, limit: int = 300) -> str:
    """A value on one line, cut in the middle if long (strings shown with quotes)."""
    text = value if isinstance(value, Described) else repr(value)
    return text if len(text) <= limit else f"{text[:limit - 60]} ... {text[-50:]}"


def expected_and_got(rows: list[tuple[str, object]], message: str) -> str:
    """The rows of the failed comparisons, lined up, minus the values the checker's
    message already shows."""
    lines = [f"{label + ':':<9} {shown(value)}" for label, value in rows
             if not already_shown(value, message)]  # the values line up
    return "\n".join(dict.fromkeys(lines))


def already_shown(value, message: str) -> bool:
    """Does the checker's message already show this value (as repr, or as text)?"""
    words = " ".join(str(value).split())[:60]
    return bool(words) and (words in " ".join(message.split())
                            or repr(value)[:60] in message)


def raised_in_your_file(excinfo, path: Path) -> str:
    """Where your code raised an exception: its last line in your file, and the error."""
    entries = [e for e in excinfo.traceback if Path(str(e.path)) == path]
    where = ""
    if entries:
        last = entries[-1]
        where = f"  File \"{path}\", line {last.lineno + 1}\n    {str(last.statement).strip()}\n"
    return f"{where}{excinfo.typename}: {excinfo.value}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Show a failed check as: what it checks (its docstring), then what is wrong,
    then what it expected and what it got."""
    outcome = yield
    report = outcome.get_result()
    rows, COMPARED[:] = COMPARED[:], []  # what this phase compared, and no more
    if call.when != "call" or call.excinfo is None or item.config.option.tbstyle == "long":
        return
    what = (item.function.__doc__ or item.name).strip()
    path = exercise_file(Path(str(item.path)))
    if call.excinfo.errisinstance(NotImplementedError):
        report.longrepr = (f"Checks: {what}\n\nNot done yet: {call.excinfo.value}\n"
                           f"(in {path}, between the `# >>> EXERCISE` markers)")
    elif (call.excinfo.errisinstance(anthropic.BadRequestError)
          and "no more turns" in str(call.excinfo.value)):
        report.longrepr = (f"Checks: {what}\n\nWhat is wrong: your loop called the model again "
                           "after the scripted model's last reply: it did not stop when it "
                           "should have.")
    elif call.excinfo.errisinstance(AssertionError):
        # subtle: pytest appends its own explanation ("assert ... == ..."); the
        # checker's message is written for you, so show that, and what was compared.
        error = str(call.excinfo.value)
        message = "" if error.startswith("assert ") else error.split("\nassert ", 1)[0].strip()
        compared = expected_and_got(rows, message)
        wrong = "\n\n".join(part for part in (message, compared) if part)
        report.longrepr = f"Checks: {what}\n\nWhat is wrong: {wrong or error}"
    elif any(Path(str(e.path)) == path for e in call.excinfo.traceback):
        report.longrepr = (f"Checks: {what}\n\nWhat is wrong: your code raised an error "
                           f"the check did not expect:\n\n{raised_in_your_file(call.excinfo, path)}")


# --- is this the course's check? -------------------------------------------------------

def pytest_terminal_summary(terminalreporter):
    """One line at the end of the run when a checker, or what it stands on, differs
    from the digests the course recorded (exercises/checkers.sha256)."""
    if found := seal.edited():
        terminalreporter.write_line(seal.warning(found), red=True, bold=True)
