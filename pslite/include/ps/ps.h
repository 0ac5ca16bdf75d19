// PS-Lite compatibility (docs/pslite.md): the header PS-Lite programs
// include. Every role runs from one program, told its role by DMLC_ROLE:
//
//   #include "ps/ps.h"
//   int main() {
//     if (ps::IsServer()) { ... new ps::KVServer<float>(0) ... }
//     ps::Start(0);
//     if (ps::IsWorker()) { ps::KVWorker<float> kv(0, 0); ... }
//     ps::Finalize(0, true);
//   }
//
// Underneath are Petrel's own van, Postoffice, Customers and KVWorker /
// KVServer; only the names and signatures are PS-Lite's.
#ifndef PETREL_PSLITE_INCLUDE_PS_PS_H_
#define PETREL_PSLITE_INCLUDE_PS_PS_H_

#include <functional>

#include "ps/base.h"
#include "ps/internal/postoffice.h"
#include "ps/kv_app.h"
#include "ps/range.h"
#include "ps/sarray.h"
#include "ps/simple_app.h"

namespace ps {

inline int NumWorkers() { return Postoffice::Get()->num_workers(); }
inline int NumServers() { return Postoffice::Get()->num_servers(); }
inline bool IsWorker() { return Postoffice::Get()->is_worker(); }
inline bool IsServer() { return Postoffice::Get()->is_server(); }
inline bool IsScheduler() { return Postoffice::Get()->is_scheduler(); }
// This node's rank among the servers or workers.
inline int MyRank() { return Postoffice::Get()->my_rank(); }

// Joins the cluster and waits until every node did (see
// Postoffice::Start). The argv0 form is PS-Lite's older one.
inline void Start(int customer_id = 0, const char* argv0 = nullptr) {
  Postoffice::Get()->Start(customer_id, argv0, true);
}
inline void Start(const char* argv0) { Start(0, argv0); }
// Joins without waiting for the other nodes.
inline void StartAsync(int customer_id, const char* argv0 = nullptr) {
  Postoffice::Get()->Start(customer_id, argv0, false);
}
// Ends this customer's part; the last one stops the node once the job
// ended (see Postoffice::Finalize). The bool form is PS-Lite's older one.
inline void Finalize(int customer_id = 0, bool do_barrier = true) {
  Postoffice::Get()->Finalize(customer_id, do_barrier);
}
inline void Finalize(bool do_barrier) { Finalize(0, do_barrier); }
// Runs in Finalize, before the node stops.
inline void RegisterExitCallback(const std::function<void()>& cb) {
  Postoffice::Get()->RegisterExitCallback(cb);
}

}  // namespace ps

#endif  // PETREL_PSLITE_INCLUDE_PS_PS_H_
