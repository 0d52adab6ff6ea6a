"""Checker for exercise s05 ex1 (warm-up): a deferred tool of your own, diff_files.

    pytest exercises/s05/test_ex1.py

It calls your `diff_files` directly, then checks that it is deferred: the first
request names it but leaves its schema out, calling it unloaded is refused, a keyword
search with tool_search loads it, and the next request has its schema appended at
the end, after everything the earlier requests sent.
"""

from pathlib import Path

from exercises.conftest import the_agent
from exercises.conftest import blocks, call_tool, result_text, run_agent
from offline.server import reply, tool_use


def make_files():
    Path("a.txt").write_text("one\ntwo\nthree\n")
    Path("b.txt").write_text("one\nTWO\nthree\n")
    Path("same.txt").write_text("one\ntwo\nthree\n")


DIFF = "--- a.txt\n+++ b.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three"


def test_diff_files_shows_a_unified_diff(mod):
    """diff_files returns the unified diff of two files, or says they are the same."""
    make_files()
    got = mod.diff_files(the_agent(mod), "a.txt", "b.txt")
    assert got == DIFF, f"diff_files('a.txt', 'b.txt') returned\n{got}\n\nbut should return\n{DIFF}"
    got = mod.diff_files(the_agent(mod), "a.txt", "./same.txt")
    want = "No differences: a.txt and same.txt are the same."
    assert got == want, f"two files with the same text: diff_files returned {got!r}, not {want!r}"


def test_diff_files_errors_are_data(mod):
    """A missing file, or a path outside the workspace: is_error results, no crash."""
    make_files()
    assert "diff_files" in mod.TOOL_HANDLERS, "register diff_files in TOOL_HANDLERS"
    the_agent(mod).loaded.append("diff_files")  # as if tool_search had loaded it
    output, is_error = call_tool(mod, "diff_files", file_a="a.txt", file_b="missing.txt")
    assert is_error and "not found" in output, (
        f"a missing file should give an is_error result that says 'not found': {output!r}")
    output, is_error = call_tool(mod, "diff_files", file_a="../outside.txt", file_b="a.txt")
    assert is_error and "outside the workspace" in output, (
        f"'../outside.txt' must be refused: resolve paths with safe_path. Got {output!r}")


def test_it_is_deferred(mod):
    """diff_files has a schema in TOOLS, is in DEFERRED_TOOLS, and is named by tool_search."""
    schemas = {t["name"]: t for t in mod.TOOLS}
    assert "diff_files" in schemas, (
        "TOOLS has no entry named 'diff_files': even a deferred tool needs its schema in "
        "TOOLS, so that tool_search can hand it out and the loop can send it.")
    props = schemas["diff_files"]["input_schema"].get("properties", {})
    assert set(props) == {"file_a", "file_b"}, f"diff_files takes file_a and file_b: {props}"
    assert "diff_files" in mod.DEFERRED_TOOLS, "add diff_files to DEFERRED_TOOLS"
    assert "diff_files" in schemas["tool_search"]["description"], (
        "tool_search's description should name diff_files among the deferred tools "
        "(it is built from DEFERRED_TOOLS, so the model knows the tool exists).")
    meta = mod.tool_meta("diff_files")
    assert meta["is_read_only"]({"file_a": "a", "file_b": "b"}) is True, (
        "declare diff_files read-only in TOOL_META: with s03's safe defaults every call "
        "would ask the user, and plan mode would refuse it.")


def test_keyword_search_finds_it(mod):
    """tool_search('compare two files') ranks diff_files first and loads it."""
    assert mod.rank_tools("compare two files")[:1] == ["diff_files"], (
        f"rank_tools('compare two files') gave {mod.rank_tools('compare two files')}: give "
        "diff_files a description with the words a model would search for.")
    out = mod.tool_search(the_agent(mod), "compare two files")
    assert '"name": "diff_files"' in out, f"tool_search should return its definition: {out[:300]}"
    assert the_agent(mod).loaded == ["diff_files"], f"the loaded tools are {the_agent(mod).loaded}"


def test_the_model_finds_it_loads_it_and_uses_it(mod, server, client):
    """Through the loop: refused unloaded, loaded by keyword, then appended to the request."""
    make_files()
    server.add(reply(tool_use("diff_files", {"file_a": "a.txt", "file_b": "b.txt"}, id="toolu_early")),
               reply(tool_use("tool_search", {"query": "compare two files"}, id="toolu_search")),
               reply(tool_use("diff_files", {"file_a": "a.txt", "file_b": "b.txt"}, id="toolu_diff")),
               reply("TWO is now upper case."))
    _, final = run_agent(mod, client, "what changed between a.txt and b.txt?")
    first = [t["name"] for t in server.requests[0]["tools"]]
    assert "diff_files" not in first, (
        f"the first request already sends diff_files's schema: {first}. A deferred tool is "
        "known by name only until it is loaded.")
    early = blocks(server.requests[1]["messages"][-1])[0]
    assert early.get("is_error") and "deferred" in result_text(early), (
        "calling diff_files before loading it should be an is_error result that says to "
        f"load it with tool_search; it was: {result_text(early)[:200]!r}")
    assert server.requests[1]["tools"] == server.requests[0]["tools"], (
        "a refused call must not change the tools of the next request")
    found = blocks(server.requests[2]["messages"][-1])[0]
    assert "diff_files" in result_text(found), f"tool_search found: {result_text(found)[:300]!r}"
    tools = server.requests[2]["tools"]
    assert tools[:len(first)] == server.requests[0]["tools"], (
        "after loading, the request's tools should start with exactly what the first "
        "request sent, byte for byte (for the prompt cache), and only then add more.")
    assert [t["name"] for t in tools[len(first):]] == ["diff_files"], (
        f"after loading, diff_files should be appended at the end: {[t['name'] for t in tools]}")
    result = blocks(server.requests[3]["messages"][-1])[0]
    assert not result.get("is_error") and result_text(result) == DIFF, (
        f"the loaded diff_files call should return the diff; it returned {result_text(result)!r}")
    assert final == "TWO is now upper case."
