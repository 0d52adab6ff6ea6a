"""tests/warm.py: a chapter run forked from the warm interpreter is the run a fresh
`python script.py` makes. The same probe script runs both ways; what it sees of its
world (arguments, place, environment, streams, module search path, its own
`__main__`), its exit status and its command line as `ps` shows it must agree.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap

import pytest
import warm
from conftest import ROOT, clean_env, wait_until

pytestmark = pytest.mark.skipif(not warm.ENABLED, reason="warm runs are Linux only")

PROBE = textwrap.dedent("""\
    import json, os, sys, tempfile
    import helper  # beside the script: sys.path[0] is its folder
    line = sys.stdin.readline()
    print(json.dumps({
        "argv": sys.argv, "cwd": os.getcwd(), "name": __name__, "file": __file__,
        "path0": sys.path[0], "helper": helper.__file__, "stdin": line,
        "env": {k: os.environ.get(k) for k in ("PROBE", "TMPDIR", "PYTHONIOENCODING")},
        "tmp": tempfile.gettempdir(), "main_is_me": sys.modules["__main__"].__dict__ is globals(),
        "course_modules": sorted(m for m in sys.modules if m in ("warm", "conftest")),
        "out": [sys.stdout.encoding, sys.stdout.errors, sys.stdout.line_buffering],
        "err": [sys.stderr.encoding, sys.stderr.errors, sys.stderr.line_buffering],
        "sid": os.getsid(0) == os.getpid(),
    }))
    print("to stderr", file=sys.stderr)
    how = sys.argv[1]
    if how == "exit":
        sys.exit(3)
    if how == "raise":
        raise ValueError("boom")
    if how == "interrupt":
        raise KeyboardInterrupt
""")


@pytest.fixture
def probe(tmp_path):
    folder = tmp_path / "scripts"
    folder.mkdir()
    (folder / "helper.py").write_text("")
    (folder / "probe.py").write_text(PROBE)
    return folder / "probe.py"


def both(probe, tmp_path, *args, env=None, **popen):
    """The probe run cold (subprocess) and warm: (CompletedProcess, CompletedProcess),
    each in a folder of the same name."""
    runs = []
    for kind, run in (("cold", subprocess.run), ("warm", warm.run)):
        place = tmp_path / kind / "place"
        place.mkdir(parents=True, exist_ok=True)
        runs.append(run([sys.executable, str(probe), *args], cwd=place,
                        env=clean_env(PROBE="yes", TMPDIR=str(place), **(env or {})),
                        input="typed\n", capture_output=True, text=True, timeout=60,
                        **popen))
    return runs


def seen(run) -> dict:
    first = json.loads(run.stdout.splitlines()[0])
    return {**first, "cwd": os.path.basename(first["cwd"]),
            "env": {**first["env"], "TMPDIR": os.path.basename(first["env"]["TMPDIR"])},
            "tmp": os.path.basename(first["tmp"])}


@pytest.mark.parametrize("how, status", [("end", 0), ("exit", 3), ("raise", 1),
                                          ("interrupt", -signal.SIGINT)])
def test_a_warm_run_sees_and_ends_as_a_cold_one(probe, tmp_path, how, status):
    cold, hot = both(probe, tmp_path, how)
    assert warm.WARM.proc is not None and warm.WARM.proc.poll() is None  # it was warm
    assert (cold.returncode, hot.returncode) == (status, status)
    assert seen(hot) == seen(cold)
    assert seen(hot)["course_modules"] == [] and seen(hot)["main_is_me"]
    assert hot.stderr.splitlines()[0] == cold.stderr.splitlines()[0] == "to stderr"
    if how in ("raise", "interrupt"):
        assert hot.stderr.splitlines()[-1] == cold.stderr.splitlines()[-1]


def test_what_python_reads_at_start_is_honoured(probe, tmp_path):
    """PYTHONIOENCODING is made by the warm run; another PYTHON* variable (read before
    the script runs) makes the run cold, so that it still holds."""
    cold, hot = both(probe, tmp_path, "end", env={"PYTHONIOENCODING": "latin-1:replace"})
    assert seen(hot)["out"] == seen(cold)["out"] == ["iso8859-1", "replace", False]
    if sys.version_info < (3, 11):
        return  # PYTHONSAFEPATH is 3.11 on
    cold, hot = both(probe, tmp_path, "end", env={"PYTHONSAFEPATH": "1"})
    assert hot.returncode == cold.returncode == 1  # no helper beside it: a cold start's error
    assert "ModuleNotFoundError" in hot.stderr


def test_a_new_session_and_signals_reach_the_run(probe, tmp_path):
    cold, hot = both(probe, tmp_path, "end", start_new_session=True)
    assert seen(hot)["sid"] and seen(cold)["sid"]
    slow = tmp_path / "slow.py"
    slow.write_text("import time\nprint('up', flush=True)\ntime.sleep(60)\n")
    proc = warm.Popen([sys.executable, str(slow)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "up\n"
    assert proc.poll() is None
    with pytest.raises(subprocess.TimeoutExpired):
        proc.wait(timeout=0.1)
    proc.terminate()
    assert proc.wait(timeout=30) == -signal.SIGTERM
    proc.stdout.close()


def test_ps_and_pgrep_show_the_runs_command_line(tmp_path):
    """The tests look for leftover chapter processes by their command line."""
    slow = tmp_path / "looked_for.py"
    slow.write_text("import time\nprint('up', flush=True)\ntime.sleep(60)\n")
    proc = warm.Popen([sys.executable, str(slow), "an argument"], stdout=subprocess.PIPE,
                      text=True)
    try:
        assert proc.stdout.readline() == "up\n"
        found = subprocess.run(["pgrep", "-f", f"{slow} an argument"], capture_output=True,
                               text=True, check=False).stdout.split()
        assert found == [str(proc.pid)]
    finally:
        proc.kill()
        proc.wait(timeout=30)
        proc.stdout.close()
    assert wait_until(lambda: not subprocess.run(["pgrep", "-f", str(slow)],
                                                 capture_output=True, check=False).stdout)


def test_a_chapters_demo_prints_the_same_warm_and_cold(tmp_path):
    """s01's offline demo, as the tests run it and as a learner does."""
    outputs = []
    for run in (subprocess.run, warm.run):
        place = tmp_path / f"in-{len(outputs)}"
        place.mkdir()
        done = run([sys.executable, str(ROOT / "s01_agent_loop" / "code.py"), "--offline"],
                   cwd=place, env=clean_env(TMPDIR=str(place)), stdin=subprocess.DEVNULL,
                   capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        scratch = re.search(r"Workspace: (\S+)", done.stdout)[1]
        outputs.append(re.sub(r"\b\d+\.\d+s\b", "#.###s",  # unittest's "Ran 4 tests in"
                              done.stdout.replace(scratch, "WORKSPACE")))
    assert outputs[0] == outputs[1]


def running(pid: int) -> bool:
    """Not ended, and not a zombie waiting for its parent (its cmdline is empty)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return bool(f.read())
    except OSError:
        return False


ECHO = textwrap.dedent("""\
    import os, sys
    print(f"pid {os.getpid()} mark {os.environ.get('MARK')} arg {sys.argv[1]}", flush=True)
    for line in sys.stdin:
        print("echo " + line.strip(), flush=True)
    sys.exit(7)
""")


def test_a_config_command_runs_its_script_warm_and_ends_as_it_does(tmp_path):
    """warm.command() for a config file (an MCP server's): the launcher hands its
    streams to the fork and ends with its status; the fork shows the run's command
    line and environment (/proc/PID/environ, where an MCP client finds its servers'
    mark); a signal to the launcher reaches the fork."""
    script = tmp_path / "echo_server.py"
    script.write_text(ECHO)
    argv = warm.command(str(script), "one")
    assert "--run" in argv  # the launcher, not python script.py
    env = clean_env(MARK="mine")
    proc = subprocess.Popen(argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, start_new_session=True)
    first = proc.stdout.readline().split()
    pid = int(first[1])
    assert first[2:] == ["mark", "mine", "arg", "one"] and pid != proc.pid
    with open(f"/proc/{pid}/environ", "rb") as f:
        assert b"\0MARK=mine\0" in b"\0" + f.read()
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        assert f.read().split(b"\0")[:3] == [sys.executable.encode(), str(script).encode(),
                                              b"one"]
    proc.stdin.write("hello\n")
    proc.stdin.flush()
    assert proc.stdout.readline() == "echo hello\n"
    proc.stdin.close()  # MCP's way to say stop
    assert proc.wait(timeout=30) == 7
    proc.stdout.close()
    again = subprocess.Popen(argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True)
    pid = int(again.stdout.readline().split()[1])
    again.terminate()
    assert again.wait(timeout=30) == -signal.SIGTERM
    assert wait_until(lambda: not running(pid))
    again.stdin.close()
    again.stdout.close()
