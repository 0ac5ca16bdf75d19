"""What a Python worker sees when things go wrong: exceptions carrying the
Status code and message, never a hang."""

import os
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import petrel
from petrel.testing import LocalCluster

from conftest import TIMEOUT_S


def test_pull_from_a_killed_server_fails_fast_naming_it():
    with LocalCluster(num_servers=1, timeout=TIMEOUT_S) as cluster:
        kv = cluster.client(timeout=TIMEOUT_S)
        keys = np.arange(8, dtype=np.uint64)
        kv.push(keys, np.ones(8, np.float32))
        cluster.kill_servers()
        ticket = kv.pull_async(keys)
        start = time.monotonic()
        # The scheduler sees the connection close and tells the client,
        # whose wait ends long before its timeout.
        with pytest.raises(petrel.UnavailableError) as e:
            ticket.wait(timeout=TIMEOUT_S)
        assert time.monotonic() - start < 5
        assert e.value.code == "UNAVAILABLE"
        assert "(server 0 at 127.0.0.1:" in e.value.message
        assert "died: connection closed" in e.value.message
        assert isinstance(e.value, ConnectionError)
        with pytest.raises(petrel.UnavailableError):  # known dead: at once
            kv.pull(keys, timeout=TIMEOUT_S)


def test_pull_from_dead_servers_raises_deadline_exceeded():
    # Without connection watching, a dead server is noticed only by its
    # missing heartbeats (30 s): the client's own deadlines apply.
    with LocalCluster(num_servers=1, timeout=TIMEOUT_S,
                      scheduler_args=["--connection_grace_ms=0"]) as cluster:
        kv = cluster.client(timeout=TIMEOUT_S)
        keys = np.arange(8, dtype=np.uint64)
        kv.push(keys, np.ones(8, np.float32))
        cluster.kill_servers()
        ticket = kv.pull_async(keys)
        with pytest.raises(petrel.DeadlineExceededError) as e:
            ticket.wait(timeout=0.3)
        assert e.value.code == "DEADLINE_EXCEEDED"
        assert "server 0" in e.value.message
        assert isinstance(e.value, TimeoutError)
        assert not ticket.done()  # still outstanding: may be waited again
        with pytest.raises(TimeoutError):
            kv.pull(keys, timeout=0.2)
        # close() from another thread ends a wait in progress.
        errors = []

        def wait_long():
            try:
                ticket.wait(timeout=TIMEOUT_S)
            except petrel.PetrelError as e:
                errors.append(e)

        waiter = threading.Thread(target=wait_long)
        waiter.start()
        kv.close()
        waiter.join(TIMEOUT_S)
        assert not waiter.is_alive()
        assert len(errors) == 1 and isinstance(
            errors[0], petrel.FailedPreconditionError), errors
        with pytest.raises(petrel.FailedPreconditionError):
            kv.push(keys, np.ones(8, np.float32))


def test_no_scheduler_address_is_a_clear_error(monkeypatch):
    for var in ("PETREL_SCHEDULER", "DMLC_PS_ROOT_URI", "DMLC_PS_ROOT_PORT"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(petrel.InvalidArgumentError, match="PETREL_SCHEDULER"):
        petrel.KVClient()
    with pytest.raises(ValueError, match="rank"):
        petrel.KVClient("127.0.0.1:9", rank=3, num_workers=2)


_JOB = textwrap.dedent("""
    import numpy as np
    import petrel
    with petrel.KVClient(timeout=20) as kv:
        keys = np.arange(100, dtype=np.uint64)
        kv.push(keys, np.full((100, 2), kv.rank + 1, np.float32))
        kv.barrier()
        total = kv.pull(keys)
        assert (total == 3).all(), total
        print(f"rank {kv.rank} of {kv.num_workers} saw {total[0, 0]}")
""")


def test_petrel_launch_runs_python_workers(tmp_path):
    bin_dir = petrel.testing.default_bin_dir()
    launch = os.path.join(bin_dir, "petrel-launch")
    if not os.access(launch, os.X_OK):
        pytest.skip("petrel-launch is not built")
    script = tmp_path / "job.py"
    script.write_text(_JOB)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.dirname(os.path.dirname(petrel.__file__))] +
        [p for p in [env.get("PYTHONPATH")] if p])
    run = subprocess.run([
        launch, "--num_servers=2", "--num_workers=2",
        f"--bin_dir={bin_dir}", f"--timeout_s={int(TIMEOUT_S)}", "--",
        sys.executable, str(script)
    ], env=env, capture_output=True, text=True, timeout=2 * TIMEOUT_S)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "rank 0 of 2 saw 3.0" in run.stdout, run.stdout
    assert "rank 1 of 2 saw 3.0" in run.stdout, run.stdout


def test_a_script_that_never_closes_its_client_exits_cleanly():
    script = textwrap.dedent("""
        import numpy as np, petrel
        kv = petrel.KVClient(bind="127.0.0.1", advertise_host="127.0.0.1")
        kv.pull_async(np.arange(4, dtype=np.uint64),
                      callback=lambda t: None)
        print("joined", flush=True)
    """)
    with LocalCluster(num_servers=1, timeout=TIMEOUT_S) as cluster:
        env = dict(os.environ, PETREL_SCHEDULER=cluster.scheduler_address)
        env["PYTHONPATH"] = os.path.dirname(os.path.dirname(petrel.__file__))
        run = subprocess.run([sys.executable, "-c", script], env=env,
                             capture_output=True, text=True,
                             timeout=TIMEOUT_S)
        assert run.returncode == 0, run.stdout + run.stderr
        assert "joined" in run.stdout
