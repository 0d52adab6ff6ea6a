"""background: commands that go on while the agent does (s06).

code.py decides the policy: what runs in the background (run_shell with
run_in_background, under the same permission decision and sandbox as any other
command, its output bounded the same way), when the model is told (on its next
request), and that none outlives the agent (Ctrl-C, `exit`, the end of a one-task
run). This file keeps the commands running, and a first reading can skip it:
- A command starts in a thread of its own, and that thread waits for it for its whole
  life. subtle: bubblewrap's --die-with-parent follows the thread that started it, so
  a pool thread that ends (a batch's) would take the command with it.
- Its stdout and stderr go to one output file, which the model reads with read_file.
- Stopping kills its whole process group, then waits for its thread: the sandbox is
  released and the output file closed before task_stop answers.
- How a command ended is recorded before its output file closes, so that whoever
  sees the file closed (the offline demo does) knows the agent has it too.
- The notification is Claude Code's `<task-notification>`, in its words.
- An agent in the background (issue 41) is a task too: its loop runs in a thread of
  its own (named "background agent_1" ...), stopping it sets its cancel event (its
  loop and its tool runner see it, and kill what it started), and its notification
  carries its final answer.
A task is a dict, so that a test (or you, at a breakpoint) can look at it:
{"command", "file", "status", "how", "told", "proc", "thread", "started"}; an
agent's has "cancel", "tool_use_id", "result" and "procs" instead of "file" and
"proc".

Reading map:
  s06 · background: starting in the waiting thread   start_task(), watch(), ended()
  s06 · background: an agent in the background       start_agent(), run_agent()
  s06 · background: stopping a group                 stop_task(), stop_all()
  s06 · background: the notifications' text          STARTED ... TASK_STOP (the
                                                     answers, task_stop's
                                                     declaration), tell_ended():
                                                     told once
"""

import json
import os
import subprocess
import threading

# === s06 · background: starting in the waiting thread ===
LOCK = threading.Lock()  # two starts in one batch take two ids; a stop and an end


def start_task(tasks: dict, command: str, folder: str, confined, *, output, env: dict,
               wait, cwd) -> str:
    """Start `command` in the folder `cwd` and return its task id once it runs (its
    output in folder/<id>.output); raise what kept it from starting. `confined`: a
    context manager, not yet entered, that yields the argv (code.py's confine());
    output(name): a new file's descriptor; wait(proc, file): returns when it ended."""
    with LOCK:
        task_id = next_id(tasks, "bash")
        task = tasks[task_id] = {
            "command": command, "status": "starting", "told": False, "how": "",
            "file": f"{folder}/{task_id}.output", "started": threading.Event()}
    task["thread"] = threading.Thread(
        target=watch, args=(task, confined, output, env, wait, cwd), daemon=True)
    task["thread"].start()
    if task["started"].wait() and task["status"] == "starting":
        del tasks[task_id]
        raise task["error"]
    return task_id


def watch(task: dict, confined, output, env: dict, wait, cwd) -> None:
    """The command's whole life, in its own thread: open its output file, enter the
    sandbox, start it, wait (no time limit), record how it ended."""
    try:
        with (os.fdopen(output(os.path.basename(task["file"])), "wb") as out,
              confined as argv):
            task["proc"] = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                env=env, cwd=cwd, start_new_session=True)  # stop_task() kills its group
            task["status"] = "running"
            task["started"].set()
            wait(task["proc"], out)
            ended(task)  # before its output file closes: once closed, it has ended
    except Exception as e:  # no sandbox, no output file: the call says so
        task["error"] = e
        return task["started"].set()


def ended(task: dict) -> None:
    """Record how a command ended."""
    with LOCK:  # subtle: stop_task() may have said "killed" first; that stands
        if task["status"] == "running" and (code := task["proc"].returncode) == 0:
            task.update(status="completed", how="completed (exit code 0)")
        elif task["status"] == "running":  # -9: killed, its output too large
            task.update(status="failed", how=f"failed with exit code {code}")


def next_id(tasks: dict, kind: str) -> str:
    """The next id of a kind: bash_1, bash_2 ... and agent_1 ... (LOCK held)."""
    return f"{kind}_{sum(t.startswith(kind + '_') for t in tasks) + 1}"


# === s06 · background: an agent in the background ===
AGENT_STOP_WAIT = 30.0  # seconds a stopped agent's thread is waited for


def start_agent(tasks: dict, run, description: str, tool_use_id: str,
                procs: set | None = None) -> str:
    """Start run(cancel) -> final text (a child agent's loop, which stops when the
    threading.Event `cancel` is set) in a thread of its own; return its id at once.
    `procs`: the set where the child records the processes it runs (killed on stop)."""
    with LOCK:
        task_id = next_id(tasks, "agent")
        task = tasks[task_id] = {
            "command": description, "status": "running", "told": False, "how": "",
            "cancel": threading.Event(), "tool_use_id": tool_use_id, "result": "",
            "procs": set() if procs is None else procs}
    task["thread"] = threading.Thread(target=run_agent, args=(task, run), daemon=True,
                                      name=f"background {task_id}")
    task["thread"].start()
    return task_id


def run_agent(task: dict, run) -> None:
    """The agent's whole life, in its own thread: its answer, or why it has none."""
    try:
        result, status, how = run(task["cancel"]), "completed", "finished"
    except Exception as e:  # its loop failed (an API error, say): the parent is told
        result, status, how = f"{type(e).__name__}: {e}", "failed", "failed"
    with LOCK:  # subtle: stop_task() may have said "killed" first; that stands
        if task["status"] == "running":
            task.update(status=status, how=how, result=result)


# === s06 · background: stopping a group ===
def stop_task(tasks: dict, task_id: str, kill) -> str:
    """Stop a running task for good: a command with kill(proc) (it kills the process
    group), an agent by its cancel event. Its status before ("running" if this call
    stopped it; "unknown": no such task)."""
    task = tasks.get(task_id, {"status": "unknown"})
    with LOCK:
        if (status := task["status"]) == "running":  # no notification will follow
            task.update(status="killed", told=True, how="was stopped")
    if status == "running" and "cancel" in task:  # an agent: its loop stops itself
        task["cancel"].set()
        for proc in list(task["procs"]):  # and a command it waits for ends now
            kill(proc)
        # subtle: a loop notices between two events of a reply, or before a call; a
        # request still waiting for its first byte may take a while. The thread is
        # a daemon: if it is still waiting after this, it ends with the process.
        task["thread"].join(AGENT_STOP_WAIT)
    elif status == "running":
        kill(task["proc"])
        task["thread"].join()  # its sandbox released, its output file closed
    return status


def stop_all(tasks: dict, kill) -> None:
    """Every task that still runs, stopped: none outlives the agent."""
    for task_id in list(tasks):
        stop_task(tasks, task_id, kill)


# === s06 · background: the notifications' text ===
STARTED = ("Command running in background with ID: {id}. Output is being written to: "
           "{file}. You will be told when it ends.")
AGENT_STARTED = ("Agent running in background with ID: {id}. You will be told when it "
                 "ends; task_stop stops it.")
STOPPED = "Stopped task {id} ({command}) and everything it started."
TASK_STOP = (  # code.py's task_stop tool: its description, fields, required
    ("Stop a background command (run_shell with run_in_background) and everything it "
     "started, for good."),
    {"task_id": (str, "The task id run_shell returned.")}, ["task_id"])
NOTICE = ("<task-notification>\n<task-id>{id}</task-id>\n<output-file>{file}"
          "</output-file>\n<status>{status}</status>\n<summary>Background command "
          "{command} {how}</summary>\n</task-notification>\nRead the output file "
          "to retrieve the result: {file}")


AGENT_NOTICE = ("<task-notification>\n<task-id>{id}</task-id>\n<tool-use-id>"
                "{tool_use_id}</tool-use-id>\n<status>{status}</status>\n<summary>"
                "Agent {command} {how}</summary>\n<result>{result}</result>\n"
                "</task-notification>")


def notice(task_id: str, task: dict) -> str:
    """The notification's text: a command's (read its output file) or an agent's
    (its final answer in it)."""
    template = AGENT_NOTICE if "cancel" in task else NOTICE
    return template.format_map({**task, "id": task_id,
                                "command": json.dumps(task["command"])})


def tell_ended(tasks: dict, messages: list, say) -> None:
    """A notification for each task that ended since the last request (each told
    once), after the tool_results of the user message about to be sent; say(line)
    shows it on the terminal too."""
    if not messages or messages[-1]["role"] != "user":
        return
    notes = []
    with LOCK:
        for task_id, task in tasks.items():
            if task["how"] and not task["told"]:
                task["told"] = True
                say(f"  [background {task_id} {task['how']}: the model is told]")
                notes.append({"type": "text", "text": notice(task_id, task)})
    if notes:  # subtle: a prompt is a string; the notices go after it, as blocks
        content = messages[-1]["content"]
        messages[-1]["content"] = [*([{"type": "text", "text": content}]
                                     if isinstance(content, str) else content), *notes]
