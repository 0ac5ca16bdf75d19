#!/usr/bin/env python3
"""PyTorch baseline for Petrel's LR trainer (issue: training speed goal).

Logistic regression as nn.EmbeddingBag (mode="sum", per-sample weights)
with sparse gradients and Adagrad, batch 1024, on a libsvm file, on the
CPU. Only the training loop is timed: the data is parsed and turned into
tensors first (Petrel's examples/s includes reading and parsing the text).

  /usr/bin/python3 tools/bench/baselines/torch_lr.py --train=train.svm \
      [--test=test.svm] [--epochs=1] [--threads=1]

--epochs passes over the training data, all timed together (the rate is
per example seen). With --test, the test log loss is computed after
training (not timed). Prints two lines: test_logloss=L, then
torch_lr examples_per_s=N train_examples=N threads=T ...
"""
import argparse
import time

import numpy as np
import torch


def load_libsvm(path, index_bits):
    labels, offsets, indices, values = [], [0], [], []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if not parts:
                continue
            labels.append(1.0 if float(parts[0]) > 0 else 0.0)
            for tok in parts[1:]:
                i, v = tok.split(":")
                indices.append(int(i) & ((1 << index_bits) - 1))
                values.append(float(v))
            offsets.append(len(indices))
    return (np.array(labels, np.float32), np.array(offsets, np.int64),
            np.array(indices, np.int64), np.array(values, np.float32))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--train", required=True)
    p.add_argument("--batch_size", type=int, default=1024)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--index_bits", type=int, default=24)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--test", default="")
    p.add_argument("--epochs", type=int, default=1)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    labels, offsets, indices, values = load_libsvm(a.train, a.index_bits)
    n = len(labels)
    emb = torch.nn.EmbeddingBag((1 << a.index_bits) + 1, 1, mode="sum",
                                sparse=True)
    torch.nn.init.zeros_(emb.weight)
    bias = torch.zeros(1, requires_grad=True)
    opt = torch.optim.Adagrad(list(emb.parameters()) + [bias], lr=a.lr)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    batches = []
    for b in range(0, n, a.batch_size):
        e = min(n, b + a.batch_size)
        lo, hi = offsets[b], offsets[e]
        batches.append((torch.from_numpy(indices[lo:hi]),
                        torch.from_numpy(offsets[b:e] - lo),
                        torch.from_numpy(values[lo:hi]),
                        torch.from_numpy(labels[b:e])))
    start = time.perf_counter()
    for _ in range(a.epochs):
        for idx, off, val, y in batches:
            opt.zero_grad()
            logits = emb(idx, off, per_sample_weights=val).squeeze(1) + bias
            loss = loss_fn(logits, y)
            loss.backward()
            opt.step()
    seconds = time.perf_counter() - start
    test_ll = float("nan")
    if a.test:
        tl, to, ti, tv = load_libsvm(a.test, a.index_bits)
        with torch.no_grad():
            lg = emb(torch.from_numpy(ti), torch.from_numpy(to[:-1]),
                     per_sample_weights=torch.from_numpy(tv)).squeeze(1) + bias
            test_ll = torch.nn.functional.binary_cross_entropy_with_logits(
                lg, torch.from_numpy(tl)).item()
    print(f"test_logloss={test_ll:.4f}")
    print(f"torch_lr examples_per_s={n * a.epochs / seconds:.0f} "
          f"train_examples={n} epochs={a.epochs} "
          f"threads={a.threads} seconds={seconds:.2f} last_loss={loss.item():.4f}")


if __name__ == "__main__":
    main()
