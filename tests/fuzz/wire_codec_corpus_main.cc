// wire-codec-corpus: writes the seed corpus of wire_codec_fuzzer, a handful
// of small valid and invalid encoded messages in the fuzzer's input layout
// (tests/fuzz/fuzz_input.h), one file per seed, into the directory given.
//
//   build-fuzz/bin/wire-codec-corpus tests/fuzz/corpus/wire_codec
//
// Exit codes: 0 written, 1 a file could not be written, 2 bad arguments.
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "kv/kv_codec.h"
#include "tests/fuzz/fuzz_input.h"
#include "van/wire_codec.h"

namespace petrel {
namespace {

struct Seed {
  std::string name;
  std::string bytes;
};

template <typename T>
std::string Bytes(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()),
                     v.size() * sizeof(T));
}

std::string Header(const pb::Meta& meta) {
  Buffer h = EncodeHeader(meta);
  return std::string(h.data(), h.size());
}

// A kv push from server 0 to worker 0 (what worker contexts accept).
pb::Meta KvMeta(int num_frames) {
  pb::Meta meta;
  meta.set_sender(ServerRankToId(0));
  meta.set_recipient(WorkerRankToId(0));
  meta.set_app_id(0);
  meta.set_timestamp(3);
  meta.set_request(true);
  meta.set_push(true);
  meta.set_kv(true);
  meta.set_seq(1);
  const pb::DataType types[] = {pb::DATA_TYPE_UINT64, pb::DATA_TYPE_FLOAT,
                                pb::DATA_TYPE_INT32};
  for (int i = 0; i < num_frames; ++i) meta.add_data_types(types[i]);
  return meta;
}

const std::string kKeys = Bytes(std::vector<uint64_t>{1, 5, 9});
const std::string kVals = Bytes(std::vector<float>{1, 2, 3, 4, 5, 6});

std::string Raw(const pb::Meta& meta, std::vector<std::string> data,
                bool misalign = false) {
  data.insert(data.begin(), Header(meta));
  return EncodeFuzzInput(data, /*add_prefix=*/false, misalign);
}

// Frame 0 is the meta alone; the fuzzer adds a valid prefix.
std::string Prefixed(const pb::Meta& meta, std::vector<std::string> data) {
  data.insert(data.begin(), meta.SerializeAsString());
  return EncodeFuzzInput(data, /*add_prefix=*/true, false);
}

void AddControlSeeds(std::vector<Seed>* seeds) {
  pb::Meta join;
  join.set_recipient(kSchedulerId);
  join.set_request(true);
  join.mutable_control()->set_cmd(pb::COMMAND_ADD_NODE);
  pb::Node* node = join.mutable_control()->add_nodes();
  node->set_role(pb::ROLE_SERVER);
  node->set_host("127.0.0.1");
  node->set_port(40001);
  node->set_requested_rank(-1);
  node->set_transport_id("p0123456789abcdef");
  seeds->push_back({"valid_join_request", Raw(join, {})});

  pb::Meta table;
  table.set_sender(kSchedulerId);
  table.mutable_control()->set_cmd(pb::COMMAND_ADD_NODE);
  *table.mutable_control()->add_nodes() = *node;
  table.mutable_control()->add_ranges(0);
  table.mutable_control()->add_range_owners(0);
  seeds->push_back({"valid_node_table", Prefixed(table, {})});

  pb::Meta barrier;
  barrier.set_sender(kSchedulerId);
  barrier.set_recipient(ServerRankToId(0));
  barrier.mutable_control()->set_cmd(pb::COMMAND_BARRIER);
  barrier.mutable_control()->set_barrier_group(kWorkerGroup);
  barrier.mutable_control()->set_barrier_epoch(1);
  seeds->push_back({"valid_barrier_release", Raw(barrier, {})});

  pb::Meta bad_cmd = barrier;
  bad_cmd.mutable_control()->set_cmd(static_cast<pb::Command>(77));
  seeds->push_back({"invalid_unknown_command", Raw(bad_cmd, {})});

  pb::Meta owners = table;
  owners.mutable_control()->add_ranges(5);
  seeds->push_back({"invalid_ranges_without_owners", Raw(owners, {})});
}

void AddKvSeeds(std::vector<Seed>* seeds) {
  std::string lens = Bytes(std::vector<int32_t>{1, 2, 3});
  seeds->push_back({"valid_kv_push", Raw(KvMeta(2), {kKeys, kVals})});
  seeds->push_back(
      {"valid_kv_push_lens", Raw(KvMeta(3), {kKeys, kVals, lens})});
  seeds->push_back(
      {"valid_kv_push_misaligned", Raw(KvMeta(2), {kKeys, kVals}, true)});
  seeds->push_back({"valid_kv_pull_prefixed", Prefixed(KvMeta(1), {kKeys})});

  pb::Meta ack = KvMeta(0);
  ack.set_kv(false);
  ack.set_request(false);
  seeds->push_back({"valid_push_response", Raw(ack, {})});
  pb::Meta error = ack;  // a server's error: a typed status, no frames
  error.set_status_code(5);
  error.set_status_message("no table 3");
  seeds->push_back({"valid_kv_error_response", Raw(error, {})});
  error.set_status_code(99);  // passes the van; the worker reads Internal
  seeds->push_back({"valid_kv_unknown_status_code", Raw(error, {})});

  // A pull answer: values[, lens], no keys (since wire version 4).
  pb::Meta answer = ack;
  answer.set_kv(true);
  answer.set_pull(true);
  answer.set_push(false);
  answer.add_data_types(pb::DATA_TYPE_FLOAT);
  seeds->push_back({"valid_kv_pull_answer", Raw(answer, {kVals})});
  pb::Meta answer_lens = answer;
  answer_lens.add_data_types(pb::DATA_TYPE_INT32);
  seeds->push_back(
      {"valid_kv_pull_answer_lens", Raw(answer_lens, {kVals, lens})});
  seeds->push_back(
      {"invalid_kv_pull_answer_lens_sum",
       Raw(answer_lens, {kVals, Bytes(std::vector<int32_t>{1, 1, 1})})});
  pb::Meta keys_back = answer;  // the version 3 layout: keys, values
  keys_back.set_data_types(0, pb::DATA_TYPE_UINT64);
  keys_back.add_data_types(pb::DATA_TYPE_FLOAT);
  seeds->push_back(
      {"invalid_kv_pull_answer_with_keys", Raw(keys_back, {kKeys, kVals})});

  pb::Meta body = ack;
  body.set_body("hello");
  body.add_data_types(pb::DATA_TYPE_BYTES);
  seeds->push_back({"valid_simple_app_bytes", Raw(body, {"abc"})});

  seeds->push_back({"invalid_frame_count", Raw(KvMeta(3), {kKeys, kVals})});
  seeds->push_back(
      {"invalid_frame_not_multiple", Raw(KvMeta(2), {kKeys, kVals + "x"})});
  pb::Meta unknown = KvMeta(2);
  unknown.set_data_types(1, static_cast<pb::DataType>(99));
  seeds->push_back({"invalid_unknown_type", Raw(unknown, {kKeys, kVals})});
  seeds->push_back(
      {"invalid_negative_lens",
       Raw(KvMeta(3), {kKeys, kVals, Bytes(std::vector<int32_t>{4, -1, 3})})});
  seeds->push_back(
      {"invalid_lens_sum",
       Raw(KvMeta(3), {kKeys, kVals, Bytes(std::vector<int32_t>{1, 1, 1})})});
  seeds->push_back({"invalid_vals_not_divisible",
                    Raw(KvMeta(2), {kKeys, kVals.substr(0, 20)})});
  pb::Meta spoofed = KvMeta(2);
  spoofed.set_sender(ServerRankToId(3));
  seeds->push_back({"invalid_spoofed_sender", Raw(spoofed, {kKeys, kVals})});
  pb::Meta negative = KvMeta(2);
  negative.set_timestamp(-1);
  seeds->push_back(
      {"invalid_negative_timestamp", Raw(negative, {kKeys, kVals})});
  std::vector<std::string> many(17, "");
  pb::Meta wide = ack;
  for (int i = 0; i < 17; ++i) wide.add_data_types(pb::DATA_TYPE_BYTES);
  seeds->push_back({"invalid_too_many_frames", Raw(wide, many)});
}

void AddPrefixSeeds(std::vector<Seed>* seeds) {
  std::string good = Header(KvMeta(2));
  std::string bad_magic = good;
  bad_magic[0] ^= 0x01;
  seeds->push_back({"invalid_bad_magic",
                    EncodeFuzzInput({bad_magic, kKeys, kVals}, false, false)});
  std::string version = good;
  version[4] = 9;
  seeds->push_back({"invalid_version",
                    EncodeFuzzInput({version, kKeys, kVals}, false, false)});
  seeds->push_back(
      {"invalid_meta_length",
       EncodeFuzzInput({good.substr(0, good.size() - 1), kKeys, kVals}, false,
                       false)});
  seeds->push_back({"invalid_short_prefix",
                    EncodeFuzzInput({good.substr(0, 5)}, false, false)});
  seeds->push_back({"invalid_meta_garbage",
                    EncodeFuzzInput({"\xff\xff\xff\x0f\x08"}, true, false)});
  seeds->push_back({"invalid_empty", ""});

  // A string field with bad UTF-8: protobuf refuses it, and used to log an
  // ERROR for every such message (now silenced in the decoder).
  pb::Meta reject;
  reject.set_sender(kSchedulerId);
  reject.mutable_control()->set_cmd(pb::COMMAND_REJECT);
  reject.mutable_control()->set_reason("AB");
  std::string meta = reject.SerializeAsString();
  meta.replace(meta.find("AB"), 2, "\xff\xfe");
  seeds->push_back({"invalid_meta_bad_utf8",
                    EncodeFuzzInput({meta}, /*add_prefix=*/true, false)});
}

// One line per seed: what a worker that knows server 0, a scheduler, a node
// without an id and a server that knows the scheduler make of it, so a seed
// meant to be valid visibly is.
void PrintVerdict(const Seed& seed) {
  DecodeContext worker;
  worker.my_id = WorkerRankToId(0);
  worker.expected_sender = ServerRankToId(0);
  DecodeContext scheduler;
  scheduler.my_id = kSchedulerId;
  scheduler.is_scheduler = true;
  scheduler.connection = "p0123456789abcdef";  // the joining node's
  DecodeContext joining;
  joining.my_transport_id = "p0123456789abcdef";
  DecodeContext server;
  server.my_id = ServerRankToId(0);
  server.expected_sender = kSchedulerId;
  std::string line = seed.name;
  for (const DecodeContext* c : {&worker, &scheduler, &joining, &server}) {
    FuzzInput in = ParseFuzzInput(
        reinterpret_cast<const uint8_t*>(seed.bytes.data()), seed.bytes.size());
    absl::StatusOr<Message> msg = DecodeMessage(in.header, in.frames, *c);
    absl::Status s = msg.status();
    if (msg.ok() && msg->meta.kv()) {  // what the KV layer then checks
      s = CheckKvLayout(msg->meta, msg->data, c->limits.max_message_bytes);
    }
    line += s.ok() ? " | ok" : " | " + std::string(s.message());
  }
  std::printf("%s\n", line.c_str());
}

}  // namespace
}  // namespace petrel

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT_DIR\n", argv[0]);
    return 2;
  }
  std::vector<petrel::Seed> seeds;
  petrel::AddControlSeeds(&seeds);
  petrel::AddKvSeeds(&seeds);
  petrel::AddPrefixSeeds(&seeds);
  for (const petrel::Seed& seed : seeds) {
    std::string path = std::string(argv[1]) + "/" + seed.name;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << seed.bytes;
    if (!out) {
      std::fprintf(stderr, "cannot write %s\n", path.c_str());
      return 1;
    }
    petrel::PrintVerdict(seed);
  }
  std::printf("wrote %zu seeds to %s\n", seeds.size(), argv[1]);
  return 0;
}
