"""Petrel from Python: a worker node of a Petrel parameter-server job.

    import numpy as np
    import petrel

    with petrel.KVClient() as kv:          # joins like petrel-worker
        keys = np.arange(100, dtype=np.uint64)
        kv.push(keys, np.ones((100, 16), np.float32))
        rows = kv.pull(keys)                # (100, 16) float32
        kv.push(keys, counts, dtype="int64")  # or float64, int32: own rows

Run it under the launcher, which starts the scheduler and the servers and
gives the script the cluster's address in its environment:

    petrel-launch --num_servers=2 --num_workers=2 -- python3 job.py

See help(petrel.KVClient) and docs/python.md.
"""

from petrel.errors import (AbortedError, DeadlineExceededError,
                           FailedPreconditionError, InvalidArgumentError,
                           NotFoundError, PetrelError, ResourceExhaustedError,
                           UnavailableError)
from petrel.kv_client import VALUE_TYPES, KVClient, Ticket

__all__ = [
    "KVClient", "Ticket", "VALUE_TYPES", "PetrelError", "DeadlineExceededError",
    "InvalidArgumentError", "UnavailableError", "FailedPreconditionError",
    "AbortedError", "NotFoundError", "ResourceExhaustedError"
]
