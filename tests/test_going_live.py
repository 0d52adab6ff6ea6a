"""Going live fails clearly, and the command line says what it needs.

- A key that cannot work (the placeholder from .env.example, an empty value in .env,
  stray quotes or spaces) is one line on stderr that says what to fix, and status 1,
  before any request is made.
- `--help` names the offline demo, the variables, `.env` and every flag.
- `code.py | head -2`: once the reader has gone, the chapter stops quietly, status 0.

The key and --help cases call main() in this process (run_main); a key in `.env` needs
a course laid out around the chapter, so those cases load a copy of code.py from a
scratch course folder. The closed pipe needs a real process and a real pipe.
"""

from __future__ import annotations

import io
import itertools
import shutil
import subprocess
import sys

import warm  # tests/warm.py: chapter runs forked warm
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from conftest import CHAPTERS, ROOT, chapter_params, clean_env, run_cli, run_main, \
    teaching_and_last
from offline.chapters import load_file

_copies = itertools.count(1)


@pytest.fixture(params=teaching_and_last("s01"))
def chapter(request):
    return request.param


def one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


@pytest.mark.parametrize("key, says", [
    ("sk-ant-...", "is still the placeholder from .env.example"),
    ("'sk-ant-api03-abc'", "has quotes in it"),
    ("\u201csk-ant-api03-abc\u201d", "has quotes in it"),  # curly quotes, from a web page
    ("sk-ant-api03-abc ", "has spaces in it"),
])
def test_a_key_that_cannot_work_is_one_line(chapter, workspace, key, says):
    """A key from the environment that cannot work: one line that says what to fix."""
    proc = run_main(chapter, "hi", cwd=workspace, ANTHROPIC_API_KEY=key,
                    ANTHROPIC_BASE_URL="http://127.0.0.1:9")  # never reached
    assert proc.returncode == 1 and proc.stdout == ""
    line = one_line(proc.stderr)
    assert line.startswith("error: ANTHROPIC_API_KEY in your environment " + says), line
    assert "offline demo" in line


def run_copy_with_env_file(chapter: str, env_file: str, tmp_path: Path,
                           monkeypatch) -> tuple[int, str]:
    """main(["hi"]) of a copy of the chapter, in a course folder whose .env holds
    `env_file`, with no key in the environment. Returns (status, stderr)."""
    course = tmp_path / "course"
    shutil.copytree(ROOT / chapter, course / chapter,
                    ignore=shutil.ignore_patterns("*.md", "__pycache__"))
    (course / ".env").write_text(env_file)
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    module = load_file(course / chapter / "code.py", f"copy_{next(_copies)}.code",
                       course / chapter)  # as `python course/sNN/code.py` loads it
    err = io.StringIO()
    with redirect_stdout(io.StringIO()), redirect_stderr(err):
        status = module.main(["hi"])
    return status, err.getvalue()


@pytest.mark.parametrize("env_file, says", [
    ((ROOT / ".env.example").read_text(), "is still the placeholder from .env.example"),
    ("ANTHROPIC_API_KEY=\n", "is empty: put your key after the ="),
    ('ANTHROPIC_API_KEY="sk-ant-api03-abc\n', "cannot be read (a stray quote?)"),
    ("ANTHROPIC_API_KEY=\u2018sk-ant-api03-abc\u2019\n", "has quotes in it"),
])
def test_a_key_in_env_that_cannot_work_is_one_line(chapter, tmp_path, monkeypatch,
                                                   env_file, says):
    """`cp .env.example .env` and no edit (or an empty key, or a stray quote): one
    line naming .env, not "cannot reach the Anthropic API"."""
    status, stderr = run_copy_with_env_file(chapter, env_file, tmp_path, monkeypatch)
    assert status == 1
    assert one_line(stderr).startswith(f"error: ANTHROPIC_API_KEY in .env {says}")


def test_an_empty_key_in_the_environment_is_no_key(workspace):
    """`ANTHROPIC_API_KEY= python s01_agent_loop/code.py "task"`, no key in .env: an
    empty variable is no key, as Claude Code reads it (2.1.332 says "Not logged in"),
    so the task is not run, one line says so, and the demo plays (the README says it).
    The real command line, in a process."""
    proc = run_cli(CHAPTERS[0], "fix the bug", cwd=workspace, ANTHROPIC_API_KEY="",
                   ANTHROPIC_AUTH_TOKEN="")
    assert proc.returncode == 0, proc.stderr
    first = proc.stdout.splitlines()[0]
    assert first.startswith("Your task was not run: no ANTHROPIC_API_KEY"), first
    assert "scripted" in proc.stdout.lower() and "Traceback" not in proc.stderr
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert "An empty variable in your environment is no key" in readme


def test_help_names_the_demo_the_variables_and_every_flag(chapter, workspace):
    """--help: the offline demo, the variables and .env, and a word on every flag."""
    proc = run_main(chapter, "--help", cwd=workspace)
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())
    for needed in ("offline demo", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN",
                   "ANTHROPIC_BASE_URL", "MODEL_ID", ".env", ".env.example",
                   "--offline play the scripted offline demo",
                   "--max-turns N model calls a task may make (default 50)"):
        assert needed in text, f"--help lacks {needed!r}:\n{proc.stdout}"
    if chapter >= "s03":
        assert "this session's permission mode" in text


@pytest.mark.parametrize("chapter", [c for c in chapter_params("s01")
                                     if c.id in ("s01", "s06")])
def test_a_closed_pipe_ends_the_run_quietly(chapter, tmp_path):
    """`code.py --offline | head -2`: the reader leaves after two lines; the chapter
    stops at its next write, with no error and status 0. (Unbuffered output, so that
    the next write comes at once, as it does once a long output fills the pipe.)"""
    proc = warm.Popen(
        [sys.executable, str(ROOT / chapter / "code.py"), "--offline"], cwd=tmp_path,
        env=clean_env(TMPDIR=str(tmp_path), PYTHONUNBUFFERED="1"),
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = [proc.stdout.readline() for _ in range(2)]
    proc.stdout.close()  # what `head -2` does once it has its lines
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0, err
    assert b"OFFLINE DEMO" in b"".join(first)
    assert err == "", err
