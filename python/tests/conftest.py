"""Fixtures of the petrel pytest suite: a real cluster (petrel-scheduler
and petrel-server from the build tree, free ports) per test module.

Run from the repository root after building:
    PYTHONPATH=build/python /usr/bin/python3 -m pytest python/tests
PETREL_BIN_DIR overrides where the binaries are (default: the build tree
the imported petrel package sits in).
"""

import pytest

from petrel.testing import LocalCluster

# Every wait in the suite has a deadline well below pytest's patience.
TIMEOUT_S = 20.0


@pytest.fixture(scope="module")
def cluster():
    c = LocalCluster(num_servers=2, num_workers=1, timeout=TIMEOUT_S)
    c.start()
    yield c
    c.stop()


@pytest.fixture(scope="module")
def kv(cluster):
    client = cluster.client(timeout=TIMEOUT_S)
    yield client
    # A clean end: this worker finishes and the whole job exits with 0.
    client.finish()
    codes = cluster.wait(TIMEOUT_S)
    assert all(code == 0 for code in codes.values()), cluster.output()


class KeySpace:
    """Hands out fresh key ranges so tests sharing a cluster never touch
    each other's keys (the store sums pushes)."""

    def __init__(self):
        self.next = 1

    def take(self, n, stride=7919):
        import numpy as np
        keys = (np.arange(n, dtype=np.uint64) + np.uint64(self.next)) * \
            np.uint64(stride)
        self.next += n
        return keys


@pytest.fixture(scope="module")
def keyspace():
    return KeySpace()
