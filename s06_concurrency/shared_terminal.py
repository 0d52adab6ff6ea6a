"""shared_terminal: one terminal for many threads, and the batch line (s06).

code.py decides what is shown: a call and its result, a decision, a hook's line, the
model's words as they stream, and after each batch how long its calls took. This file
keeps the terminal whole while several threads print to it, and a first reading can
skip it:
- Two calls of one agent run at once, so where a line goes differs per thread: a
  context variable (LINES) holds it, as ("[name] " before each line, the lines of a
  call beside others, held until it ends or its subagent starts, or None: printed
  at once).
- A lock keeps each message whole, and a question to the user holds it too
  (code.py's check_permission), so nothing prints over a prompt and two calls never
  ask at once. Reentrant: the thread that asks may print while it holds it.
- The batch line: each call's time, and the batch's against their sum.

Reading map:
  s06 · shared terminal: whose lines, where     LINES, TERMINAL_LOCK, say(), write(),
                                                lines_of_a_call(), labelled()
  s06 · shared terminal: the batch line         show_batch()
"""

import contextlib
import contextvars
import threading
import time

# === s06 · shared terminal: whose lines, where ===
LINES = contextvars.ContextVar("LINES", default=("", None))
TERMINAL_LOCK = threading.RLock()


def say(text: str) -> None:
    """Print whole lines, labelled with this context's prefix, without interleaving."""
    prefix, held = LINES.get()
    lines = "".join(f"{prefix}{line}\n" for line in text.split("\n"))
    if held is None:
        return write(lines)
    held.append(lines)  # a call beside others: shown whole when it ends


def write(text: str) -> None:
    """Print streamed text as it arrives (no newline added)."""
    with TERMINAL_LOCK:
        print(text, end="", flush=True)


@contextlib.contextmanager
def lines_of_a_call(held: bool):
    """While one call runs: its lines keep this context's prefix, and with `held`
    (a call beside others) wait until it ends, then show together."""
    prefix, _ = LINES.get()
    token = LINES.set((prefix, [] if held else None))
    try:
        yield
    finally:
        write("".join(LINES.get()[1] or []))
        LINES.reset(token)


def labelled(prefix: str, run):
    """run() in a context of its own (a subagent's loop), each line it says after
    `prefix` ("[name] "), shown at once; what it sets stays its own. First the lines
    the agent call has held show, whole: its subagent's work comes after them."""
    prefix_here, held = LINES.get()
    if held is not None:  # subtle: beside another agent call, its decision would
        write("".join(held))  # otherwise print under the other's call line
        LINES.set((prefix_here, None))  # the rest of this call's lines: at once
    context = contextvars.copy_context()
    return context.run(lambda: LINES.set((prefix, None)) and run())


# === s06 · shared terminal: the batch line ===
def show_batch(n: int, span: range, names: list, spans: dict, began: float,
               early: bool) -> None:
    """After batch n, the calls `span` of a reply's calls (`names`): the time each
    took (`spans`: call index -> (start, end), for those that ran), and the batch's
    against their sum. The batch's is the wait from `began`, when the runner reached
    it. The calls that started while the reply streamed (`early`) all head batch 1:
    its wait is after the reply ended, and the line says so, or the batch would
    look shorter than its longest call. A reply of one call needs no batch line."""
    wait = f"{time.monotonic() - began:.2f} s"
    if n == 1 and early:
        wait += " after the reply ended (with a head start while it streamed)"
    ran = [(names[i], *spans[i]) for i in span if i in spans]
    took = ", ".join(f"{name} {end - start:.2f} s" for name, start, end in ran)
    if len(span) == 1:
        return say(f"  batch {n} · {took}, alone") if len(names) > 1 else None
    say(f"  batch {n} · {len(span)} calls in parallel: {wait}, against "
        f"{sum(e - s for _, s, e in ran):.2f} s one after another ({took})")
