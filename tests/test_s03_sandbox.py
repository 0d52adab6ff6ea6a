"""s03: the OS sandbox around run_shell, judged by its effects.

The classifier is fooled on purpose: commands it reads as read-only (a hidden second
line, `[ x > f ]`, a git config that names a program, a glob that becomes an option,
paths that leave through `~+0` or a symbolic link) run through the real loop, real
SDK and scripted server. With the sandbox, nothing on disk changes and no secret (in
a fake home's ~/.ssh and ~/.aws, in a Read-denied file) reaches a tool_result; the
everyday read-only commands still run and print; protected paths survive
bypassPermissions; a run outside the sandbox asks. Without bubblewrap these tests
skip with the install command (and fail when CI is set); the fallback is tested too.
Runs against s03 and every later chapter.
"""

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import warm  # tests/warm.py: chapter runs forked warm
from conftest import (ROOT, call_tool, chapter_params, load_chapter, result_text,
                      run_agent, run_cli, sent_tool_results, teaching_and_last)
from conftest import sandbox_missing_by_default, the_agent
from offline.server import reply, tool_use

SECRET = "s3cr3t-0f-the-t3st"
INSTALL = "sudo apt-get install bubblewrap"


@pytest.fixture(params=teaching_and_last("s03"))
def mod(request):
    return load_chapter(request.param)


@pytest.fixture
def sandboxed(mod):
    """The chapter's sandbox can start here; else skip (fail when CI is set)."""
    missing = sandbox_missing_by_default(mod)  # default settings
    if missing:
        message = f"no sandbox: {missing} ({INSTALL})"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return mod


@pytest.fixture
def secrets(tmp_path, workspace, monkeypatch) -> Path:
    """A fake home holding credentials, a file outside the workspace, and a file in
    the workspace that a Read deny rule covers: all hold SECRET."""
    home = tmp_path / "home"
    for path in (home / ".ssh" / "id_rsa", home / ".aws" / "credentials",
                 tmp_path / "outside.txt", workspace / "private.txt"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{SECRET}\n")
    monkeypatch.setenv("HOME", str(home))
    settings(workspace, deny=["Read(private.txt)"])
    (workspace / "notes.txt").write_text("hello sandbox\n")
    return home


def settings(workspace: Path, sandbox: dict | None = None, **permissions) -> None:
    folder = workspace / ".claude"
    folder.mkdir(exist_ok=True)
    body = {"permissions": permissions} | ({"sandbox": sandbox} if sandbox else {})
    (folder / "settings.json").write_text(json.dumps(body))


def git(*args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
           "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", *args], env=env, check=True, capture_output=True,
                          text=True).stdout


def snapshot(root: Path) -> dict:
    """Every file under root and its bytes (symbolic links as their target)."""
    found = {}
    for folder, _, files in os.walk(root):
        for name in files:
            path = Path(folder, name)
            found[path] = (os.readlink(path) if path.is_symlink()
                           else path.read_bytes())
    return found


def run_commands(mod, server, client, commands: list) -> list:
    """The model runs each command with run_shell, one per turn: their tool_results."""
    server.add(*[reply(tool_use("run_shell", {"command": c}, id=f"toolu_{i}"))
                 for i, c in enumerate(commands)], reply("Done."))
    run_agent(mod, client, "look around")
    return [sent_tool_results(r)[0] for r in server.requests[1:]]


# Each of these reads as read-only to the classifier, or hides what it runs.
ATTACKS = [
    "echo ==\ntouch pwned",                  # tree-sitter and bash split it apart
    "ls # \\\ntouch pwned",
    "[ x > notes.txt ]",                     # `>` inside [ ] empties the file
    "cat <<EOF > pwned\nhi\nEOF",            # a here-document with a redirection
    "sort [^b]*",                            # a file named --output=pwned joins in
    "cat ~+0/../outside.txt",                # ~+0 is $PWD: out of the workspace
    "cat link/../.aws/credentials",          # .. after a link to ~/.ssh: your home
    "cat ~/.ssh/id_rsa; cat $HOME/.aws/credentials; cat private.txt",
    "git status",                            # .git/config names a program (below)
]


@pytest.mark.parametrize("mode", ["default", "plan"])
def test_attacks_change_nothing_and_leak_nothing(sandboxed, server, client, workspace,
                                                 secrets, tmp_path, mode):
    """Whatever the classifier let through runs confined: no file changes anywhere,
    and no secret reaches the model."""
    mod = sandboxed
    the_agent(mod).permissions.mode = mode
    git("init", "-q")
    git("config", "core.fsmonitor", f"cat {secrets}/.ssh/id_rsa; touch pwned; false")
    git("config", "core.pager", "touch pwned; cat")
    (workspace / "--output=pwned").write_text("a\n")
    (workspace / "link").symlink_to(secrets / ".ssh")
    before = snapshot(tmp_path)
    results = run_commands(mod, server, client, ATTACKS)
    assert len(results) == len(ATTACKS)
    for command, result in zip(ATTACKS, results):
        assert SECRET not in result_text(result), f"{command!r} leaked the secret"
    assert snapshot(tmp_path) == before
    assert not list(tmp_path.rglob("pwned"))


EVERYDAY = {  # command -> what its output shows
    "ls": "notes.txt", "cat notes.txt": "hello sandbox", "git status": "branch",
    "git log --oneline": "first", "grep -r hello .": "notes.txt:hello sandbox",
    "find . -name '*.txt'": "./notes.txt", "sed -n 1p notes.txt": "hello sandbox",
    "wc -l notes.txt": "1 notes.txt", "head -1 notes.txt": "hello sandbox",
    "tail -1 notes.txt": "hello sandbox", "rg hello": "hello sandbox",
    "jq .name data.json": '"demo"',
}


def test_everyday_read_only_commands_still_run_and_print(sandboxed, server, client,
                                                         workspace):
    """The sandbox costs the everyday commands nothing: they run unasked and print."""
    (workspace / "notes.txt").write_text("hello sandbox\n")
    (workspace / "data.json").write_text('{"name": "demo"}\n')
    git("init", "-q")
    git("add", "notes.txt")
    git("commit", "-q", "-m", "first")
    commands = [c for c in EVERYDAY if shutil.which(c.split()[0])]
    results = run_commands(sandboxed, server, client, commands)
    for command, result in zip(commands, results):
        text = result_text(result)
        assert not result.get("is_error") and EVERYDAY[command] in text, (command, text)


def test_programs_under_your_home_still_run(sandboxed, server, client, workspace,
                                            secrets, monkeypatch):
    """Your home is hidden, but not the programs on your PATH that live in it (a
    venv, pyenv, ~/.local/bin) nor the Python running the agent: they run, while the
    credentials beside them stay unreadable."""
    tools = secrets / ".local" / "bin"
    tools.mkdir(parents=True)
    (tools / "hello-tool").write_text("#!/bin/sh\necho hello from your home\n")
    (tools / "hello-tool").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{os.environ['PATH']}")
    settings(workspace, defaultMode="bypassPermissions")  # nothing asks: all run
    results = run_commands(sandboxed, server, client, [
        # subtle: sys.executable, not `python3`: the tests may run with the venv's
        # python called directly, its folder not on PATH.
        "hello-tool",
        f"{shlex.quote(sys.executable)} -c 'import sys; print(sys.prefix)'",
        "ls ~/.local/bin; cat ~/.ssh/id_rsa"])
    assert "hello from your home" in result_text(results[0])
    assert os.path.realpath(sys.prefix) in result_text(results[1])
    assert "hello-tool" in result_text(results[2])
    assert SECRET not in result_text(results[2])


def test_a_version_managers_shims_still_run(sandboxed, server, client, workspace,
                                             secrets, monkeypatch):
    """pyenv's way (rbenv and asdf do the same): the folder on PATH holds shims, and a
    shim runs the manager's own program from the folder above, under your home. That
    folder is visible read-only, so `python3` through a shim runs; keys stay hidden."""
    root = secrets / ".toolenv"
    (root / "libexec").mkdir(parents=True)
    (root / "shims").mkdir()
    (root / "libexec" / "toolenv").write_text('#!/bin/sh\necho "run by toolenv: $1"\n')
    (root / "shims" / "hello-shim").write_text(
        f'#!/bin/sh\nexec "{root}/libexec/toolenv" hello-shim "$@"\n')
    for script in (root / "libexec" / "toolenv", root / "shims" / "hello-shim"):
        script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{root / 'shims'}{os.pathsep}{os.environ['PATH']}")
    settings(workspace, defaultMode="bypassPermissions")  # nothing asks: all run
    results = run_commands(sandboxed, server, client, [
        "hello-shim", "cat ~/.ssh/id_rsa"])
    assert "run by toolenv: hello-shim" in result_text(results[0])
    assert SECRET not in result_text(results[1])


def test_protected_paths_survive_bypass_permissions(sandboxed, server, client, workspace):
    """bypassPermissions runs a write the classifier cannot see, but the sandbox keeps
    .git/config, .git/hooks and .claude read-only while the workspace is writable."""
    settings(workspace, defaultMode="bypassPermissions")
    git("init", "-q")
    (workspace / ".git" / "hooks" / "pre-commit").write_text("#!/bin/sh\n")
    before = snapshot(workspace)
    code = ("for f in ['.git/config', '.git/hooks/pre-commit', '.claude/settings.json']:"
            "\n try: open(f, 'a').write('x')\n except OSError as e: print(e)"
            "\nopen('made.txt', 'w').write('ok')")
    results = run_commands(sandboxed, server, client, [f"python3 -c \"{code}\""])
    assert "Read-only file system" in result_text(results[0])
    assert (workspace / "made.txt").read_text() == "ok"  # the workspace is writable
    after = snapshot(workspace)
    after.pop(workspace / "made.txt")
    assert after == before


@pytest.mark.parametrize("mode", ["default", "acceptEdits", "plan"])
def test_running_outside_the_sandbox_asks(sandboxed, workspace, mode):
    """dangerouslyDisableSandbox is never allowed by a read-only verdict or by
    acceptEdits: it asks (nobody answers in a test: no), plan mode denies it."""
    mod = sandboxed
    the_agent(mod).permissions.mode = mode
    output, is_error = call_tool(mod, "run_shell", command="ls",
                                 dangerouslyDisableSandbox=True)
    assert is_error and ("outside the sandbox" in output or "plan mode" in output)
    assert not call_tool(mod, "run_shell", command="ls")[1]  # sandboxed, it runs


def test_allow_unsandboxed_commands_false_ignores_the_request(sandboxed, workspace):
    """With sandbox.allowUnsandboxedCommands false the request is ignored (as Claude
    Code does): the command runs in the sandbox, unasked."""
    settings(workspace, sandbox={"allowUnsandboxedCommands": False})
    output, is_error = call_tool(sandboxed, "run_shell", command="touch x",
                                 dangerouslyDisableSandbox=True)
    assert is_error and "outside the sandbox" not in output  # asks as a write does
    assert not (workspace / "x").exists()


def test_the_seatbelt_profile_says_what_the_policy_says(mod):
    """macOS: cannot run here, so the profile's text is checked: writes denied but
    where allowed, protected paths denied after, network denied, home unreadable but
    the workspace, a denied path unreadable again."""
    ws, home = Path("/Users/me/ws"), Path("/Users/me")
    profile = sys.modules[mod.argv_for.__module__].seatbelt_profile(
        [ws], [ws / ".git/config"], [home, ws / "private.txt"], ws).split("\n")
    order = ["(deny network*)", "(deny file-write*)",
             '(allow file-write* (subpath "/Users/me/ws"))',
             '(deny file-write* (subpath "/Users/me/ws/.git/config"))',
             '(deny file-read* (subpath "/Users/me"))',
             '(allow file-read* (subpath "/Users/me/ws"))',
             '(deny file-read* (subpath "/Users/me/ws/private.txt"))']
    assert [line for line in profile if line in order] == order


def bin_without_bwrap(tmp_path: Path) -> str:
    """A PATH with every program of this one but bwrap."""
    farm = tmp_path / "bin"
    farm.mkdir()
    for folder in os.environ["PATH"].split(os.pathsep):
        for program in Path(folder).glob("*") if Path(folder).is_dir() else ():
            if program.name != "bwrap" and not (farm / program.name).exists():
                (farm / program.name).symlink_to(program)
    return str(farm)


@pytest.mark.parametrize("chapter", [p.values[0] for p in chapter_params("s03")][:1]
                         + [p.values[0] for p in chapter_params("s03")][-1:])
def test_without_bubblewrap_the_demo_says_so_and_still_runs(chapter, tmp_path):
    """No bwrap: one line at start names the fix, and the offline demo still works,
    on the classifier alone."""
    run = run_cli(chapter, "--offline", cwd=tmp_path, PATH=bin_without_bwrap(tmp_path),
                  timeout=120)
    assert run.returncode == 0, run.stderr
    lines = [line for line in (run.stdout + run.stderr).split("\n")
             if line.startswith("sandbox:")]
    assert lines and INSTALL in lines[0] and "best effort" in lines[0]


@pytest.mark.parametrize("mod", teaching_and_last("s03", between=False), indirect=True)
def test_with_bubblewrap_the_demo_runs_confined(sandboxed):
    """`python sNN/code.py --offline` with bwrap here: it ends with status 0 and says
    its commands run confined. The run is the one the site's transcript shows
    (docs/_hooks/transcripts.py: run by the build of this test run, and cached by
    what it depends on, this machine's sandbox among it; run here if not cached)."""
    sys.path.insert(0, str(ROOT / "docs" / "_hooks"))
    import transcripts
    chapter = sandboxed.__name__.split(".")[0]
    assert "confined" in transcripts.sandbox_here(chapter)
    ran = transcripts.cached_demo(chapter, transcripts.demo_fingerprint(chapter),
                                  popen=warm.Popen)
    assert "sandbox: shell commands run confined" in ran  # (status 0, or it raised)


def test_the_sandbox_module_is_imported_from_the_chapter(mod):
    assert mod.argv_for.__module__ == mod.__name__.replace(".code", ".sandbox")
    assert Path(sys.modules[mod.argv_for.__module__].__file__).parent == (
        ROOT / mod.__name__.split(".")[0])
