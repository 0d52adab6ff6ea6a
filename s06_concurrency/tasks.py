"""tasks: the session's task list, which agents share to plan and split work (s06).

code.py decides the policy: that the list belongs to the session and every subagent
gets the same object (a fork, a general-purpose agent, an agent type, in the
background or not), who the caller is (its agent name becomes a task's owner), which
tools reach it (task_create, task_update, task_get, task_list) and that `/clear`
starts a new, empty list, as Claude Code does (a new session, a new list). This file
keeps the list, and a first reading can skip it:
- Ids are small integers as text ("1", "2", ...), never reused, even after a delete.
- Each task moves through MOVES: pending -> in_progress -> completed, deleted from
  any state. A task in progress belongs to its owner: another agent cannot claim it.
  A task waits for what blocks it: it cannot start while a blocker is unfinished.
- blocks / blockedBy are one relation seen from both ends; an edge that would close
  a cycle is refused (no task in a cycle could ever start).
- Every bad input raises TaskError with a message the model can act on: what was
  wrong and what is allowed. An update is checked whole before any of it is applied.
- One lock: parallel calls and subagents in other threads see whole updates only.
- When a completion leaves several tasks all completed and none of them verified the
  work, the answer says so (the verification nudge).

Reading map:
  s06 · tasks: the states and their moves     STATUSES, MOVES, TaskError
  s06 · tasks: the list                        TaskList: create(), get(), list();
                                               update(), checked whole; the edges
                                               of what blocks what, no cycle
  s06 · tasks: the verification nudge          verification_nudge()
  s06 · tasks: the tools                       new_task() ... all_tasks(), each
                                               on agent.task_list; TASK_TOOLS: them
                                               and their schemas, for code.py
"""

import re
import threading

# === s06 · tasks: the states and their moves ===
STATUSES = ("pending", "in_progress", "completed", "deleted")
MOVES = {  # status -> the statuses a task may move to from it
    "pending": ("in_progress", "deleted"),
    "in_progress": ("completed", "pending", "deleted"),  # pending: given back
    "completed": ("in_progress", "deleted"),  # in_progress: reopened
}
NUDGE_AFTER = 3  # completed tasks, none of them a verification, before the nudge
VERIFIES = re.compile(r"verif|test|check|review", re.IGNORECASE)


class TaskError(Exception):
    """A task call that cannot be done; the message says why."""


# === s06 · tasks: the list ===
class TaskList:
    """The session's tasks. Every method is safe to call from several threads."""

    def __init__(self):
        self._lock = threading.Lock()
        self._tasks = {}  # id -> {"subject", "description", "activeForm", "status",
        #                         "owner", "blocks": [ids], "blockedBy": [ids]}
        self._last_id = 0  # ids are never reused: a deleted task's id stays taken

    def create(self, subject: str, description: str, active_form: str = "") -> str:
        """Add a pending task; answer with its id, as Claude Code does."""
        if not subject.strip():
            raise TaskError("subject is empty: give the task a short title.")
        with self._lock:
            self._last_id += 1
            task_id = str(self._last_id)
            self._tasks[task_id] = {
                "subject": subject, "description": description,
                "activeForm": active_form, "status": "pending", "owner": "",
                "blocks": [], "blockedBy": []}
        return f"Task #{task_id} created successfully: {subject}"

    def get(self, task_id: str) -> str:
        """One task: its status, owner, description and what blocks what."""
        with self._lock:
            task = self._task(task_id)
            lines = [f"Task #{task_id}: {task['subject']}",
                     f"Status: {task['status']}"]
            lines += [f"Owner: {task['owner']}"] * bool(task["owner"])
            lines += [f"Description: {task['description']}"]
            if waiting := self._open(task["blockedBy"]):
                lines.append("Blocked by: " + ", ".join(f"#{i}" for i in waiting))
            if task["blocks"]:
                lines.append("Blocks: " + ", ".join(f"#{i}" for i in task["blocks"]))
        return "\n".join(lines)

    def list(self) -> str:
        """Every task that is not deleted, one line each."""
        with self._lock:
            rows = []
            for task_id, task in self._tasks.items():
                row = f"#{task_id} [{task['status']}] {task['subject']}"
                row += f" ({task['owner']})" * bool(task["owner"])
                if waiting := self._open(task["blockedBy"]):
                    row += " [blocked by " + ", ".join(f"#{i}" for i in waiting) + "]"
                rows.append(row)
        return "\n".join(rows) or "No tasks yet."

    def snapshot(self) -> dict:
        """A copy of every task, for a test or a debugger (changing it changes
        nothing)."""
        with self._lock:
            return {i: {**t, "blocks": list(t["blocks"]),
                        "blockedBy": list(t["blockedBy"])}
                    for i, t in self._tasks.items()}

    def _task(self, task_id) -> dict:
        """The task with this id (the lock is held); TaskError names the ids."""
        if not isinstance(task_id, str):
            raise TaskError(f"task ids are text, like \"1\" (got {task_id!r}).")
        if task_id not in self._tasks:
            if task_id.isdigit() and 0 < int(task_id) <= self._last_id:
                raise TaskError(f"task #{task_id} was deleted; task_list shows the "
                                "tasks there are.")
            known = ", ".join(f"#{i}" for i in self._tasks) or "none yet"
            raise TaskError(f"no task #{task_id}; the tasks are: {known}. "
                            "task_list shows them.")
        return self._tasks[task_id]

    def _open(self, ids: list) -> list:
        """The ids among `ids` whose task is not completed yet."""
        return [i for i in ids if self._tasks[i]["status"] != "completed"]

    # --- one update, checked whole ---
    def update(self, task_id: str, *, by: str, status: str | None = None,
               subject: str | None = None, description: str | None = None,
               active_form: str | None = None, owner: str | None = None,
               add_blocks: list = (), add_blocked_by: list = ()) -> str:
        """Change a task; `by` is the calling agent's name. Everything is checked
        first: a refused update changes nothing."""
        with self._lock:
            task = self._task(task_id)
            if status is not None:
                self._check_move(task_id, task, status, owner or by)
            self._check_edges(task_id, add_blocks, add_blocked_by)
            linked = self._link(task_id, add_blocks, add_blocked_by)  # before a delete
            changed = self._apply(task_id, task, status, owner, by, {
                "subject": subject, "description": description,
                "activeForm": active_form}) + linked
            nudge = verification_nudge(self._tasks) if status == "completed" else ""
        if not changed:
            return f"Task #{task_id} unchanged: it already reads so."
        return f"Updated task #{task_id}: {', '.join(changed)}." + nudge

    def _check_move(self, task_id: str, task: dict, status: str, who: str) -> None:
        if status not in STATUSES:
            raise TaskError(f"status {status!r} is not one of: "
                            f"{', '.join(STATUSES)}.")
        if status == "in_progress" and task["owner"] not in ("", who):
            raise TaskError(f"task #{task_id} belongs to {task['owner']}: leave it "
                            "to them, or take another task.")
        now = task["status"]
        if status == now:
            return
        if status not in MOVES[now]:
            raise TaskError(f"task #{task_id} is {now}: it can move to "
                            f"{' or '.join(MOVES[now])}, not to {status}.")
        if status == "in_progress" and (waiting := self._open(task["blockedBy"])):
            raise TaskError(f"task #{task_id} is blocked by "
                            f"{', '.join(f'#{i}' for i in waiting)}: finish "
                            "(or delete) those first.")

    def _apply(self, task_id: str, task: dict, status, owner, by: str,
               fields: dict) -> list:
        """Set what changes; the names of the fields that did."""
        changed = [k for k, v in fields.items() if v is not None and task[k] != v]
        task.update({k: fields[k] for k in changed})
        if owner is None and status == "in_progress":
            owner = by  # whoever starts a task owns it
        elif owner is None and status == "pending" and task["status"] != "pending":
            owner = ""  # given back: anyone may take it
        if owner is not None and owner != task["owner"]:
            task["owner"] = owner
            changed.append("owner")
        if status is not None and status != task["status"]:
            changed.append("status")
            if status == "deleted":
                self._delete(task_id)
            else:
                task["status"] = status
        return changed

    def _delete(self, task_id: str) -> None:
        """Gone from the list, and from every other task's blocks and blockedBy."""
        del self._tasks[task_id]
        for other in self._tasks.values():
            for key in ("blocks", "blockedBy"):
                if task_id in other[key]:
                    other[key].remove(task_id)

    # --- what blocks what ---
    def _check_edges(self, task_id: str, add_blocks, add_blocked_by) -> None:
        """Every new edge names a task, and none closes a cycle (checked one by one,
        with the edges before it in place, on a copy)."""
        edges = {i: list(t["blocks"]) for i, t in self._tasks.items()}  # i blocks ...
        new = [(task_id, other) for other in add_blocks]
        new += [(other, task_id) for other in add_blocked_by]
        for blocker, waiter in new:
            for end in (blocker, waiter):
                self._task(end)
            if blocker == waiter:
                raise TaskError(f"task #{task_id} cannot block itself.")
            if self._reaches(edges, waiter, blocker):
                raise TaskError(f"#{blocker} cannot block #{waiter}: #{waiter} "
                                f"already blocks #{blocker} (directly or through "
                                "other tasks), and a cycle of tasks could never start.")
            edges[blocker].append(waiter)

    @staticmethod
    def _reaches(edges: dict, start: str, goal: str) -> bool:
        """Whether `start` blocks `goal`, following blocks edges."""
        seen, todo = set(), [start]
        while todo:
            node = todo.pop()
            if node == goal:
                return True
            if node not in seen:
                seen.add(node)
                todo.extend(edges.get(node, ()))
        return False

    def _link(self, task_id: str, add_blocks, add_blocked_by) -> list:
        """Add the checked edges at both ends; the names of the sides that changed."""
        changed = []
        for key, others in (("blocks", add_blocks), ("blockedBy", add_blocked_by)):
            back = "blockedBy" if key == "blocks" else "blocks"
            for other in others:
                if other not in self._tasks[task_id][key]:
                    self._tasks[task_id][key].append(other)
                    self._tasks[other][back].append(task_id)
                    changed += [key] * (key not in changed)
        return changed


# === s06 · tasks: the verification nudge ===
def verification_nudge(tasks: dict) -> str:
    """A reminder when every task is completed, there are several, and none of them
    verified the work (a test run, a check, a review); else nothing."""
    done = [t for t in tasks.values() if t["status"] == "completed"]
    if len(done) < NUDGE_AFTER or len(done) != len(tasks):
        return ""
    if any(VERIFIES.search(t["subject"] + " " + t["description"]) for t in done):
        return ""
    return (f"\n\nAll {len(done)} tasks are completed, and none of them verified the "
            "work. Before you report it done, verify it: run the tests, or hand a "
            "verification task to an agent.")


# === s06 · tasks: the tools ===
# Each tool's function takes the calling agent (its task_list, its name: the owner)
# and the call's fields; a TaskError becomes an is_error result in code.py. The
# schemas, in code.py's register() format: field -> (type, description).
def new_task(agent, subject: str, description: str, activeForm: str = "") -> str:
    """Add a pending task to the session's list; answer with its id."""
    return agent.task_list.create(subject, description, activeForm)


def change_task(agent, taskId: str, status: str | None = None,
                subject: str | None = None, description: str | None = None,
                activeForm: str | None = None, owner: str | None = None,
                addBlocks: list | None = None, addBlockedBy: list | None = None) -> str:
    """Move a task (MOVES says where it may go), or change what it says."""
    return agent.task_list.update(
        taskId, by=agent.name, status=status, subject=subject,
        description=description, active_form=activeForm, owner=owner,
        add_blocks=addBlocks or (), add_blocked_by=addBlockedBy or ())


def one_task(agent, taskId: str) -> str:
    """One task: status, owner, description, what blocks what."""
    return agent.task_list.get(taskId)


def all_tasks(agent) -> str:
    """Every task, one line each."""
    return agent.task_list.list()


TASK_ID = (str, 'The task\'s id, as task_create answered it ("1").')
IDS = {"type": "array", "items": {"type": "string"}}
TASK_TOOLS = {  # name -> (function, description, fields, required)
    "task_create": (
        new_task, ("Add a task to the session's task list, which your subagents "
                      "share: the steps of a plan, or work to hand out. Answers with "
                      "its id."),
        {"subject": (str, "A short title, in the imperative."),
         "description": (str, "What to do, and how to tell it is done."),
         "activeForm": (str, "The title while in progress ('Running the tests').")},
        ["subject", "description"]),
    "task_update": (
        change_task, ("Change a task. status: pending -> in_progress (you own it; "
                      "not while a task that blocks it is unfinished) -> completed; "
                      "back to pending to give it up; deleted from any state. "
                      "addBlocks / addBlockedBy: what must finish first (no cycles)."),
        {"taskId": TASK_ID,
         "status": ({"type": "string", "enum": list(STATUSES)}, "The new status."),
         "subject": (str, "A new title."), "description": (str, "A new description."),
         "activeForm": (str, "A new title while in progress."),
         "owner": (str, "Who works on it (default: whoever starts it)."),
         "addBlocks": (IDS, "Ids of tasks that wait for this one."),
         "addBlockedBy": (IDS, "Ids of tasks this one waits for.")},
        ["taskId"]),
    "task_get": (
        one_task, ("One task of the list: its status, owner, description, and what "
                   "blocks it."), {"taskId": TASK_ID}, ["taskId"]),
    "task_list": (
        all_tasks, ("The session's task list: each task's id, status, owner, and "
                    "what blocks it."), {}, []),
}
