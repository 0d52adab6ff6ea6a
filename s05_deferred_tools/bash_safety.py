"""bash_safety: what a shell command will do, read before it runs.

code.py's gate asks two things of a command line: does it only read, so it may run
unasked (`is_read_only_command`), must it always ask (`dangerous_reason`)? The OS
sandbox decides what it can touch: a wrong answer costs a question, not a file. A first
reading of the course skips this file. tree-sitter-bash (the grammar of Claude Code's
checks) parses the line; a walk with an allow-list of node types reads what bash will
run. What it does not know, or reads unlike bash, is unanalysable: never read-only.

Reading map (the core first; the same file in every chapter from s03 on):
  s03 · bash: parsing what bash will run              the walk: Word, Command, Script
  s03 · bash: the commands a command runs             wrappers: sudo, sh -c, find -exec
  s03 · bash: the read-only tables                    programs and their safe options
  s03 · bash: checking a command against the tables   is_read_only_command
  s03 · bash: dangerous commands                      what always asks
  s03 · bash: where bash and the parser disagree      a first reading stops before it
"""

import contextvars
import functools
import glob
import os
import re
import time
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

import tree_sitter_bash
from tree_sitter import Language, Parser

# === s03 · bash: parsing what bash will run ===
BASH = Parser(Language(tree_sitter_bash.language()))
MAX_COMMAND_CHARS = 10_000   # longer commands are not analysed: they ask
MAX_DEPTH = 4                # sh -c "sh -c '...'" nested deeper: not analysed
MAX_WORDS = 256              # braces that expand into more words: not analysed
# The read-only subset: lists, pipelines, commands with plain or quoted words,
# redirections, if, ( ) and { } groups, [ ] and [[ ]] tests, comments.
READ_ONLY_NODES = set(
    "program list pipeline command command_name word number string string_content "
    "raw_string concatenation redirected_statement file_redirect file_descriptor "
    "heredoc_redirect heredoc_start heredoc_body heredoc_content heredoc_end "
    "herestring_redirect subshell compound_statement if_statement elif_clause "
    "else_clause negated_command test_command test_operator unary_expression "
    "binary_expression parenthesized_expression extglob_pattern regex comment "
    "declaration_command".split())  # the tables refuse `export X=1`, `declare -p`
# Understood too, but never read-only: the walker looks inside them for commands.
KNOWN_NODES = READ_ONLY_NODES | set(
    "simple_expansion expansion command_substitution process_substitution "
    "arithmetic_expansion ansi_c_string translated_string brace_expression "
    "variable_assignment variable_assignments declaration_command unset_command "
    "variable_name special_variable_name subscript array for_statement do_group "
    "c_style_for_statement while_statement case_statement case_item "
    "function_definition ternary_expression postfix_expression".split())
COMMAND_NODES = {"command", "declaration_command", "unset_command", "test_command"}
TEXT = {"word", "string_content", "heredoc_body", "heredoc_content"}  # `...` stays text
EVALUATES = {"let", "declare", "typeset", "local", "export", "readonly", "read",
             "mapfile", "readarray", "printf", "unset", "-v", "-R", "-eq", "-ne", "-lt",
             "-le", "-gt", "-ge"}  # bash evaluates their words' array subscripts


class Unanalysable(Exception):
    """The command cannot be read with certainty: nothing about it is proven."""


DECISION_SECONDS = 2.0  # a decision that takes longer asks
DEADLINE = contextvars.ContextVar("DEADLINE", default=None)  # time.monotonic() | None


def within_budget(decide):
    """Past DECISION_SECONDS, every check of a decision is Unanalysable: it asks."""
    @functools.wraps(decide)
    def budgeted(*args, **kwargs):
        token = DEADLINE.set(DEADLINE.get() or time.monotonic() + DECISION_SECONDS)
        try:
            return decide(*args, **kwargs)
        finally:
            DEADLINE.reset(token)
    return budgeted


def on_time() -> None:  # the walk and the glob expansion look at the clock
    if (DEADLINE.get() or float("inf")) < time.monotonic():
        raise Unanalysable(f"checking it took over {DECISION_SECONDS:g} s")


@dataclass
class Word:
    text: str      # what the program gets: quotes removed; expansions as written
    empty: str     # the same if every expansion were empty: "$X/*" -> "/*"
    static: bool   # no expansion: `text` is exactly what the program gets
    glob: bool     # has an unquoted * ? or [: bash replaces it by file names


@dataclass
class Command:
    words: list          # [Word]: the program, then its arguments
    redirects: list      # [(operator, Word | None)]: ">", "2>&", "<", "<<<" ...
    assigns: list = field(default_factory=list)  # [Word]: NAME=value before it
    function: str = ""   # the function whose body holds it (a fork bomb calls it)
    opaque: str = ""     # why bash may run something here that we cannot see


@dataclass
class Script:
    commands: list   # [Command]: every command of the line, nested ones included
    pipelines: list  # [[Command]]: the commands joined by each |
    exotic: str      # a construct outside the read-only subset ("" if none)


def unreadable(command: str) -> str | None:
    """A character bash cannot be given (NUL, a lone surrogate) or tree-sitter-bash 0.25
    crashes on (found by fuzzing: `{` then U+F0001; beyond U+FFFF, those private,
    unassigned or format): a command holding one is refused, not parsed."""
    return next((c for c in command if c == "\0" or "\ud800" <= c <= "\udfff"
                 or c > "\uffff" and unicodedata.category(c) in ("Co", "Cn", "Cf")),
                None)


@functools.lru_cache(maxsize=64)  # the gate, the sandbox, the runner: one parse a line
def parse_command(command: str, depth: int = 0) -> Script:
    """Every command `command` runs, in order; raises Unanalysable when unsure."""
    if len(command) > MAX_COMMAND_CHARS or depth > MAX_DEPTH:
        raise Unanalysable("it is too long or too deeply nested to analyse")
    if (odd := unreadable(command)) is not None:
        raise Unanalysable(f"it holds U+{ord(odd):04X}, which it cannot be parsed with")
    tree = join_lines(command.encode())
    script, by_id, groups, hidden, arithmetic = Script([], [], ""), {}, [], False, False
    for node in walk(tree.root_node):
        if node.is_error or node.is_missing:
            raise Unanalysable("it does not parse as bash")
        if node.is_named and node.type not in KNOWN_NODES:
            raise Unanalysable(f"the walker does not know {node.type}")
        if node.is_named and node.type not in READ_ONLY_NODES or node.type == "((":
            script.exotic = script.exotic or node.type.strip("(") or "arithmetic"
        if node.type in COMMAND_NODES:
            by_id[node.id] = build_command(node)
            script.commands.append(by_id[node.id])
        elif (node.type == "redirected_statement"
              and tail(node).type not in COMMAND_NODES):
            groups.append(Command([], [r[:2] for c in redirects_in(node)
                                       if (r := redirect(c))]))
        elif node.type == "heredoc_redirect":
            check_heredoc(node, tree.root_node.text)
        elif node.type == "pipeline":
            script.pipelines.append([(c.children[0] if c.type == "redirected_statement"
                                      else c).id for c in node.named_children])
        hidden |= hides_substitution(node)
        arithmetic |= node.type in ("arithmetic_expansion", "c_style_for_statement",
                                    "((")
        if node.child_count == 0 and node.type in TEXT and re.search(
                rb"`|(?<!\\)\$\(", node.text) and not quoted_heredoc(node):
            raise Unanalysable("bash would run a substitution the parser read as text")
    script.commands += groups  # `{ ...; } > file`: the group's redirections
    script.pipelines = [[by_id[i] for i in p if i in by_id] for p in script.pipelines]
    if hidden and (arithmetic or any(({program(c)} | {w.text for w in c.words})
                                     & EVALUATES for c in script.commands)):
        raise Unanalysable("bash may evaluate a $( ) that is quoted here as text")
    return script


def walk(root):
    stack = [root]
    while stack:
        node = stack.pop()
        on_time()
        yield node
        stack.extend(reversed(node.children))

def build_command(node) -> Command:
    """A simple command, a declaration (export, local ...) or a [ ] / [[ ]] test."""
    cmd, parent, test = Command([], []), node, node.type == "test_command"
    if test and not re.fullmatch(rb"(?s)\[\[?\s.*\s\]\]?", node.text):
        raise Unanalysable("bash reads [x] without spaces as a program name")
    for child in leaves(node) if test else node.children:
        if child.type == "variable_assignment" and node.type == "command":
            cmd.assigns += words_of(child)
        elif r := redirect(child):
            cmd.redirects.append(r[:2])
            cmd.words += r[2]  # `echo > f hi` runs `echo hi`
        else:
            cmd.words += words_of(child)
    # A redirection after `a && b` or `a | b` is b's, though tree-sitter hangs it on
    # the whole list: climb while this command ends the list, and collect them.
    while parent.parent.type in ("list", "pipeline", "redirected_statement") and (
            tail(parent.parent).id == node.id):
        parent = parent.parent
        for r in filter(None, map(redirect, redirects_in(parent))):
            cmd.redirects.append(r[:2])
            cmd.words += r[2]
    while parent is not None and parent.type != "function_definition":
        parent = parent.parent
    cmd.function = parent.child_by_field_name("name").text.decode() if parent else ""
    cmd.opaque = "" if not cmd.words or cmd.words[0].static else (
        "the program to run is only known at run time")
    return cmd


def redirect(node) -> tuple | None:
    """`2> err` -> ("2>", err, []); else None. `echo > f hi`: hi is the third."""
    if not node.type.endswith("redirect"):
        return None
    op = "".join(c.text.decode() for c in node.children
                 if c.type == "file_descriptor" or not c.is_named)
    words = [w for c in node.named_children if c.type in WORDISH for w in words_of(c)]
    return op, words[0] if words else None, words[1:]


def redirects_in(node) -> list:
    """A statement's redirections, with the `> f` tree-sitter puts in `<<EOF > f`."""
    return [n for c in node.children for n in [c] + (
        c.named_children if c.type == "heredoc_redirect" else [])]


def tail(node):
    """The node a redirected statement's redirections belong to (see build_command)."""
    while node.type in ("list", "pipeline", "redirected_statement"):
        node = node.named_children[0 if node.type == "redirected_statement" else -1]
    return node


def leaves(node):
    """The words of [[ -f a && $x == y* ]], in order: operators and operands."""
    for child in node.children:
        if child.child_count == 0 or child.type in WORDISH:
            yield child
        else:
            yield from leaves(child)


WORDISH = {"word", "string", "raw_string", "concatenation", "number", "ansi_c_string",
           "simple_expansion", "expansion", "command_substitution", "extglob_pattern",
           "regex", "translated_string", "arithmetic_expansion", "process_substitution",
           "heredoc_start", "brace_expression", "test_operator"}


def words_of(node) -> list:
    """The words a node becomes, quotes removed, braces and ~ expanded: {rm,-rf,~}."""
    marks, flat = {}, ""
    for text, kind in pieces(node):  # braces expand on unquoted characters only: a
        if kind == "plain":           # quoted or expanded piece stands in as one
            if re.search("[\U000F0000-\U0010FFFF]", text):  # private character
                raise Unanalysable("it uses characters the analysis reserves")
            flat += text              # while they expand
        else:
            marks[chr(0xF0000 + len(marks))] = (text, kind)
            flat += chr(0xF0000 + len(marks) - 1)
    words = []
    for variant in expand_braces(flat):
        # ~+ ~+N ~N ~- ~-N: the directory stack, known only to the running bash
        if tilde := re.match(r"~([+-]?\d+|[+-]|[\w.-]*)(?=/|$)", variant):
            stack = tilde[1] and re.fullmatch(r"[+-]?\d*", tilde[1])
            home = None if stack else os.path.expanduser(tilde[0])
            marks[chr(0xFFFFD)] = (home, "quoted") if home else (tilde[0], "expansion")
            variant = chr(0xFFFFD) + variant[tilde.end():]
        got = [marks.get(c, (c, "plain")) for c in variant]
        plain = "".join(t if k == "plain" else "_" for t, k in got)
        if re.search(r"\[(\^|\[[:=.]|[^\][]*\\)", plain):  # [^a] [[:alpha:]] [\]]
            raise Unanalysable("it has a glob that Python's glob reads otherwise")
        words.append(Word("".join(t for t, _ in got),
                          "".join(t for t, k in got if k != "expansion"),
                          all(k != "expansion" for _, k in got),
                          bool(re.search(r"[*?]|\[[^\][]*\]", plain))))
    return words


def pieces(node) -> list:
    """[(text, "plain" | "quoted" | "expansion")]: a word as bash reads it."""
    text = node.text.decode(errors="replace")
    if node.type == "raw_string":
        return [(text[1:-1], "quoted")]
    if node.type == "ansi_c_string":
        return [(ansi_c(text[2:-1]), "quoted")]
    if node.type in ("string", "translated_string"):
        return [(re.sub(r'\\([$`"\\])', r"\1", c.text.decode(errors="replace")),
                 "quoted") if c.type == "string_content"
                else (c.text.decode(), "expansion")
                for c in node.named_children] or [("", "quoted")]
    if node.type in ("concatenation", "variable_assignment", "command_name"):
        return [p for c in node.children for p in pieces(c)]
    if node.type in WORDISH - {"simple_expansion", "expansion", "command_substitution",
                               "process_substitution", "arithmetic_expansion"} or (
            not node.is_named or node.type == "variable_name"):
        return [(m[1], "quoted") if m[1] else (m[2], "plain")  # \x is a quoted x
                for m in re.finditer(r"\\(.)|([^\\]+|\\$)", text, re.S)]
    return [(text, "expansion")]  # $x ${x} $(...) `...` <(...) $((...))


# === s03 · bash: the commands a command runs ===
# A command may run others: `sudo rm x` and `find . -exec rm {} +` run rm; `sh -c
# 'rm x'`, `eval`, `watch` and `echo 'rm x' | sh` run text as code. Deny rules and the
# dangerous check look at all of them; code known only at run time is opaque.
WRAPPERS = {  # program -> its options that take a value; then the command it runs
    "sudo": "-u -g -C -D -h -p -r -t -U", "doas": "-u -C", "env": "-u -C -S",
    "nice": "-n", "timeout": "-s -k --signal --kill-after", "ionice": "-c -n -p",
    "xargs": "-I -n -P -d -L -s -E -a", "stdbuf": "-i -o -e", "exec": "-a",
    "strace": "-o -e -p", "flock": "-w -E", "nohup": "", "time": "", "command": "",
    "builtin": "", "setsid": "", "busybox": "", "unbuffer": "", "chroot": "",
    "nsenter": "-t", "fakeroot": "", "torsocks": "", "caffeinate": "-t -w",
    "coproc": ""}
JOINERS = {"eval": (), "watch": ("-n", "--interval"),  # program -> options with a
           "parallel": ("-j", "--jobs", "-S", "-a", "--arg-file")}  # value to skip
HARMLESS_WRAPPERS = {"timeout", "time", "nice", "nohup", "stdbuf"}
SHELLS = {"sh", "bash", "zsh", "dash", "ksh", "fish", "csh", "tcsh", "ash", "busybox"}


def all_runs(script: Script, depth: int = 0) -> list:
    """The script's commands and every command they run, wrappers opened."""
    runs = [r for cmd in script.commands for r in [cmd] + inner_runs(cmd, depth)]
    for pipeline in script.pipelines:  # `echo 'rm x' | sh`: sh runs the text
        for before, after in zip(pipeline, pipeline[1:]):
            if program(before) in ("echo", "printf") and program(after) in SHELLS:
                runs += code_runs(before.words[1:], before, depth)
    return runs


def inner_runs(cmd: Command, depth: int) -> list:
    """The commands one command runs: a wrapper's, find -exec's, sh -c's, eval's."""
    prog, words, texts = program(cmd), cmd.words, [w.text for w in cmd.words]
    if prog in WRAPPERS and len(words) > 1:
        takes_value, rest = WRAPPERS[prog].split(), words[1:]
        while rest and (re.match(r"-|\w+=|\d", rest[0].text) or prog == "chroot"):
            rest, prog = rest[2 if rest[0].text in takes_value else 1:], ""
        inner = Command(rest, [], function=cmd.function, opaque=cmd.opaque)
        return [inner] + inner_runs(inner, depth) if rest else []
    for i, text in enumerate(texts if prog == "find" else ()):
        if text in ("-exec", "-execdir", "-ok", "-okdir"):
            end = next((j for j in range(i, len(texts)) if texts[j] in (";", "+")),
                       None)
            inner = Command(words[i + 1:end], [], function=cmd.function)
            return [inner] + inner_runs(inner, depth)
    if prog in SHELLS and "-c" in texts[1:-1]:
        return code_runs(words[texts.index("-c") + 1:][:1], cmd, depth)
    if prog in JOINERS:  # they join their words into code (an option's value aside)
        code = [w for i, w in enumerate(words[1:], 1) if w.text[:1] != "-"
                and w.text != ":::" and words[i - 1].text not in JOINERS[prog]]
        return code_runs(code, cmd, depth)
    return []


def unwrapped(cmd: Command) -> Command:
    """`timeout 30 npm test` -> `npm test`: rules match inside HARMLESS_WRAPPERS."""
    while program(cmd) in HARMLESS_WRAPPERS and (inner := inner_runs(cmd, 0)):
        cmd = inner[0]
    return cmd


def code_runs(words: list, cmd: Command, depth: int) -> list:
    """The commands that text run as code holds; opaque if the text is unknown."""
    if not all(w.static for w in words):
        return [Command([], [], function=cmd.function,
                        opaque="it runs code that is only known at run time")]
    try:
        return all_runs(parse_command(" ".join(w.text for w in words), depth + 1),
                        depth + 1)
    except Unanalysable as e:
        return [Command([], [], opaque=f"it runs code that cannot be analysed ({e})")]


def program(cmd: Command) -> str:
    """The program a command runs: `/bin/rm`, `\\rm` and `'rm'` are all rm."""
    return os.path.basename(cmd.words[0].text) if cmd.words else ""


# === s03 · bash: the read-only tables ===
# The programs that only read, each with the options that keep it so: an allow-list.
# An option not listed, or abbreviated (GNU's `--outp` is `--output`), is not read-only.
# -x a flag (-abc: three), -x= takes a value, -x@ a path checked like any path, -x?
# an optional value (--color=auto), the same for --long; -# allows -NUM (head -5).
# Where GNU and BSD disagree, the reading that checks more (stat -f: a flag, so the
# next word is checked as a path). Operands are paths to read, unless the entry starts
# text: (words)  none: (no operands)  one: (one path: `uniq IN OUT` writes OUT)
# pattern: (the first operand, unless an option gave one)  date: (only +FORMAT)
# lookup: (names, and only with -v or -V)
FIND = ("-P -name= -iname= -path= -ipath= -wholename= -regex= -iregex= -regextype= "
        "-type= -xtype= -maxdepth= -mindepth= -mtime= -mmin= -atime= -amin= -ctime= "
        "-cmin= -size= -perm= -user= -group= -uid= -gid= -links= -inum= -newer@ "
        "-samefile@ -empty -readable -writable -executable -nouser -nogroup -print "
        "-print0 -ls -printf= -prune -quit -depth -mount -xdev -daystart -true -false "
        "-not -and -or -a -o ! ( ) ,")
# (no -exec, -ok, -delete, -fprint, -fls: they run or write; no -L, -H, -follow: links)
# `test` and `[` compare integers, but in `[[ ]]` -eq and friends evaluate both sides
# as arithmetic, which runs $( ) in a subscript; -v and -R evaluate one too.
TEST = ("-a -b -c -d -e -f -g -h -k -p -r -s -t -u -w -x -G -L -N -O -S -n -z = == != "
        "< > =~ -nt -ot -ef ! ( ) -o && || [ ] [[ ]]")
INTEGER_TESTS = "-eq -ne -lt -le -gt -ge"
READ_ONLY = {
    "cat": "-AbeEnstTuv --number --show-all --show-ends --squeeze-blank",
    "head": "-# -qvz -n= -c= --lines= --bytes= --quiet --verbose",
    "tail": "-# -fFqrvz -n= -c= -s= --lines= --bytes= --follow? --retry --quiet",
    "wc": "-clmwL --bytes --chars --lines --words --max-line-length",
    "ls": "-1aAbBcCdfFgGhiklmnopqrRsStuUvxX --all --almost-all --color? --classify "
          "--directory --human-readable --recursive --reverse --size --sort= "
          "--group-directories-first --full-time --time-style=",  # no -L: links
    "tree": "-adfFghiCnpqrsDtuvxJX -L= -P= -I= --noreport --dirsfirst --gitignore "
            "--du --prune --charset= --sort=",       # no -o (writes), -l (links)
    "du": "-abchksxm -d= --max-depth= --summarize --human-readable --apparent-size "
          "--all --total --exclude= --time",        # no -L (links), --files0-from
    "df": "-ahHiklPT -t= -x= --human-readable --inodes --local --print-type --total",
    "stat": "-fLt -c= --format= --printf= --terse --file-system --dereference",
    "file": "-bhiLNps -e= -F= -m@ --brief --mime --mime-type",  # no -z: decompressors
    "grep": "pattern: -# -abcEFGhHiIlLnoqrsTUvwxz -e= -f@ -m= -A= -B= -C= -d= "
            "--regexp= --file@ --count --color? --colour? --context= --max-count= "
            "--after-context= --before-context= --include= --exclude= --exclude-dir= "
            "--files-with-matches --files-without-match --ignore-case --invert-match "
            "--line-number --no-filename --with-filename --only-matching --quiet "
            "--recursive --word-regexp --line-regexp --extended-regexp --fixed-strings "
            "--perl-regexp --null --no-messages --binary-files= --byte-offset --text "
            "--basic-regexp --initial-tab --label= --line-buffered --null-data "
            "--silent --no-ignore-case --group-separator= --no-group-separator -D= "
            "--binary --devices= --exclude-from@ --unix-byte-offsets "
            "-uy",
            # no -R, -S, -O: they follow links out of the workspace; no -Z (BSD zgrep)
    "rg": "pattern: -# -0acFHiIlnNopqsSuUvVwx -e= -f@ -g= -t= -T= -A= -B= -C= -m= -j= "
          "-M= -r= --files --hidden --no-ignore --no-heading --heading --json --color= "
          "--column --count --files-with-matches --files-without-match --glob= "
          "--iglob= --fixed-strings --ignore-case --smart-case --line-number "
          "--max-count= --max-depth= --multiline --only-matching --sort= --type= "
          "--type-not= --type-list --vimgrep --word-regexp --invert-match --context= "
          "--after-context= --before-context= --trim --replace= --stats -d= -hP --text "
          "--no-filename --with-filename --quiet --null --no-line-number --pcre2 "
          "--max-columns= --max-filesize= --passthru --count-matches --no-messages",
          # no --pre, --hostname-bin, -z: they run programs; no -L/--follow: links
    "sort": "-bcCdfghiMmnrRsuVz -k= -t= -S= --key= --field-separator= --reverse "
            "--numeric-sort --human-numeric-sort --version-sort --unique --stable "
            "--ignore-case --general-numeric-sort --buffer-size= --check? --debug",
            # no -o/--output (writes), -T (temporary files), --compress-program (runs
            # a program), --files0-from (reads names we cannot check)
    "uniq": "one: -cdDiuz -f= -s= -w= --count --repeated --unique --ignore-case "
            "--skip-fields= --skip-chars= --check-chars= --all-repeated? --group?",
    "cut": "-nsz -b= -c= -d= -f= --bytes= --characters= --delimiter= --fields= "
           "--complement --only-delimited --output-delimiter= --zero-terminated",
    "diff": "-abBdEiNpqstTuwy -c -C= -U= -x= -X@ -I= -W= --brief --color? --unified? "
            "--context? --new-file --ignore-case --ignore-all-space --side-by-side "
            "--ignore-blank-lines --ignore-space-change --suppress-common-lines "
            "--exclude= --label= --strip-trailing-cr --text",  # no -r: follows links
    "tr": "text: -cCdst --complement --delete --squeeze-repeats",
    "nl": "-p -b= -d= -f= -h= -i= -l= -n= -s= -v= -w=",
    "paste": "-sz -d= --delimiters= --serial", "rev": "",
    "column": "-entx -c= -s= -o= -N= --table", "tac": "-br -s= --separator=",
    "fold": "-bs -w= --width= --bytes --spaces",
    "expand": "-ai -t= --tabs= --initial", "unexpand": "-ai -t= --tabs= --all",
    "comm": "-123iz --check-order --nocheck-order --output-delimiter= --total",
    "cmp": "-blsv -i= -n= --print-bytes --verbose --quiet --silent --bytes=",
    "od": "-bcdfilosvx -A= -j= -N= -t= -w? --address-radix= --skip-bytes= "
          "--read-bytes= --format= --width?",
    "hexdump": "-bcCdovx -n= -s= -e=", "strings": "-afw -n= -t= --bytes= --radix=",
    "xxd": "one: -abEipruU -c= -g= -l= -o= -s=",          # `xxd IN OUT` writes OUT
    "base64": "-dDi -w= -b= --decode --ignore-garbage --wrap=",  # no -o (BSD: writes)
    "md5sum": "-btz --binary --text --tag --zero",  # no -c: reads the files it names
    "sha1sum": "-btz --tag", "sha256sum": "-btz --tag", "sha512sum": "-btz --tag",
    "shasum": "-0bt -a= --algorithm=", "realpath": "-emqsLPz", "readlink": "-efmnqsvz",
    "jq": "pattern: -acCejMnrRsS -L@ --arg== --argjson== --slurpfile=@ --rawfile=@ "
          "--raw-output --compact-output --slurp --null-input --exit-status --tab "
          "--sort-keys --indent= --join-output --raw-input --ascii-output",
    "basename": "text: -az -s= --multiple --suffix= --zero",
    "echo": "text: -neE", "printf": "text:",  # no printf -v: it sets a variable
    "seq": "text: -w -s= -f= --separator= --format= --equal-width", "groups": "text:",
    "sleep": "text:", "true": "text:", "false": "text:", ":": "text:", "expr": "text:",
    "pwd": "none: -LP", "whoami": "none:", "nproc": "none: --all", "arch": "none:",
    "uptime": "none: -ps --pretty --since", "free": "none: -bghkmtw --human --total",
    "uname": "none: -amnoprsvi --all", "tty": "none: -s", "which": "text: -a",
    "hostname": "none: -AdfiIs --fqdn --short --domain",  # `hostname NAME` sets it
    "id": "text: -gGnruz", "cal": "text: -3hjmy", "dirname": "text: -z --zero",
    "date": "date: -Ru -d= -r@ -f@ -I? --date= --utc --iso-8601? --rfc-3339= "
            "--rfc-email --reference@",
    # no env, printenv, set, declare -p: they print the environment (Claude Code asks)
    "type": "text: -afptP", "help": "text: -dms", "history": "text:",
    "alias": "none: -p", "hash": "none: -l", "umask": "none: -pS", "times": "none:",
    "jobs": "none: -lnprs",
    "command": "lookup: -pvV",  # `command -v git` says what git is; `command git` runs
    "ulimit": "none: -aHSbcdefiklmnpqrstuvxPRT",  # a value (ulimit -n 1) sets it
    "pgrep": "text: -afilnovx -g= -G= -P= -s= -t= -u= -U=",
    "ps": "text: -AaefFHjlLmTwx -C= -G= -g= -o= -O= -p= -u= -U= --forest --sort= "
          "--pid= --ppid= --user= --no-headers --format=",
    "find": FIND, "test": f"{TEST} {INTEGER_TESTS}", "[": f"{TEST} {INTEGER_TESTS}",
    "[[": TEST,  # these four spell long options with one dash: -name, -nt
    "git": "", "sed": "", "cd": "",  # their own checks: see SPECIAL below
}
READ_ONLY["egrep"] = READ_ONLY["fgrep"] = READ_ONLY["grep"]
RECURSIVE = {  # programs that read whole directory trees: always (""), or with these
    "grep": {"-r", "-d", "--recursive"}, "egrep": {"-r", "--recursive"},
    "fgrep": {"-r"}, "ls": {"-R", "--recursive"}, "rg": "", "find": "", "tree": "",
    "du": "", "git": ""}
GIVES_PATTERN = {"-e", "-f", "--regexp", "--file", "--files", "--type-list"}
GIT_LOG = ("-# -p -u -s -i -n= -S= -G= -L= --oneline --graph --stat? --shortstat "
           "--numstat --name-only --name-status --patch --no-patch --decorate? "
           "--no-decorate --abbrev-commit --all --branches? --tags? --remotes? "
           "--author= --committer= --since= --until= --after= --before= --grep= "
           "--max-count= --skip= --reverse --no-merges --merges --first-parent "
           "--follow --date= --relative-date --format= --pretty? --color? --no-color "
           "--word-diff? --summary --source --full-history --dense --sparse "
           "--simplify-merges --ancestry-path --walk-reflogs --max-age= --min-age= "
           "--no-walk? --left-right --cherry-mark --cherry-pick --boundary "
           "--topo-order --date-order --author-date-order --diff-filter= --raw "
           "--pickaxe-regex --pickaxe-all --regexp-ignore-case --all-match "
           "--invert-grep --no-ext-diff --parents --abbrev? --no-abbrev-commit "
           "--mailmap --no-mailmap --no-notes")
GIT_DIFF = ("-abpsuwRzDW -U= -M? -B? -C? -l= -S= -G= -O@ --cached --staged --stat? "
            "--numstat --shortstat --dirstat? --name-only --name-status --color? "
            "--no-color --word-diff? --word-diff-regex= --color-words? --unified= "
            "--ignore-all-space --ignore-space-change --ignore-space-at-eol "
            "--ignore-blank-lines --check --diff-filter= --summary --minimal "
            "--relative? --quiet --exit-code --find-renames? --find-copies? "
            "--find-copies-harder --no-renames --break-rewrites? --irreversible-delete "
            "--patch-with-stat --histogram --patience --diff-algorithm= --full-index "
            "--binary --abbrev? --inter-hunk-context= --function-context "
            "--ws-error-highlight= --no-ext-diff --no-textconv --pickaxe-regex "
            "--pickaxe-all --raw")
GIT_READ_ONLY = {  # subcommand -> its read-only options; operands: revisions, paths
    "status": "-bsuvz --short --branch --porcelain? --long --untracked-files? "
              "--ignored? --no-renames --renames --find-renames? --show-stash "
              "--ahead-behind --no-ahead-behind --verbose --column? --no-column",
    "log": GIT_LOG, "show": f"{GIT_LOG} {GIT_DIFF} -m", "diff": GIT_DIFF,
    "reflog": GIT_LOG,
    "shortlog": "-nsec --numbered --summary --email --all --committer --no-merges "
                "--since= --until= --after= --before= --author= --group= --format=",
    "blame": "-bcelnpstwf -L= -M? -C? --porcelain --line-porcelain --date= --root "
             "--incremental --show-stats --show-name --show-number --show-email "
             "--ignore-rev= --ignore-revs-file@ --abbrev= --score-debug --color-lines "
             "--color-by-age",
    "rev-parse": "-q --abbrev-ref? --short? --verify --quiet --show-toplevel --git-dir "
                 "--is-inside-work-tree --symbolic-full-name --show-prefix --show-cdup "
                 "--symbolic --git-common-dir --absolute-git-dir --is-inside-git-dir "
                 "--is-bare-repository --is-shallow-repository --git-path=",
    "rev-list": "-# -n= --count --all --max-count= --since= --until= --author= "
                "--reverse --no-merges --merges --first-parent --objects --left-right "
                "--branches? --tags? --remotes? --after= --before= --committer= "
                "--grep= --min-parents= --max-parents= --skip= --walk-reflogs "
                "--oneline --abbrev-commit --pretty? --format= --abbrev= --graph "
                "--full-history --ancestry-path --source --topo-order --date-order",
    "ls-files": "-cdfikmostuvz -x= -X@ --cached --deleted --modified --others "
                "--ignored --stage --unmerged --killed --exclude-standard --exclude= "
                "--exclude-from@ --exclude-per-directory= --full-name --error-unmatch "
                "--directory --no-empty-directory --eol --abbrev? --debug "
                "--recurse-submodules",
    "ls-tree": "-dlrtz --name-only --name-status --full-name --full-tree --abbrev?",
    "describe": "--tags --all --long --always --dirty? --exact-match --contains "
                "--abbrev= --match= --exclude= --first-parent --first-match "
                "--candidates= --broken?",
    "cat-file": "-epst --batch-check? --allow-undetermined-type",  # no --textconv,
    "merge-base": "-a --all --is-ancestor --fork-point --octopus --independent",
    "for-each-ref": "--format= --sort= --count= --contains? --no-contains? "
                    "--merged? --no-merged? --points-at= --color?",
    "grep": "-# -cEFGhHiIlLnopqrvwxzPW -e= -f@ -A= -B= -C= -m= --count --ignore-case "
            "--line-number --files-with-matches --files-without-match --name-only "
            "--cached --untracked --word-regexp --invert-match --heading --break "
            "--max-depth= --max-count= --quiet --extended-regexp --basic-regexp "
            "--fixed-strings --perl-regexp --full-name --color? --no-color "
            "--only-matching --and --or --not --after-context= --before-context= "
            "--context= --threads= --show-function --function-context --column "
            "--null --all-match --exclude-standard --recurse-submodules",
            # no -O/--open-files-in-pager (runs a program), --no-index (reads outside)
    "branch": "-arvi --all --remotes --verbose --list -l --show-current --color? "
              "--no-color --merged? --no-merged? --contains? --no-contains? --sort= "
              "--points-at= --format= --ignore-case --column? --no-column --abbrev= "
              "--no-abbrev",
    "tag": "-li --list -n? --sort= --contains? --no-contains? --merged? --no-merged? "
           "--points-at= --format= --ignore-case --column? --no-column --color?",
    "remote": "-nv --verbose --push --all",  # `get-url NAME`, `show -n NAME`
    "worktree": "-vz --porcelain --verbose",  # only `git worktree list`
    "config": "-lz --get --get-all --get-regexp --list --local --global --system "
              "--worktree -f@ --file@ --show-origin --show-scope --name-only --null "
              "--type= --bool --int --bool-or-int --path --expiry-date --default= "
              "--includes --no-includes",  # and only to read: see git_effects
}   # no `git -c` (settings can name programs), --show-signature or %G (runs gpg),
    # --output (writes), --ext-diff or --textconv (run programs), ls-remote (network)
SED = ("-nErsuz -e= -l= --expression= --quiet --silent --regexp-extended --posix "
       "--debug --sandbox --null-data --zero-terminated --separate --unbuffered "
       "--line-length=")   # no -i (writes), -f (a script)
# subtle: as in sed, a / inside [ ] does not end a regex (`s/[/]/;/w f/p` writes f)
SED_REGEX = r"/([^/\\\n[]|\\.|\[\^?\]?[^]\\\n[]*\])*/"  # no [[:alpha:]]: it asks
SED_ADDRESS = rf"(\d+(~\d+)?|\$|{SED_REGEX}I?)"
# subtle: white space has one place in the pattern, or a script that fails to match
# backtracks exponentially (`sed -n '   p;   p; ... X'` hung the gate).
SED_STEP = (rf"({SED_ADDRESS}([ \t]*,[ \t]*({SED_ADDRESS}|[+~]\d+))?[ \t]*)?(![ \t]*)?"
            rf"(\{{[\s;]*)?([pdqQ=lnNPDgGhHxzF]|s{SED_REGEX}([^/\\\n]|\\.)*/"
            r"[gpiIm0-9]*|y/([^/\\\n]|\\.)*/([^/\\\n]|\\.)*/)[ \t]*")  # 2{p;q}: a block
SED_SCRIPT = re.compile(  # no w, e, r: they write, run, read
    rf"[\s;]*{SED_STEP}([;\n}}][\s;}}]*{SED_STEP})*[\s;}}]*")


# === s03 · bash: checking a command against the tables ===
@dataclass
class ShellEffects:
    parts: list      # [(Command, why it is not read-only or None)], in order
    reads: list      # [(Path, recursive)]: what its read-only parts read
    writes: list     # [Path]: the files its redirections write
    problem: str     # why the line is not read-only, its writes aside ("" if it is)


def is_read_only_command(command: str, cwd: Path | None = None) -> bool:
    """Every command provably changes nothing and reads inside the workspace (run in
    `cwd`, the shell's folder: the workspace if None)."""
    effects = shell_effects(command, cwd)
    return not effects.problem and not effects.writes


def shell_effects(command: str, cwd: Path | None = None) -> ShellEffects:
    """What a command line run in `cwd` reads and writes, and which of its parts only
    read. Redirections are judged apart: `git log > f` reads, and writes f (an edit)."""
    try:
        script = parse_command(command)
    except Unanalysable as e:
        return ShellEffects([], [], [], f"it cannot be analysed: {e}")
    effects = ShellEffects([], [], [], "" if script.commands else "it runs nothing")
    cwds = {Path(cwd or Path.cwd()).resolve()}  # where relative paths point; a cd adds
    for cmd in script.commands:
        problem = next(filter(None, (command_effects(cmd, cwd, effects)
                                     for cwd in sorted(cwds))), None)
        effects.parts.append((cmd, problem))
        if problem is None and program(cmd) == "cd":
            cwds |= {Path(os.path.realpath(cwd / expand_globs(cmd.words[1:], cwd)[0]))
                     for cwd in cwds}
    bad = [f"'{' '.join(w.text for w in c.words)[:80]}' is not read-only: {p}"
           for c, p in effects.parts if p]
    exotic = f"it uses {script.exotic.replace('_', ' ')}, never read-only"
    effects.problem = effects.problem or next(iter(bad), script.exotic and exotic)
    return effects


def command_effects(cmd: Command, cwd: Path, effects: ShellEffects) -> str | None:
    """Why one command run in `cwd` is not read-only, or None; records its effects."""
    for op, target in cmd.redirects:
        if problem := redirect_effects(op, target, cwd, effects):
            return problem
    if cmd.assigns:
        return "it sets variables for the program (PAGER=... can run anything)"
    if not all(w.static for w in cmd.words) or cmd.words and cmd.words[0].glob:
        return "a word of it is only known at run time"
    if not cmd.words or cmd.words[0].text not in READ_ONLY:
        return (f"{cmd.words[0].text} is not a program known to only read"
                if cmd.words else None)
    prog, args = cmd.words[0].text, expand_globs(cmd.words[1:], cwd)
    problem, paths, recursive = SPECIAL.get(prog, program_effects)(prog, args)
    if prog == "git" and problem is None and (repo := nested_repo(cwd / paths[0])):
        problem = f"git would read the config of {repo}, a repository in the workspace"
    for path in paths if problem is None else ():
        # subtle: the kernel follows a link before `..`; rules see both paths
        full, real = (Path(f(cwd / path)) for f in (os.path.normpath, os.path.realpath))
        if not is_inside(real):
            return f"{path} is outside the workspace"
        effects.reads += [(p, recursive) for p in dict.fromkeys((full, real))]
    return problem


def nested_repo(folder: Path) -> str | None:
    """The repository in the workspace, not the workspace's own, whose config git
    run in `folder` reads (vendor/ of `cd vendor && git status`): nothing checked
    that config, which can run programs (Claude Code asks too). None if none."""
    folder, workspace = Path(os.path.realpath(folder)), Path.cwd().resolve()
    for above in [folder, *folder.parents]:
        if above == workspace or workspace not in above.parents:
            return None
        if os.path.lexists(above / ".git"):
            return str(above.relative_to(workspace))
    return None


def is_inside(full: Path) -> bool:  # the same test as code.py's
    workspace = Path.cwd().resolve()
    return full == workspace or workspace in full.parents


def expand_globs(words: list, cwd: Path) -> list:
    """A glob becomes the files it matches (`sort *` gets a file named `-o`)."""
    on_time()
    return [arg for w in words for arg in (
        (sorted(glob.glob(w.text, root_dir=cwd))[:1000] if w.glob else []) or [w.text])]


def redirect_effects(op: str, target: Word | None, cwd: Path, effects) -> str | None:
    if target is None or not is_write(op, target) and op.lstrip("0123456789") != "<":
        return None  # `2>&1`, `>&-`, here-documents and here-strings: no file
    if not target.static:
        return "a redirection goes to a file only known at run time"
    paths = list(dict.fromkeys(Path(f(cwd / target.text))
                               for f in (os.path.normpath, os.path.realpath)))
    if target.text != "/dev/null" and is_write(op, target):
        effects.writes += paths
    elif target.text != "/dev/null" and not is_inside(paths[-1]):
        return f"{target.text} is outside the workspace"
    elif target.text != "/dev/null":
        effects.reads += [(p, False) for p in paths]
    return None


def is_write(op: str, target: Word | None) -> bool:
    """`>`, `>>`, `>|`, `&>`, `<>` and `>&file` write; `2>&1` and `<` do not."""
    op = op.lstrip("0123456789")
    return op in (">", ">>", ">|", "&>", "&>>", "<>") or op == ">&" and (
        target is not None and not re.fullmatch(r"\d+|-", target.text))


@functools.cache
def options_of(spec: str, bundles: bool = True) -> tuple[str, dict]:
    """"pattern: -nr -e= --file@" -> ("pattern", {"-n": "", "-r": "", "-e": "=" ...})"""
    kind, _, spec = spec.rpartition(":") if re.match(r"\w+:", spec) else ("", "", spec)
    table = {}
    for token in spec.split():
        name, wants = re.fullmatch(r"(-#|[!(),<>=~&|[\]]+|--?[^=@?]+)([=@?]*)",
                                   token).groups()
        if bundles and re.fullmatch(r"-\w\w+", name):  # -abc: three flags
            table.update({"-" + c: "" for c in name[1:]})
        else:
            table[name] = wants
    return kind or "paths", table


def read_options(prog: str, spec: str, args: list, bundles: bool = True) -> tuple:
    """Read `args` as getopt does: bundles (-nr5), values attached or next (-n5, -n 5,
    --lines=5), options after operands (GNU moves them forward), `--` ends options.
    Returns (problem or None, operands, [(option, "" | "=" | "@", value)])."""
    table, operands, given, queue = options_of(spec, bundles)[1], [], [], list(args)
    while queue:
        arg, problem = queue.pop(0), None
        if arg == "--":
            return None, operands + queue, given
        name, eq, value = (arg, "", "") if arg in table else arg.partition("=")
        if arg == "-" or not arg.startswith("-") and name not in table:
            operands.append(arg)
        elif arg.startswith("--") or not bundles:
            problem = take_option(prog, name, value if eq else None, table, queue,
                                  given)
        else:  # a bundle of short options: one that takes a value takes the rest
            for i, letter in enumerate(arg[1:], start=2):
                wants = table.get("-" + letter, "") if not letter.isdigit() else ""
                if letter.isdigit() and "-#" in table:
                    continue
                problem = take_option(prog, "-" + letter, arg[i:] or None if wants
                                      else None, table, queue, given)
                if problem or wants:
                    break
        if problem:
            return problem, [], given
    return None, operands, given


def take_option(prog, name, attached, table, queue, given) -> str | None:
    """Record one option and its values (attached, or the next words)."""
    if name not in table:
        return f"{name} is not an option that keeps {prog} read-only"
    wants = table[name]
    if "?" in wants or not wants:  # an optional value is only ever attached
        given.append((name, "=" if attached else "", attached))
        return f"{name} takes no value" if attached and not wants else None
    values = [attached] if attached else []
    while len(values) < len(wants) and queue:
        values.append(queue.pop(0))
    given += [(name, kind, value) for kind, value in zip(wants, values)]
    return None if len(values) == len(wants) else f"{name} needs a value"


def program_effects(prog: str, args: list) -> tuple:
    """(problem or None, the paths it reads, recursively?) for a READ_ONLY program."""
    spec = READ_ONLY[prog]
    problem, operands, given = read_options(prog, spec, args, bundles=prog not in (
        "find", "test", "[", "[["))
    kind, seen = options_of(spec)[0], {name for name, _, _ in given}
    if kind == "pattern" and not seen & GIVES_PATTERN:
        operands = operands[1:]
    if problem is None and (kind == "none" and operands
                            or kind == "one" and len(operands) > 1
                            or kind == "date" and any(o[:1] != "+" for o in operands)
                            or kind == "lookup" and not seen & {"-v", "-V"}):
        problem = f"{prog} {' '.join(operands)} does more than read"
    recursive = RECURSIVE.get(prog) == "" or bool(seen & RECURSIVE.get(prog, set()))
    paths = [v for _, k, v in given if k == "@"] + (
        operands if kind not in ("text", "lookup") else [])
    return problem, paths or (["."] if recursive else []), recursive


GIT_LISTS = {  # subcommand -> (the operands it may start with, options that list)
    "branch": ({None}, {"-l", "--list", "--merged", "--no-merged", "--contains",
                        "--no-contains", "--points-at"}),  # any of these: a listing
    "tag": ({None}, {"-l", "--list", "-n", "--merged", "--no-merged", "--contains",
                     "--no-contains", "--points-at"}),
    "remote": ({None, "get-url"}, {"-n"}),  # `remote show -n`: no network
    "reflog": ({None, "show", "list"}, set()),
    "worktree": ({"list"}, set()), "config": ({"get", "list"}, {
        "--get", "--get-all", "--get-regexp", "--list", "-l"}),  # `config x y` sets
}


def git_effects(prog: str, args: list) -> tuple:
    """`git [-C dir] SUBCOMMAND ...`: a read-only subcommand with its options."""
    root = "."  # git reads the whole repository
    while args[:1] in (["-C"], ["-P"], ["--no-pager"], ["--no-optional-locks"]):
        root, args = ((args[1], args[2:]) if args[0] == "-C" and args[1:]
                      else (root, args[1:]))
    sub, args = (args[0], args[1:]) if args else ("", [])
    if sub not in GIT_READ_ONLY:
        return f"git {sub} is not a read-only subcommand, or not one we know", [], True
    problem, operands, given = read_options(f"git {sub}", GIT_READ_ONLY[sub], args)
    starts, lists = GIT_LISTS.get(sub, ({None, *operands[:1]}, set()))
    first = operands[0] if operands else None
    listing = {n for n, _, _ in given} & lists and (
        first == "show" if sub == "remote"         # `remote show -n NAME`
        else args[0][:1] == "-" if sub == "config"  # `config set x y --get` sets
        else True)
    if any(re.search("%G|signature", v or "") for n, _, v in given
           if n in ("--format", "--pretty", "--sort")):
        problem = "a %G or signature format runs gpg to check signatures"
    elif not (first in starts or listing):
        problem = problem or f"git {sub} {' '.join(operands)} may change the repository"
    return problem, [root] + [v for _, k, v in given if k == "@"], True


def sed_effects(prog: str, args: list) -> tuple:
    """`sed -n 5,10p f` reads; `w`, `e`, `r` in a script, or -i or -f, do not."""
    problem, operands, given = read_options("sed", SED, args)
    scripts = [v for name, _, v in given if name in ("-e", "--expression")]
    scripts, operands = (scripts, operands) if scripts else (operands[:1], operands[1:])
    if problem is None and not (scripts and all(map(SED_SCRIPT.fullmatch, scripts))):
        problem = "its script may write files or run commands (w, e, r ...)"
    return problem, operands, False


def cd_effects(prog: str, args: list) -> tuple:
    """`cd DIR` moves where later relative paths point (shell_effects follows it)."""
    if len(args) != 1 or args[0] == "-":
        return "cd without one directory goes home or back ($OLDPWD)", [], False
    return None, args, False


SPECIAL = {"git": git_effects, "sed": sed_effects, "cd": cd_effects}  # prog -> check


# === s03 · bash: dangerous commands ===
# Commands that always ask, in every mode, bypassPermissions included. They are
# matched on what bash will run (quotes undone, `$'\x72\x6d'` decoded, braces
# expanded, wrappers opened), so `echo "rm -rf /"`, which only prints, does not ask.
INTERPRETERS = r"python[\d.]*|perl|ruby|node|nodejs|php|lua|deno|bun|Rscript|osascript"
CREDENTIALS = (r"(\.ssh(/|$)|\bid_(rsa|dsa|ecdsa|ed25519)\b|\.aws/|\.netrc"
               r"|\.git-credential|\.npmrc|\.pypirc|\.docker/config|\.kube/config"
               r"|\.gnupg\b|(^|[\s/@=])\.env(?=\s|$)|\$\{?\w*(TOKEN|SECRET|PASSW(OR)?D"
               r"|API_?KEY|ACCESS_KEY|PRIVATE_KEY)\w*)")
CODE = r"(^| )(-\w*[ceEr]\w*|--eval|--print) "  # inline code follows: python -c
# git settings that name a program to run
RUNS_PROGRAM = (r"(core\.(hookspath|fsmonitor|sshcommand|pager|editor|askpass"
                r"|gitproxy)|diff\.external|sequence\.editor|gpg\.(\w+\.)?program"
                r"|credential\.helper|(diff|merge|filter)\.\S+\.(textconv|command"
                r"|driver|clean|smudge|process)|pager\.\S+|alias\.\S+=\s*!)")
DANGEROUS = [  # (program, pattern searched in its joined arguments, why it always asks)
    ("shutdown|reboot|halt|poweroff|killall5", "", "it stops the machine"),
    ("init|telinit", r"^[06]\b", "it stops the machine"),
    ("systemctl", r"\b(poweroff|reboot|halt|kexec)\b", "it stops the machine"),
    (r"mkfs\S*|mke2fs|mkswap|wipefs|blkdiscard|c?fdisk|sfdisk|s?gdisk|parted", "",
     "it erases or repartitions a disk"),
    ("visudo", "", "it edits sudoers"),
    ("kill|pkill", r"^(-- |-[sn] \S+ |-(?!-)\S+ |(?=[^-]))(-- )?(\S+ )*?-1( |$)",
     "it kills every process (a target of -1)"),
    ("crontab", r"(^| )(-\w*r\b|/dev/null)", "it wipes the crontab"),
    (r"ip6?tables", r"(^| )(-F|--flush|-X)\b", "it wipes firewall rules"),
    ("nft|ufw", r"\bflush\b|^(disable|reset)\b", "it wipes firewall rules"),
    ("chmod", r"(^| )([ugoa]*[+=][rwxXt]*s|0?[2467][0-7]{3})\b",
     "it sets a setuid bit"),
    ("git", r"\bpush\b.* (-\w*[fd]\w*|--force|--delete|--mirror|--prune|\+|:)",
     "git push that rewrites or deletes remote history"),
    ("git", r"\breset\b.* --hard\b", "git reset --hard discards work"),
    ("git", r"\bclean\b(?!.* (-\w*n\w*|--dry-run)\b).* (-\w*f\w*|--force)\b",
     "git clean deletes untracked files"),
    ("git", r"\b(filter-branch|filter-repo|reflog expire)\b",
     "it rewrites git history"),
    ("git", (rf"(^| )-c ?{RUNS_PROGRAM}"
             rf"|\bconfig\b(?!.* --(get|list|unset)).* {RUNS_PROGRAM}"),
     "it makes git run a program"),
    ("terraform|tofu|terragrunt|pulumi", r"\b(destroy|down)\b",
     "it tears down infrastructure"),
    ("docker|podman", r"\b(system|volume|image) prune\b", "it deletes container data"),
    ("kubectl", r"\bdelete (namespaces?|ns)\b|\bdelete\b.* (--all|-A)\b",
     "it tears down infrastructure"),
    ("aws", r"\bs3 (rb|rm .*--recursive)\b", "it deletes cloud storage"),
    ("gcloud|az", r"\b(projects|group) delete\b", "it tears down infrastructure"),
    ("rm|shred|srm|unlink|mv|truncate|chmod", CREDENTIALS,
     "it deletes, moves or changes credentials"),
    (INTERPRETERS, CODE + r"\b(system|popen|exec\w*|spawn\w*|call|run)\W.*\brm\s+"
     r"(-\w+\s+)*[\"']?(/|~|\$\{?HOME)", "its code runs rm on the root or your home"),
    (INTERPRETERS, CODE + r"(?=.*(\.rm\b|rmtree|rm_rf?\b|rmSync|unlink|remove|rmdir|"
     r"delete))(?=.*(['\"(\s]/|~|expanduser|Path\.home|homedir|HOME))",
     "its code deletes files outside the workspace"),
    (INTERPRETERS, CODE + r"(?=.*\bfork\b)(?=.*\b(while|for|loop)\b)",
     "fork bomb: code that forks in a loop"),
]
DELETERS = {"rm", "rmdir", "unlink", "shred", "srm"}  # what `find -exec` deletes with
DOWNLOADERS = {"curl", "wget", "fetch", "aria2c", "http", "https", "xh", "nc", "ncat",
               "netcat", "socat", "ftp", "tftp", "lynx", "links"}
SENDERS = DOWNLOADERS | {"scp", "sftp", "rsync", "ssh", "telnet", "mail", "sendmail"}
# What piped into a shell runs code: program -> options that make it decode (*: any)
FEEDS_CODE = dict.fromkeys(DOWNLOADERS | {"uudecode", "gunzip", "zcat"}, "*") | {
    "base64": "-d -D --decode", "base32": "-d -D --decode", "basenc": "-d -D --decode",
    "xxd": "-r -d", "openssl": "-r -d", "gzip": "-r -d"}


def dangerous_reason(command: str, protected=lambda target: None,
                     cwd: Path | None = None) -> str | None:
    """Why `command`, run in `cwd`, always asks, or None; `protected(path)`: why a
    write to that path (absolute, or from the workspace if cwd is None) does."""
    try:
        script = parse_command(command)
    except Unanalysable as e:
        return f"the command cannot be checked: {e}"
    runs = all_runs(script)

    def protected_here(target: str) -> str | None:  # a target, from where it runs
        return protected(os.path.join(cwd or "", os.path.expanduser(target)))
    if reason := next(filter(None, (command_danger(c, protected_here, cwd)
                                    for c in runs)), None):
        return reason
    for pipeline in script.pipelines:  # `curl ... | sh`, `base64 -d x | bash`
        for i, cmd in enumerate(pipeline[1:], start=1):
            runner = ([cmd] + inner_runs(cmd, 0))[-1]  # `| sudo bash` pipes into bash
            if (re.fullmatch(rf"{INTERPRETERS}|{'|'.join(SHELLS)}", program(runner))
                    and all(w.text[:1] == "-" for w in runner.words[1:])
                    and any(set(FEEDS_CODE.get(program(c), "").split())
                            & {"*", *(w.text for w in c.words)} for c in pipeline[:i])):
                return f"it pipes a download or decoded data into {program(runner)}"
    if any(program(c) in SENDERS for c in runs):  # and a secret on the same line
        for cmd in runs:
            words = cmd.words[1:] + [t for _, t in cmd.redirects if t]
            for before, w in zip([None] + words, words):
                if re.search(CREDENTIALS, w.text, re.I) and not (  # `ssh -i key`: proof
                        before and before.text == "-i"
                        and program(cmd) in ("ssh", "scp")):
                    return f"it may send credentials over the network ({w.text[:40]})"
            if [w.text for w in cmd.words] in (["env"], ["printenv"]):
                return "it may send every environment variable over the network"
    return None


def command_danger(cmd: Command, protected, cwd: Path | None) -> str | None:
    """The table, and the generic checks, on one command that bash runs."""
    if cmd.opaque:
        return cmd.opaque
    prog, args = program(cmd), [w.text for w in cmd.words[1:]]
    if prog and prog == cmd.function:
        return "fork bomb: a function that starts itself"
    if prog in SHELLS | {"source", ".", "eval"} and any(
            re.match(r"[<$]\(.*\b(curl|wget|base64)\b", w.text) for w in cmd.words[1:]):
        return "it runs a downloaded or decoded script"
    for progs, regex, why in DANGEROUS:
        if re.fullmatch(progs, prog) and re.search(regex, " ".join(args), re.I | re.S):
            return why
    targets = [w for w in cmd.words[1:] if not w.text.startswith("-")]
    recursive = any(re.fullmatch(r"-\w*[rR]\w*|--recursive|--delete\S*", a)
                    for a in args)
    if prog in ("rm", "rmdir", "unlink", "shred", "srm", "mv") or recursive and (
            prog in ("chmod", "chown", "chgrp", "rsync")):
        for w in targets:
            if what := critical_target(w, cwd):
                return f"{prog} {w.text!r} deletes or changes {what}"
    if prog == "find":  # `find / -exec ls {} +`; `find . -name x -delete`: any filter
        acts = {*args} & {"-delete", "-exec", "-execdir", "-ok", "-okdir"}
        deletes = "-delete" in acts or any(program(c) in DELETERS
                                           for c in inner_runs(cmd, 0))
        filtered = {*args} & {"-name", "-iname", "-path", "-ipath", "-regex", "-newer",
                              "-mtime", "-mmin", "-size", "-empty", "-perm", "-type"}
        starts = [w for w in cmd.words[1:2] if not w.text.startswith(("-", "(", "!"))]
        what = critical_target((starts or [Word(".", ".", True, False)])[0], cwd)
        if what and (deletes or acts and not (filtered and what == "the workspace")):
            return f"find {' '.join(sorted(acts))} in {what}" + (
                ": it deletes whatever its filters match, and a filter can always be "
                "too wide" if deletes else "")
    writes = [t.text for op, t in cmd.redirects if is_write(op, t)] + (
        [t.text for t in targets] if prog in ("tee", "touch", "truncate", "mkdir", "ln",
                                               "cp", "mv", "install", "rsync")
        else [t.text for t in targets[1:]] if prog in ("sed", "perl") and any(
            a.startswith(("-i", "--in-place")) for a in args)
        else [a[3:] for a in args if a.startswith("of=")] if prog == "dd" else [])
    return next(filter(None, map(protected, writes)), None)


def critical_target(word: Word, cwd: Path | None = None) -> str:
    """If this path (from `cwd`) is the root, home, the workspace, one of their parents,
    a system directory, or everything in one (`/*`, `~/*`, `*`): which one. Else ""."""
    workspace, home = Path.cwd().resolve(), Path.home().resolve()
    here = Path(cwd or workspace).resolve()
    critical = {Path("/"), home, workspace, *workspace.parents, *home.parents} | {
        Path("/", d) for d in "bin boot dev etc home lib lib64 opt proc root sbin srv "
                              "sys usr var".split()}
    for spelling in (word.text, word.empty):  # "$UNSET/*" is "/*" when UNSET is empty
        value = re.sub(r"\$\{?HOME\}?", str(home),
                       re.sub(r"\$\{?PWD\}?", str(here), spelling))
        if not value or "$" in value:
            continue
        value = re.sub(r"^\.?\*$", ".", re.sub(r"(/\.?\*|/)+$", "", value)) or "/"
        full = Path(os.path.normpath(here / value))  # "x/*" empties x, "*" the .
        for hit in {full, full.resolve()} & critical:
            name = ("the root" if hit == Path("/") else "your home" if hit == home
                    else "the workspace" if hit == workspace else str(hit))
            return name + (" if a variable is unset" if spelling != word.text else "")
    return ""


# === s03 · bash: where bash and the parser disagree ===
# A first reading can stop here: what follows, bash and tree-sitter read apart.
def join_lines(src: bytes):
    """Its tree, as bash reads it: bash joins a line ending in an unquoted backslash
    to the next before it parses, inside double quotes too (`"$\\⏎(touch x)"` is
    `"$(touch x)"`); tree-sitter-bash does not. Single quotes, $'...', comments and
    quoted here-documents keep theirs; a comment that ends in one is refused."""
    for _ in range(3):
        tree, cut = BASH.parse(src), []
        # subtle: never into a tree with errors (tree-sitter 0.26 can crash in one:
        # a NUL, then junk); such a line is refused when it is parsed anyway
        if b"\\" in src and not tree.root_node.has_error and any(
                n.type == "comment" and n.text.endswith(b"\\")
                for n in walk(tree.root_node)):  # `ls # \⏎rm x`
            raise Unanalysable("a comment ends in a backslash: bash ends the comment "
                               "at the newline, the parser may read on")
        for m in re.finditer(rb"(?<!\\)(?:\\\\)*\\\n", src):
            node = tree.root_node.descendant_for_byte_range(m.end() - 2, m.end())
            while node and node.type not in ("raw_string", "ansi_c_string", "comment",
                                              "heredoc_body"):
                node = node.parent
            if node is None or node.type == "heredoc_body" and not quoted_heredoc(node):
                cut.append(m.end() - 2)  # <<'EOF' keeps its text as written
        if not cut:
            return tree  # the last parse is the line's: never parsed twice
        for at in reversed(cut):
            src = src[:at] + src[at + 2:]
    raise Unanalysable("its continued lines could not be joined")


def hides_substitution(node) -> bool:
    """Is `node` quoted text holding a $( ) or `...` (text, until bash evaluates it)?"""
    if node.type in ("raw_string", "ansi_c_string"):
        return bool(re.search(rb"\$\(|`", node.text))
    return node.type == "string_content" and bool(re.search(rb"\\(\$\(|`)", node.text))


def quoted_heredoc(node) -> bool:
    """Is `node` in the body of <<'EOF', <<"EOF" or <<\\EOF (kept as written)?"""
    while node is not None and node.type != "heredoc_redirect":
        node = node.parent
    start = node and next((c for c in node.children if c.type == "heredoc_start"), None)
    return start is not None and re.search(rb"['\"\\]", start.text) is not None


def check_heredoc(node, src: bytes) -> None:
    """Bash ends a here-document at the first line that is its delimiter: here too?"""
    kids = {c.type: c for c in node.children}
    start, end = kids.get("heredoc_start"), kids.get("heredoc_end")
    if start is None or end is None:
        raise Unanalysable("its here-document has no end")
    delimiter, tabs = (re.sub(rb"['\"\\]", b"", start.text),
                       b"\t" if "<<-" in kids else b"")
    first = kids.get("heredoc_body", end).start_byte
    lines = src[src.rfind(b"\n", 0, first) + 1:end.start_byte].split(b"\n")
    if (end.text != delimiter or lines[-1].strip(tabs) or src[end.end_byte:][:1] not in
            (b"", b"\n") or any(line.lstrip(tabs) == delimiter for line in lines[:-1])):
        raise Unanalysable("bash would end its here-document elsewhere")


def expand_braces(word: str) -> list:
    """`a{b,c}d` -> [abd, acd]; `{1..3}` -> [1, 2, 3]; `{x}`, `{}` stay as written."""
    m = re.search(r"\{([^{}]*)\}", word)
    if m is None:
        return [word]
    seq = re.fullmatch(r"(-?\d+|[a-zA-Z])\.\.(-?\d+|[a-zA-Z])", m[1])
    if "," in m[1]:
        items = m[1].split(",")
    elif seq and seq[1].isalpha() == seq[2].isalpha():
        to, of = (chr, ord) if seq[1].isalpha() else (str, int)
        a, b = of(seq[1]), of(seq[2])
        if abs(b - a) > MAX_WORDS:
            raise Unanalysable("its braces expand into too many words")
        items = [to(v) for v in range(min(a, b), max(a, b) + 1)][::1 if a <= b else -1]
    else:  # not an expansion: hide these braces and look further on
        return [w.replace("\U000FFFFE", "{").replace("\U000FFFFF", "}")
                for w in expand_braces(word[:m.start()] + "\U000FFFFE" + m[1]
                                       + "\U000FFFFF" + word[m.end():])]
    words = [w for item in items
             for w in expand_braces(word[:m.start()] + item + word[m.end():])]
    if len(words) > MAX_WORDS:
        raise Unanalysable("its braces expand into too many words")
    return words


def ansi_c(body: str) -> str:
    """Decode $'...': \\x72 is r, \\155 is m, \\u2019 is ’, \\cA is Ctrl-A."""
    simple = dict(zip("abeEfnrtv", "\a\b\x1b\x1b\f\n\r\t\v"))
    def one(m):
        esc = m[1]
        if esc[0] in "xuU":
            return chr(min(int(esc[1:], 16), 0x10FFFF))
        if esc[0].isdigit():
            return chr(int(esc, 8) & 0xFF)
        if esc[0] == "c":
            return chr(ord(esc[1:] or "@") & 0x1F)
        return simple.get(esc, esc if esc in "\\'\"?" else "\\" + esc)
    return re.sub(r"\\(x[0-9a-fA-F]{1,2}|u[0-9a-fA-F]{1,4}|U[0-9a-fA-F]{1,8}|[0-7]{1,3}"
                  r"|c.?|.)", one, body, flags=re.S)
