#!/usr/bin/env python3
"""Wide & Deep on Criteo-format files with Petrel and PyTorch.

The 26 categorical fields' embeddings (table 1, dim 16) and linear weights
(table 0) live on the Petrel servers, which apply the pushed gradients with
the tables' optimizer (wide_deep.textproto); the MLP over the embeddings
and the 13 numeric features lives on each worker and is averaged with
torch.distributed (gloo), set up from the Petrel cluster. Each worker reads
every num_workers-th training line; worker 0 evaluates the test file after
each epoch and prints a final line like petrel-worker's. --local runs the
same model in one process with local tables (torch.nn.EmbeddingBag for
the wide part, torch.nn.Embedding for the deep one), for comparison.
--profile adds a line of where a training step's time went.

    petrel-datagen --format=criteo --interactions --train_out=train.tsv \\
        --test_out=test.tsv --train_examples=100000 --test_examples=20000
    PYTHONPATH=build/python petrel-launch \\
        --config=examples/python/wide_deep.textproto \\
        --num_servers=2 --num_workers=2 -- \\
        python3 examples/python/wide_deep.py --train=train.tsv --test=test.tsv
"""

import argparse
import math
import time

import numpy as np
import torch

import petrel
import petrel.torch as pt

NUM_INTS, NUM_CATS, DIM = 13, 26, 16


def read_criteo(path, rank=0, num_workers=1):
    """(labels (N,), numeric (N, 13) float32, keys (N, 26) int64) of every
    num_workers-th line from ``rank``. A categorical value's key is its
    field in the top bits and its hex value below; empty is value 0."""
    labels, ints, keys = [], [], []
    with open(path) as f:
        for i, line in enumerate(f):
            if i % num_workers != rank:
                continue
            cols = line.rstrip("\n").split("\t")
            labels.append(float(cols[0]))
            ints.append([float(c) if c else 0.0 for c in cols[1:1 + NUM_INTS]])
            keys.append([((field + 1) << 40) | (int(c, 16) if c else 0)
                         for field, c in enumerate(cols[1 + NUM_INTS:])])
    numeric = np.log1p(np.maximum(np.array(ints, np.float32), 0))
    return (torch.tensor(labels), torch.from_numpy(numeric),
            torch.tensor(keys, dtype=torch.int64))


class WideDeep(torch.nn.Module):
    """``wide``: an EmbeddingBag of dim 1 summing the fields' weights;
    ``deep``: an Embedding of dim DIM. Petrel's (keys in), or with --local
    torch.nn's (indices in)."""

    def __init__(self, wide, deep, hidden=(256, 128)):
        super().__init__()
        self.wide = wide
        self.deep = deep
        layers, width = [], NUM_CATS * DIM + NUM_INTS
        for h in hidden:
            layers += [torch.nn.Linear(width, h), torch.nn.ReLU()]
            width = h
        self.mlp = torch.nn.Sequential(*layers, torch.nn.Linear(width, 1))

    def prefetch(self, keys):
        if isinstance(self.wide, pt.EmbeddingBag):
            self.wide.prefetch(keys)
            self.deep.prefetch(keys)

    def forward(self, numeric, keys):
        emb = self.deep(keys).reshape(len(keys), -1)
        wide = self.wide(keys)  # (N, 1): the sum over the fields
        return (self.mlp(torch.cat([emb, numeric], dim=1)) + wide).squeeze(1)


def auc(labels, scores):
    """Area under the ROC curve (ties get their average rank)."""
    order = np.argsort(scores, kind="mergesort")
    ranks = np.empty(len(scores))
    sorted_scores = scores[order]
    i = 0
    while i < len(scores):
        j = i
        while j + 1 < len(scores) and sorted_scores[j + 1] == sorted_scores[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2 + 1
        i = j + 1
    pos = labels == 1
    n_pos, n_neg = pos.sum(), (~pos).sum()
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    return (ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


def evaluate(model, data, batch_size):
    labels, numeric, keys = data
    scores = []
    with torch.no_grad():
        for b in range(0, len(labels), batch_size):
            scores.append(model(numeric[b:b + batch_size],
                                keys[b:b + batch_size]))
    logits = torch.cat(scores)
    loss = torch.nn.functional.binary_cross_entropy_with_logits(
        logits, labels).item()
    return loss, auc(labels.numpy(), torch.sigmoid(logits).numpy())


class LocalTables:
    """--local: the same tables in this process, for comparison: a row
    per distinct key of the data in a torch.nn.EmbeddingBag (wide) and a
    torch.nn.Embedding (deep), initialized and trained (Adagrad, sparse
    gradients) as wide_deep.textproto says."""

    def __init__(self, train_keys, test_keys):
        self.vocab = torch.unique(torch.cat([train_keys.reshape(-1),
                                             test_keys.reshape(-1)]))
        self.wide = torch.nn.EmbeddingBag(len(self.vocab), 1, mode="sum",
                                          sparse=True)
        self.deep = torch.nn.Embedding(len(self.vocab), DIM, sparse=True)
        torch.nn.init.zeros_(self.wide.weight)
        torch.nn.init.normal_(self.deep.weight, std=0.01)
        self.opt = torch.optim.Adagrad(
            [self.wide.weight, self.deep.weight], lr=0.05, eps=1e-8)

    def index(self, keys):
        return torch.searchsorted(self.vocab, keys)


class StepProfile:
    """--profile: the seconds of the training steps and of their parts:
    Petrel's pulls and pushes (the modules' timings) and ``step_hook``
    (the all-reduce, or the local tables' optimizer)."""

    def __init__(self, modules):
        self.modules = [m for m in modules if isinstance(m, pt.EmbeddingBag)]
        self.steps, self.step_s, self.hook_s = 0, 0.0, 0.0
        for m in self.modules:
            m.reset_timings()

    def line(self, hook_name):
        ms = 1e3 / max(self.steps, 1)
        pull = sum(m.timings["pull_s"] for m in self.modules)
        push = sum(m.timings["push_s"] for m in self.modules)
        rest = self.step_s - pull - push - self.hook_s
        return (f"profile steps={self.steps} step_ms={self.step_s * ms:.2f} "
                f"pull_ms={pull * ms:.2f} push_ms={push * ms:.2f} "
                f"{hook_name}_ms={self.hook_s * ms:.2f} "
                f"compute_ms={rest * ms:.2f}")


def train_and_evaluate(args, model, train, test, rank, workers, step_hook,
                       profile):
    """Trains for args.epochs (worker 0 evaluating after each); returns
    (train examples, training seconds (evaluation excluded), train
    logloss, test logloss, test AUC)."""
    opt = torch.optim.Adam(model.mlp.parameters(), lr=args.lr)
    labels, numeric, keys = train
    # Every worker takes the same number of steps (all-reduce).
    steps = math.ceil(len(labels) / args.batch_size)
    if workers > 1:
        n = torch.tensor([steps])
        torch.distributed.all_reduce(n, torch.distributed.ReduceOp.MIN)
        steps = int(n)
    seconds, examples = 0.0, 0
    train_loss = test_loss = test_auc = float("nan")
    for epoch in range(args.epochs):
        start = time.perf_counter()
        model.prefetch(keys[:args.batch_size])
        epoch_loss = 0.0
        for s in range(steps):
            b = slice(s * args.batch_size, (s + 1) * args.batch_size)
            if s + 1 < steps:
                model.prefetch(keys[(s + 1) * args.batch_size:(s + 2) *
                                    args.batch_size])
            loss = torch.nn.functional.binary_cross_entropy_with_logits(
                model(numeric[b], keys[b]), labels[b])
            opt.zero_grad()
            loss.backward()  # Petrel: pushes the rows' gradients
            hook_start = time.perf_counter()
            step_hook()
            profile.hook_s += time.perf_counter() - hook_start
            opt.step()
            epoch_loss += loss.item()
            examples += len(labels[b])
        seconds += time.perf_counter() - start
        profile.steps += steps
        profile.step_s = seconds
        train_loss = epoch_loss / max(steps, 1)
        if rank == 0:
            test_loss, test_auc = evaluate(model, test, 4096)
            print(f"epoch {epoch + 1} train_logloss={train_loss:.5f} "
                  f"test_logloss={test_loss:.5f} test_auc={test_auc:.5f}",
                  flush=True)
    return examples, seconds, train_loss, test_loss, test_auc


def report(examples, seconds, train_loss, test_loss, test_auc, test, workers):
    print(f"final test_logloss={test_loss:.4f} test_auc={test_auc:.4f} "
          f"examples_per_s={examples * workers / seconds:.0f} "
          f"train_examples={examples * workers} test_examples={len(test[0])} "
          f"train_logloss={train_loss:.4f}", flush=True)


def run_local(args):
    train, test = read_criteo(args.train), read_criteo(args.test)
    tables = LocalTables(train[2], test[2])
    train = (train[0], train[1], tables.index(train[2]))
    test = (test[0], test[1], tables.index(test[2]))
    model = WideDeep(tables.wide, tables.deep)

    def step():
        tables.opt.step()
        tables.opt.zero_grad()

    profile = StepProfile([])
    report(*train_and_evaluate(args, model, train, test, 0, 1, step,
                               profile), test, 1)
    if args.profile:
        print(profile.line("tables"), flush=True)


def run_petrel(args):
    with petrel.KVClient(timeout=args.timeout) as kv:
        rank, workers = kv.rank, kv.num_workers
        if workers > 1:
            pt.init_process_group(kv, backend="gloo")
        train = read_criteo(args.train, rank, workers)
        test = read_criteo(args.test) if rank == 0 else None
        model = WideDeep(pt.EmbeddingBag(kv, table=0, dim=1, mode="sum"),
                         pt.Embedding(kv, table=1, dim=DIM))
        if workers > 1:
            pt.broadcast_parameters(model.mlp.parameters())

        def step():
            if workers > 1:
                pt.allreduce_gradients(model.mlp.parameters())

        profile = StepProfile([model.wide, model.deep])
        result = train_and_evaluate(args, model, train, test, rank, workers,
                                    step, profile)
        if rank == 0:
            report(*result, test, workers)
        if args.profile:
            print(profile.line("allreduce"), flush=True)
        if workers > 1:
            torch.distributed.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--train", required=True)
    p.add_argument("--test", required=True)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch_size", type=int, default=256)
    p.add_argument("--lr", type=float, default=1e-3, help="MLP's Adam")
    p.add_argument("--timeout", type=float, default=60)
    p.add_argument("--local", action="store_true",
                   help="no Petrel: the same model in this process, with "
                   "local embedding tables (for comparison)")
    p.add_argument("--profile", action="store_true",
                   help="print the mean time per training step and its "
                   "parts (Petrel's pulls and pushes, the all-reduce)")
    args = p.parse_args()
    torch.manual_seed(0)
    if args.local:
        run_local(args)
    else:
        run_petrel(args)


if __name__ == "__main__":
    main()
