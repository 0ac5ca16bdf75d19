"""Child processes for the package tests: start a daemon, wait for a line
it prints (with a deadline), wait for its exit, and kill whatever is left.

Every wait has a deadline; nothing sleeps to synchronise. Output (stdout and
stderr together) is kept for the failure message.
"""

import os
import queue
import re
import signal
import subprocess
import threading
import time


class Proc:
    """One child process whose output lines are read by a thread."""

    def __init__(self, name, argv, env=None, cwd=None):
        self.name = name
        self.argv = argv
        self.lines = []
        self._queue = queue.Queue()
        self.popen = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, env=env, cwd=cwd, text=True,
            start_new_session=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for line in self.popen.stdout:
            self.lines.append(line.rstrip("\n"))
            self._queue.put(line.rstrip("\n"))
        self.popen.stdout.close()
        self._queue.put(None)

    def output(self):
        return "\n".join(self.lines)

    def wait_line(self, pattern, timeout_s):
        """Returns the re.Match of the first line matching `pattern`; raises
        AssertionError naming the process when it exits or the deadline
        passes first."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout_s
        seen = 0
        while True:
            for line in self.lines[seen:]:
                match = regex.search(line)
                if match:
                    return match
            seen = len(self.lines)
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(
                    f"{self.name}: no line matching {pattern!r} within "
                    f"{timeout_s} s; output:\n{self.output()}")
            try:
                if self._queue.get(timeout=min(left, 1.0)) is None:
                    self._reader.join()
                    for line in self.lines[seen:]:
                        match = regex.search(line)
                        if match:
                            return match
                    raise AssertionError(
                        f"{self.name} exited ({self.popen.wait()}) before "
                        f"printing a line matching {pattern!r}; output:\n"
                        f"{self.output()}")
            except queue.Empty:
                pass

    def wait_exit(self, timeout_s):
        """Returns the exit code; raises AssertionError after the deadline."""
        try:
            code = self.popen.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise AssertionError(
                f"{self.name} still running after {timeout_s} s; output:\n"
                f"{self.output()}") from None
        self._reader.join(timeout=10)
        return code

    def kill(self):
        if self.popen.poll() is None:
            try:
                os.killpg(self.popen.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.popen.wait()


class Group:
    """Processes started for one test; kill_all() ends those still running."""

    def __init__(self):
        self.procs = []

    def start(self, name, argv, env=None, cwd=None):
        proc = Proc(name, argv, env=env, cwd=cwd)
        self.procs.append(proc)
        return proc

    def kill_all(self):
        for proc in self.procs:
            proc.kill()


def run(argv, timeout_s, **kwargs):
    """Runs a command to completion; returns CompletedProcess (text output)."""
    return subprocess.run(argv, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True,
                          timeout=timeout_s, stdin=subprocess.DEVNULL,
                          **kwargs)


def check_run(argv, timeout_s, **kwargs):
    """As run(); raises AssertionError with the output when it fails."""
    result = run(argv, timeout_s, **kwargs)
    if result.returncode != 0:
        raise AssertionError(
            f"{' '.join(argv)} exited {result.returncode}:\n{result.stdout}")
    return result
