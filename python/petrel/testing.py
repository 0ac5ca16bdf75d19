"""LocalCluster: Petrel's scheduler and servers as child processes on
127.0.0.1, for tests, benchmarks and notebooks.

    with LocalCluster(num_servers=2) as cluster:
        with cluster.client() as kv:
            kv.push(keys, values)

The scheduler takes a free port (--port=0) and announces it on stdout
(PETREL_LISTEN ... port=P); every process's output is kept for error
messages. Binaries come from ``bin_dir``, else $PETREL_BIN_DIR, else the
build tree this package sits in (<build>/python/petrel -> <build>/bin).
"""

import os
import queue
import re
import subprocess
import threading
import time

from petrel.kv_client import KVClient

_PORT = re.compile(r"\bport=(\d+)")


def default_bin_dir():
    env = os.environ.get("PETREL_BIN_DIR")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.normpath(os.path.join(here, "..", "..", "bin"))


class _Process:
    """A child whose merged stdout/stderr lines are read by a thread."""

    def __init__(self, name, argv):
        self.name = name
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, text=True)
        self.lines = []
        self._queue = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line)
            self._queue.put(line)
        self._queue.put(None)

    def wait_for_line(self, prefix, timeout):
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            try:
                line = self._queue.get(timeout=max(left, 0))
            except queue.Empty:
                raise TimeoutError(f"{self.name} printed no {prefix!r} line "
                                   f"within {timeout} s") from None
            if line is None:
                raise RuntimeError(f"{self.name} exited ({self.proc.wait()}) "
                                   f"before printing {prefix!r}")
            if line.startswith(prefix):
                return line

    def output(self):
        return f"--- {self.name} ---\n" + "".join(self.lines)


class LocalCluster:
    """A scheduler and ``num_servers`` petrel-server processes for a job of
    ``num_workers`` workers; the workers are KVClients from ``client()``
    (or any program given ``scheduler_address``). ``server_args`` go to
    every server (e.g. ["--config=job.textproto"]). Processes still
    running when the cluster stops are killed."""

    def __init__(self, num_servers=1, num_workers=1, *, bin_dir=None,
                 server_args=(), scheduler_args=(), timeout=30.0):
        self.num_servers = num_servers
        self.num_workers = num_workers
        self.bin_dir = bin_dir or default_bin_dir()
        self.timeout = timeout
        self._server_args = list(server_args)
        self._scheduler_args = list(scheduler_args)
        self.scheduler = None
        self.servers = []
        self.port = None

    def _common_flags(self):
        return [
            "--bind=127.0.0.1", "--advertise_host=127.0.0.1",
            f"--num_servers={self.num_servers}",
            f"--num_workers={self.num_workers}",
            f"--join_timeout_s={max(1, int(self.timeout))}"
        ]

    def start(self):
        """Starts the scheduler (waiting for its port) and the servers
        (which finish joining once the workers join)."""
        exe = os.path.join(self.bin_dir, "petrel-scheduler")
        if not os.access(exe, os.X_OK):
            raise FileNotFoundError(f"no petrel-scheduler in {self.bin_dir} "
                                    "(set PETREL_BIN_DIR)")
        self.scheduler = _Process(
            "scheduler", [exe, "--port=0"] + self._common_flags() +
            self._scheduler_args)
        try:
            line = self.scheduler.wait_for_line("PETREL_LISTEN ", self.timeout)
        except Exception:
            self.stop()
            raise
        self.port = int(_PORT.search(line).group(1))
        for i in range(self.num_servers):
            self.servers.append(
                _Process(f"server#{i}", [
                    os.path.join(self.bin_dir, "petrel-server"),
                    f"--scheduler={self.scheduler_address}"
                ] + self._common_flags() + self._server_args))
        return self

    @property
    def scheduler_address(self):
        return f"127.0.0.1:{self.port}"

    def client(self, **kwargs):
        """A KVClient joined to this cluster (blocks until all joined)."""
        kwargs.setdefault("join_timeout", self.timeout)
        return KVClient(self.scheduler_address,
                        num_servers=self.num_servers,
                        num_workers=self.num_workers, bind="127.0.0.1",
                        advertise_host="127.0.0.1", **kwargs)

    def kill_servers(self):
        """SIGKILLs every server (to test what a client sees then)."""
        for s in self.servers:
            s.proc.kill()
            s.proc.wait()

    def wait(self, timeout=None):
        """Waits until every process exited; returns {name: exit code}."""
        deadline = time.monotonic() + (timeout or self.timeout)
        codes = {}
        for p in [self.scheduler] + self.servers:
            if p is None:
                continue
            codes[p.name] = p.proc.wait(
                timeout=max(0.0, deadline - time.monotonic()))
        return codes

    def output(self):
        """Every process's output so far, for failure messages."""
        return "".join(p.output() for p in [self.scheduler] + self.servers
                       if p is not None)

    def stop(self):
        for p in [self.scheduler] + self.servers:
            if p is not None and p.proc.poll() is None:
                p.proc.kill()
            if p is not None:
                p.proc.wait()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False
