"""petrel.torch.EmbeddingBag against torch.nn.EmbeddingBag: same initial
rows, same optimizer (the server's Adagrad / SGD vs torch.optim's), same
batches; the rows and the outputs must agree to 1e-5 after several steps."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import petrel.torch as ptorch  # noqa: E402
from petrel.testing import LocalCluster  # noqa: E402

from conftest import TIMEOUT_S  # noqa: E402

DIM = 8
NUM_IDS = 200
ADAGRAD_LR = 0.1
SGD_LR = 0.5

_JOB = f"""
tables {{ id: 0 dim: 1 }}
tables {{
  id: 1 dim: {DIM}
  initializer {{ kind: KIND_NORMAL scale: 0.1 seed: 7 }}
  optimizer {{ kind: KIND_ADAGRAD learning_rate: {ADAGRAD_LR} }}
}}
tables {{
  id: 2 dim: {DIM}
  initializer {{ kind: KIND_UNIFORM scale: 0.1 seed: 9 }}
  optimizer {{ kind: KIND_SGD learning_rate: {SGD_LR} }}
}}
"""


@pytest.fixture(scope="module")
def table_kv(tmp_path_factory):
    job = tmp_path_factory.mktemp("job") / "job.textproto"
    job.write_text(_JOB)
    with LocalCluster(num_servers=2, timeout=TIMEOUT_S,
                      server_args=[f"--config={job}"]) as cluster:
        kv = cluster.client(timeout=TIMEOUT_S)
        yield kv
        kv.finish()
        assert set(cluster.wait(TIMEOUT_S).values()) == {0}, cluster.output()


def ids_to_keys(ids):
    # Sparse ids far apart, as hashed features are.
    return ids * 1000003 + 17


def batches(seed, steps, bags, per_bag):
    g = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        # Zipf-like: low ids repeat within and across bags.
        u = torch.rand(bags * per_bag, generator=g)
        ids = (NUM_IDS * u**3).to(torch.int64).clamp_(max=NUM_IDS - 1)
        offsets = torch.arange(0, bags * per_bag, per_bag)
        weights = torch.rand(bags * per_bag, generator=g)
        target = torch.randn(bags, 1, generator=g)
        yield ids, offsets, weights, target


def run_both(kv, table, mode, use_weights, make_opt, steps=6):
    all_keys = ids_to_keys(torch.arange(NUM_IDS))
    initial = kv.pull(all_keys, table=table)  # creates the rows
    ref = torch.nn.EmbeddingBag(NUM_IDS, DIM, mode=mode)
    with torch.no_grad():
        ref.weight.copy_(initial)
    opt = make_opt(ref.parameters())
    bag = ptorch.EmbeddingBag(kv, table=table, dim=DIM, mode=mode)
    head = torch.nn.Linear(DIM, 1)
    ref_head = torch.nn.Linear(DIM, 1)
    ref_head.load_state_dict(head.state_dict())
    head_opt = torch.optim.SGD(head.parameters(), lr=0.1)
    ref_head_opt = torch.optim.SGD(ref_head.parameters(), lr=0.1)
    data = list(batches(table * 10 + use_weights, steps, 16, 5))
    bag.prefetch(ids_to_keys(data[0][0]))
    for step, (ids, offsets, weights, target) in enumerate(data):
        psw = weights if use_weights else None
        out = bag(ids_to_keys(ids), offsets, psw)
        ref_out = ref(ids, offsets, per_sample_weights=psw)
        torch.testing.assert_close(out, ref_out, atol=1e-5, rtol=1e-5)
        loss = ((head(out) - target)**2).mean()
        ref_loss = ((ref_head(ref_out) - target)**2).mean()
        head_opt.zero_grad()
        loss.backward()  # pushes the rows' gradients
        head_opt.step()
        opt.zero_grad()
        ref_loss.backward()
        opt.step()
        ref_head_opt.step()
        ref_head_opt.zero_grad()
    np.testing.assert_allclose(kv.pull(all_keys, table=table).numpy(),
                               ref.weight.detach().numpy(), atol=1e-5,
                               rtol=1e-5)
    assert not torch.equal(ref.weight.detach(), initial)  # it did train


def test_sum_with_weights_and_adagrad(table_kv):
    run_both(table_kv, 1, "sum", True,
             lambda p: torch.optim.Adagrad(p, lr=ADAGRAD_LR, eps=1e-8))


def test_mean_with_sgd(table_kv):
    run_both(table_kv, 2, "mean", False,
             lambda p: torch.optim.SGD(p, lr=SGD_LR))


def test_embedding_rows_and_gradients(table_kv):
    emb = ptorch.Embedding(table_kv, table=2, dim=DIM)
    keys = ids_to_keys(torch.tensor([[3, 4], [3, 5]]))
    before = table_kv.pull(keys.reshape(-1), table=2)
    rows = emb(keys)
    assert rows.shape == (2, 2, DIM)
    torch.testing.assert_close(rows.reshape(-1, DIM), before)
    rows.sum().backward()
    after = table_kv.pull(keys.reshape(-1), table=2)
    # Key 3 appears twice: its gradient is 2, the others' 1 (SGD step).
    step = torch.tensor([2.0, 1.0, 2.0, 1.0]).unsqueeze(1) * SGD_LR
    torch.testing.assert_close(after, before - step)


@pytest.mark.skipif(not torch.cuda.is_available(),
                    reason="this torch has no CUDA device (Debian's "
                    "python3-torch is CPU-only)")
def test_cuda_inputs_get_rows_on_their_device(table_kv):
    emb = ptorch.Embedding(table_kv, table=2, dim=DIM)
    keys = ids_to_keys(torch.tensor([[3, 4], [3, 5]]))
    before = table_kv.pull(keys.reshape(-1), table=2)
    rows = emb(keys.cuda())
    assert rows.device.type == "cuda"
    torch.testing.assert_close(rows.reshape(-1, DIM).cpu(), before)
    (rows * 1.0).sum().backward()
    after = table_kv.pull(keys.reshape(-1), table=2)
    step = torch.tensor([2.0, 1.0, 2.0, 1.0]).unsqueeze(1) * SGD_LR
    torch.testing.assert_close(after, before - step)
