"""KVClient: push and pull rows (float32, float64, int32 or int64 values)
to and from Petrel's servers."""

import atexit
import sys
import threading
import weakref

import numpy as np

from petrel import _petrel

_DEFAULT = object()  # "use the client's default timeout"

# Clients still open when the interpreter exits are closed first: at
# finalization a thread coming back from C++ could not take the GIL again.
_open_clients = weakref.WeakSet()


@atexit.register
def _close_open_clients():
    for client in list(_open_clients):
        client.close()


def _torch_tensor(x):
    """``x`` when it is a torch tensor, else None (torch is not imported
    here: a script that never imported it passes no tensors)."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        return x
    return None


def _as_numpy(x, what):
    t = _torch_tensor(x)
    if t is None:
        return np.asarray(x)
    if t.requires_grad:
        t = t.detach()
    if t.device.type != "cpu":
        t = t.cpu()  # a copy: device memory is not shared
    return t.numpy()


def _keys(keys):
    a = _as_numpy(keys, "keys").reshape(-1)
    if a.dtype == np.uint64:
        return np.ascontiguousarray(a)
    if a.dtype == np.int64:  # torch has no uint64: same bits, no copy
        return np.ascontiguousarray(a).view(np.uint64)
    if a.dtype.kind not in "iu" and a.size > 0:
        raise TypeError(f"keys must be integers, not {a.dtype}")
    return a.astype(np.uint64)


# The value types the servers store, each in rows of its own.
VALUE_TYPES = ("float32", "float64", "int32", "int64")


def _dtype_name(dtype):
    """The name in VALUE_TYPES of a NumPy or torch dtype (or its name)."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(dtype, torch.dtype):
        name = str(dtype).replace("torch.", "")
    else:
        try:
            name = np.dtype(dtype).name
        except TypeError:
            raise TypeError(f"dtype must be one of {', '.join(VALUE_TYPES)}, "
                            f"not {dtype!r}") from None
    if name not in VALUE_TYPES:
        raise ValueError(f"dtype must be one of {', '.join(VALUE_TYPES)}, "
                         f"not {name}")
    return name


def _values(values, dtype):
    """Values as the request's ``dtype`` (a VALUE_TYPES name): shared when
    they are of it already; floating values converted to a floating dtype
    (rounded, as NumPy does); anything else only when every value converts
    exactly, never silently rounded, truncated or wrapped."""
    a = _as_numpy(values, "values")
    target = np.dtype(dtype)
    if a.dtype == target:
        return np.ascontiguousarray(a)
    if a.dtype.kind not in "fiub":
        raise TypeError(f"values must be numbers ({dtype}), not {a.dtype}")
    with np.errstate(invalid="ignore", over="ignore"):
        converted = np.ascontiguousarray(a, dtype=target)
        if a.dtype.kind == "f" and target.kind == "f":
            return converted
        exact = (np.array_equal(converted.astype(a.dtype), a) and
                 np.array_equal(converted < 0, a < 0))
    if not exact:
        raise TypeError(
            f"these {a.dtype} values do not all convert exactly to {dtype}, "
            f"the request's dtype; pass dtype= for their type, or convert "
            f"them yourself if rounding is meant")
    return converted


def _lens(lens):
    if lens is None:
        return None
    return np.ascontiguousarray(_as_numpy(lens, "lens").reshape(-1),
                                dtype=np.int32)


def _out(out):
    """(what the C++ side writes into, what the caller gets back)."""
    if out is None:
        return None, None
    t = _torch_tensor(out)
    if t is not None:
        if t.device.type != "cpu":
            raise TypeError("out must be a CPU tensor")
        return t.detach().numpy(), out
    if not isinstance(out, np.ndarray):
        raise TypeError("out must be a NumPy array or CPU tensor, "
                        f"not {type(out).__name__}")
    return out, out


class Ticket:
    """One asynchronous request (from KVClient.push_async, pull_async or
    pushpull_async).

    ``wait(timeout)`` blocks until the request is over (the GIL is released
    meanwhile) and returns its result: None for a push, the values for a
    pull or push-pull (the ``out`` you passed, filled in, or a new array of
    shape (len(keys), width); a torch tensor when the keys were one). A
    failed request raises a petrel.PetrelError; DeadlineExceededError
    (also a TimeoutError) when it is not over within ``timeout`` seconds,
    in which case it is still outstanding and may be waited for again.
    ``done()`` says whether wait would return at once.
    """

    __slots__ = ("_t", "_client", "_out", "_torch")

    def __init__(self, t, client, out, torch_result):
        self._t = t
        self._client = client
        self._out = out
        self._torch = torch_result

    def wait(self, timeout=_DEFAULT):
        result = self._t.wait(self._client._seconds(timeout))
        if result is None:
            return None
        lens = None
        if isinstance(result, tuple):
            result, lens = result
        if self._out is not None:
            result = self._out
        elif self._torch:
            import torch
            result = torch.from_numpy(result)
            if lens is not None:
                lens = torch.from_numpy(lens)
        return result if lens is None else (result, lens)

    def done(self):
        """True once the request is over (wait returns at once)."""
        return self._t.done()

    @property
    def timestamp(self):
        """The request's timestamp in the C++ KVWorker (-1 if never sent)."""
        return self._t.timestamp

    @property
    def min_clock(self):
        """Pull with ``clock``: the smallest clock the servers reported."""
        return self._t.min_clock


class KVClient:
    """A worker node of a Petrel job, with a client for the servers' keys.

    Creating one joins the cluster exactly as petrel-worker does and
    blocks until every node has joined (at most ``join_timeout`` seconds).
    The scheduler's address and the job's counts come from the arguments,
    else from the environment petrel-launch sets (PETREL_SCHEDULER,
    PETREL_RANK, DMLC_PS_ROOT_URI/DMLC_PS_ROOT_PORT, DMLC_NUM_SERVER,
    DMLC_NUM_WORKER, DMLC_NODE_HOST, DMLC_INTERFACE, DMLC_PORT), else
    defaults (1 server, 1 worker). So a script run as
    ``petrel-launch --num_servers=2 --num_workers=2 -- python3 job.py``
    needs no arguments at all.

    Keys are uint64 (int64 arrays and tensors are taken bit for bit; other
    integer arrays are converted). Values are float32, float64, int32 or
    int64: ``dtype`` (the client's, else each request's ``dtype=``) says
    which, and the servers keep each type's rows apart (a key pushed as
    int64 and as float32 has two rows; nothing is ever reinterpreted).
    Values of another dtype are converted: floating to floating as NumPy
    rounds, anything else only when every value converts exactly (else
    TypeError, nothing sent). A pull's ``out`` must be of the dtype.
    Servers with job tables (--config) hold float32 only and answer other
    dtypes with FailedPreconditionError. A request's keys
    may come in any order and repeat; each key's values are contiguous and
    all keys have the same width, unless ``lens`` gives each key's count.
    C-contiguous NumPy arrays and torch CPU tensors of the dtype are shared
    with the C++ client, never copied; anything else is converted first.
    Do not modify an array while a request that uses it is in flight.

    Every blocking call takes ``timeout`` in seconds (default: the client's
    ``timeout``, 60 s; None waits forever) and raises
    petrel.DeadlineExceededError when it runs out. Errors are
    petrel.PetrelError subclasses carrying the C++ Status code and message.

    Blocking calls:   push, pull, pushpull, barrier, finish
    Asynchronous:     push_async, pull_async, pushpull_async -> Ticket,
                      each with an optional callback(ticket) that runs on
                      the client's callback thread once the request is over
    Leaving the job:  finish() (this worker is done; waits for the job's
                      end), close() (leave at once). ``with KVClient() as
                      kv:`` finishes on a normal exit and closes on an
                      exception.

    Table requests (servers run with --config=job.textproto): pass
    ``table`` (the table id) and, for bounded delay, ``clock``.

    Thread safety: requests may be issued and waited for from any thread.
    """

    def __init__(self, scheduler=None, *, num_servers=None, num_workers=None,
                 rank=None, bind=None, port=None, advertise_host=None,
                 interface=None, auth_token=None, join_timeout=None,
                 heartbeat_interval=None, metrics_port=None, timeout=60.0,
                 dtype="float32"):
        """Joins the job. ``scheduler``: "HOST:PORT"; ``rank``: the worker
        rank to ask for (None: join order decides); ``bind``/``port``: the
        address to listen on (default all interfaces, a free port);
        ``advertise_host``: the address other nodes reach this one at;
        ``join_timeout``/``heartbeat_interval`` in seconds;
        ``metrics_port``: serve /metrics there (0: a free port; default
        none); ``timeout``: the default deadline of blocking calls;
        ``dtype``: the default value type of requests (VALUE_TYPES)."""
        self.timeout = timeout
        self.dtype = _dtype_name(dtype)
        self._callbacks = {}
        self._callback_lock = threading.Lock()
        self._callback_thread = None
        self._closed = False
        self._c = _petrel.Client(scheduler, num_servers, num_workers, rank,
                                 bind, port, advertise_host, interface,
                                 auth_token, join_timeout, heartbeat_interval,
                                 metrics_port)
        self._c.start()
        _open_clients.add(self)

    # -- properties ---------------------------------------------------------
    @property
    def rank(self):
        """This worker's rank, 0 .. num_workers - 1."""
        return self._c.rank

    @property
    def node_id(self):
        """This node's id in the cluster."""
        return self._c.node_id

    @property
    def num_servers(self):
        return self._c.num_servers

    @property
    def num_workers(self):
        return self._c.num_workers

    # -- blocking requests --------------------------------------------------
    def push(self, keys, values, lens=None, *, table=0, cmd=0, dtype=None,
             timeout=_DEFAULT):
        """Sends ``values`` for ``keys``; the servers add them (or apply
        the table's optimizer). Returns once every server acknowledged."""
        self.push_async(keys, values, lens, table=table, cmd=cmd,
                        dtype=dtype).wait(timeout)

    def pull(self, keys, out=None, *, lens=False, table=0, cmd=0, clock=-1,
             dtype=None, timeout=_DEFAULT):
        """Fetches the values of ``keys``, in their order. Without ``out``
        returns a new array of the dtype, of shape (len(keys), width) (a
        tensor when ``keys`` is one); with ``out`` (an array or CPU tensor
        of the dtype and of exactly the answer's size) fills it in place
        and returns it. ``lens=True`` returns (values, per-key counts) for
        variable-length values."""
        return self.pull_async(keys, out, lens=lens, table=table, cmd=cmd,
                               clock=clock, dtype=dtype).wait(timeout)

    def pushpull(self, keys, values, out=None, *, table=0, cmd=0, clock=-1,
                 dtype=None, timeout=_DEFAULT):
        """Pushes ``values``, then pulls the updated values, in one round
        trip. Returns what pull returns."""
        return self.pushpull_async(keys, values, out, table=table, cmd=cmd,
                                   clock=clock, dtype=dtype).wait(timeout)

    # -- asynchronous requests ----------------------------------------------
    def push_async(self, keys, values, lens=None, *, table=0, cmd=0,
                   dtype=None, callback=None):
        """As push, without waiting: returns a Ticket."""
        d = self._dtype(dtype)
        k, v, n = _keys(keys), _values(values, d), _lens(lens)
        return self._issue(
            lambda notify: self._c.push(k, v, n, table, cmd, notify, d), None,
            False, callback)

    def pull_async(self, keys, out=None, *, lens=False, table=0, cmd=0,
                   clock=-1, dtype=None, callback=None):
        """As pull, without waiting: returns a Ticket. ``out`` must stay
        alive and untouched until the request is over."""
        d = self._dtype(dtype)
        o, given = _out(out)
        k = _keys(keys)
        return self._issue(
            lambda notify: self._c.pull(k, o, bool(lens), table, cmd, clock,
                                        notify, d), given,
            _torch_tensor(keys) is not None, callback)

    def pushpull_async(self, keys, values, out=None, *, table=0, cmd=0,
                       clock=-1, dtype=None, callback=None):
        """As pushpull, without waiting: returns a Ticket."""
        d = self._dtype(dtype)
        o, given = _out(out)
        k, v = _keys(keys), _values(values, d)
        return self._issue(
            lambda notify: self._c.pushpull(k, v, o, table, cmd, clock,
                                            notify, d), given,
            _torch_tensor(keys) is not None, callback)

    def wait(self, tickets, timeout=_DEFAULT):
        """Waits for every ticket in ``tickets``; returns their results."""
        return [t.wait(timeout) for t in tickets]

    # -- the job --------------------------------------------------------------
    def broadcast(self, value, root=0, timeout=_DEFAULT):
        """Sends ``value`` (str or bytes, small: set-up data such as an
        address) from worker ``root`` to every worker; returns it on every
        worker, the root included, as the type given. Every worker calls
        it, the same number of times in the same order."""
        is_str = isinstance(value, str)
        got = self._c.broadcast(value.encode() if is_str else bytes(value),
                                root, self._seconds(timeout))
        return got.decode() if is_str else got

    @property
    def advertise_host(self):
        """The address other nodes reach this one at."""
        return self._c.advertise_host

    def barrier(self, timeout=_DEFAULT):
        """Blocks until every worker of the job reached the barrier."""
        self._c.barrier(self._seconds(timeout))

    def finish(self, timeout=_DEFAULT):
        """Tells the scheduler this worker is done, waits until the job
        ends (every worker finished) and leaves. AbortedError when the job
        failed."""
        try:
            self._c.finish(self._seconds(timeout))
        finally:
            self._stop_callbacks()
            _open_clients.discard(self)

    def close(self):
        """Leaves the job at once, without finishing. Idempotent."""
        self._c.close()
        self._stop_callbacks()
        _open_clients.discard(self)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.finish()
        else:
            self.close()
        return False

    # -- internals ------------------------------------------------------------
    def _dtype(self, dtype):
        return self.dtype if dtype is None else _dtype_name(dtype)

    def _seconds(self, timeout):
        if timeout is _DEFAULT:
            timeout = self.timeout
        return -1.0 if timeout is None else float(timeout)

    def _issue(self, send, out, torch_result, callback):
        if callback is None:
            return Ticket(send(False), self, out, torch_result)
        # The lock keeps the callback thread from looking the request up
        # before it is registered (it may complete before send returns).
        with self._callback_lock:
            ticket = Ticket(send(True), self, out, torch_result)
            self._callbacks[ticket._t.id] = (ticket, callback)
            if self._callback_thread is None:
                self._callback_thread = threading.Thread(
                    target=self._run_callbacks, name="petrel-callbacks",
                    daemon=True)
                self._callback_thread.start()
        return ticket

    def _run_callbacks(self):
        while True:
            done = self._c.next_completed(0.2)
            if done is None:
                if self._closed:
                    return
                continue
            with self._callback_lock:
                ticket, callback = self._callbacks.pop(done)
            try:
                callback(ticket)
            except Exception:  # a callback's error must not end the thread
                sys.excepthook(*sys.exc_info())

    def _stop_callbacks(self):
        self._closed = True
        thread = self._callback_thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()
