"""The REPL survives the API (s01, and every later chapter).

An API error ends the task, not the program: one readable line (what happened, what
to do), the failed exchange dropped so the conversation stays valid, the prompt back.
The SDK retries what is worth retrying (429, 500, 529), waiting as retry-after says,
and each retry is one line. A one-shot task still exits non-zero.

The chapter runs as a learner runs it (main(), in this process: run_main), against
the strict scripted server reached through ANTHROPIC_BASE_URL.
"""

import re
import time

import pytest

from conftest import beside, load_chapter, run_main, teaching_and_last
from offline.server import (
    error,
    overloaded,
    rate_limited,
    recorded,
    refusal,
    reply,
    server_error,
    tool_use,
)


@pytest.fixture(params=teaching_and_last("s01"))
def chapter(request):
    return request.param


def live(server, **extra):
    return dict(ANTHROPIC_API_KEY="test-key", ANTHROPIC_BASE_URL=server.url, **extra)


def retries(chapter: str) -> int:
    return beside(chapter, "command_line").MAX_RETRIES


def user_words(request: dict) -> list:
    """The user's own prompts in a request: their texts, not the tool_results."""
    words = []
    for m in request["messages"]:
        content = m["content"]
        if m["role"] == "user" and isinstance(content, str):
            words.append(content)
        elif m["role"] == "user":  # blocks (s05 on marks the last one for caching)
            words += [b["text"] for b in content if b["type"] == "text"]
    return words


def test_the_repl_answers_the_next_question_after_an_error_that_outlasts_the_retries(
        chapter, server, workspace):
    """529 on every try: one line per retry, one line for the error, the task dropped,
    and the next question is answered, from a conversation that never saw the first."""
    n = retries(chapter)
    server.add(reply(tool_use("run_shell", {"command": "echo step one"})),
               *[overloaded(retry_after=0.01) for _ in range(n + 1)],
               reply("Second answered."))
    proc = run_main(chapter, cwd=workspace, input="first\nsecond\n", **live(server))
    assert proc.returncode == 0, proc.stderr
    assert "Second answered." in proc.stdout
    assert proc.stdout.count(f"{chapter[:3]} >> ") == 3  # the prompt came back each time
    retried = [ln for ln in proc.stderr.splitlines() if "retrying in" in ln]
    assert len(retried) == n and all("API error 529" in ln for ln in retried)
    assert retried[-1].endswith(f"(attempt {n}/{n})]")
    [line] = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert "overloaded" in line and "dropped" in line
    assert user_words(server.requests[-1]) == ["second"]  # the failed exchange is gone
    assert not server.rejected


def test_a_429_with_retry_after_completes_the_task(chapter, server, workspace):
    """Rate limited once: the SDK waits as retry-after says, retries, the task ends well."""
    server.add(rate_limited(retry_after=0.3), reply("Done after waiting."))
    t0 = time.monotonic()
    proc = run_main(chapter, "do it", cwd=workspace, **live(server))
    assert proc.returncode == 0, proc.stderr
    assert time.monotonic() - t0 >= 0.3
    assert "Done after waiting." in proc.stdout
    [line] = proc.stderr.splitlines()
    assert line == (f"[API error 429 rate_limit_error · retrying in 0.3s "
                    f"(attempt 1/{retries(chapter)})]")


def test_a_500_then_an_answer(chapter, server, workspace):
    server.add(server_error(retry_after=0.01), reply("ok"))
    proc = run_main(chapter, "go", cwd=workspace, **live(server))
    assert proc.returncode == 0 and "ok" in proc.stdout and "500" in proc.stderr


def repeated(turn, times):
    return [dict(turn) for _ in range(times)]


# (what the API answers, words the line must have): each error a learner meets
ERRORS = {
    "overloaded": (overloaded(retry_after=0.01), ["overloaded", "few minutes"]),
    "rate limited": (rate_limited(retry_after=0.01), ["rate limit", "Wait a minute"]),
    "invalid request": (error(400, "invalid_request_error",
                              "messages: text content blocks must be non-empty"),
                        ["invalid", "text content blocks must be non-empty"]),
    "key refused": (error(401, "authentication_error", "invalid x-api-key"),
                    ["key was rejected", "ANTHROPIC_API_KEY"]),
    "no such model": (error(404, "not_found_error", "model: claude-typo"),
                      ["has no model 'claude-typo'", "model: claude-typo", "MODEL_ID"]),
    "a web page at the base URL": (
        recorded({"status": 404, "headers": {"content-type": "text/html"},
                  "body": b"<html><body><h1>404 Not Found</h1></body></html>"}),
        ["answered 404 with no API error", "ANTHROPIC_BASE_URL is http://127.0.0.1:",
         "Anthropic-compatible API"]),
}


@pytest.mark.parametrize("name", ERRORS)
def test_each_error_is_one_readable_line_and_the_repl_goes_on(chapter, server, workspace,
                                                              name):
    """The line names what happened, with the API's own message, and what to do; it is
    never a raw Python dict; the REPL asks for the next prompt and answers it."""
    turn, words = ERRORS[name]
    tries = retries(chapter) + 1 if turn.get("status") in (429, 529) else 1
    server.add(*repeated(turn, tries), reply("Back again."))
    proc = run_main(chapter, cwd=workspace, input="one\ntwo\n",
                    **live(server, MODEL_ID="claude-typo"))
    assert proc.returncode == 0, proc.stderr
    [line] = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    for word in words:
        assert word in line, line
    assert "{'" not in proc.stderr and "Traceback" not in proc.stderr
    assert ".." not in line, line  # the API's sentence, then ours: one full stop each
    assert "Back again." in proc.stdout
    assert user_words(server.requests[-1]) == ["two"]
    if "404" in line:  # advice that names what to fix, not "try again"
        assert "Try again" not in line and "<html>" not in line, line


def test_a_one_shot_task_still_exits_non_zero(chapter, server, workspace):
    server.add(*repeated(overloaded(retry_after=0.01), retries(chapter) + 1))
    proc = run_main(chapter, "do it", cwd=workspace, **live(server))
    assert proc.returncode == 1
    assert re.search(r"^error: the API is overloaded", proc.stderr, re.MULTILINE)
    assert "{'" not in proc.stderr


def test_a_refusal_then_an_empty_reply_then_a_question_all_get_answers(chapter, server,
                                                                       workspace):
    """One REPL session: a refusal (shown as one, with its stop_details), an empty
    end_turn, then a normal question. Every prompt gets an answer, no request is a 400."""
    server.add(refusal(category="cyber", explanation="This could enable cyber harm."),
               reply(),
               reply("Here is the answer."))
    proc = run_main(chapter, cwd=workspace, input="bad\nquiet\nnormal\n", **live(server))
    assert proc.returncode == 0, proc.stderr
    assert "Refused: the model declined" in proc.stderr and "This could enable cyber harm." in proc.stderr
    assert "without a word" in proc.stdout
    assert "Here is the answer." in proc.stdout
    assert not server.rejected and len(server.requests) == 3
    assert user_words(server.requests[-1]) == ["quiet", "normal"]  # the refused one: gone
