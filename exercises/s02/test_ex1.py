"""Checker for exercise s02 ex1 (warm-up): one more tool, file_info.

    pytest exercises/s02/test_ex1.py

It calls your `file_info` directly, then checks the three places a tool lives: its
schema in TOOLS (what the model sees), its entry in TOOL_HANDLERS (what the loop
runs), and the handler's errors coming back as is_error tool_results.
"""

from pathlib import Path

from exercises.conftest import the_agent
from exercises.conftest import blocks, call_tool, result_text, run_agent
from offline.server import reply, tool_use


def make_files():
    Path("notes.txt").write_text("one\ntwo\nthree\n")     # 14 bytes, 3 lines
    Path("tail.txt").write_text("no newline at the end")  # 21 bytes, 1 line
    Path("empty.txt").write_text("")
    Path("logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0" + bytes(500))
    Path("src").mkdir()
    for name in ("a.py", "b.py", ".hidden"):
        (Path("src") / name).write_text("x = 1\n")


def test_file_info_on_each_kind_of_path(mod):
    """file_info returns the exact line for a text file, a binary file and a directory."""
    make_files()
    cases = {"notes.txt": "notes.txt: text file, 14 bytes, 3 lines",
             "tail.txt": "tail.txt: text file, 21 bytes, 1 lines",
             "empty.txt": "empty.txt: text file, 0 bytes, 0 lines",
             "logo.png": "logo.png: binary file, 511 bytes",
             "src": "src: directory, 3 entries",
             "./src/a.py": "src/a.py: text file, 6 bytes, 1 lines"}
    for path, want in cases.items():
        got = mod.file_info(the_agent(mod), path)
        assert got == want, (
            f"file_info({path!r}) returned\n    {got!r}\nbut should return\n    {want!r}")


def test_big_numbers_have_thousands_separators(mod):
    """Sizes and line counts are written like 12,000 (as read_file and the other tools do)."""
    Path("big.txt").write_text("line\n" * 12_000)
    got = mod.file_info(the_agent(mod), "big.txt")
    assert got == "big.txt: text file, 60,000 bytes, 12,000 lines", f"file_info returned {got!r}"


def test_schema_is_in_tools(mod):
    """TOOLS holds a file_info schema that requires file_path, a string."""
    schemas = {t["name"]: t for t in mod.TOOLS}
    assert "file_info" in schemas, (
        "TOOLS has no entry named 'file_info': the model only knows the tools in TOOLS.")
    tool = schemas["file_info"]
    assert tool.get("description"), (
        "give file_info a description: it is how the model knows when to use it; it has "
        f"{tool.get('description')!r}")
    schema = tool.get("input_schema", {})
    assert schema.get("properties", {}).get("file_path", {}).get("type") == "string", (
        f"file_info's input_schema should have a string property file_path: {schema}")
    assert schema.get("required") == ["file_path"], "file_path should be required"


def test_dispatch_runs_file_info(mod):
    """execute_tool finds file_info in TOOL_HANDLERS and returns its line, not an error."""
    make_files()
    assert "file_info" in mod.TOOL_HANDLERS, "register file_info in TOOL_HANDLERS"
    output, is_error = call_tool(mod, "file_info", file_path="notes.txt")
    assert not is_error, f"file_info on an existing file came back as an error: {output}"
    assert output == "notes.txt: text file, 14 bytes, 3 lines", f"execute_tool returned {output!r}"


def test_errors_are_data(mod):
    """A missing file, a path outside the workspace, bad input: is_error results, no crash."""
    output, is_error = call_tool(mod, "file_info", file_path="missing.txt")
    assert is_error and "not found" in output, (
        f"a missing file should give an is_error result that says 'not found': {output!r}")
    output, is_error = call_tool(mod, "file_info", file_path="../outside.txt")
    assert is_error and "outside the workspace" in output, (
        f"'../outside.txt' must be refused: resolve the path with safe_path. Got {output!r}")
    output, is_error = call_tool(mod, "file_info", path="notes.txt")
    assert is_error and "file_path" in output, (
        f"an input without file_path should be refused by validate_input: {output!r}")


def test_the_model_can_use_it(mod, server, client):
    """Through the loop: the request offers file_info, and its tool_result goes back."""
    make_files()
    server.add(reply(tool_use("file_info", {"file_path": "src"}, id="toolu_info")),
               reply("src holds three entries."))
    _, final = run_agent(mod, client, "what is src?")
    assert "file_info" in [t["name"] for t in server.requests[0]["tools"]], (
        "the request to the model did not offer file_info: is it in TOOLS?")
    result = blocks(server.requests[1]["messages"][-1])[0]
    assert result_text(result) == "src: directory, 3 entries" and not result.get("is_error"), (
        f"the tool_result sent back was {result}")
    assert final == "src holds three entries."
