"""Checker for exercise s02 ex3 (stretch): multi_edit, all or nothing.

    pytest exercises/s02/test_ex3.py

It calls your `multi_edit` directly and through execute_tool: edits applied in order,
each on the result of the ones before; any failure leaves the file byte for byte as
it was; each edit's fields checked; CRLF files kept CRLF; the schema in TOOLS.
"""

from pathlib import Path

from exercises.conftest import the_agent
from exercises.conftest import blocks, call_tool, result_text, run_agent
from offline.server import reply, tool_use

APP = "def greet(name):\n    print('hi', name)\n\n\ndef main():\n    greet('bob')\n"


def edit(old: str, new: str, **more) -> dict:
    return {"old_string": old, "new_string": new, **more}


def test_edits_apply_in_order(mod):
    """Three edits to one file: all applied, in one write."""
    Path("app.py").write_text(APP)
    out = mod.multi_edit(the_agent(mod), "app.py", [
        edit("def greet(name):", "def greet(name, loud=False):"),
        edit("print('hi', name)", "print('HI' if loud else 'hi', name)"),
        edit("greet('bob')", "greet('bob', loud=True)")])
    want = APP.replace("def greet(name):", "def greet(name, loud=False):") \
              .replace("print('hi', name)", "print('HI' if loud else 'hi', name)") \
              .replace("greet('bob')", "greet('bob', loud=True)")
    assert Path("app.py").read_text() == want, f"the file should now read:\n{want}"
    assert isinstance(out, str) and "app.py" in out, f"report what was edited: {out!r}"


def test_each_edit_sees_the_ones_before(mod):
    """Edit 2 changes text that only exists after edit 1: it must be found."""
    Path("app.py").write_text(APP)
    mod.multi_edit(the_agent(mod), "app.py", [edit("greet('bob')", "greet('alice')"),
                              edit("greet('alice')", "greet('alice')  # was bob")])
    assert "greet('alice')  # was bob" in Path("app.py").read_text(), (
        "apply each edit to the text the previous edits produced, not to the original.")


def test_a_failing_edit_changes_nothing(mod):
    """Edit 2 of 3 is not found: an error naming edit 2; edit 1 is not applied either."""
    Path("app.py").write_bytes(APP.encode())
    output, is_error = call_tool(mod, "multi_edit", file_path="app.py", edits=[
        edit("def greet(name):", "def hello(name):"),
        edit("this text is not in the file", "x"),
        edit("greet('bob')", "hello('bob')")])
    assert is_error, f"a failing edit must make the call an error: {output!r}"
    assert "edit 2" in output, f"say which edit failed ('edit 2'): {output!r}"
    assert "not found" in output, f"and why (edit_file's reason, 'not found'): {output!r}"
    assert Path("app.py").read_bytes() == APP.encode(), (
        "the file changed although an edit failed. Apply every edit in memory first, "
        "and write the file once, only if all of them succeeded.")


def test_edit_rules_are_edit_files_rules(mod):
    """Ambiguous without replace_all: refused (file unchanged). With replace_all: done."""
    text = "x = 1\ny = x\nz = x\n"
    Path("v.py").write_text(text)
    output, is_error = call_tool(mod, "multi_edit", file_path="v.py",
                                 edits=[edit("x = 1", "x = 5"), edit("= x", "= w")])
    assert is_error and "edit 2" in output and "2 times" in output, (
        f"edit 2's old_string is found 2 times: refuse it, as edit_file does: {output!r}")
    assert Path("v.py").read_text() == text, "the file must not change"
    output, is_error = call_tool(mod, "multi_edit", file_path="v.py",
                                 edits=[edit("x = 1", "x = 5"),
                                        edit("= x", "= w", replace_all=True)])
    assert not is_error and Path("v.py").read_text() == "x = 5\ny = w\nz = w\n", output


def test_each_edit_is_checked(mod):
    """Bad edits are is_error results that name the edit and the problem, never a crash."""
    Path("app.py").write_text(APP)
    bad = {"no edits": ([], "edit"),
           "missing new_string": ([{"old_string": "greet"}], "new_string"),
           "same old and new": ([edit("greet('bob')", "greet('bob')")], "same"),
           "empty old_string": ([edit("", "x")], "empty"),
           "a string, not an object": (["greet"], "edit 1"),
           "an unknown field": ([edit("greet('bob')", "x", replace_everything=True)],
                                "replace_everything")}
    for case, (edits, must_say) in bad.items():
        output, is_error = call_tool(mod, "multi_edit", file_path="app.py", edits=edits)
        assert is_error, f"{case}: should be an is_error result, got {output!r}"
        assert must_say in output, f"{case}: the message should mention {must_say!r}: {output!r}"
        assert not any(crash in output for crash in ("Traceback", "KeyError", "TypeError")), (
            f"{case}: check each edit's fields yourself and say what is wrong "
            f"(validate_input only checks the top level): {output!r}")
    assert Path("app.py").read_text() == APP, "no bad call may change the file"


def test_crlf_file_stays_crlf(mod):
    """A CRLF file, edits written with \\n: matched, and written back with CRLF."""
    Path("win.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    output, is_error = call_tool(mod, "multi_edit", file_path="win.txt",
                                 edits=[edit("one\ntwo", "1\n2"), edit("three", "3")])
    assert not is_error, output
    assert Path("win.txt").read_bytes() == b"1\r\n2\r\n3\r\n", (
        f"line endings must stay CRLF, as edit_file keeps them: {Path('win.txt').read_bytes()!r}")


def test_paths_stay_in_the_workspace(mod):
    """A path outside the workspace, or a missing file: is_error results."""
    output, is_error = call_tool(mod, "multi_edit", file_path="../x.py", edits=[edit("a", "b")])
    assert is_error and "outside the workspace" in output, f"use safe_path: {output!r}"
    output, is_error = call_tool(mod, "multi_edit", file_path="nope.py", edits=[edit("a", "b")])
    assert is_error and "not found" in output, f"a missing file: {output!r}"


def test_schema_and_the_loop(mod, server, client):
    """TOOLS offers multi_edit (edits: an array of objects); the model can call it."""
    schemas = {t["name"]: t for t in mod.TOOLS}
    assert "multi_edit" in schemas, "TOOLS has no entry named 'multi_edit'"
    props = schemas["multi_edit"]["input_schema"].get("properties", {})
    assert props.get("edits", {}).get("type") == "array", f"edits should be an array: {props}"
    items = props["edits"].get("items", {})
    assert items.get("type") == "object" and "old_string" in items.get("properties", {}), (
        "describe one edit in edits' items: an object with old_string, new_string, "
        f"replace_all; items is {items}")
    Path("app.py").write_text(APP)
    server.add(reply(tool_use("multi_edit", {"file_path": "app.py", "edits": [
                   edit("greet('bob')", "greet('eve')")]})),
               reply("Renamed."))
    _, final = run_agent(mod, client, "use eve")
    result = blocks(server.requests[1]["messages"][-1])[0]
    assert not result.get("is_error"), f"the call failed: {result_text(result)}"
    assert "greet('eve')" in Path("app.py").read_text(), (
        f"the edit did not reach the file: {Path('app.py').read_text()!r}")
    assert final == "Renamed."
