#include "tools/predict/predictor.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include <stdlib.h>
#include <sys/stat.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "base/config_file.h"
#include "checkpoint/checkpoint_dir.h"
#include "kernels/dedup.h"
#include "server/table_server.h"
#include "tests/harness/local_cluster.h"
#include "tools/predict/model_dir.h"
#include "worker/data/data_options.h"
#include "worker/model/model.h"
#include "worker/model/model_rows.h"
#include "worker/train/evaluator.h"
#include "worker/train/trainer.h"

namespace petrel {
namespace {

using ::testing::HasSubstr;

constexpr absl::Duration kTimeout = absl::Seconds(30);

std::string TempDir() {
  std::string pattern = ::testing::TempDir() + "predictor_test.XXXXXX";
  EXPECT_NE(::mkdtemp(pattern.data()), nullptr);
  return pattern;
}

// libsvm lines; keys 1..max_key, labels from a fixed hidden model.
void WriteLibsvm(const std::string& path, int examples, int max_key,
                 uint32_t seed) {
  std::mt19937 rng(seed);
  std::ofstream out(path);
  for (int i = 0; i < examples; ++i) {
    std::string features;
    double score = -0.3;
    for (int j = 0; j < 6; ++j) {
      const int key = 1 + static_cast<int>(rng() % max_key);
      const double value = 0.1 + (rng() % 90) / 100.0;
      score += (key % 3 == 0 ? 1.0 : -0.5) * value;
      absl::StrAppendFormat(&features, " %d:%.2f", key, value);
    }
    out << (score + (rng() % 100) / 100.0 - 0.5 > 0 ? 1 : 0) << features
        << "\n";
  }
}

// Criteo lines: 13 integer and 26 categorical columns, some empty;
// categorical values from a vocabulary of `vocab` per column.
void WriteCriteo(const std::string& path, int examples, int vocab,
                 uint32_t seed) {
  std::mt19937 rng(seed);
  std::ofstream out(path);
  for (int i = 0; i < examples; ++i) {
    int positive_votes = 0;
    std::string line;
    for (int c = 0; c < 13; ++c) {
      line += "\t";
      if (rng() % 5 == 0) continue;
      const int v = static_cast<int>(rng() % 50) - 2;
      positive_votes += v > 20;
      line += std::to_string(v);
    }
    for (int c = 0; c < 26; ++c) {
      line += "\t";
      if (rng() % 6 == 0) continue;
      const int v = static_cast<int>(rng() % vocab);
      positive_votes += v % 4 == 0;
      line += absl::StrFormat("%08x", v * 2654435761u + c);
    }
    out << (positive_votes > 7 ? 1 : 0) << line << "\n";
  }
}

pb::JobConfig MakeJob(const std::string& model, const std::string& dir) {
  pb::JobConfig job;
  EXPECT_TRUE(ParseTextProto(model, "job", &job).ok());
  job.mutable_data()->add_train(dir + "/train.txt");
  job.mutable_data()->add_test(dir + "/test.txt");
  job.mutable_data()->mutable_cache()->set_mode(pb::DataCacheConfig::MODE_OFF);
  job.mutable_train()->set_batch_size(16);
  job.mutable_consistency()->set_max_delay(-1);
  EXPECT_TRUE(ResolveTrainDefaults(&job).ok());
  return job;
}

// A two-server, one-worker cluster serving `job`'s tables.
class Cluster {
 public:
  explicit Cluster(const pb::JobConfig& job) : cluster_(Options()) {
    EXPECT_TRUE(cluster_.Start().ok());
    for (int i = 0; i < 2; ++i) {
      auto made = TableServer::Create(job, 1, nullptr);
      EXPECT_TRUE(made.ok()) << made.status();
      tables_.push_back(*std::move(made));
      kv_servers_.push_back(
          std::make_unique<KVServer<float>>(0, cluster_.server(i)));
      kv_servers_.back()->set_request_handler(tables_.back()->handler());
      EXPECT_TRUE(kv_servers_.back()->Start().ok());
    }
    kv_ = std::make_unique<KVWorker<float>>(0, 0, cluster_.worker(0));
    EXPECT_TRUE(kv_->Start().ok());
  }
  ~Cluster() { EXPECT_TRUE(cluster_.Finish().ok()); }

  KVWorker<float>* kv() { return kv_.get(); }

  // Trains one pass over the job's training file, as the trainer does.
  void Train(const pb::JobConfig& job, Model* model) {
    auto ro = TrainReaderOptions(job, 0, 1, model->needs_fields());
    ASSERT_TRUE(ro.ok());
    auto reader = OpenReader(*ro);
    ASSERT_TRUE(reader.ok()) << reader.status();
    Batch batch;
    std::vector<uint64_t> unique;
    std::vector<uint32_t> inverse;
    std::vector<float> probs;
    std::vector<std::vector<float>> grads;
    while (*(*reader)->Next(job.train().batch_size(), &batch)) {
      ASSERT_TRUE(Dedup(batch.keys, &unique, &inverse).ok());
      ModelRows rows;
      SendModelPulls(kv(), model->tables(), unique, inverse, batch.fields, -1,
                     &rows);
      auto spans = WaitModelPulls(kv(), &rows, kTimeout);
      ASSERT_TRUE(spans.ok()) << spans.status();
      ModelBatch mb{SparseBatchView{batch.offsets, inverse, batch.values},
                    batch.labels, batch.fields, batch.numeric};
      ASSERT_TRUE(model->ForwardBackward(mb, *spans, &probs, &grads).ok());
      for (size_t t = 0; t < model->tables().size(); ++t) {
        KVRequestOptions opts;
        opts.table_id = model->tables()[t].id;
        ASSERT_TRUE(
            kv()->Wait(kv()->Push(rows.keys[t],
                                  SArray<float>(std::move(grads[t])), opts),
                       kTimeout)
                .ok());
      }
    }
  }

  // Writes checkpoint 1 under `root` from both servers, with the worker
  // positions `workers`; returns its dir.
  std::string Checkpoint(const pb::JobConfig& job, const std::string& root,
                         const std::vector<pb::WorkerPosition>& workers = {}) {
    auto dir = CreateCheckpointDir(root, 1);
    EXPECT_TRUE(dir.ok()) << dir.status();
    const KeyRangeMap ranges = cluster_.server(0)->key_ranges();
    pb::CheckpointManifest manifest;
    manifest.set_format_version(kCheckpointFormatVersion);
    manifest.set_id(1);
    manifest.set_reason("end");
    *manifest.mutable_job() = job;
    for (const pb::WorkerPosition& w : workers) *manifest.add_workers() = w;
    for (const pb::CheckpointTable& t : tables_[0]->CheckpointTables()) {
      *manifest.add_tables() = t;
    }
    manifest.set_num_servers(2);
    for (uint64_t b : ranges.begins()) manifest.add_range_begins(b);
    for (int32_t o : ranges.owners()) manifest.add_range_owners(o);
    for (int rank = 0; rank < 2; ++rank) {
      auto files = tables_[rank]->SaveCheckpoint(*dir, ranges, rank);
      EXPECT_TRUE(files.ok()) << files.status();
      for (const pb::CheckpointFile& f : *files) *manifest.add_files() = f;
    }
    EXPECT_TRUE(WriteManifest(*dir, manifest).ok());
    return *dir;
  }

 private:
  static LocalClusterOptions Options() {
    LocalClusterOptions o;
    o.num_servers = 2;
    o.num_workers = 1;
    return o;
  }

  LocalCluster cluster_;
  std::vector<std::unique_ptr<TableServer>> tables_;
  std::vector<std::unique_ptr<KVServer<float>>> kv_servers_;
  std::unique_ptr<KVWorker<float>> kv_;
};

// Model::Predict on every example of `path` with rows pulled from the
// servers, batch by batch.
std::vector<float> PredictDirectly(const pb::JobConfig& job, Model* model,
                                   KVWorker<float>* kv) {
  auto ro = TestReaderOptions(job, model->needs_fields());
  EXPECT_TRUE(ro.ok());
  ro->cache.mode = CacheMode::kOff;
  auto reader = OpenReader(*ro);
  EXPECT_TRUE(reader.ok());
  std::vector<float> all, probs;
  Batch batch;
  std::vector<uint64_t> unique;
  std::vector<uint32_t> inverse;
  while (*(*reader)->Next(job.train().batch_size(), &batch)) {
    EXPECT_TRUE(Dedup(batch.keys, &unique, &inverse).ok());
    ModelRows rows;
    SendModelPulls(kv, model->tables(), unique, inverse, batch.fields, -1,
                   &rows);
    auto spans = WaitModelPulls(kv, &rows, kTimeout);
    EXPECT_TRUE(spans.ok());
    ModelBatch mb{SparseBatchView{batch.offsets, inverse, batch.values},
                  batch.labels, batch.fields, batch.numeric};
    EXPECT_TRUE(model->Predict(mb, *spans, &probs).ok());
    all.insert(all.end(), probs.begin(), probs.end());
  }
  return all;
}

std::vector<float> ReadScores(const std::string& path) {
  std::vector<float> scores;
  std::ifstream in(path);
  for (float f; in >> f;) scores.push_back(f);
  return scores;
}

// RunPredict with its scores written to `scores_path`.
absl::StatusOr<PredictResult> PredictToFile(const PredictOptions& options,
                                            const std::string& scores_path) {
  std::FILE* scores = std::fopen(scores_path.c_str(), "w");
  if (scores == nullptr) {
    return absl::InternalError(absl::StrCat("cannot write ", scores_path));
  }
  absl::StatusOr<PredictResult> result = RunPredict(options, scores);
  std::fclose(scores);
  return result;
}

// Expects the scores file to hold `direct`, each within 1e-6.
void ExpectScores(const std::string& scores_path,
                  const std::vector<float>& direct) {
  const std::vector<float> predicted = ReadScores(scores_path);
  ASSERT_EQ(predicted.size(), direct.size());
  for (size_t i = 0; i < direct.size(); ++i) {
    EXPECT_NEAR(predicted[i], direct[i], 1e-6) << "example " << i;
  }
}

struct Case {
  const char* name;
  const char* model;
  bool criteo;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class PredictMatchesEvaluationTest : public ::testing::TestWithParam<Case> {};

// Trains a little, checkpoints, then compares petrel-predict's scores with
// Model::Predict on rows pulled from the same servers, and its metrics with
// Evaluate's. The test file has keys the training file never had, so some
// rows come from the initializer on both sides.
TEST_P(PredictMatchesEvaluationTest, ScoresAndMetricsEqualTheJobs) {
  const Case& c = GetParam();
  const std::string dir = TempDir();
  if (c.criteo) {
    WriteCriteo(dir + "/train.txt", 200, 20, 1);
    WriteCriteo(dir + "/test.txt", 100, 30, 2);
  } else {
    WriteLibsvm(dir + "/train.txt", 200, 60, 1);
    WriteLibsvm(dir + "/test.txt", 100, 80, 2);
  }
  const pb::JobConfig job = MakeJob(c.model, dir);
  Cluster cluster(job);
  auto model = Model::Create(job, Device::Cpu());
  ASSERT_TRUE(model.ok()) << model.status();
  cluster.Train(job, model->get());
  // Before evaluating: the evaluation's pulls create the test-only rows.
  const std::string ckpt = cluster.Checkpoint(job, dir + "/ckpt");

  auto eval = Evaluate(job, cluster.kv(), model->get(), kTimeout);
  ASSERT_TRUE(eval.ok()) << eval.status();
  const std::vector<float> direct =
      PredictDirectly(job, model->get(), cluster.kv());

  PredictOptions options;
  options.model = dir + "/ckpt";  // the root: its newest checkpoint
  options.input = dir + "/test.txt";
  options.device = "cpu";
  const std::string scores_path = dir + "/scores.txt";
  auto result = PredictToFile(options, scores_path);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->checkpoint, ckpt);
  EXPECT_EQ(result->device, "cpu");
  EXPECT_EQ(result->eval.examples, eval->examples);
  EXPECT_NEAR(result->eval.logloss, eval->logloss, 1e-6);
  EXPECT_NEAR(result->eval.auc, eval->auc, 1e-6);
  EXPECT_GT(eval->auc, 0.5);  // it learned something: the rows matter

  ASSERT_EQ(direct.size(), 100u);
  ExpectScores(scores_path, direct);
}

INSTANTIATE_TEST_SUITE_P(
    Models, PredictMatchesEvaluationTest,
    ::testing::Values(
        Case{"LR",
             "model { kind: KIND_LR } tables { id: 0 initializer { kind: "
             "KIND_NORMAL scale: 0.2 seed: 5 } optimizer { kind: KIND_ADAGRAD "
             "learning_rate: 0.2 } }",
             false},
        Case{"FM", "model { kind: KIND_FM fm_dim: 4 }", false},
        Case{"MLP",
             "data { format: FORMAT_CRITEO } model { kind: KIND_MLP "
             "embedding_dim: 4 hidden: 8 wide: true }",
             true},
        // The crosses' features reach the scores (listed pairs; selected
        // ones are selected again from the training file, here none).
        Case{"MLPCrossed",
             "data { format: FORMAT_CRITEO } model { kind: KIND_MLP "
             "embedding_dim: 4 hidden: 8 wide: true crosses { pairs { a: 13 "
             "b: 14 } pairs { a: 0 b: 20 } } }",
             true},
        Case{"MLPSelectedCrosses",
             "data { format: FORMAT_CRITEO } model { kind: KIND_MLP "
             "embedding_dim: 4 hidden: 8 wide: true crosses { auto_max_pairs: "
             "2 } }",
             true}),
    [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

// The workers selected pairs (13, 14) and (0, 20) and recorded them in
// their positions; the manifest's job still selects (auto_max_pairs, no
// pairs). petrel-predict crosses the recorded pairs, without the training
// files (deleted), and its scores equal the evaluation's. Without the
// record it must select again and fails on the missing files; workers that
// disagree are refused.
TEST(PredictRecordedCrossesTest, UsesTheWorkersPairsWithoutTheTrainingFiles) {
  const std::string dir = TempDir();
  WriteCriteo(dir + "/train.txt", 200, 20, 1);
  WriteCriteo(dir + "/test.txt", 100, 30, 2);
  const pb::JobConfig trained = MakeJob(
      "data { format: FORMAT_CRITEO } model { kind: KIND_MLP "
      "embedding_dim: 4 hidden: 8 wide: true crosses { auto_max_pairs: 2 "
      "pairs { a: 13 b: 14 } pairs { a: 0 b: 20 } } }",
      dir);
  pb::JobConfig selecting = trained;
  selecting.mutable_model()->mutable_crosses()->clear_pairs();
  pb::WorkerPosition w0, w1;
  w0.set_rank(0);
  w1.set_rank(1);
  *w0.mutable_crosses()->mutable_pairs() = trained.model().crosses().pairs();
  *w1.mutable_crosses() = w0.crosses();
  Cluster cluster(trained);
  auto model = Model::Create(trained, Device::Cpu());
  ASSERT_TRUE(model.ok()) << model.status();
  cluster.Train(trained, model->get());
  cluster.Checkpoint(selecting, dir + "/ckpt", {w0, w1});
  cluster.Checkpoint(selecting, dir + "/old");  // no record
  w1.mutable_crosses()->mutable_pairs(1)->set_b(21);
  cluster.Checkpoint(selecting, dir + "/differ", {w0, w1});
  auto eval = Evaluate(trained, cluster.kv(), model->get(), kTimeout);
  ASSERT_TRUE(eval.ok()) << eval.status();
  const std::vector<float> direct =
      PredictDirectly(trained, model->get(), cluster.kv());
  ASSERT_EQ(std::remove((dir + "/train.txt").c_str()), 0);

  PredictOptions options;
  options.model = dir + "/ckpt";
  options.input = dir + "/test.txt";
  options.device = "cpu";
  const std::string scores_path = dir + "/scores.txt";
  auto result = PredictToFile(options, scores_path);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->eval.examples, 100);
  EXPECT_NEAR(result->eval.logloss, eval->logloss, 1e-6);
  EXPECT_NEAR(result->eval.auc, eval->auc, 1e-6);
  ExpectScores(scores_path, direct);

  options.model = dir + "/old";
  auto old = RunPredict(options, nullptr);
  ASSERT_FALSE(old.ok());
  EXPECT_THAT(std::string(old.status().message()),
              ::testing::HasSubstr("selecting model.crosses again"));
  options.model = dir + "/differ";
  auto differ = RunPredict(options, nullptr);
  EXPECT_TRUE(absl::IsInvalidArgument(differ.status())) << differ.status();
  EXPECT_THAT(std::string(differ.status().message()),
              ::testing::HasSubstr("workers 0 and 1 recorded different"));
}

// A small LR checkpoint for the error tests.
struct Trained {
  std::string dir;
  std::string ckpt;
};

Trained TrainSmallLr() {
  Trained t;
  t.dir = TempDir();
  WriteLibsvm(t.dir + "/train.txt", 50, 20, 1);
  WriteLibsvm(t.dir + "/test.txt", 20, 20, 2);
  const pb::JobConfig job = MakeJob("model { kind: KIND_LR }", t.dir);
  Cluster cluster(job);
  auto model = Model::Create(job, Device::Cpu());
  EXPECT_TRUE(model.ok());
  cluster.Train(job, model->get());
  t.ckpt = cluster.Checkpoint(job, t.dir + "/ckpt");
  return t;
}

absl::Status Predict(const std::string& model, const std::string& input,
                     const std::string& format = "") {
  PredictOptions options;
  options.model = model;
  options.input = input;
  options.format = format;
  options.device = "cpu";
  return RunPredict(options, nullptr).status();
}

TEST(PredictTest, AcceptsCheckpointRootAndLatest) {
  Trained t = TrainSmallLr();
  for (const std::string& spec :
       {t.ckpt, t.dir + "/ckpt", t.dir + "/ckpt/", t.dir + "/ckpt/latest"}) {
    auto model = OpenModelDir(spec);
    ASSERT_TRUE(model.ok()) << spec << ": " << model.status();
    EXPECT_EQ(model->dir, t.ckpt) << spec;
    EXPECT_TRUE(Predict(spec, t.dir + "/test.txt").ok()) << spec;
  }
}

TEST(PredictTest, BadInputGetsOneClearError) {
  Trained t = TrainSmallLr();
  const std::string test = t.dir + "/test.txt";
  // Missing directory.
  absl::Status s = Predict(t.dir + "/nothing", test);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_THAT(s.message(), HasSubstr(t.dir + "/nothing"));
  // Incomplete checkpoint: no MANIFEST.
  const std::string incomplete = t.dir + "/ckpt/ckpt-00000002";
  ASSERT_EQ(::mkdir(incomplete.c_str(), 0755), 0);
  s = Predict(incomplete, test);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_THAT(s.message(), HasSubstr("MANIFEST"));
  // ... which "latest" skips.
  EXPECT_TRUE(Predict(t.dir + "/ckpt/latest", test).ok());
  // Bad flags.
  EXPECT_EQ(Predict(t.ckpt, test, "csv").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Predict(t.ckpt, "").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Predict("", test).code(), absl::StatusCode::kInvalidArgument);
  // Missing or malformed input.
  EXPECT_EQ(Predict(t.ckpt, t.dir + "/none.txt").code(),
            absl::StatusCode::kNotFound);
  std::ofstream(t.dir + "/bad.txt") << "1 3:0.5\nnot a line\n";
  s = Predict(t.ckpt, t.dir + "/bad.txt");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("bad.txt:2"));
  std::ofstream(t.dir + "/empty.txt") << "";
  s = Predict(t.ckpt, t.dir + "/empty.txt");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("no examples"));
}

TEST(PredictTest, CorruptedTableFileIsDataLossNamingIt) {
  Trained t = TrainSmallLr();
  auto model = OpenModelDir(t.ckpt);
  ASSERT_TRUE(model.ok());
  ASSERT_GT(model->manifest.files_size(), 0);
  const std::string file = t.ckpt + "/" + model->manifest.files(0).name();
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(70);
  f.put('\x7f');
  f.close();
  absl::Status s = Predict(t.ckpt, t.dir + "/test.txt");
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_THAT(s.message(), HasSubstr(file));
}

}  // namespace
}  // namespace petrel
