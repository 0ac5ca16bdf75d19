"""push/pull/pushpull from Python against real servers: exactness, order,
in-place outputs, async tickets and callbacks, type errors."""

import threading

import numpy as np
import pytest

import petrel

from conftest import TIMEOUT_S


def test_push_then_pull_is_exact(kv, keyspace):
    rng = np.random.default_rng(1)
    keys = keyspace.take(1000)
    rng.shuffle(keys)  # any order
    vals = rng.standard_normal((1000, 8)).astype(np.float32)
    kv.push(keys, vals)
    got = kv.pull(keys)
    assert got.shape == (1000, 8) and got.dtype == np.float32
    np.testing.assert_array_equal(got, vals)
    # Answered in the order asked, whatever it is.
    order = rng.permutation(1000)
    np.testing.assert_array_equal(kv.pull(keys[order]), vals[order])


def test_pushes_sum_and_apply_in_order(kv, keyspace):
    keys = keyspace.take(50)
    ones = np.ones((50, 4), np.float32)
    tickets = [kv.push_async(keys, ones) for _ in range(20)]
    # Issued from one thread, handled in order: each push-pull sees every
    # push before it.
    seen = [kv.pushpull_async(keys, ones) for _ in range(5)]
    kv.wait(tickets)
    for i, t in enumerate(seen):
        np.testing.assert_array_equal(t.wait(), np.full((50, 4), 21 + i))
    assert all(t.done() for t in tickets + seen)


def test_duplicate_keys_add_up(kv, keyspace):
    k = keyspace.take(2)
    keys = np.array([k[0], k[1], k[0]], np.uint64)
    kv.push(keys, np.array([[1.0], [2.0], [3.0]], np.float32))
    np.testing.assert_array_equal(kv.pull(keys), [[4.0], [2.0], [4.0]])


def test_pull_fills_out_in_place(kv, keyspace):
    keys = keyspace.take(100)
    vals = np.arange(300, dtype=np.float32).reshape(100, 3)
    kv.push(keys, vals)
    out = np.zeros((100, 3), np.float32)
    assert kv.pull(keys, out) is out
    np.testing.assert_array_equal(out, vals)


def test_out_of_the_wrong_size_raises_and_stays_unchanged(kv, keyspace):
    keys = keyspace.take(10)
    kv.push(keys, np.ones((10, 2), np.float32))
    out = np.full(7, -1.0, np.float32)
    with pytest.raises(petrel.InvalidArgumentError, match="20 values"):
        kv.pull(keys, out)
    np.testing.assert_array_equal(out, np.full(7, -1.0))


def test_variable_length_values_with_lens(kv, keyspace):
    keys = keyspace.take(3)
    lens = np.array([1, 3, 2], np.int32)
    vals = np.arange(6, dtype=np.float32)
    kv.push(keys, vals, lens)
    got, got_lens = kv.pull(keys, lens=True)
    np.testing.assert_array_equal(got, vals)
    np.testing.assert_array_equal(got_lens, lens)


def test_callbacks_run_once_each_request_is_over(kv, keyspace):
    keys = keyspace.take(10)
    done = threading.Event()
    results = []

    def on_done(ticket):
        results.append(ticket.wait(0))
        if len(results) == 2:
            done.set()

    kv.push_async(keys, np.ones((10, 1), np.float32), callback=on_done)
    kv.pull_async(keys, callback=on_done)
    assert done.wait(TIMEOUT_S)
    # Each callback runs once, when its own request is over; the two
    # requests may finish in either order (their replies come from every
    # server, on the client's receive thread), so only the set is checked.
    assert len(results) == 2
    pushed = [r for r in results if r is None]
    pulled = [r for r in results if r is not None]
    assert len(pushed) == 1 and len(pulled) == 1
    # The pull was sent after the push on the same connections, and each
    # server handles one connection's requests in order, so it sees the push.
    np.testing.assert_array_equal(pulled[0], np.ones((10, 1)))


def test_wrong_types_raise_type_errors(kv, keyspace):
    keys = keyspace.take(4)
    with pytest.raises(TypeError, match="keys must be integers"):
        kv.push(keys.astype(np.float64), np.ones(4, np.float32))
    with pytest.raises(TypeError, match="float32"):
        kv.pull(keys, np.zeros(4, np.float64))
    with pytest.raises(TypeError, match="contiguous"):
        kv.pull(keys, np.zeros((4, 2), np.float32)[:, 0])
    # Other value types are converted (copied) before sending.
    kv.push(keys, np.ones(4, np.float64))
    np.testing.assert_array_equal(kv.pull(keys), np.ones((4, 1)))
    # Integers exact in float32 too; larger ones are refused, not rounded,
    # and nothing of the request is sent.
    kv.push(keys, np.array([1, -2, -(1 << 24), 0], np.int64))
    np.testing.assert_array_equal(kv.pull(keys).reshape(-1),
                                  [2, -1, 1 - (1 << 24), 1])
    for big in (np.array([0, 0, 0, (1 << 24) + 1], np.int64),
                np.array([0, 0, 0, -(1 << 40) - 1], np.int64)):
        with pytest.raises(TypeError, match="exactly"):
            kv.push(keys, big)
    with pytest.raises(TypeError, match="numbers"):
        kv.push(keys, np.array(["a", "b", "c", "d"]))
    np.testing.assert_array_equal(kv.pull(keys).reshape(-1),
                                  [2, -1, 1 - (1 << 24), 1])


def test_mismatched_sizes_raise_invalid_argument(kv, keyspace):
    keys = keyspace.take(4)
    with pytest.raises(petrel.InvalidArgumentError) as e:
        kv.push(keys, np.ones(7, np.float32))
    assert e.value.code == "INVALID_ARGUMENT"
    assert isinstance(e.value, ValueError)


def test_torch_tensors_in_and_out(kv, keyspace):
    torch = pytest.importorskip("torch")
    keys = torch.from_numpy(keyspace.take(64).astype(np.int64))
    vals = torch.randn(64, 16)
    kv.push(keys, vals)
    got = kv.pull(keys)
    assert isinstance(got, torch.Tensor) and got.shape == (64, 16)
    assert torch.equal(got, vals)
    out = torch.zeros(64, 16)
    assert kv.pull(keys, out) is out
    assert torch.equal(out, vals)
    # A tensor that requires grad is sent as its data.
    w = torch.ones(64, 16, requires_grad=True)
    np.testing.assert_array_equal(kv.pushpull(keys, w).numpy(),
                                  (vals + 1).numpy())
