"""s03: the sandbox holds where an attacker pushed on it (issue 28), judged by effects.

Each attack runs as the worst case lets it: in bypassPermissions, through the real loop,
real SDK and scripted server, so nothing but the sandbox stands in its way (each one
echoes RAN, so a test cannot pass because the command never ran). Then the same
commands run in the same sandbox as an unprivileged user (uid 65534): CI and most
containers run as root, learners mostly do not, and the boundary must hold for both.
What is checked is what happened: files on disk, secrets in the results, processes
left behind. Runs against s03 and every later chapter; skips without bubblewrap.
"""

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from conftest import (assert_no_process, call_tool, chapter_params, command_lines,
                      load_chapter, result_text, run_cli, sent_tool_results, teaching_and_last,
                      wait_until)
from conftest import beside, gate, sandbox_missing_by_default, the_agent
from offline.server import reply, tool_use

SECRET = "s3cr3t-0f-the-t3st"
NOBODY = 65534
SYSTEM_PREFIX = "/usr"  # the system Python's, which every user may run


# The first and the last chapter with a sandbox: sandbox.py is the same file in each
# (tests/test_chapters_read.py), so the costly attacks (gigabytes of memory, a fork
# bomb) run there; the rest run in every chapter.
ENDS = [chapter_params("s03")[0], chapter_params("s03")[-1]]


@pytest.fixture(params=teaching_and_last("s03"))
def mod(request):
    mod = load_chapter(request.param)
    if missing := sandbox_missing_by_default(mod):
        if os.environ.get("CI"):
            pytest.fail(f"no sandbox: {missing}")
        pytest.skip(f"no sandbox: {missing} (sudo apt-get install bubblewrap)")
    return mod


@pytest.fixture(params=["loop", "nobody"])
def run(request, mod, server, client, monkeypatch):
    """Runs commands the way the parameter says; returns each one's output."""
    if request.param == "nobody" and os.geteuid() != 0:
        pytest.skip("running as another user needs root; as you, 'loop' covers it")
    # reachable by nobody, and not in /tmp (private to each command): a folder there
    # stands for the rest of your disk
    base = Path(tempfile.mkdtemp(prefix="sandbox-holds-", dir="/var/tmp"))
    base.chmod(0o755)
    workspace, home = base / "workspace", base / "home"
    for folder in (workspace, home / ".ssh"):
        folder.mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(f"{SECRET}\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(workspace)
    the_agent(mod).permissions.mode = "bypassPermissions"

    def through_loop(commands: list, timeout: int = 20000) -> list:
        first = len(server.requests)
        server.add(*[reply(tool_use("run_shell", {"command": c, "timeout": timeout},
                                    id=f"toolu_{i}"))
                     for i, c in enumerate(commands)], reply("Done."))
        messages = [{"role": "user", "content": "go"}]
        mod.agent_loop(messages, the_agent(mod, client))
        return [result_text(sent_tool_results(r)[0])
                for r in server.requests[first + 1:]]

    def as_nobody(commands: list, timeout: int = 60000) -> list:
        # the policy is built here, as root: keep it to what another user can enter,
        # as that user's own would be (a clone in `mktemp -d` is root's alone)
        monkeypatch.setenv("PATH", os.pathsep.join(
            p for p in os.environ["PATH"].split(os.pathsep) if others_may_enter(p)))
        # the sandbox binds the agent's Python anew where /tmp (private) would hide
        # it; nobody's own agent runs from a Python nobody may run: where ours is in
        # a folder only root may enter (a clone in `mktemp -d`), the system's stands in
        for name in ("prefix", "base_prefix"):
            if not others_may_enter(getattr(sys, name)):
                monkeypatch.setattr(sys, name, SYSTEM_PREFIX)
        subprocess.run(["chown", "-R", f"{NOBODY}:{NOBODY}", str(base)], check=True)
        out = []
        for command in commands:
            with mod.confine(command, mod.Path.cwd()) as argv:
                done = subprocess.run(argv, user=NOBODY, group=NOBODY, extra_groups=[],
                                      capture_output=True, text=True, timeout=timeout / 1000,
                                      stdin=subprocess.DEVNULL)
            out.append(done.stdout + done.stderr)
        return out

    runner = through_loop if request.param == "loop" else as_nobody
    runner.workspace, runner.home, runner.kind = workspace, home, request.param
    yield runner
    shutil.rmtree(base, ignore_errors=True)


def others_may_enter(folder: str) -> bool:
    """Whether a user other than its owner may reach `folder` (x for others on it and
    on every folder above it)."""
    path = Path(folder).resolve()
    try:
        return all(p.stat().st_mode & 0o001 for p in (path, *path.parents))
    except OSError:
        return False


def git(*args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
           "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", *args], env=env, check=True, capture_output=True)


def tree(root: Path) -> dict:
    """Every path under root and its bytes (a folder: None; a link: its target)."""
    found = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder, name)
            found[path] = (os.readlink(path) if path.is_symlink() else None
                           if path.is_dir() else path.read_bytes())
    return found


def ran_all(outputs: list, commands: list) -> None:
    for command, output in zip(commands, outputs):
        assert "RAN" in output, f"{command!r} never ran: {output[-300:]}"


def test_as_root_or_not_the_mounts_stay(run):
    """No capability inside: remount / writable, unmount the home's cover or a
    read-only bind over .git/config. Each fails; nothing changes, nothing leaks."""
    git("init", "-q")
    ws, home = run.workspace, run.home
    commands = [f"mount -o remount,rw,bind /; umount {home}; cat {home}/.ssh/id_rsa;"
                " echo RAN",
                f"umount {ws}/.git/config; umount {ws}/.git; d=.git;"
                ' echo "[core] fsmonitor = touch pwned" >> "$d/config"; echo RAN']
    before = tree(ws)
    outputs = run(commands)
    ran_all(outputs, commands)
    assert not any(SECRET in o for o in outputs)
    assert tree(ws) == before


def test_protected_names_that_do_not_exist_yet(run):
    """With no .claude, .git, .mcp.json or .vscode (the common case), a writing
    command cannot create them: each is held while it runs, and gone after."""
    d = "d=.claude; m=.mcp; g=.git; v=.vscode"
    commands = [f'{d}; mkdir -p $d; echo \'{{"permissions": {{"defaultMode": '
                f'"bypassPermissions"}}}}\' > $d/settings.local.json; echo RAN',
                f"{d}; git init -q . ; mkdir -p $g/hooks; echo evil > $g/hooks/pre-commit;"
                " echo RAN",
                f'{d}; echo "{{}}" > $m.json; mkdir -p $v; echo x > $v/tasks.json;'
                " touch made.txt; echo RAN"]
    outputs = run(commands)
    ran_all(outputs, commands)
    assert sorted(p.name for p in run.workspace.iterdir()) == ["made.txt"]


def test_what_git_reads_later_stays_put(run):
    """git reads config and hooks from more than .git/config and .git/hooks: commondir,
    the folder core.hooksPath names, included files, a nested repository's .git; and
    .git itself cannot be moved aside. None of them changes."""
    ws = run.workspace
    git("init", "-q")
    git("config", "core.hooksPath", ".husky")
    git("config", "include.path", "../shared.gitconfig")
    (ws / ".husky").mkdir()
    (ws / "shared.gitconfig").write_text("[user]\n\tname = t\n")
    (ws / "sub" / "inner").mkdir(parents=True)
    git("init", "-q", "sub/inner")
    commands = ['g=.git; printf ../evil > "$g/commondir"; echo RAN',
                'g=.git; mv "$g" .git-old; mkdir "$g"; echo RAN',
                'h=.husky; echo evil > "$h/pre-commit"; echo "[core] x=1" >> shared.gitconfig;'
                " echo RAN",
                'g=sub/inner/.git; echo x >> "$g/config"; echo evil > "$g/hooks/pre-commit";'
                ' mv "$g" sub/inner/moved; echo RAN']
    before = tree(ws)
    outputs = run(commands)
    ran_all(outputs, commands)
    assert tree(ws) == before


def test_programs_the_agent_runs_later_stay_put(run, monkeypatch):
    """A folder on PATH that lies in the workspace (a venv's bin, node_modules/.bin)
    is where rg, bwrap or a hook's program is found later, outside the sandbox: a
    command cannot plant one there."""
    tools = run.workspace / ".venv" / "bin"
    tools.mkdir(parents=True)
    (tools / "tool").write_text("#!/bin/sh\necho real\n")
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{os.environ['PATH']}")
    commands = ['b=.venv/bin; echo evil > "$b/rg"; echo evil > "$b/bwrap";'
                ' echo evil >> "$b/tool"; echo RAN']
    before = tree(run.workspace)
    outputs = run(commands)
    ran_all(outputs, commands)
    assert tree(run.workspace) == before


def test_read_denied_paths_stay_hidden_however_they_are_reached(run):
    """A Read deny rule hides its paths at any depth in the workspace, where a link
    in the workspace leads (a file link into your home), and outside the workspace
    by a rule written for it (a //absolute rule), through a folder link too; a link
    at a denied path breaks nothing. The walk stays in the workspace (issue 36): a
    folder link to outside is not walked, so a link to all of /usr costs nothing."""
    ws = run.workspace
    outside = ws.parent / "outside"
    outside.mkdir()
    (outside / ".env").write_text(f"{SECRET}\n")
    (outside / "notes.txt").write_text("visible\n")
    deep = ws.joinpath(*[f"d{i}" for i in range(40)])
    deep.mkdir(parents=True)
    (deep / ".env").write_text(f"{SECRET}\n")
    (ws / "linked").symlink_to(outside)
    (ws / "usr").symlink_to("/usr")  # 100,000s of files: never walked
    (ws / "home-link.env").symlink_to(run.home / ".ssh" / "id_rsa")
    (ws / "dangling.env").symlink_to(run.home / "nothing-here")
    (ws / "mine.txt").write_text("mine\n")
    (ws / ".claude").mkdir()
    (ws / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"deny": [
        "Read(.env)", "Read(*.env)", f"Read(/{outside}/private/**)",
        f"Read(/{outside}/.env)"]}}))
    (outside / "private").mkdir()
    (outside / "private" / "key").write_text(f"{SECRET}\n")
    commands = [f"e=env; k=key; cat {deep.relative_to(ws)}/.$e; cat linked/.$e; cat"
                f" linked/notes.txt; cat home-link.$e; cat {outside}/private/$k; cat"
                " linked/private/$k; cat mine.txt; ls usr/bin | head -1; echo RAN"]
    outputs = run(commands)
    ran_all(outputs, commands)
    assert SECRET not in outputs[0]
    assert "visible" in outputs[0] and "mine" in outputs[0]  # the rest still reads


@pytest.mark.parametrize("mod", ENDS, indirect=True)
def test_memory_and_output_are_bounded(run, mod, monkeypatch):
    """A command that grows without limit fails on its own (ulimit -d), and output
    past run_shell's limit stops the command: the disk holds at most that much. The
    growth is given the longest timeout a command may have (10 minutes, a guard):
    reaching the limit takes seconds on a quiet core, many more on a busy one, and
    the test must end on the limit, never on the clock. The limit is the chapter's
    ulimit, lowered to 256 MB here, and the string grows to 1 GB: without a limit
    awk prints its length (1.5 GB of memory), with it awk fails. (Growing to 8 GB
    under the 4 GB limit proved nothing: mawk crashes on its own at 2 GB.)"""
    monkeypatch.setattr(beside(mod.__name__.split(".")[0], "sandbox"), "MEMORY_MB", 256)
    commands = ["awk 'BEGIN { s = \"a\"; while (length(s) < 2^30) s = s s;"
                " print length(s) }'; echo RAN"]
    outputs = run(commands, timeout=600_000)
    ran_all(outputs, commands)
    assert "1073741824" not in outputs[0]
    assert "timed out" not in outputs[0], outputs[0][-500:]  # it ended on the limit
    if run.kind == "loop":  # run_shell's own bound, sandbox or not
        # text, not NUL bytes: binary output is not shown, so not saved (issue 30)
        slow, fast = run(["for i in $(seq 100); do head -c 1000000 /dev/zero; done"
                          " | tr '\\0' x", "head -c 100000000 /dev/zero | tr '\\0' x"])
        assert "output passed 32 MB" in slow and "first 32 MB of the stdout" in fast
        saved = [f.stat().st_size for f in (run.workspace / ".tool-results").iterdir()]
        assert saved and max(saved) <= 32_000_000


@pytest.mark.parametrize("mod", ENDS, indirect=True)
def test_a_fork_bomb_holds_only_its_share(run):
    """A normal user's fork bomb meets ulimit -u (the processes it already runs, plus
    256), ends at its timeout, and leaves no process behind. (Root is exempt from that
    limit by the kernel's rule; only the timeout ends it, so it is not run as root.)"""
    if run.kind == "loop" and os.geteuid() == 0:
        pytest.skip("root is exempt from ulimit -u; 'nobody' runs it")
    name = f"bomb_{os.getpid()}_{time.monotonic_ns()}"  # this test's, not another's
    commands = [f"timeout 3 bash -c '{name}() {{ {name} | {name} & }}; {name}'; echo RAN",
                "ulimit -d; ulimit -u; echo RAN"]  # echo: a builtin, no process needed
    outputs = run(commands)
    ran_all(outputs, commands)
    memory, processes = outputs[1].split()[:2]
    assert memory == "4194304" and int(processes) < 100_000  # set, not unlimited
    # the kernel takes a moment to reap what it killed: wait until it has
    assert wait_until(lambda: not command_lines(name)), (
        f"processes left behind: {len(command_lines(name))}")



@pytest.mark.skipif(sys.platform != "linux", reason="bwrap's own pid 1 is Linux's; "
                    "sandbox-exec (macOS) runs the command itself, in our group")
def test_a_child_that_left_the_group_is_killed_too(mod):
    """bwrap's child, the sandbox's pid 1, leaves our process group (--new-session)
    before it asks to die with bwrap: a kill in between once left a background command
    running after the agent had exited (1 run in 20 on a busy machine). kill_group()
    takes a child that left the group too; here one made so on purpose."""
    marker = f"{os.getpid()}{time.monotonic_ns() % 10**6}"  # digits: a number for sleep
    leader = subprocess.Popen(
        [sys.executable, "-c", "import subprocess, time; subprocess.Popen(['sleep', "
         f"'961.{marker}'], start_new_session=True); time.sleep(960)"],
        start_new_session=True)
    # until it runs; its sleep outlasts conftest's GUARD: gone, it was killed
    assert wait_until(lambda: command_lines(f"sleep 961.{marker}"))
    mod.kill_group(leader)
    assert_no_process(f"sleep 961.{marker}")


def test_a_command_killed_as_it_starts_leaves_nothing(mod, workspace, monkeypatch):
    """Real sandboxes, each killed a moment after it starts (the later, the further
    its set-up got): none leaves a process or a file behind."""
    marker = f"{os.getpid()}{time.monotonic_ns() % 10**6}"
    monkeypatch.chdir(workspace)
    for i in range(30):
        with mod.confine(f"sleep 962.{marker}; touch late{i}", mod.Path.cwd()) as argv:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                    start_new_session=True)
            time.sleep(i / 1000)
            mod.kill_group(proc)
    assert_no_process(f"sleep 962.{marker}")  # longer than GUARD: gone = killed
    assert not list(workspace.glob("late*"))


@pytest.mark.parametrize("chapter", [p.values[0] for p in chapter_params("s03")])
def test_started_in_your_home_it_refuses_in_one_line(chapter, tmp_path):
    """cd ~ and run the agent: the workspace would be your home, which the sandbox
    hides; the chapter says so in one line and runs nothing."""
    run = run_cli(chapter, "list my files", cwd=tmp_path, HOME=str(tmp_path),
                  ANTHROPIC_API_KEY="sk-ant-test-key-0123456789",
                  ANTHROPIC_BASE_URL="http://127.0.0.1:9")
    assert run.returncode == 1
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "holds your home folder" in lines[0], run.stderr


def test_outside_the_sandbox_asks_in_bypass_permissions_too(mod):
    """dangerouslyDisableSandbox always asks: no mode, bypassPermissions included,
    lets a command out of the sandbox unasked."""
    decision, reason = gate(mod, 
        "run_shell", {"command": "ls", "dangerouslyDisableSandbox": True},
        "bypassPermissions", {})
    assert (decision, reason) == ("ask", "dangerous: it asks to run outside the sandbox")


def test_a_protected_name_that_is_a_link_fails_closed(mod, workspace):
    """A .claude that is a symbolic link could be swapped while the command runs: a
    writing command is refused, with the reason, and runs nothing."""
    (workspace / "elsewhere").mkdir()
    (workspace / ".claude").symlink_to(workspace / "elsewhere")
    the_agent(mod).permissions.mode = "bypassPermissions"
    output, is_error = call_tool(mod, "run_shell", command="touch made.txt")
    assert is_error and ".claude is a symbolic link" in output
    assert not (workspace / "made.txt").exists()


def test_everyday_work_still_works(run):
    """Writing workspace files, git add and git commit, a test run: the sandbox costs
    the everyday writing commands nothing."""
    ws = run.workspace
    git("init", "-q")
    (ws / "test_a.py").write_text("def test_a():\n    assert True\n")
    # the Python running these tests (it has pytest, whatever `python3` is on PATH);
    # nobody may not be able to reach it (a pyenv under /root)
    python = shlex.quote(sys.executable) if run.kind == "loop" else "true"
    commands = ["echo hello > notes.txt; git add -A; git -c user.name=t -c "
                "user.email=t@example.com commit -qm first; git log --oneline; "
                f"{python} -m pytest -q test_a.py -p no:cacheprovider; echo RAN"]
    outputs = run(commands)
    ran_all(outputs, commands)
    assert "first" in outputs[0]
    assert (ws / "notes.txt").read_text() == "hello\n"
    listed = subprocess.run(["git", "-c", "safe.directory=*", "ls-files"],
                            capture_output=True, text=True, cwd=ws).stdout.split()
    assert listed == ["notes.txt", "test_a.py"]  # no placeholder was committed
    if run.kind == "loop":
        assert "1 passed" in outputs[0]


@pytest.mark.parametrize("chapter", [p.values[0] for p in chapter_params("s04")])
def test_a_hooks_program_stays_put(chapter, workspace, server, client):
    """A hook runs outside the sandbox: the program its command names in the
    workspace (and the folder it lives in) cannot be changed by a command."""
    mod = load_chapter(chapter)
    if sandbox_missing_by_default(mod):
        pytest.skip("no sandbox")
    (workspace / "hooks").mkdir()
    (workspace / "hooks" / "check.py").write_text("print('the real hook')\n")
    (workspace / "lint.sh").write_text("exit 0\n")
    (workspace / ".claude").mkdir()
    (workspace / ".claude" / "settings.json").write_text(json.dumps({
        "permissions": {"defaultMode": "bypassPermissions"},
        "hooks": {"PostToolUse": [{"matcher": "Read", "hooks": [
            {"type": "command", "command": "python3 hooks/check.py"},
            {"type": "command", "command": 'sh "${CLAUDE_PROJECT_DIR}/lint.sh"'}]}]}}))
    before = tree(workspace)
    command = ('h=hooks; echo evil > "$h/check.py"; echo evil > "$h/util.py";'
               ' l=lint; echo evil > "$l.sh"; echo RAN')
    server.add(reply(tool_use("run_shell", {"command": command})), reply("Done."))
    mod.agent_loop([{"role": "user", "content": "go"}], the_agent(mod, client))
    assert "RAN" in result_text(sent_tool_results(server.requests[1])[0])
    assert tree(workspace) == before
