"""examples/python/wide_deep.py runs under petrel-launch on a small
petrel-datagen data set and prints its final line."""

import os
import re
import subprocess
import sys

import pytest

import petrel

from conftest import TIMEOUT_S

pytest.importorskip("torch")

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def test_wide_deep_example_trains(tmp_path):
    bin_dir = petrel.testing.default_bin_dir()
    for tool in ("petrel-launch", "petrel-datagen"):
        if not os.access(os.path.join(bin_dir, tool), os.X_OK):
            pytest.skip(f"{tool} is not built")
    train, test = tmp_path / "train.tsv", tmp_path / "test.tsv"
    subprocess.run([
        os.path.join(bin_dir, "petrel-datagen"), "--format=criteo",
        "--interactions", f"--train_out={train}", f"--test_out={test}",
        "--train_examples=3000", "--test_examples=1000"
    ], check=True, capture_output=True, timeout=TIMEOUT_S)
    example = os.path.join(_REPO, "examples", "python")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(petrel.__file__))
    run = subprocess.run([
        os.path.join(bin_dir, "petrel-launch"),
        f"--config={example}/wide_deep.textproto", "--num_servers=1",
        "--num_workers=1", f"--bin_dir={bin_dir}",
        f"--timeout_s={int(2 * TIMEOUT_S)}", "--", sys.executable,
        f"{example}/wide_deep.py", f"--train={train}", f"--test={test}",
        "--timeout=20"
    ], env=env, capture_output=True, text=True, timeout=3 * TIMEOUT_S)
    assert run.returncode == 0, run.stdout + run.stderr
    final = re.search(r"final test_logloss=([\d.]+) test_auc=([\d.]+)",
                      run.stdout)
    assert final, run.stdout
    # It learned something: better than a constant guess of the base rate.
    assert float(final.group(2)) > 0.55, run.stdout
