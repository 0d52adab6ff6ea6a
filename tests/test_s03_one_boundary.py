"""s03: one boundary, whichever tool writes (issue 36), judged by its effects.

The sandbox keeps a protected set read-only for shell commands: what git reads
(config, config.worktree, hooks, commondir, a `.git` file's gitdir:, nested
repositories, included files, core.hooksPath), the agent's own settings, the programs
it runs later (PATH folders and venvs in the workspace, site-packages too, the
chapter itself; s04 on, the hooks' programs; s05 on, the MCP servers'). Here the file
tools meet that same set: each write into it asks (and no one is there to say yes),
and nothing on disk changes; a folder swapped for a link between the question and
the write leads the write nowhere; the agent's key never reaches a command; git in a
nested repository asks; the walk never leaves the workspace. Everyday editing in
acceptEdits still asks nothing.

Each case runs through the real loop, real SDK and scripted server, as root and as
an unprivileged user (uid 65534: the whole agent runs as that user), with the
sandbox available and with it switched off (`sandbox.enabled: false`): the boundary
is the same either way for the file tools. Runs in s03 and s06 (the first and the
last chapter with the mechanism), with a smoke in s04 and s05 for what they add.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import agent_as_user
import pytest
from conftest import (ROOT, load_chapter, result_text, sandbox_missing_by_default,
                      sent_tool_results)

from offline.server import reply, tool_use

SECRET = "sk-ant-one-boundary-s3cr3t"
NOBODY = agent_as_user.NOBODY
ENDS = ["s03_permissions", "s06_concurrency"]
ASKED = "no one can answer"  # what a question no one answers comes back as


def git(*args: str, cwd: Path) -> str:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", "-c", "safe.directory=*", *args], cwd=cwd, env=env,
                          check=True, capture_output=True, text=True).stdout


def tree(root: Path) -> dict:
    """Every path under root and its bytes (a folder: None; a link: its target)."""
    found = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder, name)
            found[path] = (os.readlink(path) if path.is_symlink() else None
                           if path.is_dir() else path.read_bytes())
    return found


class Agent:
    """The chapter's agent in a workspace under /var/tmp (another user may reach it;
    /tmp is private to each sandboxed command), run as `who`, sandbox `on` or off.
    As uid 65534 it runs in that user's process (`runner`, one a test worker: a
    Python that starts the SDK costs seconds), as root in this one: both play each
    run in its own folder and environment, and start the chapter's session over."""

    def __init__(self, chapter, who, sandbox, server, monkeypatch, runner):
        self.chapter, self.who, self.sandbox = chapter, who, sandbox
        self.server, self.monkeypatch, self.runner = server, monkeypatch, runner
        self.base = Path(tempfile.mkdtemp(prefix="one-boundary-", dir="/var/tmp"))
        self.base.chmod(0o755)
        self.ws, self.home = self.base / "ws", self.base / "home"
        self.ws.mkdir()
        self.home.mkdir()
        self.env = {"PATH": os.environ["PATH"], "HOME": str(self.home), "LANG": "C.UTF-8",
                    "NO_COLOR": "1"}

    def settings(self, **more) -> None:
        """.claude/settings.json: `more`, and the sandbox switched off if it is off."""
        data = {**more, **({} if self.sandbox == "on" else
                           {"sandbox": {"enabled": False}})}
        (self.ws / ".claude").mkdir(exist_ok=True)
        (self.ws / ".claude" / "settings.json").write_text(json.dumps(data))

    def run(self, calls: list, mode: str, swap=None, apart=True) -> list:
        """Play the calls ([(tool, input)]), each in a turn of its own (or all in
        one reply), then "Done."; the tool_results, in order, as (text, is_error)."""
        first = len(self.server.requests)
        blocks = [tool_use(name, tool_input) for name, tool_input in calls]
        turns = [reply(b) for b in blocks] if apart else [reply(*blocks)]
        self.server.add(*turns, reply("Done."))
        spec = {"chapter": self.chapter, "url": self.server.url, "mode": mode,
                "swap": swap and [str(self.ws / swap[0]), swap[1]]}
        if self.who == "nobody":
            subprocess.run(["chown", "-R", f"{NOBODY}:{NOBODY}", str(self.base)],
                           check=True)
            done = self.runner().run(spec, self.ws, self.env)
            assert done.returncode == 0, done.stderr[-3000:]
        else:
            for name, value in self.env.items():
                self.monkeypatch.setenv(name, value)
            self.monkeypatch.chdir(self.ws)
            agent_as_user.run(spec)
        sent = [b for r in self.server.requests[first + 1:] for b in sent_tool_results(r)]
        return [(result_text(b), bool(b.get("is_error"))) for b in sent]


@pytest.fixture(params=["root", "nobody"])
def who(request):
    if request.param == "nobody":
        if os.geteuid() != 0:
            pytest.skip("running as another user needs root; as you, 'root' covers it")
        if agent_as_user.python_for(NOBODY) is None:
            pytest.skip("no Python of this version that uid 65534 may run")
    return request.param


@pytest.fixture(params=["on", "off"])
def sandbox(request):
    if request.param == "on":
        mod = load_chapter("s03_permissions")
        if missing := sandbox_missing_by_default(mod):
            if os.environ.get("CI"):
                pytest.fail(f"no sandbox: {missing}")
            pytest.skip(f"no sandbox: {missing} (sudo apt-get install bubblewrap)")
    return request.param


@pytest.fixture(scope="session")
def nobody_runner():
    """runner(): the process of uid 65534 that plays this worker's runs, started by
    the first that needs it."""
    runners = []

    def runner() -> agent_as_user.Runner:
        if not runners:
            runners.append(agent_as_user.Runner(NOBODY))
        return runners[0]
    yield runner
    for started in runners:
        started.close()


@pytest.fixture
def make_agent(server, monkeypatch, nobody_runner):
    """make_agent(chapter, who, sandbox): an Agent, its folders removed after."""
    made = []

    def make(chapter: str, who: str, sandbox: str) -> Agent:
        made.append(Agent(chapter, who, sandbox, server, monkeypatch, nobody_runner))
        return made[-1]
    yield make
    for agent in made:
        shutil.rmtree(agent.base, ignore_errors=True)


@pytest.fixture(params=ENDS)
def agent(request, who, sandbox, make_agent):
    return make_agent(request.param, who, sandbox)


def a_project(ws: Path) -> dict:
    """A repository with every place git reads config or hooks from, a venv on PATH,
    a nested repository, the agent's settings. Returns {name: path} of a few."""
    git("init", "-q", cwd=ws)
    git("config", "core.hooksPath", ".husky", cwd=ws)
    git("config", "include.path", "../shared.gitconfig", cwd=ws)
    git("config", "user.name", "t", cwd=ws)
    git("config", "user.email", "t@example.com", cwd=ws)
    (ws / ".husky").mkdir()
    (ws / ".husky" / "pre-commit").write_text("#!/bin/sh\nexit 0\n")
    (ws / "shared.gitconfig").write_text("[user]\n\tname = t\n")
    (ws / ".git" / "modules" / "lib").mkdir(parents=True)
    (ws / ".git" / "modules" / "lib" / "config").write_text("[core]\n")
    (ws / "vendor").mkdir()
    git("init", "-q", "vendor", cwd=ws)
    site = ws / ".venv" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (ws / ".venv" / "bin").mkdir()
    (ws / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (ws / "README.md").write_text("# project\n")
    (ws / "src").mkdir()
    return {"site": site}


# --- the file tools ask the set the sandbox keeps --------------------------------------

WRITES_INTO_THE_SET = [  # (what it plants, the call); each would run something later
    ("git's commondir", ("write_file", {"file_path": ".git/commondir",
                                        "content": "../planted\n"})),
    ("config.worktree", ("write_file", {"file_path": ".git/config.worktree",
                                        "content": "[core]\n\tfsmonitor = touch x\n"})),
    ("a submodule's config", ("edit_file", {"file_path": ".git/modules/lib/config",
                                            "old_string": "[core]\n",
                                            "new_string": "[core]\n\tpager = x\n"})),
    ("a hook in core.hooksPath", ("write_file", {"file_path": ".husky/pre-push",
                                                 "content": "touch x\n"})),
    ("the file include.path names", ("edit_file", {
        "file_path": "shared.gitconfig", "old_string": "[user]",
        "new_string": "[core]\n\tfsmonitor = touch x\n[user]"})),
    ("a .git file's gitdir:", ("write_file", {"file_path": "pkg/.git",
                                              "content": "gitdir: ../planted\n"})),
    ("a nested repository's hook", ("write_file", {
        "file_path": "vendor/.git/hooks/pre-commit", "content": "touch x\n"})),
    ("rg in the venv on PATH", ("write_file", {"file_path": ".venv/bin/rg",
                                               "content": "#!/bin/sh\ntouch x\n"})),
    ("a .pth in the venv's site-packages", ("write_file", {
        "file_path": ".venv/lib/python3.11/site-packages/evil.pth",
        "content": "import os; os.system('touch x')\n"})),
    ("the agent's hooks folder", ("write_file", {"file_path": ".claude/hooks/check.py",
                                                 "content": "open('x', 'w')\n"})),
    ("the MCP servers", ("write_file", {"file_path": ".mcp.json",
                                        "content": '{"mcpServers": {}}\n'})),
    ("editor tasks", ("write_file", {"file_path": ".vscode/tasks.json",
                                     "content": "{}\n"})),
]


@pytest.mark.parametrize("mode", ["acceptEdits", "bypassPermissions"])
def test_a_file_tool_asks_before_writing_what_runs_later(agent, mode):
    """Every write into the protected set asks, in acceptEdits and (stricter than
    Claude Code) in bypassPermissions; no one is there to say yes, so nothing on disk
    changes. An edit reads its file first, so only the question stops it."""
    ws = agent.ws
    a_project(ws)
    agent.settings()
    (ws / ".venv" / "bin").chmod(0o755)
    agent.env["PATH"] = f"{ws / '.venv' / 'bin'}{os.pathsep}{agent.env['PATH']}"
    calls = []
    for _, (name, tool_input) in WRITES_INTO_THE_SET:
        if name == "edit_file":
            calls.append(("read_file", {"file_path": tool_input["file_path"]}))
        calls.append((name, tool_input))
    before = tree(ws)
    results = agent.run(calls, mode)
    writes = [r for (name, _), r in zip(calls, results) if name != "read_file"]
    let_through = [what for (what, _), (text, error) in zip(WRITES_INTO_THE_SET, writes)
                   if not (error and ASKED in text)]
    assert not let_through, let_through
    assert tree(ws) == before


@pytest.fixture(scope="session")
def course_in_a_workspace():
    """course_in_a_workspace(who, sandbox): (an Agent, a Runner) for a workspace that
    holds the course and the venv the agent runs on, made once a test worker; the
    Runner is that venv's Python running the copy of the chapter in it, as `who`."""
    made = {}

    def get(who: str, sandbox: str):
        if (who, sandbox) in made:
            return made[who, sandbox]
        system = shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin")
        if not system or subprocess.run(
                [system, "-c", "import sys; print(sys.version_info[:2])"],
                check=False, capture_output=True, text=True).stdout.strip() != str(
                    sys.version_info[:2]):
            pytest.skip("no system Python of this version to make the workspace's venv")
        agent = Agent("s03_permissions", who, sandbox, None, None, None)
        ws = agent.ws
        subprocess.run([system, "-m", "venv", "--without-pip", str(ws / ".venv")],
                       check=True)
        shutil.copytree(ROOT / agent.chapter, ws / "course" / agent.chapter,
                        ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copy(ROOT / "tests" / "agent_as_user.py", ws / "course")
        (ws / "course" / "offline").mkdir()  # how agent_as_user.py loads the chapter
        for name in ("__init__.py", "chapters.py"):
            shutil.copy(ROOT / "offline" / name, ws / "course" / "offline")
        agent.settings()
        uid = NOBODY if who == "nobody" else os.getuid()
        if who == "nobody":
            subprocess.run(["chown", "-R", f"{NOBODY}:{NOBODY}", str(agent.base)],
                           check=True)
        runner = agent_as_user.Runner(  # the workspace's venv runs its chapter's copy
            uid, python=str(ws / ".venv" / "bin" / "python"),
            script=ws / "course" / "agent_as_user.py",
            extra={"PYTHONPATH": agent_as_user.python_for(uid)[1].get(
                "PYTHONPATH", sysconfig.get_paths()["purelib"])})
        made[who, sandbox] = agent, runner
        return made[who, sandbox]
    yield get
    for agent, runner in made.values():
        runner.close()
        shutil.rmtree(agent.base, ignore_errors=True)


@pytest.mark.parametrize("mode", ["acceptEdits", "bypassPermissions"])
def test_the_chapter_and_its_python_in_the_workspace_ask(who, sandbox, server,
                                                         course_in_a_workspace, mode):
    """A workspace that holds the course and the venv the agent runs on: the chapter
    (its sandbox.py) and the Python (sys.prefix, site-packages and all) lie inside
    it, and the agent runs them again at its next start, unconfined. A file tool
    asks before writing either; nothing changes. (Both modes play in one workspace,
    to one process of its venv's Python.)"""
    agent, runner = course_in_a_workspace(who, sandbox)
    ws, chapter = agent.ws, agent.chapter
    site = next((ws / ".venv" / "lib").glob("python3*/site-packages"))
    calls = [("edit_file", {"file_path": f"course/{chapter}/sandbox.py",
                            "old_string": "import contextlib\n",
                            "new_string": "import contextlib\nimport planted\n"}),
             ("write_file", {"file_path": str(site.relative_to(ws) / "evil.pth"),
                             "content": "import os; os.system('touch x')\n"})]
    server.add(reply(tool_use("read_file", {"file_path": calls[0][1]["file_path"]})),
               *[reply(tool_use(*c)) for c in calls], reply("Done."))
    spec = {"chapter": chapter, "url": server.url, "mode": mode, "swap": None}
    before = tree(ws)
    done = runner.run(spec, ws, agent.env)
    assert done.returncode == 0, done.stderr[-3000:]
    sent = [b for r in server.requests[1:] for b in sent_tool_results(r)]
    results = [(result_text(b), bool(b.get("is_error"))) for b in sent]
    assert [ASKED in text for text, _ in results] == [False, True, True], results
    assert tree(ws) == before


def test_everyday_editing_in_accept_edits_asks_nothing(agent):
    """Source files, a test, the README, .gitignore, and a commit its rules allow:
    each runs unasked in acceptEdits, in a project with every protected place."""
    ws = agent.ws
    a_project(ws)
    agent.settings(permissions={"allow": ["Bash(git add:*)", "Bash(git commit:*)"]})
    results = agent.run([
        ("write_file", {"file_path": "src/app.py", "content": "print('hi')\n"}),
        ("write_file", {"file_path": "tests/test_app.py",
                        "content": "def test_app():\n    assert True\n"}),
        ("read_file", {"file_path": "README.md"}),
        ("edit_file", {"file_path": "README.md", "old_string": "# project",
                       "new_string": "# project\n\nIt says hi."}),
        ("write_file", {"file_path": ".gitignore", "content": ".venv/\nvendor/\n"}),
        ("run_shell", {"command": "git add -A && git commit -qm work && echo DONE"}),
    ], "acceptEdits")
    assert not [r for r in results if r[1]], results
    assert "DONE" in results[-1][0]
    assert (ws / "src" / "app.py").read_text() == "print('hi')\n"
    assert "It says hi." in (ws / "README.md").read_text()
    assert "work" in git("log", "--oneline", cwd=ws)
    assert "src/app.py" in git("ls-files", cwd=ws).split()


# --- what was checked is what is written ------------------------------------------------

def test_a_folder_swapped_for_a_link_after_the_check_leads_nowhere(agent):
    """write_file d/config: the gate checks d/config and lets it through; then, before
    the write, d becomes a link to .git (a background command's race, made certain
    here). The write fails; .git/config is as it was."""
    ws = agent.ws
    git("init", "-q", cwd=ws)
    (ws / "d").mkdir()
    agent.settings()
    before = (ws / ".git" / "config").read_bytes()
    results = agent.run([("write_file", {"file_path": "d/config",
                                         "content": "[core]\n\tfsmonitor = touch x\n"})],
                        "bypassPermissions", swap=("d", ".git"))
    assert results[0][1], results
    assert (ws / ".git" / "config").read_bytes() == before
    assert not (ws / "d.real" / "config").exists()


def test_a_background_command_racing_write_file_never_replaces_git_config(
        who, sandbox, make_agent):
    """s06, bypassPermissions: a background command swaps the folder d with a link
    to .git, over and over, while the model writes d/config 25 times. Each write
    lands in the real d or fails; .git/config never changes (it did in 21 of 25)."""
    agent = make_agent("s06_concurrency", who, sandbox)
    ws = agent.ws
    git("init", "-q", cwd=ws)
    (ws / "d").mkdir()
    agent.settings()
    before = (ws / ".git" / "config").read_bytes()
    swap = "g=.git; while :; do mv d d.x && ln -s $g d && rm d && mv d.x d; done"
    calls = [("run_shell", {"command": swap, "run_in_background": True})]
    calls += [("write_file", {"file_path": "d/config",
                              "content": f"[core]\n\tfsmonitor = touch x{i}\n"})
              for i in range(25)]
    results = agent.run(calls, "bypassPermissions")
    assert "running in background" in results[0][0], results[0]
    assert (ws / ".git" / "config").read_bytes() == before
    written = [t for t, error in results[1:] if not error]
    assert all("d/config" in t for t in written), written


# --- the agent's key stays the agent's ------------------------------------------------------

def test_the_agents_key_never_reaches_a_command(agent):
    """The key the agent pays with is in its environment (ANTHROPIC_API_KEY, or
    ANTHROPIC_AUTH_TOKEN): no command sees it, however it looks (env, printenv, a
    program's own environment, a file written in the background, s06), and in
    default mode env, printenv and set ask, as Claude Code's do."""
    agent.env.update(ANTHROPIC_API_KEY=SECRET, ANTHROPIC_AUTH_TOKEN=SECRET + "-token")
    agent.settings()
    look = ("printenv ANTHROPIC_API_KEY; printenv ANTHROPIC_AUTH_TOKEN; env; set; "
            "python3 -c 'import os; print(dict(os.environ))'; echo RAN")
    if agent.sandbox == "on":  # its own pid namespace: the agent's /proc is not there
        look += "; cat /proc/*/environ | tr '\\0' '\\n'"
    calls = [("run_shell", {"command": look})]
    if agent.chapter >= "s06":
        calls += [("run_shell", {"command": "env > bg.txt", "run_in_background":
                                 True}),
                  ("run_shell", {"command": "timeout 20 sh -c 'until [ -s bg.txt ]; do "
                                      "sleep 0.1; done'; cat bg.txt"})]
    results = agent.run(calls, "bypassPermissions")
    results += agent.run([("run_shell", {"command": c})
                          for c in ("env", "printenv", "printenv HOME", "set")],
                         "default")
    assert "RAN" in results[0][0], results[0]
    assert not [r for r in results if SECRET in r[0]]
    assert all(ASKED in text for text, _ in results[-4:]), results[-4:]


# --- git in a nested repository asks ---------------------------------------------------------

def test_git_in_a_nested_repository_asks(agent):
    """`cd vendor && git status`, `git -C vendor status`, or `git status` once the
    shell stands in vendor/: git would read vendor's config, which nothing checked
    and which can run programs; each asks. The workspace's own repository and a
    folder that is no repository run unasked."""
    ws = agent.ws
    git("init", "-q", cwd=ws)
    (ws / "vendor" / "sub").mkdir(parents=True)
    (ws / "docs").mkdir()
    git("init", "-q", "vendor", cwd=ws)
    agent.settings()
    results = agent.run([("run_shell", {"command": c}) for c in (
        "cd vendor && git status", "git -C vendor status", "cd vendor/sub && git log",
        "git status --short", "cd docs && git status --short", "cd ../vendor",
        "git status")], "default")
    asked = [ASKED in text for text, _ in results]
    assert asked == [True, True, True, False, False, False, True], results


# --- the walk stays in the workspace --------------------------------------------------------

def test_the_walk_stays_in_the_workspace(agent, monkeypatch):
    """A link to /usr (or anywhere big) costs the walk nothing, with a Read deny rule
    too; a workspace too big to walk fails closed with a message that says what the
    walk counted. (The walk's limit is lowered to 500 entries for the test.)"""
    ws = agent.ws
    (ws / "usr").symlink_to("/usr")
    agent.settings(permissions={"deny": ["Read(**/*.key)"]})
    for chapter in {agent.chapter}:
        sandbox = sys.modules[f"{chapter}.sandbox"] if f"{chapter}.sandbox" in \
            sys.modules else __import__(f"{chapter}.sandbox").sandbox
        monkeypatch.setattr(sandbox, "MAX_SCAN", 500)
    if agent.who == "nobody":
        pytest.skip("the limit is lowered in this process only")
    results = agent.run([("run_shell", {"command": "echo one > one.txt; echo RAN"}),
                         ("write_file", {"file_path": "two.txt", "content": "2\n"})],
                        "bypassPermissions")
    assert "RAN" in results[0][0] and not results[1][1], results
    for i in range(600):
        (ws / f"f{i}").touch()
    results = agent.run([("run_shell", {"command": "echo three > three.txt"}),
                         ("write_file", {"file_path": "four.txt", "content": "4\n"})],
                        "bypassPermissions")
    said = [text for text, _ in results]
    if agent.sandbox == "on":
        assert results[0][1] and "gave up after" in said[0] and "files and folders" \
            in said[0], said
    assert "gave up after" in said[1] and ASKED in said[1], said
    assert not (ws / "three.txt").exists() or agent.sandbox == "off"
    assert not (ws / "four.txt").exists()


# --- the sandbox keeps the new members of the set ---------------------------------------------

def test_a_command_cannot_write_what_the_set_gained(agent):
    """A writing command, let through in bypassPermissions, cannot change
    .git/config.worktree (held while missing), a `.git` file's gitdir:, or the
    site-packages of the venv on PATH. With the sandbox on, the paths are spelled so
    that only the sandbox can stop them; with it off, plainly, and the gate asks."""
    ws = agent.ws
    git("init", "-q", cwd=ws)
    (ws / "wt").mkdir()
    (ws / "wt" / ".git").write_text(f"gitdir: {ws / '.git'}\n")
    site = ws / ".venv" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (ws / ".venv" / "bin").mkdir()
    (ws / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    agent.env["PATH"] = f"{ws / '.venv' / 'bin'}{os.pathsep}{agent.env['PATH']}"
    agent.settings()
    g = 'g=.git; w=wt/.git; s=.venv/lib/python3.11/site-packages; ' \
        if agent.sandbox == "on" else ""
    spell = (lambda v, plain: f"${v}" if g else plain)
    commands = [
        f'{g}printf "[core]\\n\\tfsmonitor = touch x\\n" >> {spell("g", ".git")}'
        "/config.worktree; echo RAN",
        f'{g}echo "gitdir: ../planted" > {spell("w", "wt/.git")}; echo RAN',
        f"{g}echo 'import os' > {spell('s', '.venv/lib/python3.11/site-packages')}"
        "/evil.pth; echo RAN"]
    before = tree(ws)
    results = agent.run([("run_shell", {"command": c}) for c in commands],
                        "bypassPermissions")
    for (text, _), command in zip(results, commands):
        assert ("RAN" in text) if g else (ASKED in text), (command, text)
    assert tree(ws) == before


# --- s04 on: the hooks' programs; s05 on: the MCP servers' -------------------------------------

@pytest.mark.parametrize("chapter", ["s04_hooks", "s05_deferred_tools",
                                     "s06_concurrency"])
def test_what_the_settings_run_is_protected_from_the_file_tools(chapter, make_agent):
    """s04 on: a hook's program (tools/check.py) runs outside the sandbox at the
    next call; s05 on, an MCP server's (srv/server.py) at the next start. A file tool
    asks before writing either, in acceptEdits; the rest of the workspace is free."""
    agent = make_agent(chapter, "root", "on")
    ws = agent.ws
    (ws / "tools").mkdir()
    (ws / "tools" / "check.py").write_text("import sys\n")
    (ws / "srv").mkdir()
    (ws / "srv" / "server.py").write_text("import sys\n")
    (ws / ".mcp.json").write_text(json.dumps({"mcpServers": {"s": {
        "command": "python3", "args": ["srv/server.py"]}}}))
    agent.settings(hooks={"PostToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": "python3 tools/check.py"}]}]})
    results = agent.run([
        ("write_file", {"file_path": "tools/helper.py", "content": "x = 1\n"}),
        ("write_file", {"file_path": "srv/util.py", "content": "x = 1\n"}),
        ("write_file", {"file_path": "app.py", "content": "x = 1\n"})],
        "acceptEdits")
    asked = [ASKED in text for text, _ in results]
    assert asked == [True, chapter >= "s05", False], results
