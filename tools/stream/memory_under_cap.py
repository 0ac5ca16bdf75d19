#!/usr/bin/env python3
"""Runs a job of real daemons (petrel-scheduler, --servers petrel-server with
--config and --memory_cap_mib, one petrel-stream worker) on 127.0.0.1 and
samples every server's resident memory (/proc/PID/status VmRSS) and its
tables' bytes (/metrics: petrel_server_table_memory_bytes) every --every_s
seconds until the stream ends. Writes the samples as CSV (--csv) and prints
one summary line per server:

  server=0 cap_bytes=134217728 max_table_bytes=... max_rss_bytes=...
  rss_before_bytes=... samples=...

Usage (docs/memory.md, "Measured"):
  tools/stream/memory_under_cap.py --bin=build/bin --servers=2 \\
      --memory_cap_mib=128 --config=job.textproto --csv=mem.csv -- \\
      --distinct_keys=100000000 --key_space=2147483648
Arguments after -- go to petrel-stream.
"""
import argparse
import os
import re
import subprocess
import sys
import time
import urllib.request


def wait_line(path, pattern, proc, timeout=60):
    end = time.time() + timeout
    while time.time() < end:
        with open(path) as f:
            m = re.search(pattern, f.read())
        if m:
            return m
        if proc.poll() is not None:
            sys.exit(f"{path}: the process exited before printing {pattern}")
        time.sleep(0.05)
    sys.exit(f"{path}: no {pattern} within {timeout} s")


def rss_bytes(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return -1


def metric(port, name):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics",
                                    timeout=5) as r:
            text = r.read().decode()
    except OSError:
        return -1
    m = re.search(r"^" + name + r"(?:\{[^}]*\})? (\S+)$", text, re.M)
    return float(m.group(1)) if m else -1


def main():
    argv = sys.argv[1:]
    stream_args = []
    if "--" in argv:
        i = argv.index("--")
        argv, stream_args = argv[:i], argv[i + 1:]
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--bin", required=True, help="directory of the binaries")
    p.add_argument("--config", required=True, help="the job config")
    p.add_argument("--servers", type=int, default=1)
    p.add_argument("--memory_cap_mib", type=float, required=True)
    p.add_argument("--every_s", type=float, default=1.0)
    p.add_argument("--csv", default="")
    p.add_argument("--dir", default=".", help="where the logs go")
    a = p.parse_args(argv)
    common = ["--bind=127.0.0.1", "--advertise_host=127.0.0.1",
              f"--num_servers={a.servers}", "--num_workers=1"]
    logs = []
    procs = []

    def start(name, args):
        path = os.path.join(a.dir, name + ".log")
        f = open(path, "w")
        proc = subprocess.Popen(args, stdout=f, stderr=subprocess.STDOUT)
        procs.append(proc)
        logs.append(path)
        return proc, path

    try:
        sched, path = start("scheduler",
                            [f"{a.bin}/petrel-scheduler", "--port=0"] + common)
        port = wait_line(path, r"PETREL_LISTEN .*? port=(\d+)", sched).group(1)
        at = f"--scheduler=127.0.0.1:{port}"
        servers = []
        for i in range(a.servers):
            proc, path = start(f"server{i}", [
                f"{a.bin}/petrel-server", at, f"--config={a.config}",
                f"--memory_cap_mib={a.memory_cap_mib}", "--metrics_port=0"
            ] + common)
            servers.append((proc, path))
        # Each server's resident memory before any table has a row.
        before = {}
        for proc, path in servers:
            wait_line(path, r"server bound port", proc)
            before[proc.pid] = rss_bytes(proc.pid)
        worker, wpath = start("stream", [f"{a.bin}/petrel-stream", at] +
                              common + stream_args)
        ports = []
        for proc, path in servers:
            m = wait_line(path, r"PETREL_READY .*?rank=(\d+) .*?metrics_port=(\d+)",
                          proc)
            ports.append((int(m.group(1)), int(m.group(2)), proc.pid))
        ports.sort()
        before = {rank: before[pid] for rank, _, pid in ports}
        rows = []
        start_time = time.time()
        while worker.poll() is None:
            t = time.time() - start_time
            for rank, mport, pid in ports:
                rows.append((t, rank, rss_bytes(pid),
                             metric(mport, "petrel_server_table_memory_bytes"),
                             metric(mport, "petrel_server_memory_cap_bytes")))
            time.sleep(a.every_s)
        code = worker.wait()
        for proc, _ in servers:
            proc.wait(timeout=60)
        sched.wait(timeout=60)
        if a.csv:
            with open(a.csv, "w") as f:
                f.write("seconds,server,rss_bytes,table_bytes,cap_bytes\n")
                for r in rows:
                    f.write("%.1f,%d,%d,%d,%d\n" % r)
        with open(wpath) as f:
            for line in f:
                if line.startswith("stream ") or line.startswith("progress "):
                    last = line.strip()
        print(last)
        for rank, _, _ in ports:
            mine = [r for r in rows if r[1] == rank and r[3] >= 0]
            print(f"server={rank} cap_bytes={int(mine[-1][4]) if mine else -1} "
                  f"max_table_bytes={int(max(r[3] for r in mine)) if mine else -1} "
                  f"max_rss_bytes={max(r[2] for r in mine) if mine else -1} "
                  f"rss_before_bytes={before[rank]} samples={len(mine)}")
        return code
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()


if __name__ == "__main__":
    sys.exit(main())
