"""Helpers for the cluster tests: free ports, polling with a deadline,
daemons owned by the test, a small generated training job and the skip
convention (exit code 77, which ctest reports as Skipped)."""

import os
import signal
import socket
import subprocess
import sys
import time

SKIP = 77


def skip(reason):
    print(f"SKIPPED: {reason}", flush=True)
    sys.exit(SKIP)


def free_port(host="127.0.0.1"):
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def wait_until(condition, timeout_s, what):
    """Polls `condition` until it returns a true value, which it returns;
    raises with `what` after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise TimeoutError(f"{what} within {timeout_s} s")
        time.sleep(0.1)


class Daemons:
    """Processes started by the test; stop() ends them (SIGTERM, then
    SIGKILL) in reverse order of start."""

    def __init__(self):
        self.procs = []

    def start(self, name, argv, log_path, env=None):
        log = open(log_path, "wb")
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=env)
        log.close()
        self.procs.append((name, proc, log_path))
        return proc

    def check_running(self):
        for name, proc, log_path in self.procs:
            if proc.poll() is not None:
                with open(log_path, errors="replace") as f:
                    log = f.read()[-3000:]
                raise RuntimeError(f"{name} exited with {proc.returncode}:\n{log}")

    def stop(self):
        for name, proc, _ in reversed(self.procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for name, proc, _ in reversed(self.procs):
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def write_lr_job(bin_dir, directory, num_servers, num_workers,
                 train_examples=20000, train_entry=None):
    """Generates libsvm data in `directory` and writes job.textproto for a
    logistic-regression job; returns the config's path. `train_entry` is
    data.train (default: the generated file's path)."""
    train_entry = train_entry or f"{directory}/train.svm"
    subprocess.run(
        [os.path.join(bin_dir, "petrel-datagen"),
         f"--train_out={directory}/train.svm",
         f"--train_examples={train_examples}",
         f"--test_out={directory}/test.svm", "--test_examples=2000",
         "--seed=7", "--index_bits=16"],
        check=True, stdout=subprocess.DEVNULL, timeout=60)
    path = os.path.join(directory, "job.textproto")
    with open(path, "w") as f:
        f.write(f"""num_servers: {num_servers}
num_workers: {num_workers}
model {{ kind: KIND_LR }}
tables {{ id: 0 dim: 1 optimizer {{ kind: KIND_FTRL ftrl_alpha: 0.1
  ftrl_beta: 0.001 ftrl_l2: 0.002 ftrl_weight_decay: 5e-5 }} }}
data {{ format: FORMAT_LIBSVM train: "{train_entry}"
  test: "{directory}/test.svm" }}
train {{ batch_size: 512 epochs: 1 }}
""")
    return path
