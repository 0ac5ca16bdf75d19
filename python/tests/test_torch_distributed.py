"""Dense parameters all-reduced through torch.distributed, set up from the
Petrel cluster: two Python workers under petrel-launch keep identical
weights after every step although each trains on its own data."""

import os
import subprocess
import sys
import textwrap

import pytest

import petrel

from conftest import TIMEOUT_S

pytest.importorskip("torch")

_JOB = textwrap.dedent("""
    import torch, torch.distributed as dist
    import petrel, petrel.torch as pt
    with petrel.KVClient(timeout=20) as kv:
        assert kv.broadcast("hello" if kv.rank == 0 else "") == "hello"
        assert kv.broadcast(b"\\x00\\x01" if kv.rank == 1 else b"",
                            root=1) == b"\\x00\\x01"
        pt.init_process_group(kv, backend="gloo")
        torch.manual_seed(kv.rank)  # different data and initial weights
        model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(),
                                    torch.nn.Linear(8, 1))
        pt.broadcast_parameters(model.parameters())
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(5):
            x = torch.randn(16, 4)
            loss = (model(x) - x.sum(1, keepdim=True)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            pt.allreduce_gradients(model.parameters())
            opt.step()
            flat = torch.cat([p.detach().reshape(-1)
                              for p in model.parameters()])
            every = [torch.empty_like(flat) for _ in range(kv.num_workers)]
            dist.all_gather(every, flat)
            assert all(torch.equal(w, every[0]) for w in every), step
        dist.destroy_process_group()
        print(f"rank {kv.rank}: 5 steps, identical weights", flush=True)
""")


def test_allreduce_keeps_workers_identical(tmp_path):
    bin_dir = petrel.testing.default_bin_dir()
    launch = os.path.join(bin_dir, "petrel-launch")
    if not os.access(launch, os.X_OK):
        pytest.skip("petrel-launch is not built")
    script = tmp_path / "job.py"
    script.write_text(_JOB)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(petrel.__file__))
    run = subprocess.run([
        launch, "--num_servers=1", "--num_workers=2", f"--bin_dir={bin_dir}",
        f"--timeout_s={int(2 * TIMEOUT_S)}", "--", sys.executable,
        str(script)
    ], env=env, capture_output=True, text=True, timeout=3 * TIMEOUT_S)
    assert run.returncode == 0, run.stdout + run.stderr
    for rank in (0, 1):
        assert f"rank {rank}: 5 steps, identical weights" in run.stdout, \
            run.stdout
