"""asking: the question on the terminal when a call needs the user's yes (s03 on).

code.py's gate decides that a call asks (check_permission); this file puts the
question and reads the answer: the call as the model made it, the reason it asks,
and y, n or, where the step allows it, a (always, for the rest of the session). No
terminal (a pipe, a test, CI), no yes: the call is refused and the model told why.
The same file stands in every chapter from s03 on.

Reading map (a first reading can skip it: the chapter's README shows the question):
  s03 · asking: is anyone there      stdin_is_interactive()
  s03 · asking: the question         ask_user(): ("yes" | "no" | "always", why);
                                     describe_call(): a call on one line
"""

import sys


# === s03 · asking: is anyone there ===
def stdin_is_interactive() -> bool:
    try:
        return sys.stdin is not None and not sys.stdin.closed and sys.stdin.isatty()
    except (ValueError, OSError):
        return False


# === s03 · asking: the question ===
def ask_user(tool_name: str, tool_input: dict, reason: str, allow_always: bool,
             say) -> tuple[str, str]:
    """Ask on the terminal: ("yes" | "no" | "always", why). No terminal, no yes.
    `say` shows a line on the terminal (code.py's: control characters escaped)."""
    if not stdin_is_interactive():
        return "no", "it needs approval and no one can answer (stdin is not a terminal)"
    say(f"\n? Allow {describe_call(tool_name, tool_input)}\n"
        f"  because it asks: {reason}")
    choices = "[y]es / [n]o" + (" / [a]lways this session" if allow_always else "")
    expected = "y (yes), n (no) or a (always)" if allow_always else "y (yes) or n (no)"
    while True:
        try:
            answer = input(f"  {choices}: ").strip().lower()
        except EOFError:
            return "no", "stdin was closed before an answer"
        if answer in ("y", "yes"):
            return "yes", "the user approved it"
        if answer in ("n", "no"):
            return "no", "the user said no"
        if allow_always and answer in ("a", "always"):
            return "always", "the user approved it for this session"
        say(f"  please answer {expected}")  # then ask again


def describe_call(tool_name: str, tool_input: dict) -> str:
    args = ", ".join(f"{k}={v!r}" for k, v in tool_input.items())
    return f"{tool_name}({args if len(args) <= 300 else args[:297] + '...'})"
