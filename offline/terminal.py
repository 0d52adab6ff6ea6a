"""A chapter's offline demo in a pseudo-terminal, answered as a learner answers it.

The chapters ask their questions (a permission prompt, a plan to approve) only when
stdin is a terminal; in a pipe every question is answered "no". To show and to test
the questions really asked, a program runs here with a pseudo-terminal as its stdin,
stdout and stderr: `expect` waits for a question, `answer` types a reply (the terminal
echoes it, as it would on a screen), `finish` reads to the end.

Used by tests/test_demo_interactive.py (which checks the answers' effects) and by
docs/_hooks/transcripts.py (which records the transcripts the READMEs show). POSIX
only: `import pty` fails on Windows.
"""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import termios
import time
from pathlib import Path

# The questions, as the chapters print them.
PERMISSION = "[y]es / [n]o / [a]lways this session: "
DANGEROUS = "[y]es / [n]o: "
PLAN = "Approve this plan? [y]es, [n]o, or type what to change: "
# The screen's size, as a real terminal has one: what the programs wrap to (s05's plan
# frame) must not depend on the machine that records a transcript. 88 columns is what
# the reading site's code box holds.
ROWS, COLUMNS = 40, 88


class Terminal:
    """A program in a pseudo-terminal: what the learner sees, and what they type."""

    def __init__(self, argv: list[str], cwd: Path, env: dict[str, str],
                 popen=subprocess.Popen):
        """Start argv at the terminal (with `popen`: the tests pass their warm one)."""
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
        # subtle: COLUMNS and LINES in the environment win over the terminal's size.
        env = {k: v for k, v in env.items() if k not in ("COLUMNS", "LINES")}
        self.proc = popen(argv, stdin=slave, stdout=slave, stderr=slave,
                          cwd=cwd, env=env, start_new_session=True)
        os.close(slave)
        self.master, self.screen, self.read_up_to = master, "", 0

    def _read(self, deadline: float) -> bool:
        """Read what the program printed; False once it has closed the terminal."""
        wait = max(0.0, deadline - time.monotonic())
        ready, _, _ = select.select([self.master], [], [], wait)
        if not ready:
            return True
        try:
            data = os.read(self.master, 65536)
        except OSError:  # EIO: the program ended and closed its side
            data = b""
        self.screen += data.decode("utf-8", "replace").replace("\r\n", "\n")
        return bool(data)

    def expect(self, text: str, timeout: float = 30) -> str:
        """Wait until `text` appears after what was read so far; return what came
        before it (the output since the last question)."""
        deadline = time.monotonic() + timeout
        while text not in self.screen[self.read_up_to:]:
            if time.monotonic() > deadline or not self._read(deadline):
                raise AssertionError(f"waited for {text!r}; the terminal shows:\n"
                                     f"{self.screen[-3000:]}")
        start = self.read_up_to
        self.read_up_to = self.screen.index(text, start) + len(text)
        return self.screen[start:self.read_up_to]

    def answer(self, text: str) -> None:
        os.write(self.master, (text + "\n").encode())

    def finish(self, timeout: float = 60) -> tuple[int, str]:
        """Read to the end; (exit status, everything the learner saw)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self._read(deadline):
            pass
        os.close(self.master)
        return self.proc.wait(timeout=10), self.screen

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def play(argv: list[str], cwd: Path, env: dict[str, str],
         answers: list[tuple[str, str]], timeout: float = 120,
         popen=subprocess.Popen) -> tuple[int, str]:
    """Run a program in a terminal, typing each answer when its question shows:
    answers = [(question, reply), ...], in order. (exit status, the screen)."""
    term = Terminal(argv, cwd, env, popen)
    try:
        for question, reply in answers:
            term.expect(question, timeout=timeout)
            term.answer(reply)
        return term.finish(timeout=timeout)
    finally:
        term.close()
