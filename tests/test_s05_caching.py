"""s05: prompt caching you can see (and every later chapter).

The scripted server caches as the real API does (offline/server.py, cache_usage): a
prefix that ends at a cache_control mark and is at least the model's minimum (1,024
tokens for the default model, estimated at 4 characters a token, plus the API's
tool-use system prompt) is written once and read afterwards; a shorter one is
silently not cached. Each model call shows its line: tokens read from the cache,
written to it, and neither.
"""

import re

import pytest

from conftest import the_agent
from conftest import chapter_params, load_chapter, run_agent
from offline.server import cache_minimum, reply, tokens, TOOL_USE_PROMPT_TOKENS, tool_use

LINE = re.compile(r"\[input tokens: ([\d,]+) read from the cache, ([\d,]+) written to "
                  r"it, ([\d,]+) uncached\]")


@pytest.fixture(params=chapter_params("s05"))
def mod(request):
    return load_chapter(request.param)


def numbers(out: str) -> list[tuple[int, int, int]]:
    return [tuple(int(n.replace(",", "")) for n in m.groups()) for m in LINE.finditer(out)]


def test_the_stable_prefix_is_long_enough_to_be_cached(mod):
    """The always-loaded tools, up to their cache_control mark, reach the default
    model's minimum (counted as the server counts: JSON characters / 4, plus the
    API's tool-use prompt). Shorter, the API would cache nothing and say nothing."""
    import json
    tools = mod.tools_for_request(the_agent(mod))
    assert "cache_control" in tools[-1]
    size = TOOL_USE_PROMPT_TOKENS + tokens(len(json.dumps(tools)))
    assert size >= cache_minimum(mod.DEFAULT_MODEL)


def test_each_call_shows_what_the_cache_saved(mod, server, client, workspace, capsys):
    """Three calls of one task: the first writes the prefix (tools, system prompt,
    the prompt); each next one reads what the one before wrote. The line of each call
    shows the API's numbers."""
    (workspace / "a.txt").write_text("alpha\n")
    server.add(reply(tool_use("read_file", {"file_path": "a.txt"})),
               reply(tool_use("grep_search", {"pattern": "alpha"})),
               reply("It says alpha."))
    run_agent(mod, client, "what does a.txt say?")
    shown = numbers(capsys.readouterr().out)
    assert len(shown) == 3
    (read1, wrote1, _), (read2, wrote2, _), (read3, _, _) = shown
    assert read1 == 0 and wrote1 >= cache_minimum(mod.DEFAULT_MODEL)
    assert read2 == wrote1 and wrote2 > 0   # the conversation so far, read back
    assert read3 == wrote1 + wrote2
    assert all(r["cache_control"] == {"type": "ephemeral"} for r in server.requests)
    assert not server.rejected


def test_loading_a_tool_keeps_the_stable_prefix_cached(mod, server, client, capsys):
    """tool_search appends web_fetch after the marked tools: everything after them
    changes, but the marked prefix is read from the cache all the same."""
    server.add(reply(tool_use("tool_search", {"query": "select:web_fetch"})),
               reply("Loaded."))
    run_agent(mod, client, "load web_fetch")
    first, second = numbers(capsys.readouterr().out)
    assert [t["name"] for t in server.requests[1]["tools"]][-1] == "web_fetch"
    assert second[0] > 0  # read: the stable tools, up to their mark
    assert second[0] < first[1]  # but not the conversation: the tools before it changed


def test_a_second_session_reads_the_tools_from_the_cache(mod, server, client, capsys):
    """A new conversation with the same tools: the stable prefix is read, not written."""
    server.add(reply("one"), reply("two"))
    run_agent(mod, client, "first session")
    run_agent(mod, client, "a different question")
    first, second = numbers(capsys.readouterr().out)
    assert first[0] == 0 and second[0] > 0
