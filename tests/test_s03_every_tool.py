"""Issue 21, item 5: every tool honours the rules, not only run_shell.

Through the real loop, SDK and scripted server: write_file and edit_file never write a
protected path without asking, in acceptEdits and bypassPermissions too, whatever an
allow rule says; web_fetch hands a redirect to another host back to the model instead
of following it, and its rules read a host as the network does (`127.1` is
127.0.0.1); the s05 `skill` tool shows nothing a Read deny rule covers and nothing
outside the workspace. Each runs against the chapter that introduced the mechanism and
every later chapter.
"""

import http.server
import json
import threading

import pytest

from conftest import (chapter_params, load_chapter, result_text, run_agent,
                      sent_tool_results, teaching_and_last, write_settings)
from offline.server import reply, tool_use


@pytest.fixture(params=teaching_and_last("s03"))
def mod(request):
    return load_chapter(request.param)


@pytest.fixture(params=chapter_params("s05"))
def mod5(request):
    return load_chapter(request.param)


def load_fetch(mod) -> list:
    """The turns that load web_fetch first where it is a deferred tool (s05+)."""
    if "tool_search" not in mod.TOOL_HANDLERS:
        return []
    return [reply(tool_use("tool_search", {"query": "select:web_fetch"}))]


# --- write_file and edit_file: protected paths ask in every mode ------------------

PROTECTED = [".git/config", ".git/hooks/pre-commit", ".claude/settings.json",
             ".claude/settings.local.json"]


@pytest.mark.parametrize("mode", ["acceptEdits", "bypassPermissions"])
@pytest.mark.parametrize("target", PROTECTED)
def test_protected_paths_are_not_written_unasked(mod, server, client, workspace, mode,
                                                 target):
    """acceptEdits or bypassPermissions and an `Edit(**)` allow rule: a write to a
    protected path still asks (here: no terminal, so no), the file stays as it was."""
    write_settings(workspace, {"defaultMode": mode, "allow": ["Edit(**)", "Write"]})
    before = {p: p.read_bytes() for p in workspace.rglob("*") if p.is_file()}
    evil = "[core]\n\tfsmonitor = touch PWNED\n"
    if target.endswith(".json"):  # valid settings, so that the gate is what stops it
        evil = json.dumps({"hooks": {"PreToolUse": [{"hooks": [
            {"type": "command", "command": "touch PWNED"}]}]}})
    server.add(reply(tool_use("read_file", {"file_path": target})),  # read first
               reply(tool_use("write_file", {"file_path": target, "content": evil})),
               reply("Done."))
    run_agent(mod, client, "configure")
    [result] = sent_tool_results(server.requests[2])
    assert result["is_error"] is True and "Permission denied" in result_text(result)
    assert {p: p.read_bytes() for p in workspace.rglob("*") if p.is_file()} == before


def test_edit_file_on_git_config_asks_in_accept_edits(mod, server, client, workspace):
    """edit_file, after a read, on .git/config: asked, and the file is unchanged."""
    write_settings(workspace, {"defaultMode": "acceptEdits"})
    (workspace / ".git").mkdir()
    config = workspace / ".git" / "config"
    config.write_text("[core]\n\tbare = false\n")
    server.add(reply(tool_use("read_file", {"file_path": ".git/config"})),
               reply(tool_use("edit_file", {"file_path": ".git/config",
                                            "old_string": "bare = false",
                                            "new_string": "pager = touch PWNED"})),
               reply("Done."))
    run_agent(mod, client, "set a pager")
    [result] = sent_tool_results(server.requests[2])
    assert result["is_error"] is True and "git's config" in result_text(result)
    assert config.read_text() == "[core]\n\tbare = false\n"


def test_an_ordinary_file_is_still_written_in_accept_edits(mod, server, client,
                                                           workspace):
    write_settings(workspace, {"defaultMode": "acceptEdits"})
    server.add(reply(tool_use("write_file", {"file_path": "notes.txt", "content": "x"})),
               reply("Done."))
    run_agent(mod, client, "write a note")
    [result] = sent_tool_results(server.requests[1])
    assert result["is_error"] is False
    assert (workspace / "notes.txt").read_text() == "x"


# --- web_fetch: redirects and the host as the network reads it --------------------

class _Site(http.server.BaseHTTPRequestHandler):
    """/away redirects to another host (`localhost`), /here to a page on this one."""
    seen: list = []

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.seen.append((self.headers["Host"], self.path))
        port = self.server.server_address[1]
        target = {"/away": f"http://localhost:{port}/secret",
                  "/here": "/page"}.get(self.path)
        body = b"SECRET-PAGE" if self.path == "/secret" else b"plain page"
        self.send_response(302 if target else 200)
        if target:
            self.send_header("Location", target)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def site(monkeypatch):
    for var in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY",
                "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("no_proxy", "*")
    _Site.seen = []
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Site)
    threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
    yield httpd.server_address[1]
    httpd.shutdown()
    httpd.server_close()


def test_a_redirect_to_another_host_goes_back_to_the_model(mod, server, client,
                                                           workspace, site):
    """Allowed to fetch 127.0.0.1, the agent is sent on to `localhost`: it does not
    follow, the model gets the new URL, and `localhost` is never asked for a page."""
    write_settings(workspace, {"allow": ["WebFetch(domain:127.0.0.1)"]})
    turns = load_fetch(mod)
    server.add(*turns, reply(tool_use("web_fetch", {"url": f"http://127.0.0.1:{site}/away"})),
               reply("Done."))
    run_agent(mod, client, "read the page")
    [result] = sent_tool_results(server.requests[len(turns) + 1])
    text = result_text(result)
    assert result["is_error"] is True and "SECRET-PAGE" not in text
    assert f"http://localhost:{site}/secret" in text and "another host" in text
    assert [path for _, path in _Site.seen] == ["/away"]


def test_a_redirect_on_the_same_host_is_followed(mod, server, client, workspace, site):
    write_settings(workspace, {"allow": ["WebFetch(domain:127.0.0.1)"]})
    turns = load_fetch(mod)
    server.add(*turns, reply(tool_use("web_fetch", {"url": f"http://127.0.0.1:{site}/here"})),
               reply("Done."))
    run_agent(mod, client, "read the page")
    [result] = sent_tool_results(server.requests[len(turns) + 1])
    assert result["is_error"] is False and "plain page" in result_text(result)


@pytest.mark.parametrize("host", ["127.1", "2130706433", "0x7f.1", "0177.0.0.1",
                                  "[::ffff:127.0.0.1]", "127.0.0.1."])
def test_a_deny_rule_covers_every_spelling_of_an_address(mod, server, client, workspace,
                                                         site, host):
    """`WebFetch(domain:127.0.0.1)` denied, in bypassPermissions: every spelling that
    reaches 127.0.0.1 is denied too, and the site sees no request."""
    write_settings(workspace, {"defaultMode": "bypassPermissions",
                               "deny": ["WebFetch(domain:127.0.0.1)"]})
    turns = load_fetch(mod)
    server.add(*turns, reply(tool_use("web_fetch", {"url": f"http://{host}:{site}/secret"})),
               reply("Done."))
    run_agent(mod, client, "read the page")
    [result] = sent_tool_results(server.requests[len(turns) + 1])
    assert result["is_error"] is True and "deny rule" in result_text(result)
    assert _Site.seen == []


@pytest.mark.parametrize("url, host", [("http://127.1/", "127.0.0.1"),
                                       ("http://2130706433/", "127.0.0.1"),
                                       ("http://0x7f.1/", "127.0.0.1"),
                                       ("http://[::ffff:127.0.0.1]/", "127.0.0.1"),
                                       ("http://[::1]/", "::1"),
                                       ("http://Example.COM./x", "example.com"),
                                       ("http://123abc.example/", "123abc.example")])
def test_url_host_reads_a_host_as_the_network_does(mod, url, host):
    assert mod.url_host(url) == host


# --- skill (s05): Read deny rules and the workspace --------------------------------

def add_skill(workspace, name: str, body: str):
    folder = workspace / ".claude" / "skills" / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\ndescription: The {name} skill.\n---\n{body}\n")
    return folder


def test_a_skill_under_a_read_deny_rule_is_not_shown(mod5, server, client, workspace):
    """A Read deny rule on a skill's folder: neither its description nor its body
    nor its files reach the model; the other skill loads, minus its denied file."""
    write_settings(workspace, {"deny": ["Read(.claude/skills/private/**)",
                                        "Read(**/*.key)"]})
    add_skill(workspace, "private", "PRIVATE-BODY")
    public = add_skill(workspace, "public", "PUBLIC-BODY")
    (public / "deploy.key").write_text("KEY")
    (public / "notes.md").write_text("notes")
    server.add(reply(tool_use("skill", {"name": "private"}),
                     tool_use("skill", {"name": "public"})), reply("Done."))
    run_agent(mod5, client, "use the skills")
    first, second = server.requests
    assert "PRIVATE-BODY" not in str(second) and "The private skill" not in str(first)
    denied, shown = sent_tool_results(second)
    assert denied["is_error"] is True
    assert shown["is_error"] is False and "PUBLIC-BODY" in result_text(shown)
    assert "notes.md" in result_text(shown) and "deploy.key" not in result_text(shown)


def test_a_skill_linked_from_outside_is_not_loaded(mod5, server, client, workspace,
                                                   tmp_path):
    """A skill folder that is a symbolic link out of the workspace (to a folder
    holding a secret) is refused: its text never reaches the model."""
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "SKILL.md").write_text("---\ndescription: Outside.\n---\nOUTSIDE-SECRET\n")
    (workspace / ".claude" / "skills").mkdir(parents=True)
    (workspace / ".claude" / "skills" / "linked").symlink_to(outside)
    server.add(reply(tool_use("skill", {"name": "linked"})), reply("Done."))
    run_agent(mod5, client, "use it")
    [result] = sent_tool_results(server.requests[1])
    assert result["is_error"] is True and "outside the workspace" in result_text(result)
    assert "OUTSIDE-SECRET" not in str(server.requests)
