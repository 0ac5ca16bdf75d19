"""examples/python/wide_deep.py under petrel-launch with 2 servers and 2
workers reaches, after one epoch on a small petrel-datagen data set, a test
logloss within 2% of the same model trained in one process with local
torch.nn tables (--local) on the same data."""

import os
import re
import subprocess
import sys

import pytest

import petrel

from conftest import TIMEOUT_S

pytest.importorskip("torch")

_EXAMPLE = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), "examples", "python")
_FINAL = re.compile(r"final test_logloss=([\d.]+) test_auc=([\d.]+) "
                    r"examples_per_s=\d+ train_examples=(\d+)")
# The local model's batch; each of the 2 workers takes half, so both runs
# make the same number of steps over the same global batches.
_BATCH = 256


def _final(run):
    assert run.returncode == 0, run.stdout + run.stderr
    final = _FINAL.search(run.stdout)
    assert final, run.stdout + run.stderr
    return float(final.group(1)), float(final.group(2)), int(final.group(3))


def test_wide_deep_matches_local_pytorch(tmp_path):
    bin_dir = petrel.testing.default_bin_dir()
    for tool in ("petrel-launch", "petrel-datagen"):
        if not os.access(os.path.join(bin_dir, tool), os.X_OK):
            pytest.skip(f"{tool} is not built")
    train, test = tmp_path / "train.tsv", tmp_path / "test.tsv"
    subprocess.run([
        os.path.join(bin_dir, "petrel-datagen"), "--format=criteo",
        "--interactions", "--seed=1", f"--train_out={train}",
        f"--test_out={test}", "--train_examples=10000",
        "--test_examples=2000"
    ], check=True, capture_output=True, timeout=TIMEOUT_S)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(petrel.__file__))
    script = [sys.executable, f"{_EXAMPLE}/wide_deep.py", f"--train={train}",
              f"--test={test}", "--epochs=1", "--timeout=20"]
    local = subprocess.run(script + ["--local", f"--batch_size={_BATCH}"],
                           env=env, capture_output=True, text=True,
                           timeout=3 * TIMEOUT_S)
    distributed = subprocess.run([
        os.path.join(bin_dir, "petrel-launch"),
        f"--config={_EXAMPLE}/wide_deep.textproto", "--num_servers=2",
        "--num_workers=2", f"--bin_dir={bin_dir}",
        f"--timeout_s={int(3 * TIMEOUT_S)}", "--"
    ] + script + [f"--batch_size={_BATCH // 2}"], env=env,
                                 capture_output=True, text=True,
                                 timeout=4 * TIMEOUT_S)
    local_loss, local_auc, local_examples = _final(local)
    loss, auc, examples = _final(distributed)
    assert examples == local_examples == 10000
    # Both learned something (a constant guess has AUC 0.5) ...
    assert local_auc > 0.58 and auc > 0.58, (local.stdout,
                                              distributed.stdout)
    # ... and the same: Petrel's tables and all-reduce cost no quality.
    gap = abs(loss - local_loss) / local_loss
    assert gap <= 0.02, (f"Petrel {loss} vs local {local_loss}: "
                         f"{100 * gap:.2f}%", distributed.stdout)
