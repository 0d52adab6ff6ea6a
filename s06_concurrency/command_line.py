"""command_line: what stands between your terminal and the API (s01 on).

code.py imports these from beside it, in every chapter. No chapter changes them, so
each chapter folder holds the same file, byte for byte (a test checks). None of it is
the agent: the loop, its tools and main() stay in code.py. This file holds what
happens before the first request (the flags, the key, the client) and after a failed
one (the API's error, said in one line; the task dropped, and the oldest exchanges
with it when the conversation outgrew the context window).

Reading map (read it in this order, or not at all on a first reading):
  s01 · the command line: the flags every chapter takes, and --help
  s01 · the key: a key that cannot work, refused before any request
  s01 · the client: the SDK retries by itself, and each retry shows a line
  s01 · API errors: one line that says what happened and what to do
  s01 · a failed task: dropped, and a window outgrown
    (the conversation stays valid; one that outgrew the context window loses its
    oldest exchanges too)
  A first reading skips all of it: main() calls parser(), key_problem() and
  make_client() once, explain() when a task fails, and the REPL survive() after
  one. Come back when a run says "error: ...", or to see how --help is made.
"""

import argparse
import io
import logging
import os
import re
import sys
from pathlib import Path

# === s01 · the command line: the flags every chapter takes, and --help ===
HELP = """\
the model: ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN), ANTHROPIC_BASE_URL (for
another provider) and MODEL_ID (default {model}), from the environment or
from .env at the course's root (cp .env.example .env; the environment wins).
With no key, or with --offline, a scripted model plays this chapter's offline
demo: the real SDK and tools, on a scratch copy of a sample project."""


def parser(description: str, max_turns: int, model: str) -> argparse.ArgumentParser:
    """The flags of every chapter; a chapter adds its own flags to what this returns.
    `max_turns` and `model` are the chapter's defaults, shown in --help."""
    p = argparse.ArgumentParser(
        description=description, epilog=HELP.format(model=model),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("prompt", nargs="*", help="a task to run once (omit for the REPL)")
    p.add_argument("--offline", action="store_true",
                   help="play the scripted offline demo, even with a key")
    p.add_argument("--max-turns", type=int, default=max_turns, metavar="N",
                   help=f"model calls a task may make (default {max_turns})")
    return p


# === s01 · the key: a key that cannot work, refused before any request ===
# The agent's own credentials, named once: a key is read from these (key_problem);
# from s03 on no command, and from s05 on no MCP server, is given them.
AGENT_CREDENTIALS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
KEY_PROBLEMS = [  # (what is wrong with a key's value, what to do): the first that fits
    (lambda v: v.endswith("..."),  # as in .env.example: ANTHROPIC_API_KEY=sk-ant-...
     "is still the placeholder from .env.example: put your key in its place"),
    (lambda v: v == "", "is empty: put your key after the ="),
    (lambda v: any(c.isspace() for c in v), "has spaces in it: remove them"),
    (lambda v: any(q in v for q in "'\"`\u2018\u2019\u201c\u201d"),
     "has quotes in it: write the key alone")]


def key_problem(env_file: Path) -> str | None:
    """What makes the key unusable, in one line, before any request is made: the
    placeholder from .env.example, an empty value in .env, stray quotes or spaces.
    An empty variable in the environment is no key, as Claude Code reads it."""
    from dotenv.parser import parse_stream  # .env as load_dotenv reads it, but quietly
    text = env_file.read_text(encoding="utf-8") if env_file.is_file() else ""
    lines = list(parse_stream(io.StringIO(text)))
    in_file = {line.key: line.value for line in lines if line.key}
    unread = [line.original.string.removeprefix("export ")
              for line in lines if line.error]
    for name in AGENT_CREDENTIALS:
        where = "your environment" if name in os.environ else ".env"
        value = os.environ.get(name, in_file.get(name))
        if value is None and any(s.startswith(name) for s in unread):
            return (f"{name} in .env cannot be read (a stray quote?): write it as "
                    f"{name}=your-key, or remove it to play the offline demo.")
        if value is None or (value == "" and where != ".env"):
            continue  # unset, or emptied on purpose: no key, so the offline demo
        for wrong, fix in KEY_PROBLEMS:
            if wrong(value):
                return (f"{name} in {where} {fix}, or remove it to play the "
                        "offline demo.")
    return None


# === s01 · the client: the SDK retries by itself, and each retry shows a line ===
MAX_RETRIES = 3  # the SDK retries a 429, a 5xx or a 529 this often, as retry-after says


class ShowRetries(logging.Handler):
    """One line per retry. The SDK retries an overloaded, rate-limited or failing API
    by itself, as retry-after asks, and logs each; this handler shows them."""

    status, left = None, MAX_RETRIES  # what the SDK logs just before it retries
    # The statuses the SDK retries -> the API's error type for each (as its docs say)
    KINDS = {429: "rate_limit_error", 500: "api_error", 504: "timeout_error",
             529: "overloaded_error"}

    def emit(self, record: logging.LogRecord) -> None:
        # subtle: the SDK's log lines are no API (if they change, only these lines go
        # quiet); the status comes from its line for every answer, as its line on why
        # it retries differs when the answer says `x-should-retry: true` (429s, 529s).
        msg = str(record.msg)
        if msg.startswith(("Sending HTTP Request", "HTTP Response:")):
            self.status = record.args[2] if msg.startswith("HTTP") else None
        elif record.msg in ("%i retries left", "1 retry left"):
            self.left = record.args[0] if record.args else 1
        elif msg.startswith("Retrying request to"):
            what = (f"API error {self.status} {self.KINDS.get(self.status, '')}"
                    .rstrip() if self.status else "API not reached")
            print(f"[{what} · retrying in {record.args[-1]:.1f}s (attempt "
                  f"{MAX_RETRIES - self.left + 1}/{MAX_RETRIES})]", file=sys.stderr)
            self.status = None


def make_client():
    """The real SDK's client, which reads the key and the base URL from the
    environment, and shows its retries (ShowRetries)."""
    from anthropic import Anthropic
    sdk_log = logging.getLogger("anthropic._base_client")  # where it logs its retries
    # subtle: one handler per process, even with several chapters loaded (the tests)
    if not any(type(h).__name__ == "ShowRetries" for h in sdk_log.handlers):
        sdk_log.addHandler(ShowRetries())
        sdk_log.setLevel(logging.DEBUG)
    return Anthropic(max_retries=MAX_RETRIES)  # the key, the base URL: from the env


# === s01 · API errors: one line that says what happened and what to do ===
# error.type in the API's answer -> what happened, what to do (no_tools: explain()).
API_ERRORS = {
    "invalid_request_error": ("the API found the request invalid",
                              "Start a new conversation, or fix what the agent sends."),
    "authentication_error": ("the API key was rejected",
                             "Check ANTHROPIC_API_KEY in your environment or .env."),
    "permission_error": ("the API key may not do this", "Check the key and MODEL_ID."),
    "not_found_error": ("not found", "Is MODEL_ID a model that exists?"),
    "request_too_large": ("the request is too large", "Start a new conversation."),
    "rate_limit_error": ("rate limited", "Wait a minute, then ask again."),
    "billing_error": ("the account cannot pay for this", "Check plan and billing."),
    "api_error": ("the API failed inside", "Ask again in a moment."),
    "timeout_error": ("the API timed out", "Ask again, perhaps for less."),
    "overloaded_error": ("the API is overloaded", "Ask again in a few minutes."),
    "no_tools": ("tools refused", "Set a MODEL_ID (or server flag) that allows tools.")}


def explain(e: Exception) -> str:
    """One clear line for an error: what happened, and what to do. An error that is
    not the API's (the model's refusal, say) is its class and its own words."""
    import anthropic
    if isinstance(e, anthropic.APIConnectionError):
        where = os.environ.get("ANTHROPIC_BASE_URL") or "the Anthropic API"
        return (f"cannot reach {where}: {e.__cause__ or e}. "
                "Check your network or ANTHROPIC_BASE_URL.")
    if not isinstance(e, anthropic.APIStatusError):
        return f"{type(e).__name__}: {e}"
    body = e.body if isinstance(e.body, dict) else {}
    error = body.get("error") if isinstance(body.get("error"), dict) else {}
    if e.status_code == 404:
        return not_found(e, error)
    kind = error.get("type") or f"HTTP {e.status_code}"
    said = error.get("message") or (e.body if isinstance(e.body, str) else "")
    said = " ".join(str(said).split())[:300].rstrip(".")  # one line, one full stop
    no_tools = re.search(r"does not support tools|requires --jinja", said)
    what, todo = API_ERRORS.get("no_tools" if no_tools else kind,
                                (f"the API answered {e.status_code}", "Try again."))
    # subtle: an error event in a stream comes after the 200 that opened it
    when = "mid-stream" if e.status_code == 200 else str(e.status_code)
    return f"{what} ({kind}, {when}): {said or 'no details'}. {todo}"


def not_found(e, error: dict) -> str:
    """A 404 names what to fix: the model asked for (the API's not_found_error), or
    the base URL (anything else: a web page, a server that is no Messages API)."""
    if error.get("type") == "not_found_error":
        asked = re.search(rb'"model":\s*"([^"]*)"', e.request.content or b"")
        model = asked.group(1).decode() if asked else "?"
        return (f"the API has no model {model!r} (not_found_error, 404): "
                f"{error.get('message') or 'no details'}. Set MODEL_ID to a model "
                "your key may use.")
    where = os.environ.get("ANTHROPIC_BASE_URL") or "unset"
    return (f"{e.request.url} answered 404 with no API error: ANTHROPIC_BASE_URL is "
            f"{where}; set it to the root of an Anthropic-compatible API (such as "
            "https://api.anthropic.com, without /v1), or unset it.")


# === s01 · a failed task: dropped, and a window outgrown ===
def survive(e: Exception, messages: list, mark: int, agent) -> str:
    """After a failed task: drop it, so the conversation stays valid, and if the
    conversation outgrew the context window, its oldest exchanges too (and the
    agent, code.py's Agent, learns the window's size). The line to show."""
    size = len(str(messages))
    del messages[mark:]
    too_long = re.search(r"prompt is too long: (\d+) tokens > (\d+)", str(e))  # a 400
    if not too_long:
        return f"{explain(e)} (That task was dropped.)"
    sent, most = int(too_long[1]), int(too_long[2])
    agent.window, agent.warned = most, False
    # keep what fills about half the window, leaving room for the next exchanges
    dropped = drop_oldest(messages, int(size * most / sent / 2))
    then = (f", and the {dropped} oldest exchange(s) with it. Ask again" if dropped
            else ". Ask for less at a time")
    return (f"the conversation ({sent:,} tokens) outgrew the model's context window "
            f"({most:,}): that task was dropped{then}, or type /clear to start over.")


def drop_oldest(messages: list, budget: int) -> int:
    """Drop the oldest whole exchanges (each starts at a prompt: no tool_use parted
    from its tool_result) until the rest fits in `budget` characters; how many went."""
    starts = [i for i, m in enumerate(messages)
              if m["role"] == "user" and isinstance(m["content"], str)]
    dropped = next((n for n, i in enumerate(starts)
                    if len(str(messages[i:])) <= budget), len(starts))
    del messages[:starts[dropped] if dropped < len(starts) else len(messages)]
    return dropped
