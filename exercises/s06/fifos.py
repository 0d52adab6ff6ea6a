"""Named pipes (FIFOs) that show which `cat` tool calls run at the same time.

`cat name` blocks until someone writes to the pipe and closes it. Opening a FIFO for
writing, without blocking, only succeeds while a reader has it open. So a checker can
tell, by the order of events and not by the clock, which calls are running right now.
"""

import errno
import os
import time


class Fifos:
    def __init__(self, folder, names):
        self.paths = {name: folder / name for name in names}
        for path in self.paths.values():
            os.mkfifo(path)
        self.fds = {}  # name -> write end we hold open: that `cat` is running, blocked
        self.done = set()  # names released: never opened again (that `cat` is ending)

    def try_open(self, name) -> bool:
        """Is a `cat name` running now? If so, hold its pipe open (it stays blocked)."""
        if name in self.fds:
            return True
        if name in self.done:  # subtle: reopening it would keep its `cat` from ending
            return False
        try:
            self.fds[name] = os.open(self.paths[name], os.O_WRONLY | os.O_NONBLOCK)
            return True
        except OSError as e:
            if e.errno != errno.ENXIO:  # ENXIO: no reader yet
                raise
            return False

    def wait_running(self, names, count, seconds) -> list:
        """Wait until `count` of `names` have started (or `seconds` pass): which have.
        A name released earlier counts as started."""
        deadline = time.monotonic() + seconds
        while True:
            running = [n for n in names if self.try_open(n) or n in self.done]
            if len(running) >= count or time.monotonic() > deadline:
                return running
            time.sleep(0.01)

    def release(self, name) -> None:
        """Let `cat name` finish: give it its line, then end of file."""
        fd = self.fds.pop(name)
        self.done.add(name)
        try:
            os.write(fd, f"content of {name}\n".encode())
        except BrokenPipeError:
            pass  # its reader was killed meanwhile
        os.close(fd)

    def reader_gone(self, name) -> bool:
        """True if the `cat` that had `name` open is gone (killed), while we hold it."""
        import select
        poller = select.poll()
        poller.register(self.fds[name], select.POLLOUT)
        return any(event & select.POLLERR for _, event in poller.poll(0))

    def close(self) -> None:
        for name in list(self.fds):
            self.release(name)
