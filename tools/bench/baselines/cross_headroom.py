#!/usr/bin/env python3
"""What pairwise crosses are worth: LR (FTRL) with hashed field-pair crosses.

Estimates the headroom a model could gain over LR on Criteo-format data
(petrel-datagen --format=criteo --interactions) by learning pairwise
interactions. The features are torch_mlp.py's (39 fields hashed by crc32 of
"field:token"); --crosses adds, for each chosen pair of fields (a, b) both
present in an example, one more feature: a hash of (a, b, row_a, row_b).
  --crosses=none    plain LR (compare with lr.textproto);
  --crosses=all     every one of the 741 field pairs (a general option that
                    knows nothing of the data);
  --crosses=A-B,... the named pairs only, e.g. the generator's six true
                    pairs 13-14,15-18,16-25,1-20,30-35,4-36 (an oracle that
                    knows which pairs interact, not their weights);
  --crosses=auto    the pairs that the selection by held-out gain picks from
                    the first --auto_sample_rows training rows, as Petrel's
                    model.crosses.auto_max_pairs does (worker/data/cross_selection.h:
                    base LR by backfitting Newton steps on a hash-split half,
                    each pair scored by the other half's logloss drop from
                    one shrunk Newton step per cross value; kept when the
                    relative drop >= 3e-4 and its z-score >= 2).
--cross_admit_after=N gives a cross a weight only once it has been seen in
N examples (as a table's admission filter, docs/training.md): before that
its weight stays 0 and its gradients are counted, not applied.
--cross_ftrl_alpha sets the crosses' own FTRL alpha.
A table of 2^index_bits weights for the fields and one for the crosses,
trained by FTRL-Proximal as
kernels/optimizer_formulas.h writes it (weight decay included), on the
batch's mean gradient, batch --batch_size in file order, --epochs passes.

  /usr/bin/python3 tools/bench/baselines/cross_headroom.py --train=T --test=E \
      --crosses=all|auto

Prints one line: cross_headroom crosses=C features_per_example=F
test_logloss=L test_auc=A seconds=S epochs=E.
"""
import argparse
import itertools
import os
import sys
import time

import numpy as np
import torch

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_mlp  # noqa: E402  (the loader, hasher and metrics)

FIELDS = torch_mlp.FIELDS


def field_rows(data):
    """[n, 39] hashed row per field, -1 where the field is missing."""
    labels, _, rows, lengths = data
    out = np.full(lengths.shape, -1, np.int64)
    out[lengths == 1] = rows
    return labels, out


def pairs_from_flag(text):
    if text == "none":
        return []
    if text == "all":
        return list(itertools.combinations(range(FIELDS), 2))
    pairs = []
    for item in text.split(","):
        a, b = (int(x) for x in item.split("-"))
        pairs.append((a, b))
    return pairs


def select_pairs(labels, ids, rows, max_pairs, l2=10.0, min_gain=3e-4,
                 min_z=3.0, sweeps=3, bits=18):
    """The selection of worker/data/cross_selection.h on the first `rows` rows
    (ids [n, 39], -1 = missing); returns [(a, b)] best first and prints
    each pair's relative gain and z-score."""
    y = labels[:rows].astype(np.float64)
    ids = ids[:rows]
    n = len(y)
    if n < 10000:
        return []
    mask = np.uint64((1 << bits) - 1)
    with np.errstate(over="ignore"):
        h = np.arange(n, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
        h ^= h >> np.uint64(29)
    fit = (h & np.uint64(1)) == 0
    ev = ~fit
    table = 1 << bits

    def ll(z, t):
        return np.logaddexp(0, z) - t * z

    p0 = y[fit].mean()
    m = np.full(n, np.log(p0 / (1 - p0)))
    w = np.zeros((FIELDS, table))
    buckets = (ids.astype(np.uint64) & mask).astype(np.int64)
    for _ in range(sweeps):
        for f in range(FIELDS):
            pres = ids[:, f] >= 0
            k = buckets[:, f]
            p = 1 / (1 + np.exp(-m))
            sel = fit & pres
            g = np.bincount(k[sel], weights=(y - p)[sel], minlength=table)
            hh = np.bincount(k[sel], weights=(p * (1 - p))[sel],
                             minlength=table)
            d = (g - l2 * w[f]) / (hh + l2)
            w[f] += d
            m = m + np.where(pres, d[k], 0)
    base_rows = ll(m[ev], y[ev])
    base = base_rows.mean()
    p = 1 / (1 + np.exp(-m))
    r, c = y - p, p * (1 - p)
    scored = []
    for a, b in itertools.combinations(range(FIELDS), 2):
        pres = (ids[:, a] >= 0) & (ids[:, b] >= 0)
        with np.errstate(over="ignore"):
            kk = (ids[:, a].astype(np.uint64) * np.uint64(0xBF58476D1CE4E5B9)
                  ^ ids[:, b].astype(np.uint64)
                  ^ np.uint64(((a * 256 + b + 1) * 0x94D049BB133111EB)
                              % (1 << 64)))
            kk ^= kk >> np.uint64(31)
            kk *= np.uint64(0x9E3779B97F4A7C15)
            kk ^= kk >> np.uint64(29)
        k = (kk & mask).astype(np.int64)
        sel = fit & pres
        g = np.bincount(k[sel], weights=r[sel], minlength=table)
        hh = np.bincount(k[sel], weights=c[sel], minlength=table)
        d = np.where(pres, g[k] / (hh[k] + l2), 0)[ev]
        drop = base_rows - ll(m[ev] + d, y[ev])
        mean = drop.mean()
        se = drop.std() / np.sqrt(len(drop))
        scored.append((mean / base, mean / se if se > 0 else 0.0, a, b))
    scored.sort(key=lambda t: -t[0])
    chosen = [(a, b) for g, z, a, b in scored
              if g >= min_gain and z >= min_z][:max_pairs]
    print("auto crosses: " + ", ".join(
        f"{a}-{b} ({g * 100:.4f}%, z {z:.2f})" for g, z, a, b in scored[:10]),
        file=sys.stderr)
    return chosen


def batch_keys(ids, pairs, bits):
    """Keys [b, 39 + len(pairs)] (-1 = absent): the fields in [0, 2^bits),
    then the crosses in [2^bits, 2^(bits+1)) (a table of their own)."""
    mask = np.uint64((1 << bits) - 1)
    cols = [ids]
    with np.errstate(over="ignore"):
        for p, (a, b) in enumerate(pairs):
            ra, rb = ids[:, a], ids[:, b]
            h = (ra.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
                 ^ (rb.astype(np.uint64) + np.uint64(p + 1) *
                    np.uint64(0x632BE59BD9B4E019)))
            h = (h ^ (h >> np.uint64(31))) * np.uint64(0xBF58476D1CE4E5B9)
            h = ((h ^ (h >> np.uint64(29))) & mask) + (mask + np.uint64(1))
            cols.append(np.where((ra >= 0) & (rb >= 0), h.astype(np.int64),
                                 -1)[:, None])
    return np.concatenate(cols, axis=1)


class Ftrl:
    """FTRL-Proximal on a dense vector of weights, updated at given rows."""

    def __init__(self, size, a, cross_start):
        self.w = torch.zeros(size)
        self.z = torch.zeros(size)
        self.n = torch.zeros(size)
        self.a = a
        self.cross_start = cross_start

    def step(self, idx, g):
        a = self.a
        alpha = torch.where(idx >= self.cross_start,
                            torch.tensor(a.cross_ftrl_alpha or a.ftrl_alpha),
                            torch.tensor(a.ftrl_alpha))
        w = self.w[idx]
        g = g + a.ftrl_weight_decay * w
        n_old = self.n[idx]
        n_new = n_old + g * g
        sigma = (n_new.sqrt() - n_old.sqrt()) / alpha
        z = self.z[idx] + g - sigma * w
        self.z[idx] = z
        self.n[idx] = n_new
        w_new = -(z - torch.sign(z) * a.ftrl_l1) / (
            (a.ftrl_beta + n_new.sqrt()) / alpha + a.ftrl_l2)
        self.w[idx] = torch.where(z.abs() <= a.ftrl_l1, torch.zeros_like(z),
                                  w_new)


def logits(ftrl, bias, keys):
    k = torch.from_numpy(keys)
    present = k >= 0
    w = ftrl.w[k.clamp(min=0)] * present
    return w.sum(1) + bias.w[0], k, present


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--train", required=True)
    p.add_argument("--test", required=True)
    p.add_argument("--crosses", default="all")
    p.add_argument("--batch_size", type=int, default=2048)
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--index_bits", type=int, default=24)
    p.add_argument("--ftrl_alpha", type=float, default=0.1)
    p.add_argument("--ftrl_beta", type=float, default=0.001)
    p.add_argument("--ftrl_l1", type=float, default=0)
    p.add_argument("--ftrl_l2", type=float, default=0.002)
    p.add_argument("--ftrl_weight_decay", type=float, default=5e-5)
    p.add_argument("--cross_admit_after", type=int, default=0)
    p.add_argument("--cross_ftrl_alpha", type=float, default=0,
                   help="the crosses' FTRL alpha; 0: --ftrl_alpha")
    p.add_argument("--auto_max_pairs", type=int, default=16)
    p.add_argument("--auto_sample_rows", type=int, default=200000)
    a = p.parse_args()
    torch.set_num_threads(1)
    hasher = torch_mlp.Hasher(a.index_bits)
    y_train, ids_train = field_rows(torch_mlp.load_criteo(a.train, hasher))
    if a.crosses == "auto":
        pairs = select_pairs(y_train, ids_train, a.auto_sample_rows,
                             a.auto_max_pairs)
        a.crosses = "auto:" + ",".join(f"{x}-{y}" for x, y in pairs)
    else:
        pairs = pairs_from_flag(a.crosses)
    y_test, ids_test = field_rows(torch_mlp.load_criteo(a.test, hasher))
    ftrl = Ftrl(2 << a.index_bits, a, 1 << a.index_bits)
    bias = Ftrl(1, a, 1)
    # Sightings per key (field keys are always admitted).
    seen = torch.zeros(2 << a.index_bits, dtype=torch.int32)
    start = time.perf_counter()
    n = len(y_train)
    for _ in range(a.epochs):
        for b in range(0, n, a.batch_size):
            e = min(n, b + a.batch_size)
            z, k, present = logits(ftrl, bias,
                                   batch_keys(ids_train[b:e], pairs,
                                              a.index_bits))
            y = torch.from_numpy(y_train[b:e])
            d = (torch.sigmoid(z) - y) / (e - b)  # the mean loss's gradient
            keep = present
            if a.cross_admit_after > 0 and pairs:
                crosses = k[:, FIELDS:][present[:, FIELDS:]]
                seen.index_add_(0, crosses,
                                torch.ones(len(crosses), dtype=torch.int32))
                admitted = seen[k.clamp(min=0)] >= a.cross_admit_after
                admitted[:, :FIELDS] = True
                keep = present & admitted
            keys = k[keep]
            grads = d[:, None].expand_as(k)[keep]
            uniq, inverse = torch.unique(keys, return_inverse=True)
            g = torch.zeros(len(uniq)).index_add_(0, inverse, grads)
            ftrl.step(uniq, g)
            bias.step(torch.zeros(1, dtype=torch.long), d.sum().view(1))
    seconds = time.perf_counter() - start
    out = []
    with torch.no_grad():
        for b in range(0, len(y_test), 8192):
            z, _, _ = logits(ftrl, bias,
                             batch_keys(ids_test[b:b + 8192], pairs,
                                        a.index_bits))
            out.append(z.numpy())
    loss, auc = torch_mlp.logloss_and_auc(y_test, np.concatenate(out))
    print(f"cross_headroom crosses={a.crosses if len(a.crosses) < 80 else 'list'}"
          f" cross_admit_after={a.cross_admit_after}"
          f" cross_ftrl_alpha={a.cross_ftrl_alpha}"
          f" features_per_example={FIELDS + len(pairs)}"
          f" test_logloss={loss:.5f} test_auc={auc:.5f}"
          f" seconds={seconds:.1f} epochs={a.epochs}")


if __name__ == "__main__":
    main()
