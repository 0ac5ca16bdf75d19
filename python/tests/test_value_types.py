"""Values of each dtype (float32, float64, int32, int64) pushed, summed and
pulled exactly, in rows of their own; values of another dtype converted only
when exact; dtypes the servers do not hold refused with an exception."""

import numpy as np
import pytest

import petrel
from petrel.testing import LocalCluster

from conftest import TIMEOUT_S

# Per dtype: values whose sum of two pushes is exact in that dtype and in no
# narrower one (float64 beyond float32's precision, int64 beyond 2**53).
_EXACT = {
    "float32": np.array([[1.5, -0.25], [3e38 / 4, 1e-38]], np.float32),
    "float64": np.array([[0.1, 1 / 3], [1e300, -5e-324]], np.float64),
    "int32": np.array([[-(1 << 30), 7], [(1 << 30) - 1, -1]], np.int32),
    "int64": np.array([[(1 << 53) + 1, -(1 << 61)], [(1 << 62) - 1, 3]],
                      np.int64),
}


@pytest.mark.parametrize("dtype", sorted(_EXACT))
def test_each_dtype_is_pushed_summed_and_pulled_exactly(kv, keyspace, dtype):
    keys = keyspace.take(2)
    vals = _EXACT[dtype]
    kv.push(keys, vals, dtype=dtype)
    got = kv.pushpull(keys, vals, dtype=dtype)
    assert got.dtype == np.dtype(dtype) and got.shape == (2, 2)
    np.testing.assert_array_equal(got, vals + vals)
    out = np.zeros((2, 2), dtype)
    assert kv.pull(keys, out, dtype=dtype) is out
    np.testing.assert_array_equal(out, vals + vals)
    # Variable-length values (lens) too.
    more = keyspace.take(2)
    kv.push(more, vals.reshape(-1)[:3], lens=[1, 2], dtype=dtype)
    got, lens = kv.pull(more, lens=True, dtype=dtype)
    np.testing.assert_array_equal(got, vals.reshape(-1)[:3])
    np.testing.assert_array_equal(lens, [1, 2])


def test_lists_of_ints_as_int64(kv, keyspace):
    keys = keyspace.take(3)
    kv.push(keys, [1 << 60, 2, 3], dtype="int64")
    kv.push(keys, [1, 1, 1], dtype="int64")
    np.testing.assert_array_equal(kv.pull(keys, dtype="int64").reshape(-1),
                                  [(1 << 60) + 1, 3, 4])


def test_each_dtype_has_its_own_rows(kv, keyspace):
    # One key, four rows: nothing is summed across dtypes or reinterpreted.
    key = keyspace.take(1)
    kv.push(key, np.array([2.5], np.float32))
    kv.push(key, np.array([1 << 40], np.int64), dtype="int64")
    kv.push(key, np.array([-3], np.int32), dtype="int32")
    kv.push(key, np.array([0.1], np.float64), dtype="float64")
    assert kv.pull(key).tolist() == [[2.5]]
    assert kv.pull(key, dtype=np.int64).tolist() == [[1 << 40]]
    assert kv.pull(key, dtype="int32").tolist() == [[-3]]
    assert kv.pull(key, dtype=np.float64).tolist() == [[0.1]]


def test_values_of_another_dtype_are_converted_only_when_exact(
        kv, keyspace):
    keys = keyspace.take(2)
    kv.push(keys, np.array([3, -4], np.int64), dtype="int32")  # exact
    kv.push(keys, np.array([2.0, 1.0]), dtype="int32")  # exact floats
    assert kv.pull(keys, dtype="int32").reshape(-1).tolist() == [5, -3]
    refused = [
        (np.array([1 << 31, 0], np.int64), "int32"),  # would wrap
        (np.array([0.5, 0.0]), "int64"),  # would truncate
        (np.array([(1 << 24) + 1, 0], np.int64), "float32"),  # would round
        (np.array([(1 << 53) + 1, 0], np.int64), "float64"),
        (np.array([1 << 63, 0], np.uint64), "int64"),  # would turn negative
        (np.array([np.nan, 0.0]), "int32"),
    ]
    for values, dtype in refused:
        with pytest.raises(TypeError, match="exactly"):
            kv.push(keys, values, dtype=dtype)
    with pytest.raises(TypeError, match="numbers"):
        kv.push(keys, np.array(["a", "b"]), dtype="int32")
    # Nothing of the refused requests reached the servers.
    assert kv.pull(keys, dtype="int32").reshape(-1).tolist() == [5, -3]


def test_wrong_dtypes_raise(kv, keyspace):
    keys = keyspace.take(2)
    kv.push(keys, np.ones(2, np.float64), dtype="float64")
    with pytest.raises(TypeError, match="float64"):
        kv.pull(keys, np.zeros(2, np.float32), dtype="float64")
    with pytest.raises(TypeError, match="int64"):
        kv.pull(keys, np.zeros(2, np.uint64), dtype="int64")
    with pytest.raises(ValueError, match="dtype must be one of"):
        kv.pull(keys, dtype="float16")
    with pytest.raises(ValueError, match="dtype must be one of"):
        petrel.KVClient(dtype=np.uint8)


def test_torch_tensors_of_each_dtype(kv, keyspace):
    torch = pytest.importorskip("torch")
    keys = torch.from_numpy(keyspace.take(4).astype(np.int64))
    for dtype in (torch.float64, torch.int32, torch.int64):
        vals = torch.arange(8, dtype=dtype).reshape(4, 2) - 3
        kv.push(keys, vals, dtype=dtype)
        got = kv.pull(keys, dtype=dtype)
        assert isinstance(got, torch.Tensor) and got.dtype == dtype
        assert torch.equal(got, vals)


def test_table_servers_refuse_other_dtypes(tmp_path):
    job = tmp_path / "job.textproto"
    job.write_text("tables { id: 0 dim: 1 }\n")
    with LocalCluster(num_servers=1, timeout=TIMEOUT_S,
                      server_args=[f"--config={job}"]) as cluster:
        # A client whose requests are int64 unless they say otherwise.
        with cluster.client(timeout=TIMEOUT_S, dtype=np.int64) as kv:
            assert kv.dtype == "int64"
            keys = np.array([1, 2], np.uint64)
            with pytest.raises(petrel.FailedPreconditionError,
                               match="int64 values need servers without"):
                kv.push(keys, np.ones(2, np.int64))
            with pytest.raises(petrel.FailedPreconditionError):
                kv.pull(keys, dtype="float64")
            kv.push(keys, np.ones(2, np.float32), dtype="float32")
            assert kv.pull(keys, dtype="float32").shape == (2, 1)
        assert set(cluster.wait(TIMEOUT_S).values()) == {0}, cluster.output()
