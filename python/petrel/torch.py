"""PyTorch modules whose rows live in a Petrel sparse table.

    import petrel, petrel.torch
    kv = petrel.KVClient()
    bag = petrel.torch.EmbeddingBag(kv, table=1, dim=16, mode="sum")
    pooled = bag(ids, offsets)          # like torch.nn.EmbeddingBag
    loss(pooled).backward()             # pushes the rows' gradients

The servers hold the table (petrel-server --config=job.textproto with a
sparse TableProto of this id and dim); they create a row on first touch
with the table's initializer and apply pushed gradients with the table's
optimizer (SGD, Adagrad, Adam or FTRL), so the module has no parameters of
its own and no torch optimizer should step it.

forward deduplicates the batch's keys, pulls each distinct row once, and
pools with torch's embedding_bag on the pulled rows; autograd gives the
gradient of each distinct row (summed over its occurrences), which a hook
pushes to the table during backward. Keys are any int64/uint64 ids.

Dense parameters are replicated on the workers and averaged with
torch.distributed: init_process_group(client) sets the default process
group up from the Petrel cluster (no rendezvous code, no fixed port), then
allreduce_gradients(model.parameters()) after each backward, or
DistributedDataParallel on the dense part of the model.
"""

import datetime
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F


def init_process_group(client, backend=None, timeout=None):
    """Initializes torch.distributed's default group over the job's
    workers: world size num_workers, rank the worker's Petrel rank. Worker
    0 opens the rendezvous store on a free port of its advertised address
    and broadcasts that address to the others through Petrel. ``backend``:
    default "nccl" when CUDA is available, else "gloo". ``timeout``:
    seconds (default: the client's). Every worker must call it."""
    if backend is None:
        backend = "nccl" if torch.cuda.is_available() else "gloo"
    seconds = client.timeout if timeout is None else timeout
    delta = datetime.timedelta(seconds=seconds if seconds else 1800)
    world, rank = client.num_workers, client.rank
    store, address = None, ""
    if rank == 0:
        store = dist.TCPStore(client.advertise_host, 0, world, True,
                              timeout=delta, wait_for_workers=False)
        address = f"{client.advertise_host}:{store.port}"
    address = client.broadcast(address, root=0, timeout=timeout)
    if rank != 0:
        host, port = address.rsplit(":", 1)
        store = dist.TCPStore(host, int(port), world, False, timeout=delta)
    dist.init_process_group(backend, store=store, rank=rank,
                            world_size=world, timeout=delta)


def broadcast_parameters(parameters, src=0):
    """Copies worker ``src``'s values of ``parameters`` to every worker
    (call once after building the model, so all start equal)."""
    with torch.no_grad():
        for p in parameters:
            dist.broadcast(p.data, src)


def allreduce_gradients(parameters):
    """Averages the gradients of ``parameters`` over the workers (call
    between backward and the optimizer's step)."""
    world = dist.get_world_size()
    for p in parameters:
        if p.grad is not None:
            dist.all_reduce(p.grad)
            p.grad.div_(world)


class EmbeddingBag(torch.nn.Module):
    """torch.nn.EmbeddingBag over Petrel table ``table`` of width ``dim``.

    forward(input, offsets=None, per_sample_weights=None) takes what
    torch.nn.EmbeddingBag takes: a 2-D (bags, n) id tensor, or a 1-D one
    with ``offsets``. ``mode``: "sum" or "mean" ("sum" for
    per_sample_weights). ``timeout``: seconds for each pull and push
    (default: the client's).

    prefetch(input) starts the pull of a later batch now; the forward of
    that same input then uses it (its rows predate the pushes made in
    between, as in any asynchronous parameter server).

    ``timings`` holds what the module spent waiting for Petrel:
    ``pull_s`` (blocking pulls and waits for prefetched ones), ``push_s``
    (the pushes in backward, which wait for the servers' acknowledgement),
    and the counts ``pulls`` and ``pushes``; ``reset_timings()`` zeroes it.

    Thread safety: one module per training thread.
    """

    def __init__(self, client, table, dim, mode="sum", timeout=None):
        super().__init__()
        if mode not in ("sum", "mean"):
            raise ValueError(f"mode must be sum or mean, not {mode!r}")
        self.client = client
        self.table = table
        self.dim = dim
        self.mode = mode
        self.timeout = client.timeout if timeout is None else timeout
        self._prefetched = None  # (input, distinct keys, inverse, ticket)
        self.reset_timings()

    def reset_timings(self):
        """Zeroes ``timings``."""
        self.timings = {"pull_s": 0.0, "push_s": 0.0, "pulls": 0,
                        "pushes": 0}

    def _distinct(self, input):
        # Keys travel from host memory: a CUDA input's ids come to the CPU
        # (its rows go back to its device in _trainable_rows).
        ids = input.reshape(-1)
        if ids.device.type != "cpu":
            ids = ids.cpu()
        if ids.dtype != torch.int64:
            ids = ids.to(torch.int64)
        keys, inverse = torch.unique(ids, return_inverse=True)
        return keys, inverse.reshape(input.shape)

    def prefetch(self, input):
        """Starts pulling the rows of a later batch ``input``."""
        keys, inverse = self._distinct(input)
        ticket = self.client.pull_async(keys, table=self.table,
                                        dtype="float32")
        self._prefetched = (input, keys, inverse, ticket)

    def _rows(self, input):
        p = self._prefetched
        if p is not None and (p[0] is input or
                              (p[0].shape == input.shape and
                               torch.equal(p[0], input))):
            self._prefetched = None
            _, keys, inverse, ticket = p
            start = time.perf_counter()
            rows = ticket.wait(self.timeout)
        else:
            keys, inverse = self._distinct(input)
            start = time.perf_counter()
            rows = self.client.pull(keys, table=self.table, dtype="float32",
                                    timeout=self.timeout)
        self.timings["pull_s"] += time.perf_counter() - start
        self.timings["pulls"] += 1
        if rows.shape != (keys.numel(), self.dim):
            raise ValueError(f"table {self.table} answered rows of shape "
                             f"{tuple(rows.shape)}, not ({keys.numel()}, "
                             f"{self.dim}): is its dim {self.dim}?")
        return keys, inverse, rows

    def forward(self, input, offsets=None, per_sample_weights=None):
        inverse, rows = self._trainable_rows(input)
        return F.embedding_bag(inverse, rows, offsets, mode=self.mode,
                               per_sample_weights=per_sample_weights)

    def _trainable_rows(self, input):
        """(indices into the rows, the rows on input's device); backward
        pushes the rows' gradients."""
        keys, inverse, rows = self._rows(input)
        if torch.is_grad_enabled():
            rows.requires_grad_()
            rows.register_hook(self._push_hook(keys))
        if input.device.type != "cpu":
            rows = rows.to(input.device)
            inverse = inverse.to(input.device)
        return inverse, rows

    def _push_hook(self, keys):

        def push(grad):
            g = grad.detach()
            if g.device.type != "cpu":
                g = g.cpu()
            g = g.contiguous()
            start = time.perf_counter()
            self.client.push(keys, g, table=self.table, dtype="float32",
                             timeout=self.timeout)
            self.timings["push_s"] += time.perf_counter() - start
            self.timings["pushes"] += 1
            return grad

        return push

    def extra_repr(self):
        return f"table={self.table}, dim={self.dim}, mode={self.mode}"


class Embedding(EmbeddingBag):
    """torch.nn.Embedding over Petrel table ``table``: forward(ids) returns
    ids.shape + (dim,) rows; backward pushes their gradients."""

    def __init__(self, client, table, dim, timeout=None):
        super().__init__(client, table, dim, "sum", timeout)

    def forward(self, input):
        inverse, rows = self._trainable_rows(input)
        return F.embedding(inverse, rows)
