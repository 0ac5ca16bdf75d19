// petrel._petrel: the pybind11 extension under the `petrel` package. It
// exposes KVClient (python/kv_client.h) with NumPy-compatible arrays shared
// without copying (python/py_arrays.h). The package's Python code
// (python/petrel/) adds defaults, torch tensors and the documentation
// users read; this layer is deliberately thin.
//
// Errors: a failed absl::Status becomes a petrel.errors exception chosen by
// its code (petrel.errors.from_status). This file is the boundary where
// Petrel's Status-returning C++ meets Python's exceptions; nothing below it
// throws.
//
// The GIL is released while joining, issuing, waiting and closing, so other
// Python threads run meanwhile; no Petrel thread ever takes the GIL.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"

#include "python/client_settings.h"
#include "python/kv_client.h"
#include "python/py_arrays.h"

namespace py = pybind11;

namespace petrel {
namespace {

struct StatusError : std::exception {
  explicit StatusError(absl::Status s) : status(std::move(s)) {}
  const char* what() const noexcept override { return "petrel status"; }
  absl::Status status;
};

void ThrowIfError(const absl::Status& s) {
  if (!s.ok()) throw StatusError(s);
}

// Seconds as Python passes them; negative or infinite: no deadline.
absl::Duration ToDuration(double seconds) {
  if (seconds < 0 || std::isinf(seconds)) return absl::InfiniteDuration();
  return absl::Seconds(seconds);
}

std::optional<absl::Duration> ToOptionalDuration(std::optional<double> s) {
  if (!s.has_value()) return std::nullopt;
  return ToDuration(*s);
}

constexpr absl::Duration kSignalCheckInterval = absl::Milliseconds(100);

struct PyClient {
  explicit PyClient(const NodeSettings& settings)
      : client(std::make_unique<KVClient>(settings)) {}
  ~PyClient() {
    client.reset();
    queue->Drain();
  }
  std::shared_ptr<ReleaseQueue> queue = std::make_shared<ReleaseQueue>();
  std::unique_ptr<KVClient> client;
};

class PyTicket {
 public:
  PyTicket(std::shared_ptr<PyClient> client, std::shared_ptr<KVTicket> ticket,
           py::object out, size_t num_keys, bool want_lens)
      : client_(std::move(client)),
        ticket_(std::move(ticket)),
        out_(std::move(out)),
        num_keys_(num_keys),
        want_lens_(want_lens) {}
  PyTicket(PyTicket&&) = default;
  ~PyTicket() {
    ticket_.reset();
    if (client_ != nullptr) client_->queue->Drain();  // null once moved
  }

  // Waits in slices so that Ctrl-C (a pending Python signal) interrupts a
  // long wait; the request stays outstanding then.
  py::object Wait(double timeout_s) {
    const absl::Duration timeout = ToDuration(timeout_s);
    const absl::Time deadline = absl::Now() + timeout;
    absl::Status s;
    while (true) {
      const absl::Duration slice =
          std::min(kSignalCheckInterval, deadline - absl::Now());
      {
        py::gil_scoped_release release;
        s = client_->client->Wait(*ticket_,
                                  std::max(slice, absl::ZeroDuration()));
      }
      client_->queue->Drain();
      if (s.code() != absl::StatusCode::kDeadlineExceeded) break;
      if (client_->client->Done(*ticket_)) {
        // It ended (or the client closed) after the slice ran out: its
        // final status, at once.
        py::gil_scoped_release release;
        s = client_->client->Wait(*ticket_, absl::ZeroDuration());
        break;
      }
      if (absl::Now() >= deadline) break;
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    }
    if (s.code() == absl::StatusCode::kDeadlineExceeded &&
        !client_->client->Done(*ticket_)) {
      s = absl::DeadlineExceededError(
          absl::StrCat("not over after ", absl::FormatDuration(timeout), " (",
                       s.message(), ")"));
    }
    ThrowIfError(s);
    return Result();
  }
  bool Done() { return client_->client->Done(*ticket_); }
  int timestamp() const { return ticket_->timestamp(); }
  int64_t min_clock() const { return ticket_->min_clock; }
  uintptr_t id() const { return reinterpret_cast<uintptr_t>(ticket_.get()); }

 private:
  py::object Result() {
    if (!ticket_->is_pull) return py::none();
    switch (ticket_->value_type) {
      case ValueType::kFloat64:
        return ResultOf<double>();
      case ValueType::kInt32:
        return ResultOf<int32_t>();
      case ValueType::kInt64:
        return ResultOf<int64_t>();
      case ValueType::kFloat32:
        break;
    }
    return ResultOf<float>();
  }

  template <typename Val>
  py::object ResultOf() {
    const auto& ticket = static_cast<const TypedKVTicket<Val>&>(*ticket_);
    const SArray<Val>& vals = ticket.out;
    py::object result;
    if (!out_.is_none()) {
      if (ticket.out_replaced()) {
        throw StatusError(absl::InvalidArgumentError(
            absl::StrCat("out has ", py::len(out_.attr("reshape")(-1)),
                         " elements but the servers answered ", vals.size(),
                         " values; out was left unchanged")));
      }
      result = out_;
    } else if (!want_lens_ && num_keys_ > 0 && vals.size() % num_keys_ == 0) {
      result =
          ToNumpy(vals, {static_cast<py::ssize_t>(num_keys_),
                         static_cast<py::ssize_t>(vals.size() / num_keys_)});
    } else {
      result = ToNumpy(vals, {static_cast<py::ssize_t>(vals.size())});
    }
    if (!want_lens_) return result;
    return py::make_tuple(
        result, ToNumpy(ticket_->lens,
                        {static_cast<py::ssize_t>(ticket_->lens.size())}));
  }

  std::shared_ptr<PyClient> client_;
  std::shared_ptr<KVTicket> ticket_;
  py::object out_;
  size_t num_keys_;
  bool want_lens_;
};

std::shared_ptr<PyClient> MakeClient(
    std::optional<std::string> scheduler, std::optional<int> num_servers,
    std::optional<int> num_workers, std::optional<int> rank,
    std::optional<std::string> bind, std::optional<int> port,
    std::optional<std::string> advertise_host,
    std::optional<std::string> interface_name,
    std::optional<std::string> auth_token, std::optional<double> join_timeout,
    std::optional<double> heartbeat_interval, std::optional<int> metrics_port) {
  ClientArgs args;
  args.scheduler = std::move(scheduler);
  args.num_servers = num_servers;
  args.num_workers = num_workers;
  args.rank = rank;
  args.bind = std::move(bind);
  args.port = port;
  args.advertise_host = std::move(advertise_host);
  args.interface_name = std::move(interface_name);
  args.auth_token = std::move(auth_token);
  args.join_timeout = ToOptionalDuration(join_timeout);
  args.heartbeat_interval = ToOptionalDuration(heartbeat_interval);
  args.metrics_port = metrics_port;
  absl::StatusOr<NodeSettings> settings = WorkerSettings(args, &std::getenv);
  ThrowIfError(settings.status());
  return std::make_shared<PyClient>(*settings);
}

KVRequestOptions Options(int table_id, int cmd, int64_t clock) {
  KVRequestOptions options;
  options.table_id = table_id;
  options.cmd = cmd;
  options.clock = clock;
  return options;
}

SArray<Key> Keys(PyClient& c, py::handle keys) {
  return ShareArray<Key>(keys, ElementKind::kUint64, false, "keys", c.queue);
}

template <typename Val>
constexpr ElementKind KindOf();
template <>
constexpr ElementKind KindOf<float>() {
  return ElementKind::kFloat32;
}
template <>
constexpr ElementKind KindOf<double>() {
  return ElementKind::kFloat64;
}
template <>
constexpr ElementKind KindOf<int32_t>() {
  return ElementKind::kInt32;
}
template <>
constexpr ElementKind KindOf<int64_t>() {
  return ElementKind::kInt64;
}

template <typename Val>
SArray<Val> Values(PyClient& c, py::handle vals, const char* what,
                   bool writable) {
  if (vals.is_none()) return SArray<Val>();
  return ShareArray<Val>(vals, KindOf<Val>(), writable, what, c.queue);
}

template <typename Val>
PyTicket PushAs(const std::shared_ptr<PyClient>& c, py::handle keys,
                py::handle vals, py::handle lens, int table_id, int cmd,
                bool notify) {
  SArray<Key> k = Keys(*c, keys);
  SArray<Val> v = Values<Val>(*c, vals, "values", false);
  SArray<int> l;
  if (!lens.is_none())
    l = ShareArray<int>(lens, ElementKind::kInt32, false, "lens", c->queue);
  std::shared_ptr<KVTicket> t;
  {
    py::gil_scoped_release release;
    t = c->client->Push<Val>(k, v, l, Options(table_id, cmd, -1), notify);
  }
  return PyTicket(c, std::move(t), py::none(), k.size(), false);
}

template <typename Val>
PyTicket PullAs(const std::shared_ptr<PyClient>& c, py::handle keys,
                py::object out, bool want_lens, int table_id, int cmd,
                int64_t clock, bool notify) {
  SArray<Key> k = Keys(*c, keys);
  SArray<Val> o = Values<Val>(*c, out, "out", true);
  std::shared_ptr<KVTicket> t;
  {
    py::gil_scoped_release release;
    t = c->client->Pull<Val>(k, std::move(o), want_lens,
                             Options(table_id, cmd, clock), notify);
  }
  return PyTicket(c, std::move(t), std::move(out), k.size(), want_lens);
}

template <typename Val>
PyTicket PushPullAs(const std::shared_ptr<PyClient>& c, py::handle keys,
                    py::handle vals, py::object out, int table_id, int cmd,
                    int64_t clock, bool notify) {
  SArray<Key> k = Keys(*c, keys);
  SArray<Val> v = Values<Val>(*c, vals, "values", false);
  SArray<Val> o = Values<Val>(*c, out, "out", true);
  std::shared_ptr<KVTicket> t;
  {
    py::gil_scoped_release release;
    t = c->client->PushPull<Val>(k, v, std::move(o),
                                 Options(table_id, cmd, clock), notify);
  }
  return PyTicket(c, std::move(t), std::move(out), k.size(), false);
}

// Calls f(Val{}) for the value type named `dtype` (numpy's names).
template <typename F>
PyTicket ForValueType(const std::string& dtype, F&& f) {
  if (dtype == "float32") return f(float{});
  if (dtype == "float64") return f(double{});
  if (dtype == "int32") return f(int32_t{});
  if (dtype == "int64") return f(int64_t{});
  throw py::value_error(absl::StrCat(
      "dtype must be float32, float64, int32 or int64, not ", dtype));
}

PyTicket Push(const std::shared_ptr<PyClient>& c, py::handle keys,
              py::handle vals, py::handle lens, int table_id, int cmd,
              bool notify, const std::string& dtype) {
  c->queue->Drain();
  return ForValueType(dtype, [&](auto v) {
    return PushAs<decltype(v)>(c, keys, vals, lens, table_id, cmd, notify);
  });
}

PyTicket Pull(const std::shared_ptr<PyClient>& c, py::handle keys,
              py::object out, bool want_lens, int table_id, int cmd,
              int64_t clock, bool notify, const std::string& dtype) {
  c->queue->Drain();
  return ForValueType(dtype, [&](auto v) {
    return PullAs<decltype(v)>(c, keys, std::move(out), want_lens, table_id,
                               cmd, clock, notify);
  });
}

PyTicket PushPull(const std::shared_ptr<PyClient>& c, py::handle keys,
                  py::handle vals, py::object out, int table_id, int cmd,
                  int64_t clock, bool notify, const std::string& dtype) {
  c->queue->Drain();
  return ForValueType(dtype, [&](auto v) {
    return PushPullAs<decltype(v)>(c, keys, vals, std::move(out), table_id, cmd,
                                   clock, notify);
  });
}

void TranslateStatusError(std::exception_ptr p) {
  try {
    if (p) std::rethrow_exception(p);
  } catch (const StatusError& e) {
    py::object exc =
        py::module_::import("petrel.errors")
            .attr("from_status")(static_cast<int>(e.status.code()),
                                 absl::StatusCodeToString(e.status.code()),
                                 std::string(e.status.message()));
    PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())), exc.ptr());
  }
}

using ClientClass = py::class_<PyClient, std::shared_ptr<PyClient>>;

// The request calls of petrel.KVClient (push, pull, push-pull, completions,
// broadcast).
void BindRequests(ClientClass& client) {
  client
      .def("push", &Push, py::arg("keys"), py::arg("values"), py::arg("lens"),
           py::arg("table_id"), py::arg("cmd"), py::arg("notify"),
           py::arg("dtype") = "float32")
      .def("pull", &Pull, py::arg("keys"), py::arg("out"), py::arg("want_lens"),
           py::arg("table_id"), py::arg("cmd"), py::arg("clock"),
           py::arg("notify"), py::arg("dtype") = "float32")
      .def("pushpull", &PushPull, py::arg("keys"), py::arg("values"),
           py::arg("out"), py::arg("table_id"), py::arg("cmd"),
           py::arg("clock"), py::arg("notify"), py::arg("dtype") = "float32")
      .def("next_completed",
           [](PyClient& c, double timeout_s) -> std::optional<uintptr_t> {
             std::shared_ptr<KVTicket> t;
             {
               py::gil_scoped_release release;
               t = c.client->NextCompleted(ToDuration(timeout_s));
             }
             if (t == nullptr) return std::nullopt;
             return reinterpret_cast<uintptr_t>(t.get());
           })
      .def("broadcast", [](PyClient& c, const std::string& value, int root,
                           double timeout_s) {
        absl::StatusOr<std::string> got;
        {
          py::gil_scoped_release release;
          got = c.client->Broadcast(value, root, ToDuration(timeout_s));
        }
        ThrowIfError(got.status());
        return py::bytes(*got);
      });
}

// Barriers, the end, and what the node knows of itself.
void BindLifecycle(ClientClass& client) {
  client
      .def_property_readonly(
          "advertise_host",
          [](PyClient& c) { return c.client->postoffice()->advertise_host(); })
      .def("barrier",
           [](PyClient& c, double timeout_s) {
             absl::Status s;
             {
               py::gil_scoped_release release;
               s = c.client->Barrier(ToDuration(timeout_s));
             }
             ThrowIfError(s);
           })
      .def("finish",
           [](PyClient& c, double timeout_s) {
             absl::Status s;
             {
               py::gil_scoped_release release;
               s = c.client->Finish(ToDuration(timeout_s));
             }
             c.queue->Drain();
             ThrowIfError(s);
           })
      .def("close",
           [](PyClient& c) {
             {
               py::gil_scoped_release release;
               c.client->Close();
             }
             c.queue->Drain();
           })
      .def_property_readonly(
          "rank", [](PyClient& c) { return c.client->postoffice()->my_rank(); })
      .def_property_readonly(
          "node_id",
          [](PyClient& c) { return c.client->postoffice()->my_id(); })
      .def_property_readonly(
          "num_servers",
          [](PyClient& c) { return c.client->postoffice()->num_servers(); })
      .def_property_readonly(
          "num_workers",
          [](PyClient& c) { return c.client->postoffice()->num_workers(); })
      .def_property_readonly("started",
                             [](PyClient& c) { return c.client->started(); });
}

}  // namespace
}  // namespace petrel

PYBIND11_MODULE(_petrel, m) {
  using namespace petrel;  // NOLINT: the module's body names them all
  m.doc() = "Petrel's C++ client, wrapped; use the petrel package instead.";
  py::register_exception_translator(&TranslateStatusError);

  py::class_<PyTicket>(m, "Ticket",
                       "One asynchronous request; see petrel.Ticket.")
      .def("wait", &PyTicket::Wait, py::arg("timeout_s"))
      .def("done", &PyTicket::Done)
      .def_property_readonly("timestamp", &PyTicket::timestamp)
      .def_property_readonly("min_clock", &PyTicket::min_clock)
      .def_property_readonly("id", &PyTicket::id);

  ClientClass client(m, "Client",
                     "A worker node and its KV client; see petrel.KVClient.");
  client
      .def(py::init(&MakeClient), py::arg("scheduler"), py::arg("num_servers"),
           py::arg("num_workers"), py::arg("rank"), py::arg("bind"),
           py::arg("port"), py::arg("advertise_host"), py::arg("interface"),
           py::arg("auth_token"), py::arg("join_timeout"),
           py::arg("heartbeat_interval"), py::arg("metrics_port"))
      .def("start", [](PyClient& c) {
        absl::Status s;
        {
          py::gil_scoped_release release;
          s = c.client->Start();
        }
        ThrowIfError(s);
      });
  BindRequests(client);
  BindLifecycle(client);
}
