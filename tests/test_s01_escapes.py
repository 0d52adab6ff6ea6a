"""What reaches the terminal is shown, never obeyed (issue 28).

A terminal obeys the control characters it is sent: OSC 52 (`ESC ] 52 ; c ; ... BEL`)
writes the user's clipboard, `ESC [ 8 m` conceals what follows, the next permission
question included. So every line the chapters print from the model or a tool shows
its control characters as escapes (`\\x1b`, `\\x07`, `\\r`, the C1 `\\x9b`), and keeps
newline, tab and ordinary Unicode. Through the real loop, in every chapter; s03's
question about a command that holds an escape, in s03 and every later chapter.
"""


import pytest

from conftest import (at_a_terminal, chapter_params, load_chapter, run_agent,
                      teaching_and_last)
from offline.server import reply, tool_use

OSC52 = "\x1b]52;c;cm0gLXJmIH4=\x07"  # the clipboard would hold `rm -rf ~`
CONCEAL = "\x1b[8m"                     # the terminal would hide what follows
RAW = ("\x1b", "\x07", "\x9b", "\r")    # none of these may reach the terminal


@pytest.fixture(params=teaching_and_last("s01"))
def mod(request):
    return load_chapter(request.param)


def test_tool_output_and_model_text_print_escaped(mod, server, client, trusted, capsys):
    """A command prints OSC 52, ESC[8m, a C1 CSI and a CR; the model says OSC 52 before
    its call and ESC[8m in its answer: all of it shows as escapes, Unicode as is."""
    command = r"printf 'out\033]52;c;eA==\007 \033[8mhid\r\302\233den é 日本\n'"
    server.add(reply(f"Let me look{OSC52}", tool_use("run_shell", {"command": command})),
               reply(f"Done.{CONCEAL} Nothing to see"))
    agent = mod.Agent(client, model="claude-test", max_turns=5)
    mod.run_task("look", [], agent)  # as the REPL runs a prompt: it prints the answer
    out = capsys.readouterr().out
    assert not [c for c in RAW if c in out], repr(out)
    assert "Let me look\\x1b]52;c;cm0gLXJmIH4=\\x07" in out      # the model's words
    assert "out hid\\r\\x9bden é 日本" in out  # the tool's, its ESC sequences gone
    assert "Done.\\x1b[8m Nothing to see" in out                 # the answer
    result = server.requests[1]["messages"][-1]["content"][0]["content"]
    assert result.startswith("out hid\r\x9bden é 日本")  # (issue 30: no ESC sequences)


def test_a_tool_call_line_shows_its_input_escaped(mod, server, client, trusted, capsys):
    """The call line (`> run_shell(...)`) and an error line show an escape as text."""
    server.add(reply(tool_use("run_shell", {"command": f"echo hi{CONCEAL}; exit 3"})),
               reply("ok"))
    run_agent(mod, client, "go")
    out = capsys.readouterr().out
    assert not [c for c in RAW if c in out], repr(out)
    assert "echo hi\\x1b[8m; exit 3" in out


class User:
    """Plays the person at the terminal: says no to every question, keeps them."""

    def __init__(self, monkeypatch, mod):
        self.prompts = []
        at_a_terminal(monkeypatch, mod)
        monkeypatch.setattr("builtins.input", self.input)

    def input(self, prompt=""):
        self.prompts.append(prompt)
        return "n"


@pytest.mark.parametrize("chapter", chapter_params("s03"))
def test_the_permission_question_shows_an_escape_as_text(chapter, server, client,
                                                         workspace, monkeypatch, capsys):
    """A command that is not read-only and holds ESC[8m: the question quotes it (its
    input and the reason) escaped, so it cannot hide itself, or the next question."""
    mod = load_chapter(chapter)
    user = User(monkeypatch, mod)
    server.add(reply(tool_use("run_shell", {"command": f"rm -rf build{CONCEAL}"})),
               reply("ok"))
    run_agent(mod, client, "clean up")
    out = capsys.readouterr().out
    assert user.prompts, "the user was not asked"
    assert "? Allow run_shell(" in out
    assert not [c for c in RAW if c in out], repr(out)
    assert "rm -rf build\\x1b[8m" in out.split("? Allow", 1)[1]
