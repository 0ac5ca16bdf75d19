#!/usr/bin/env python3
"""Python client vs C++ client (petrel-bench) on identical clusters.

Each round starts a fresh cluster (petrel-scheduler + --num_servers
petrel-server, 127.0.0.1, free ports) for petrel-bench's push and pull
workloads, then another for the same requests from petrel.KVClient:
--num_keys sequential keys x --dim floats per request, one request in
flight. Rounds alternate the two clients so a loaded machine slows both
alike; the summary gives the median ms per request and the Python/C++
ratio (goal: <= 1.2).

    PYTHONPATH=build/python /usr/bin/python3 python/bench/kv_bench.py
"""

import argparse
import re
import statistics
import subprocess
import time

import numpy as np

from petrel.testing import LocalCluster, default_bin_dir


def cpp_round(args):
    """{workload: seconds per request} from petrel-bench."""
    with LocalCluster(num_servers=args.num_servers,
                      bin_dir=args.bin_dir) as cluster:
        run = subprocess.run([
            f"{cluster.bin_dir}/petrel-bench", "--workload=push,pull",
            f"--num_keys={args.num_keys}", f"--dim={args.dim}",
            f"--iterations={args.iterations}",
            f"--scheduler={cluster.scheduler_address}", "--bind=127.0.0.1",
            "--advertise_host=127.0.0.1",
            f"--num_servers={args.num_servers}", "--num_workers=1"
        ], capture_output=True, text=True, timeout=300)
        if run.returncode != 0:
            raise RuntimeError(run.stdout + run.stderr)
    out = {}
    for m in re.finditer(r"workload=(\w+) .* requests=(\d+) seconds=([\d.]+)",
                         run.stdout):
        out[m.group(1)] = float(m.group(3)) / int(m.group(2))
    return out


def timed(n, fn):
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n


def python_round(args):
    keys = np.arange(args.num_keys, dtype=np.uint64)
    vals = np.ones((args.num_keys, args.dim), np.float32)
    out = np.empty_like(vals)
    with LocalCluster(num_servers=args.num_servers,
                      bin_dir=args.bin_dir) as cluster:
        with cluster.client() as kv:
            kv.push(keys, vals)  # warm-up: creates the rows, connects
            kv.pull(keys)
            result = {
                "push": timed(args.iterations, lambda: kv.push(keys, vals)),
                "pull": timed(args.iterations, lambda: kv.pull(keys)),
                "pull_into": timed(args.iterations,
                                   lambda: kv.pull(keys, out)),
            }
            expected = 1 + args.iterations
            got = kv.pull(keys)
            if not (got == expected).all():
                raise RuntimeError(f"pulled {got[0, 0]}, not {expected}")
    return result


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--num_keys", type=int, default=100000)
    p.add_argument("--dim", type=int, default=16)
    p.add_argument("--iterations", type=int, default=50)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--num_servers", type=int, default=1)
    p.add_argument("--bin_dir", default=default_bin_dir())
    args = p.parse_args()
    cpp, py = [], []
    for r in range(args.rounds):
        cpp.append(cpp_round(args))
        py.append(python_round(args))
        print(f"round {r}: C++ " +
              " ".join(f"{k}={v * 1e3:.2f}ms" for k, v in cpp[-1].items()) +
              " | Python " +
              " ".join(f"{k}={v * 1e3:.2f}ms" for k, v in py[-1].items()),
              flush=True)
    mb = args.num_keys * args.dim * 4 / 1e6
    print(f"{args.num_keys} keys x {args.dim} floats ({mb:.1f} MB) per "
          f"request, {args.num_servers} server(s), {args.iterations} "
          f"requests x {args.rounds} rounds; median ms per request:")
    for name, cpp_name in (("push", "push"), ("pull", "pull"),
                           ("pull_into", "pull")):
        c = statistics.median(x[cpp_name] for x in cpp)
        q = statistics.median(x[name] for x in py)
        print(f"  {name:10s} C++ {c * 1e3:7.2f}  Python {q * 1e3:7.2f}  "
              f"ratio {q / c:.2f}")


if __name__ == "__main__":
    main()
