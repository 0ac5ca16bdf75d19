#!/usr/bin/env python3
"""PyTorch baseline for Petrel's embedding + MLP trainer (issue 4).

The model of worker/mlp_model on Criteo-format TSV (`label, I1..I13,
C1..C26`, as petrel-datagen --format=criteo writes it), on the CPU:
  - 39 fields: integer column Ii is bucketed like worker/data/feature_hash.h
    CriteoIntegerBucket ("SP<v>" for v <= 2, else floor(ln(v)^2)), and
    categorical column Cj is its text; each (field, token) is hashed (crc32)
    into one embedding table of 2^index_bits rows, dim --embedding_dim;
  - per field an nn.EmbeddingBag(mode="sum", sparse=True) bag (a missing
    field is an empty bag, i.e. zeros), concatenated with the 13 numeric
    features log1p(max(v, 0)) (missing -> 0) into [n, 39*d + 13];
  - MLP --hidden (default 256,128) with ReLU, then one logit;
    BCEWithLogitsLoss (the batch's mean, as Petrel pushes it); Adagrad (or
    SparseAdam) on the embeddings and Adam on the MLP; batch --batch_size
    (1024), file order, --epochs passes;
  - with --wide (Wide & Deep, model.wide): plus an LR logit over the same
    rows (a dim-1 table and a bias, zeros at first) trained by FTRL-Proximal
    as kernels/optimizer_formulas.h writes it (--ftrl_alpha/beta/l1/l2);
  - --embedding_initial_accumulator (Adagrad's initial accumulator) and
    --embedding_weight_decay / --mlp_weight_decay (L2 added to the gradient
    of each updated row, as Petrel's optimizer weight_decay: for the sparse
    embeddings only on the rows the batch touches);
  - --dropout p: in training, each hidden layer's output (after its ReLU) is
    zeroed with probability p and the rest scaled by 1/(1-p) (inverted
    dropout, as Petrel's model.dropout); none when scoring;
  - --crosses (needs --wide; default none, the model above): crossed field
    pairs in the wide part only, as Petrel's model.crosses (crosses.embed
    off): for each pair (a, b) of fields 0..38 (0..12 the integer columns,
    13..38 the categorical ones, as worker/data/feature_hash.h and Petrel's log
    number them) present in an example, one more wide feature hashed from
    (a, b, row_a, row_b) into rows [2^index_bits, 2^(index_bits+1)) of the
    wide table (a range of their own), trained by the same FTRL; no
    embedding. The features and the pair parsing are cross_headroom.py's
    (batch_keys, pairs_from_flag). --crosses=A-B,... names the pairs;
    --crosses=auto selects them by held-out gain from the first
    --auto_sample_rows training rows, at most --auto_max_pairs
    (cross_headroom.select_pairs, the selection of worker/data/cross_selection.h
    in numpy; it prints the top pairs' gains on stderr).
    On docs/training.md's per-pair data s300 (300k train, 100k test), with
    --wide --embedding_initial_accumulator=1e-6 --embedding_lr=0.2
    --index_bits=24 --epochs=2 --threads=1 (OpenBLAS), test logloss:
    0.4590, 0.4590 without crosses (seeds 1, 2); 0.4531, 0.4532, 0.4530
    with the six pairs Petrel's selection picked there at z >= 2
    (13-14,15-18,16-25,1-20,30-35,4-36; seeds 1-3); 0.4538, 0.4537 with
    --crosses=auto (five of them, z 4.0-7.4: 30-35 has z 1.4; seeds 1, 2;
    measured at min_z 2, the same five at 3). Petrel's mlp.textproto:
    0.4527 with those six (-0.1% of 0.4531), 0.4536 with the five its
    default z >= 3 keeps.
Only the training loop is timed: the data is parsed and turned into tensors
first (Petrel's examples/s includes reading and parsing the text). The test
file, when given, is scored after training (not timed).

  /usr/bin/python3 tools/bench/baselines/torch_mlp.py --train=train.tsv \
      --test=test.tsv [--threads=1] [--epochs=1]

BLAS: Debian's python3-torch does its GEMMs through the libblas.so.3
alternative; with the reference BLAS (libblas3, the default) a 1024x637x256
GEMM runs at about 4 GFLOP/s and the MLP dominates (about 2,000 examples/s).
For a fair baseline use OpenBLAS, e.g. without installing it system-wide:
  apt-get download libopenblas0-pthread && dpkg-deb -x libopenblas0-*.deb ob
  LD_LIBRARY_PATH=$PWD/ob/usr/lib/x86_64-linux-gnu/openblas-pthread \
      OPENBLAS_NUM_THREADS=1 /usr/bin/python3 tools/bench/baselines/...
(about 60 GFLOP/s per core with AVX2, 140 with AVX-512; OPENBLAS_VERBOSE=2
prints the kernel set it picked). Say which BLAS gave a reported figure.

Prints one line: torch_mlp examples_per_s=N train_examples=N threads=T
test_logloss=L test_auc=A seconds=S epochs=E [crosses=A-B,...] (test_* are
nan without --test; crosses= only with --crosses, the pairs used).
examples_per_s counts every epoch's examples.
"""
import argparse
import math
import os
import sys
import time
import zlib

import numpy as np
import torch

INT_FIELDS = 13
CAT_FIELDS = 26
FIELDS = INT_FIELDS + CAT_FIELDS


def integer_token(v):
    """The bucket text of an integer value, as CriteoIntegerKey spells it."""
    if v <= 2:
        return "SP%d" % v
    l = math.log(v)
    return str(int(math.floor(l * l)))


class Hasher:
    """(field, token) -> row in [0, 2^bits), with a cache per field."""

    def __init__(self, bits):
        self.mask = (1 << bits) - 1
        self.cache = [dict() for _ in range(FIELDS)]

    def row(self, field, token):
        c = self.cache[field]
        r = c.get(token)
        if r is None:
            r = zlib.crc32(("%d:%s" % (field, token)).encode()) & self.mask
            c[token] = r
        return r


def load_criteo(path, hasher):
    """Returns labels [n], numeric [n, 13], rows [nnz] and per-(example,
    field) bag lengths [n, 39] (0 or 1)."""
    labels, numeric, rows, lengths = [], [], [], []
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            cols = line.split("\t")
            if len(cols) != 1 + FIELDS:
                raise ValueError("%s: line has %d fields" % (path, len(cols)))
            labels.append(1.0 if float(cols[0]) > 0 else 0.0)
            num = [0.0] * INT_FIELDS
            lens = [0] * FIELDS
            for i in range(INT_FIELDS):
                t = cols[1 + i]
                if t:
                    v = int(t)
                    num[i] = math.log1p(max(v, 0))
                    rows.append(hasher.row(i, integer_token(v)))
                    lens[i] = 1
            for j in range(CAT_FIELDS):
                t = cols[1 + INT_FIELDS + j]
                if t:
                    rows.append(hasher.row(INT_FIELDS + j, t))
                    lens[INT_FIELDS + j] = 1
            numeric.append(num)
            lengths.append(lens)
    return (np.array(labels, np.float32), np.array(numeric, np.float32),
            np.array(rows, np.int64), np.array(lengths, np.int64))


def make_batches(data, batch_size):
    """Tensors per batch: (rows, bag offsets [b*39], numeric, labels)."""
    labels, numeric, rows, lengths = data
    flat = lengths.reshape(-1)
    starts = np.concatenate([[0], np.cumsum(flat)])  # per bag
    batches = []
    n = len(labels)
    for b in range(0, n, batch_size):
        e = min(n, b + batch_size)
        lo, hi = starts[b * FIELDS], starts[e * FIELDS]
        batches.append((torch.from_numpy(rows[lo:hi]),
                        torch.from_numpy(starts[b * FIELDS:e * FIELDS] - lo),
                        torch.from_numpy(numeric[b:e]),
                        torch.from_numpy(labels[b:e])))
    return batches


def cross_bags(keys):
    """Per example one bag of its present cross keys ([b, P], -1 = absent):
    (flat keys, offsets [b])."""
    present = keys >= 0
    counts = present.sum(1)
    offsets = np.concatenate([[0], np.cumsum(counts)[:-1]])
    return (torch.from_numpy(keys[present].astype(np.int64)),
            torch.from_numpy(offsets.astype(np.int64)))


def add_cross_bags(batches, ids, pairs, bits, batch_size):
    """Appends each batch's cross bags (cross_headroom.batch_keys: the
    crosses in [2^bits, 2^(bits+1)), a table of their own)."""
    import cross_headroom  # imports this module: only when crosses are used
    out = []
    for i, batch in enumerate(batches):
        b = i * batch_size
        keys = cross_headroom.batch_keys(ids[b:b + len(batch[3])], pairs,
                                         bits)[:, FIELDS:]
        out.append(batch + cross_bags(keys))
    return out


class EmbeddingMlp(torch.nn.Module):

    def __init__(self, rows, dim, hidden, wide, dropout=0.0, wide_rows=0):
        super().__init__()
        self.dim = dim
        self.wide = None
        if wide:
            self.wide = torch.nn.EmbeddingBag(wide_rows or rows, 1,
                                              mode="sum", sparse=True)
            torch.nn.init.zeros_(self.wide.weight)
            self.wide_bias = torch.nn.Parameter(torch.zeros(1))
        self.emb = torch.nn.EmbeddingBag(rows, dim, mode="sum", sparse=True)
        torch.nn.init.normal_(self.emb.weight, std=0.01)
        layers, width = [], FIELDS * dim + INT_FIELDS
        for h in hidden:
            layers += [torch.nn.Linear(width, h), torch.nn.ReLU()]
            if dropout > 0:
                layers.append(torch.nn.Dropout(dropout))
            width = h
        layers.append(torch.nn.Linear(width, 1))
        self.mlp = torch.nn.Sequential(*layers)

    def forward(self, rows, offsets, numeric, crosses=None):
        """crosses: (keys, offsets), one bag per example, for the wide part
        only."""
        pooled = self.emb(rows, offsets).view(-1, FIELDS * self.dim)
        logit = self.mlp(torch.cat([pooled, numeric], dim=1)).squeeze(1)
        if self.wide is not None:
            logit = logit + self.wide(rows, offsets).view(-1, FIELDS).sum(1)
            if crosses is not None:
                logit = logit + self.wide(*crosses).squeeze(1)
            logit = logit + self.wide_bias
        return logit


class Ftrl:
    """FTRL-Proximal per coordinate on a (sparse or dense) parameter, as
    kernels/optimizer_formulas.h FtrlStep (weights start at 0)."""

    def __init__(self, param, alpha, beta, l1, l2):
        self.p, self.alpha, self.beta, self.l1, self.l2 = (param, alpha, beta,
                                                           l1, l2)
        self.z = torch.zeros(param.numel())
        self.n = torch.zeros(param.numel())

    @torch.no_grad()
    def step(self):
        g = self.p.grad
        w = self.p.data.view(-1)
        if g.is_sparse:
            g = g.coalesce()
            idx, gv = g.indices()[0], g.values().view(-1)
        else:
            idx, gv = torch.arange(w.numel()), g.view(-1)
        n_old = self.n[idx]
        n_new = n_old + gv * gv
        sigma = (n_new.sqrt() - n_old.sqrt()) / self.alpha
        z = self.z[idx] + gv - sigma * w[idx]
        self.z[idx] = z
        self.n[idx] = n_new
        w_new = -(z - torch.sign(z) * self.l1) / (
            (self.beta + n_new.sqrt()) / self.alpha + self.l2)
        w[idx] = torch.where(z.abs() <= self.l1, torch.zeros_like(z), w_new)
        self.p.grad = None


def add_sparse_weight_decay(param, wd):
    """grad += wd * w on the rows the (sparse) gradient touches."""
    if wd == 0 or param.grad is None:
        return
    g = param.grad.coalesce()
    idx = g.indices()[0]
    values = g.values() + wd * param.data[idx]
    param.grad = torch.sparse_coo_tensor(g.indices(), values, g.size())


def logloss_and_auc(labels, logits):
    p = 1 / (1 + np.exp(-logits.astype(np.float64)))
    p = np.clip(p, 1e-12, 1 - 1e-12)
    y = labels.astype(np.float64)
    logloss = float(-np.mean(y * np.log(p) + (1 - y) * np.log1p(-p)))
    # AUC from average ranks (ties share their mean rank).
    _, inverse, counts = np.unique(logits, return_inverse=True,
                                   return_counts=True)
    ends = np.cumsum(counts)
    ranks = (ends - (counts - 1) / 2.0)[inverse]
    pos = y.sum()
    neg = len(y) - pos
    if pos == 0 or neg == 0:
        return logloss, float("nan")
    auc = (ranks[y == 1].sum() - pos * (pos + 1) / 2) / (pos * neg)
    return logloss, float(auc)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--train", required=True)
    p.add_argument("--test", default="")
    p.add_argument("--batch_size", type=int, default=1024)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--index_bits", type=int, default=22)
    p.add_argument("--embedding_dim", type=int, default=16)
    p.add_argument("--hidden", default="256,128",
                   help="comma-separated hidden layer widths")
    p.add_argument("--embedding_optimizer", default="adagrad",
                   choices=["adagrad", "sparse_adam"])
    p.add_argument("--embedding_lr", type=float, default=0.05)
    p.add_argument("--mlp_lr", type=float, default=0.001)
    p.add_argument("--embedding_initial_accumulator", type=float, default=0)
    p.add_argument("--embedding_weight_decay", type=float, default=0)
    p.add_argument("--mlp_weight_decay", type=float, default=0)
    p.add_argument("--wide", action="store_true")
    p.add_argument("--dropout", type=float, default=0.0,
                   help="dropout after each hidden layer (training only)")
    p.add_argument("--ftrl_alpha", type=float, default=0.1)
    p.add_argument("--ftrl_beta", type=float, default=0.001)
    p.add_argument("--ftrl_l1", type=float, default=0)
    p.add_argument("--ftrl_l2", type=float, default=0.002)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--crosses", default="none",
                   help="none | auto | A-B,... crossed field pairs, fed to "
                   "the wide part only (needs --wide)")
    p.add_argument("--auto_max_pairs", type=int, default=16)
    p.add_argument("--auto_sample_rows", type=int, default=200000)
    a = p.parse_args()
    if a.crosses != "none" and not a.wide:
        p.error("--crosses feeds the wide part: it needs --wide")
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    hidden = [int(h) for h in a.hidden.split(",") if h]
    hasher = Hasher(a.index_bits)
    train_data = load_criteo(a.train, hasher)
    train = make_batches(train_data, a.batch_size)
    pairs = []
    if a.crosses != "none":
        sys.dont_write_bytecode = True  # no __pycache__ in the source tree
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import cross_headroom
        _, train_ids = cross_headroom.field_rows(train_data)
        if a.crosses == "auto":
            if not hasattr(cross_headroom, "select_pairs"):
                p.error("--crosses=auto needs the cross_headroom.py that has "
                        "select_pairs (its own --crosses=auto)")
            pairs = cross_headroom.select_pairs(train_data[0], train_ids,
                                                a.auto_sample_rows,
                                                a.auto_max_pairs)
        else:
            pairs = cross_headroom.pairs_from_flag(a.crosses)
        if any(not 0 <= x < y < FIELDS for x, y in pairs):
            p.error("--crosses: pairs A-B need 0 <= A < B < %d" % FIELDS)
        train = add_cross_bags(train, train_ids, pairs, a.index_bits,
                               a.batch_size)
    test = None
    if a.test:
        test_data = load_criteo(a.test, hasher)
        test_batches = make_batches(test_data, 8192)
        if pairs:
            test_batches = add_cross_bags(
                test_batches, cross_headroom.field_rows(test_data)[1], pairs,
                a.index_bits, 8192)
        test = (test_data[0], test_batches)
    n = sum(len(b[3]) for b in train)
    # The crosses hash into a table of their own after the fields' rows.
    model = EmbeddingMlp(1 << a.index_bits, a.embedding_dim, hidden, a.wide,
                         a.dropout, (2 << a.index_bits) if pairs else 0)
    wide_opts = []
    if a.wide:
        wide_opts = [
            Ftrl(q, a.ftrl_alpha, a.ftrl_beta, a.ftrl_l1, a.ftrl_l2)
            for q in (model.wide.weight, model.wide_bias)
        ]
    if a.embedding_optimizer == "adagrad":
        emb_opt = torch.optim.Adagrad(
            model.emb.parameters(), lr=a.embedding_lr, eps=1e-8,
            initial_accumulator_value=a.embedding_initial_accumulator)
    else:
        emb_opt = torch.optim.SparseAdam(list(model.emb.parameters()),
                                         lr=a.embedding_lr)
    mlp_opt = torch.optim.Adam(model.mlp.parameters(), lr=a.mlp_lr,
                               weight_decay=a.mlp_weight_decay)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    start = time.perf_counter()
    model.train()
    for _ in range(a.epochs):
        for rows, offsets, numeric, y, *crosses in train:
            emb_opt.zero_grad()
            mlp_opt.zero_grad()
            loss = loss_fn(model(rows, offsets, numeric, crosses or None), y)
            loss.backward()
            add_sparse_weight_decay(model.emb.weight, a.embedding_weight_decay)
            emb_opt.step()
            for o in wide_opts:
                o.step()
            mlp_opt.step()
    seconds = time.perf_counter() - start
    test_logloss = test_auc = float("nan")
    if test is not None:
        model.eval()
        with torch.no_grad():
            logits = np.concatenate(
                [model(r, o, x, c or None).numpy()
                 for r, o, x, _, *c in test[1]])
        test_logloss, test_auc = logloss_and_auc(test[0], logits)
    print(f"torch_mlp examples_per_s={n * a.epochs / seconds:.0f} "
          f"train_examples={n} threads={a.threads} "
          f"test_logloss={test_logloss:.5f} test_auc={test_auc:.5f} "
          f"seconds={seconds:.2f} epochs={a.epochs}"
          + (" crosses=" + ",".join(f"{x}-{y}" for x, y in pairs)
             if a.crosses != "none" else ""))


if __name__ == "__main__":
    main()
