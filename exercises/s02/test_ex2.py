"""Checker for exercise s02 ex2 (core): say how many replacements you expect.

    pytest exercises/s02/test_ex2.py

It checks edit_file's new `expected_replacements` field: in the schema, when the
count matches, when it does not (the file must not change), and that the rules
edit_file already had (curly quotes, uniqueness) still hold.
"""

from pathlib import Path

from exercises.conftest import the_agent
from exercises.conftest import call_tool

CODE = "total = 0\nfor x in xs:\n    total += x\nprint(total)\nprint(total)\nprint(total)\n"


def test_schema_has_the_field(mod):
    """edit_file's schema lists expected_replacements, an integer, and does not require it."""
    schema = {t["name"]: t for t in mod.TOOLS}["edit_file"]["input_schema"]
    field = schema["properties"].get("expected_replacements")
    assert field is not None, (
        "edit_file's input_schema has no expected_replacements property. Add it: "
        "validate_input refuses any field the schema does not list, and the model "
        "only uses fields it can see.")
    assert field.get("type") == "integer", f"expected_replacements should be an integer: {field}"
    assert "expected_replacements" not in schema.get("required", []), "it is optional"


def test_matching_count_replaces_all(mod):
    """Three matches, expected_replacements=3: all three are replaced."""
    Path("calc.py").write_text(CODE)
    out = mod.edit_file(the_agent(mod), "calc.py", "print(total)", "print(total, flush=True)",
                        expected_replacements=3)
    want = CODE.replace("print(total)", "print(total, flush=True)")
    assert Path("calc.py").read_text() == want, (
        "with the right count, every match should be replaced")
    assert out.startswith("Edited"), f"report the edit as edit_file does: {out[:80]!r}"


def test_wrong_count_changes_nothing(mod):
    """Three matches, expected_replacements=2: an error naming both counts; file unchanged."""
    Path("calc.py").write_bytes(CODE.encode())
    output, is_error = call_tool(mod, "edit_file", file_path="calc.py", old_string="print(total)",
                                 new_string="print(-total)", expected_replacements=2)
    assert is_error, f"a count that does not match must be an error, not: {output!r}"
    assert "2" in output and "3" in output, (
        f"say what was expected (2) and what was found (3): {output!r}")
    assert Path("calc.py").read_bytes() == CODE.encode(), "the file must be left exactly as it was"


def test_count_of_one_is_a_safe_single_edit(mod):
    """expected_replacements=1 on a unique string edits it; on a repeated one it refuses."""
    Path("calc.py").write_text(CODE)
    output, is_error = call_tool(mod, "edit_file", file_path="calc.py",
                                 old_string="total = 0", new_string="total = 1",
                                 expected_replacements=1)
    assert not is_error and Path("calc.py").read_text().startswith("total = 1"), output
    output, is_error = call_tool(mod, "edit_file", file_path="calc.py",
                                 old_string="print(total)", new_string="print(0)",
                                 expected_replacements=1)
    assert is_error and "3" in output, f"3 matches, 1 expected: refuse, saying 3. Got {output!r}"


def test_nonsense_counts_are_refused(mod):
    """expected_replacements below 1 is an error, and the file is unchanged."""
    Path("calc.py").write_text(CODE)
    for bad in (0, -2):
        output, is_error = call_tool(mod, "edit_file", file_path="calc.py",
                                     old_string="total = 0", new_string="total = 1",
                                     expected_replacements=bad)
        assert is_error, f"expected_replacements={bad} should be refused, not: {output!r}"
        assert Path("calc.py").read_text() == CODE, "the file must not change"


def test_not_found_keeps_its_helpful_message(mod):
    """A string that is not there at all still gets edit_file's not-found message."""
    Path("calc.py").write_text(CODE)
    output, is_error = call_tool(mod, "edit_file", file_path="calc.py", old_string="nothing",
                                 new_string="x", expected_replacements=2)
    assert is_error and "not found" in output, f"say that old_string was not found: {output!r}"


def test_curly_quotes_count_too(mod):
    """The file has curly quotes, the model types straight ones: all are counted, kept curly."""
    Path("msg.txt").write_text("say “hi”\nsay “hi”\n")
    output, is_error = call_tool(mod, "edit_file", file_path="msg.txt", old_string='say "hi"',
                                 new_string='say "hello"', expected_replacements=2)
    assert not is_error, (
        "count the matches the way replace_text finds them (exact, or else with curly "
        f"quotes folded to straight): {output!r}")
    assert Path("msg.txt").read_text() == "say “hello”\nsay “hello”\n", Path("msg.txt").read_text()


def test_without_the_field_nothing_changes(mod):
    """No expected_replacements: an ambiguous edit is still refused, a unique one still works."""
    Path("calc.py").write_text(CODE)
    output, is_error = call_tool(mod, "edit_file", file_path="calc.py",
                                 old_string="print(total)", new_string="print(0)")
    assert is_error and "3 times" in output, f"an ambiguous edit must still be refused: {output!r}"
    output, is_error = call_tool(mod, "edit_file", file_path="calc.py",
                                 old_string="print(total)", new_string="print(0)", replace_all=True)
    assert not is_error and Path("calc.py").read_text().count("print(0)") == 3, output
