"""The command line every chapter keeps: one-shot, REPL, offline demo, clear errors.

A learner's first command, `python sNN_x/code.py` with no key, runs in a subprocess
in s01 and s06 (every chapter's demo runs as a process in the docs build too, and
must print its README's transcript). Each other contract runs as a subprocess once (in s01, and Ctrl-C
in s06 too, whose loop streams), as a learner runs it; its other cases call the same
main() in the test's process (run_main: same arguments, environment, directory and
stdin), which spares ~1.5 s of Python and SDK start-up per case (the docs build runs
every chapter's demo as a process again). The live path is exercised against the scripted server through
ANTHROPIC_BASE_URL, exactly as a real provider would be reached.
"""

import re
import signal
import subprocess
import sys

import warm  # tests/warm.py: chapter runs forked warm
from pathlib import Path

import pytest

from conftest import (GUARD, ROOT, beside, chapter_params, clean_env, load_chapter, run_cli,
                      run_main, teaching_and_last, wait_until)
from offline.server import ScriptedServer, error, recorded, reply, tool_use


@pytest.fixture(params=teaching_and_last("s01"))
def chapter(request):
    return request.param


FIRST = chapter_params("s01")[0].values[0]  # the chapter whose contracts run as processes


def process_once(chapter):
    """run_cli for the first chapter, run_main (the same main(), in-process) after it."""
    return run_cli if chapter == FIRST else run_main


def live(server, **extra):
    return dict(ANTHROPIC_API_KEY="test-key", ANTHROPIC_BASE_URL=server.url, **extra)


def test_one_shot_prints_the_answer_and_exits_0(chapter, server, workspace):
    """`code.py "task"` runs the task to the end against the configured API."""
    server.add(reply(tool_use("run_shell", {"command": "echo hello > /dev/null; echo hi"})),
               reply("The answer is 42."))
    run = process_once(chapter)
    proc = run(chapter, "what is the answer?", cwd=workspace, **live(server))
    assert proc.returncode == 0, proc.stderr
    assert "The answer is 42." in proc.stdout
    assert "> run_shell(" in proc.stdout  # the call is shown as it happens
    assert server.requests[0]["messages"][0]["content"] == "what is the answer?"


def test_model_id_comes_from_the_environment(chapter, server, workspace):
    server.add(reply("ok"))
    proc = run_main(chapter, "hi", cwd=workspace, **live(server, MODEL_ID="my-model"))
    assert proc.returncode == 0, proc.stderr
    assert server.requests[0]["model"] == "my-model"


def test_default_model_is_a_current_claude_model(chapter, server, workspace):
    server.add(reply("ok"))
    run_main(chapter, "hi", cwd=workspace, **live(server))
    assert re.fullmatch(r"claude-[a-z]+-[0-9-]+", server.requests[0]["model"])


@pytest.mark.parametrize("leave", ["exit\n", "q\n", ""])
def test_repl_keeps_the_conversation_and_leaves_cleanly(chapter, server, workspace, leave):
    """The REPL answers each prompt with the history so far; exit, q or EOF leave with 0."""
    server.add(reply("first answer"), reply("second answer"))
    run = process_once(chapter) if leave == "exit\n" else run_main
    proc = run(chapter, cwd=workspace, input="one\ntwo\n" + leave, **live(server))
    assert proc.returncode == 0, proc.stderr
    assert "first answer" in proc.stdout and "second answer" in proc.stdout
    assert f"{chapter[:3]} >> " in proc.stdout
    assert [m["content"] for m in server.requests[1]["messages"] if m["role"] == "user"] == ["one", "two"]


def test_rejected_key_is_one_clear_line(chapter, server, workspace):
    server.add(error(401, "authentication_error", "invalid x-api-key"))
    proc = run_main(chapter, "hi", cwd=workspace, **live(server))
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "ANTHROPIC_API_KEY" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_bad_model_name_is_one_clear_line(chapter, workspace):
    with ScriptedServer([reply("unused")], models=["claude-real"]) as server:
        proc = run_main(chapter, "hi", cwd=workspace, **live(server, MODEL_ID="claude-typo"))
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr and "MODEL_ID" in proc.stderr
    assert "'claude-typo'" in proc.stderr  # the model it asked for


def test_a_base_url_that_is_no_api_is_one_line_naming_it(workspace):
    """A server that answers 404 with a web page, run as a learner runs it: one line,
    naming ANTHROPIC_BASE_URL and what it is set to, nothing else on the screen."""
    page = recorded({"status": 404, "headers": {"content-type": "text/html"},
                     "body": b"<!DOCTYPE html><html><title>Not Found</title></html>"})
    with ScriptedServer([page]) as server:
        url = server.url
        proc = run_cli(FIRST, "hi", cwd=workspace, **live(server))
    assert proc.returncode == 1
    assert proc.stdout == ""
    [line] = proc.stderr.splitlines()
    assert f"ANTHROPIC_BASE_URL is {url}" in line, line
    assert "Anthropic-compatible API" in line and "<html" not in line.lower(), line


def test_unreachable_api_is_one_clear_line(chapter, workspace, monkeypatch):
    if chapter != FIRST:  # s01 shows the SDK's retries first; the rest need not wait 3 s
        monkeypatch.setattr(beside(chapter, "command_line"), "MAX_RETRIES", 0)
    proc = run_main(chapter, "hi", cwd=workspace, ANTHROPIC_API_KEY="k",
                   ANTHROPIC_BASE_URL="http://127.0.0.1:9")  # nothing listens on port 9
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr and "cannot reach" in proc.stderr


@pytest.mark.parametrize("chapter", [p for p in chapter_params("s01") if p.id in ("s01", "s06")])
def test_ctrl_c_is_one_line_not_a_traceback(chapter, server, workspace):
    """Ctrl-C while the model is thinking: status 130, one line (s01's loop, and s06's,
    which streams; a real SIGINT needs a process of its own)."""
    server.add(reply("too late", delay=30))
    proc = warm.Popen(
        [sys.executable, str(ROOT / chapter / "code.py"), "hi"], cwd=workspace,
        env=clean_env(**live(server)), stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # the event: the request reached the server (the model is thinking), however
    # long the chapter took to start; a Ctrl-C before it would hit the start-up
    assert wait_until(lambda: server.requests, unless=lambda: proc.poll() is not None)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=GUARD)
    assert proc.returncode == 130
    assert "Traceback" not in err and "interrupted" in err


def demo_workspace(stdout: str) -> Path:
    return Path(re.search(r"Workspace: (\S+)", stdout).group(1))


# The demos: each chapter's runs in the docs build (its transcript, checked against its
# README); here the contracts around it, in the first chapter and the last.
DEMO_CHAPTERS = teaching_and_last("s01", between=False)


@pytest.mark.parametrize("chapter", DEMO_CHAPTERS)
def test_no_key_plays_the_offline_demo(chapter, workspace, tmp_path):
    """With no key at all, the chapter plays its scripted demo and exits 0."""
    proc = run_cli(chapter, cwd=workspace, TMPDIR=str(tmp_path), timeout=120, cold=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "OFFLINE DEMO" in proc.stdout and "To go live" in proc.stdout
    assert "> " in proc.stdout  # tool calls are shown
    folder = demo_workspace(proc.stdout)
    assert folder.parent == tmp_path
    # where its scratch folder is, that it stays, and how to remove it: and it does stay
    assert "(a scratch copy; it stays after the demo)" in proc.stdout
    assert f"It stays when the demo ends:\nlook around, then delete it (rm -rf {folder})" \
        in proc.stdout and folder.is_dir()


@pytest.mark.parametrize("chapter", DEMO_CHAPTERS)
def test_a_task_with_no_key_says_it_was_not_run(chapter, workspace, tmp_path):
    """With no key, a task given on the command line is not quietly swapped for the
    demo: one line says it was not run and why, then the demo plays."""
    proc = run_main(chapter, "fix the bug", cwd=workspace, TMPDIR=str(tmp_path),
                    timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    first, _, rest = proc.stdout.partition("\n")
    assert first.startswith("Your task was not run: no ANTHROPIC_API_KEY"), first
    assert "offline demo" in first and "OFFLINE DEMO" in rest
    assert "fix the bug" not in rest  # the demo plays its own prompts


@pytest.mark.parametrize("chapter", DEMO_CHAPTERS)
def test_offline_flag_forces_the_demo_even_with_a_key(chapter, workspace, tmp_path):
    proc = run_main(chapter, "--offline", cwd=workspace, TMPDIR=str(tmp_path), timeout=120,
                   ANTHROPIC_API_KEY="a-real-looking-key", ANTHROPIC_BASE_URL="http://127.0.0.1:9")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "OFFLINE DEMO" in proc.stdout


@pytest.mark.parametrize("chapter", chapter_params("s01")[:1])
def test_s01_demo_only_looks(chapter, workspace, tmp_path):
    """The s01 demo inspects the sample project with shell commands and changes nothing."""
    proc = run_main(chapter, "--offline", cwd=workspace, TMPDIR=str(tmp_path), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "> run_shell(command='ls')" in proc.stdout
    assert "FAILED (failures=2)" in proc.stdout  # quoted from the real unittest run
    copy = demo_workspace(proc.stdout)
    original = ROOT / "offline" / "sample_project" / "inventory.py"
    assert (copy / "inventory.py").read_bytes() == original.read_bytes()


@pytest.mark.parametrize("chapter", [p for p in chapter_params("s02") if p.id == "s02"])
def test_s02_demo_fixes_the_bug(chapter, workspace, tmp_path):
    """The s02 demo hits the ambiguous edit, recovers, keeps curly quotes, and the tests pass."""
    proc = run_main(chapter, "--offline", cwd=workspace, TMPDIR=str(tmp_path), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "found 2 times" in proc.stdout
    assert "Tests: Ran 4 tests" in proc.stdout and "OK" in proc.stdout
    fixed = (demo_workspace(proc.stdout) / "inventory.py").read_text()
    assert "total += item[\"price\"] * item[\"qty\"]" in fixed
    assert "Running low on “{item['name']}” ({item['qty']} left)" in fixed
    assert fixed.count("* item[\"qty\"]") == 1  # catalog_price left alone
