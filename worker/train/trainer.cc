#include "worker/train/trainer.h"

#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "glog/logging.h"

#include "base/status_macros.h"
#include "cluster/simple_app.h"
#include "job/checkpoint_protocol.h"
#include "job/recovery_protocol.h"
#include "kernels/device.h"
#include "kv/kv_worker.h"
#include "worker/data/cross_selection.h"
#include "worker/data/data_options.h"
#include "worker/data/reader.h"
#include "worker/data/resume_position.h"
#include "worker/model/eval_metrics.h"
#include "worker/model/model.h"
#include "worker/model/model_rows.h"
#include "worker/train/batch_prefetcher.h"
#include "worker/train/divergence_check.h"
#include "worker/train/evaluator.h"
#include "worker/train/training_metrics.h"
#include "worker/train/validator.h"

namespace petrel {
namespace {

constexpr int kTrainApp = 0;
constexpr int kStatsApp = 1;

// One batch on its way through the pipeline.
struct Step {
  std::unique_ptr<PreparedBatch> prepared;
  int source = 0;  // index into Trainer::sources_
  ModelRows rows;
};

// A piece of the training data this worker trains (its own share, or one
// reassigned from a dead worker) and the batches read from it.
struct Source {
  pb::DataPiece piece;  // where the trained (counted) batches stand
  std::unique_ptr<BatchPrefetcher> batches;
  bool exhausted = false;  // Next returned the end
  int in_flight = 0;       // prepared, not yet counted
};

class Trainer {
 public:
  Trainer(const TrainerOptions& options, Postoffice* po)
      : options_(options),
        job_(options.job),
        po_(po),
        kv_(kTrainApp, 0, po),
        stats_(kStatsApp, 0, po),
        training_metrics_(po->metrics()) {}
  // The van still runs (RunTrainer stops it after): a late stats request
  // must not reach the members after stats_.
  ~Trainer() { stats_.Stop(); }

  absl::StatusOr<TrainResult> Run();

 private:
  absl::Status Start();
  absl::Status AddSource(const pb::DataPiece& piece);
  // Positions `reader` (fresh, this worker's own share) at options_.resume's
  // position by byte offset when it can; returns the examples the prefetcher
  // must skip instead. Prints how it resumes.
  int64_t Resume(const ReaderOptions& ro, Reader* reader);
  absl::Status TrainLoop();
  // Worker 0's evaluations after `step` was trained (validator.h); true
  // when training must stop (early stopping).
  absl::StatusOr<bool> MaybeEvaluate(const Step& step, const Step* next);
  bool StopRequested() const;
  absl::StatusOr<pb::RecoveryReply> TrainReassigned();
  absl::StatusOr<bool> Prepare(int64_t clock, Step* step);
  absl::Status Compute(int64_t clock, Step* step);
  absl::Status WaitPulls(Step* step);
  absl::Status WaitPushes();
  absl::Status MaybePause();
  void CountTrained(const Step& step);
  // Updates training_metrics_ after CountTrained.
  void ExportTrained(const Step& step);
  pb::WorkerPosition Position() const;
  pb::WorkerProgress Progress() const;
  void MaybeReportProgress(bool force);
  absl::Status GatherStats(const pb::RecoveryReply& end, TrainResult* result);
  void PrintFinal(const pb::RecoveryReply& end, const EvalResult& eval,
                  const TrainResult& result);
  void Print(const std::string& line) { options_.print(line); }

  const TrainerOptions& options_;
  const pb::JobConfig& job_;
  Postoffice* const po_;
  // The two batches in flight. Declared before kv_, so destroyed after it:
  // when the run ends early (an error, a stop), pulls still in flight
  // write into their rows until kv_ stops receiving.
  Step step_a_;
  Step step_b_;
  KVWorker<float> kv_;
  SimpleApp stats_;
  std::unique_ptr<ComputeDevice> device_;
  std::unique_ptr<Model> model_;
  std::vector<Source> sources_;  // [0]: this worker's own share
  size_t next_source_ = 0;
  // Inside the bounded-delay clock (until it left at the end of its data).
  bool in_clock_ = true;
  absl::Time last_report_;
  int epoch_ = 0;
  std::vector<int> last_pushes_;
  std::vector<float> probs_;
  std::vector<std::vector<float>> grads_;
  RunningLogLoss loss_;
  int64_t batches_ = 0;
  // Where the worker stands: batches completed (its clock), the epoch of
  // the last trained batch and its examples trained so far in it.
  int64_t clock_ = 0;
  int pos_epoch_ = 0;
  int64_t pos_examples_in_epoch_ = 0;
  // The fraction of the own share's current epoch trained (-1: unknown),
  // and the examples of its first complete epoch (0: not yet known).
  double pos_fraction_in_epoch_ = 0;
  int64_t examples_per_epoch_ = 0;
  // Where the next line of the own share starts (-1: not known, e.g. a pass
  // served from the parsed-example cache).
  int64_t pos_byte_offset_ = -1;
  uint64_t input_fingerprint_ = 0;
  int64_t examples_before_ = 0;  // trained before a restore
  int64_t pauses_ = 0;           // checkpoint pauses taken
  absl::Time start_;
  absl::Time last_progress_;
  std::unique_ptr<Validator> validator_;  // worker 0
  TrainingMetrics training_metrics_;

  absl::Mutex stats_mu_;
  int stats_reports_ ABSL_GUARDED_BY(stats_mu_) = 0;
  int64_t stats_examples_ ABSL_GUARDED_BY(stats_mu_) = 0;
  double stats_max_seconds_ ABSL_GUARDED_BY(stats_mu_) = 0;
};

absl::Status Trainer::Start() {
  PETREL_ASSIGN_OR_RETURN(DeviceChoice choice,
                          ParseDeviceChoice(job_.train().device()));
  PETREL_ASSIGN_OR_RETURN(device_, ComputeDevice::Open(choice));
  PETREL_ASSIGN_OR_RETURN(model_, Model::Create(job_, device_->device()));
  Print(absl::StrCat("worker=", po_->my_rank(),
                     " device=", device_->device().name()));
  PETREL_RETURN_IF_ERROR(kv_.Start());
  stats_.set_request_handler([this](const SimpleData& d, SimpleApp* app) {
    int64_t examples = 0;
    double seconds = 0;
    if (!d.duplicate &&
        std::sscanf(d.body.c_str(), "%ld %lf", &examples, &seconds) == 2) {
      absl::MutexLock lock(&stats_mu_);
      ++stats_reports_;
      stats_examples_ += examples;
      stats_max_seconds_ = std::max(stats_max_seconds_, seconds);
    }
    app->Response(d).IgnoreError();
  });
  PETREL_RETURN_IF_ERROR(stats_.Start());
  pb::DataPiece own;
  own.set_id(po_->my_rank());
  own.set_shard(po_->my_rank());
  own.set_end_epoch(job_.train().epochs());
  if (options_.resume.has_value()) {
    const pb::WorkerPosition& p = *options_.resume;
    clock_ = batches_ = p.clock();
    pos_epoch_ = epoch_ = p.epoch();
    pos_examples_in_epoch_ = p.examples_in_epoch();
    examples_before_ = p.examples_trained();
    own.set_epoch(p.finished() ? own.end_epoch() : p.epoch());
    own.set_examples_in_epoch(p.finished() ? 0 : p.examples_in_epoch());
  }
  PETREL_RETURN_IF_ERROR(AddSource(own));
  // The servers load their checkpoint before they answer anything.
  if (options_.wait_for_servers) {
    PETREL_RETURN_IF_ERROR(
        po_->Barrier(kServerGroup | kWorkerGroup, options_.timeout));
  }
  // A resumed worker's clock continues: tell the servers before any pull.
  if (clock_ > 0) {
    PETREL_RETURN_IF_ERROR(kv_.Wait(kv_.Clock(clock_), options_.timeout));
  }
  // The scheduler learns what this worker trains before it can die.
  if (options_.recovery != nullptr) options_.recovery->Report(Progress());
  last_report_ = absl::Now();
  // Every worker has registered its apps (the stats app above) before
  // any of them can finish and report.
  PETREL_RETURN_IF_ERROR(po_->Barrier(kWorkerGroup, options_.timeout));
  if (po_->my_rank() == 0) {
    ValidatorOptions vo;
    vo.job = &job_;
    vo.kv = &kv_;
    vo.model = model_.get();
    vo.recovery = options_.recovery;
    vo.control = options_.control;
    vo.print = options_.print;
    vo.timeout = options_.timeout;
    validator_ = std::make_unique<Validator>(std::move(vo));
  }
  return absl::OkStatus();
}

// Opens `piece` (a share of data.train) and starts reading it.
absl::Status Trainer::AddSource(const pb::DataPiece& piece) {
  Source source;
  source.piece = piece;
  // A reassigned piece spans its own epochs: one epoch caches nothing
  // (data.cache AUTO), as for a one-epoch job.
  pb::JobConfig job = job_;
  if (!sources_.empty()) {
    job.mutable_train()->set_epochs(
        std::max(1, piece.end_epoch() - piece.epoch()));
  }
  PETREL_ASSIGN_OR_RETURN(
      ReaderOptions ro,
      TrainReaderOptions(job, piece.shard(), po_->num_workers(),
                         model_->needs_fields()));
  PETREL_ASSIGN_OR_RETURN(std::unique_ptr<Reader> reader, OpenReader(ro));
  const int64_t skip =
      sources_.empty() ? Resume(ro, reader.get()) : piece.examples_in_epoch();
  source.batches = std::make_unique<BatchPrefetcher>(
      std::move(reader), job_.train().batch_size(), piece.end_epoch());
  if (piece.epoch() < piece.end_epoch()) {
    source.batches->set_start(piece.epoch(), skip);
    source.batches->Start();
  } else {
    source.exhausted = true;
  }
  if (!sources_.empty()) {
    Print(absl::StrFormat(
        "worker=%d also trains worker %d's data: epoch=%d from example %d",
        po_->my_rank(), piece.shard(), piece.epoch() + 1,
        piece.examples_in_epoch()));
  }
  sources_.push_back(std::move(source));
  return absl::OkStatus();
}

int64_t Trainer::Resume(const ReaderOptions& ro, Reader* reader) {
  if (absl::StatusOr<uint64_t> f = InputFingerprint(ro); f.ok()) {
    input_fingerprint_ = *f;
  }
  int64_t skip = 0;
  if (options_.resume.has_value()) {
    const pb::WorkerPosition& p = *options_.resume;
    std::string how = "finished";
    if (!p.finished()) {
      std::string why_not;
      if (SeekToPosition(p, input_fingerprint_, reader, &why_not)) {
        how = absl::StrCat("by byte_offset=", p.byte_offset());
      } else {
        skip = p.examples_in_epoch();
        how = absl::StrCat("by skipping ", skip, " examples (", why_not, ")");
      }
    }
    Print(absl::StrFormat(
        "worker=%d resumes at epoch=%d examples_in_epoch=%d clock=%d %s",
        po_->my_rank(), p.epoch() + 1, p.examples_in_epoch(), p.clock(), how));
  }
  // Not known until the first batch after a skip.
  pos_byte_offset_ = skip == 0 ? reader->next_offset() : -1;
  return skip;
}

// Takes the next prepared batch, round robin over the pieces held, and
// sends the pulls of its unique keys for clock `clock` (-1 outside the
// clock). False when every piece is exhausted.
absl::StatusOr<bool> Trainer::Prepare(int64_t clock, Step* step) {
  if (StopRequested()) return false;
  if (options_.recovery != nullptr) {
    for (const pb::DataPiece& p : options_.recovery->TakeAssigned()) {
      PETREL_RETURN_IF_ERROR(AddSource(p));
    }
  }
  for (size_t tries = 0; tries < sources_.size(); ++tries) {
    const size_t i = next_source_++ % sources_.size();
    Source& source = sources_[i];
    if (source.exhausted) continue;
    PETREL_ASSIGN_OR_RETURN(step->prepared, source.batches->Next());
    if (step->prepared == nullptr) {
      source.exhausted = true;
      if (source.in_flight == 0)
        source.piece.set_epoch(source.piece.end_epoch());
      continue;
    }
    ++source.in_flight;
    step->source = static_cast<int>(i);
    if (i == 0) epoch_ = step->prepared->epoch;
    SendModelPulls(&kv_, model_->tables(), step->prepared->unique,
                   step->prepared->inverse, step->prepared->batch.fields,
                   in_clock_ ? clock : -1, &step->rows);
    return true;
  }
  return false;
}

// Waits for the pushes sent so far to be acknowledged.
absl::Status Trainer::WaitPushes() {
  for (int ts : last_pushes_) {
    PETREL_RETURN_IF_ERROR(kv_.Wait(ts, options_.timeout));
  }
  last_pushes_.clear();
  return absl::OkStatus();
}

pb::WorkerPosition Trainer::Position() const {
  pb::WorkerPosition p;
  p.set_rank(po_->my_rank());
  p.set_epoch(pos_epoch_);
  p.set_examples_in_epoch(pos_examples_in_epoch_);
  p.set_byte_offset(pos_byte_offset_);
  p.set_input_fingerprint(pos_byte_offset_ >= 0 ? input_fingerprint_ : 0);
  p.set_clock(clock_);
  p.set_examples_trained(examples_before_ + loss_.total_examples());
  if (options_.crosses_selected) {
    *p.mutable_crosses()->mutable_pairs() =
        options_.job.model().crosses().pairs();
  }
  return p;
}

// The batch boundary: a pause the scheduler asked for is taken here, with
// every push sent so far applied (the cut of a checkpoint), and a stop ends
// the run.
absl::Status Trainer::MaybePause() {
  if (options_.control == nullptr) return absl::OkStatus();
  if (options_.control->pause_requested()) {
    PETREL_RETURN_IF_ERROR(WaitPushes());
    PETREL_RETURN_IF_ERROR(options_.control->Pause(
        Position(), options_.timeout + kCheckpointAllowance));
    ++pauses_;
  }
  if (std::optional<std::string> stop = options_.control->stop_reason()) {
    return absl::AbortedError(*stop);
  }
  return absl::OkStatus();
}

// Waits for the step's pulls. A worker held back by bounded delay behind a
// paused worker must pause too, or the checkpoint would never complete:
// the wait is sliced and the boundary checked in between.
absl::Status Trainer::WaitPulls(Step* step) {
  absl::Time deadline = absl::Now() + options_.timeout;
  for (int ts : step->rows.pulls) {
    while (true) {
      const int64_t pauses = pauses_;
      PETREL_RETURN_IF_ERROR(MaybePause());
      // Time paused does not count against the pull.
      if (pauses_ != pauses) deadline = absl::Now() + options_.timeout;
      absl::Status s = kv_.Wait(ts, absl::Milliseconds(20));
      if (s.ok()) break;
      if (!absl::IsDeadlineExceeded(s) || absl::Now() > deadline) {
        return kv_.Wait(ts, absl::ZeroDuration());
      }
    }
  }
  return absl::OkStatus();
}

void Trainer::CountTrained(const Step& step) {
  const PreparedBatch& prepared = *step.prepared;
  const int64_t n = static_cast<int64_t>(prepared.batch.size());
  Source& source = sources_[step.source];
  pb::DataPiece& piece = source.piece;
  if (prepared.epoch != piece.epoch()) {
    piece.set_epoch(prepared.epoch);
    piece.set_examples_in_epoch(0);
  }
  piece.set_examples_in_epoch(piece.examples_in_epoch() + n);
  piece.set_examples_trained(piece.examples_trained() + n);
  if (--source.in_flight == 0 && source.exhausted) {
    piece.set_epoch(piece.end_epoch());
    piece.set_examples_in_epoch(0);
  }
  if (step.source != 0) return;
  if (prepared.epoch != pos_epoch_) {
    if (examples_per_epoch_ == 0) examples_per_epoch_ = pos_examples_in_epoch_;
    pos_epoch_ = prepared.epoch;
    pos_examples_in_epoch_ = 0;
  }
  pos_examples_in_epoch_ += n;
  pos_byte_offset_ = prepared.next_offset;
  pos_fraction_in_epoch_ = prepared.fraction_read;
  if (pos_fraction_in_epoch_ < 0 && examples_per_epoch_ > 0) {
    pos_fraction_in_epoch_ =
        std::min(1.0, static_cast<double>(pos_examples_in_epoch_) /
                          static_cast<double>(examples_per_epoch_));
  }
}

void Trainer::ExportTrained(const Step& step) {
  const double elapsed = absl::ToDoubleSeconds(absl::Now() - start_);
  training_metrics_.BatchTrained(
      static_cast<int64_t>(step.prepared->batch.size()), pos_epoch_,
      pos_examples_in_epoch_,
      elapsed > 0 ? loss_.total_examples() / elapsed : 0,
      loss_.window_logloss());
}

pb::WorkerProgress Trainer::Progress() const {
  pb::WorkerProgress p;
  p.set_clock(clock_);
  // Counted batches only: the current one's pushes are not acknowledged.
  int64_t trained = examples_before_;
  for (const Source& s : sources_) {
    *p.add_pieces() = s.piece;
    trained += s.piece.examples_trained();
  }
  p.set_examples_trained(trained);
  p.set_batch_size(job_.train().batch_size());
  const int epochs = job_.train().epochs();
  p.set_epochs(epochs);
  const pb::DataPiece& own = sources_[0].piece;
  if (own.epoch() >= own.end_epoch()) {
    p.set_fraction_done(1);
  } else if (pos_fraction_in_epoch_ >= 0) {
    p.set_fraction_done((pos_epoch_ + pos_fraction_in_epoch_) / epochs);
  } else {
    p.set_fraction_done(-1);
  }
  p.set_window_logloss(loss_.window_logloss());
  p.set_window_examples(loss_.window_examples());
  return p;
}

absl::Status Trainer::Compute(int64_t clock, Step* step) {
  const auto& tables = model_->tables();
  if (step->prepared->epoch != pos_epoch_ && step->source == 0 &&
      po_->my_rank() == 0 && options_.control != nullptr &&
      job_.checkpoint().at_epoch_end()) {
    options_.control->RequestCheckpoint("epoch_end");
  }
  PETREL_RETURN_IF_ERROR(WaitPulls(step));
  PETREL_ASSIGN_OR_RETURN(std::vector<absl::Span<const float>> rows,
                          WaitModelPulls(&kv_, &step->rows, options_.timeout));
  const Batch& batch = step->prepared->batch;
  ModelBatch mb;
  mb.sparse =
      SparseBatchView{batch.offsets, step->prepared->inverse, batch.values};
  mb.labels = batch.labels;
  mb.fields = batch.fields;
  mb.numeric = batch.numeric;
  PETREL_ASSIGN_OR_RETURN(double loss,
                          model_->ForwardBackward(mb, rows, &probs_, &grads_));
  AverageOverBatch(batch.size(), &grads_);
  PETREL_RETURN_IF_ERROR(CheckDivergence(job_, tables, loss, grads_, clock,
                                         step->prepared->epoch));
  loss_.AddSum(loss, static_cast<int64_t>(batch.size()));
  // At most one batch of pushes in flight: wait for the previous one.
  PETREL_RETURN_IF_ERROR(WaitPushes());
  // Every batch counted so far is acknowledged: a good time to report.
  const absl::Time now = absl::Now();
  if (options_.recovery != nullptr &&
      (!in_clock_ || now - last_report_ >= kProgressInterval)) {
    options_.recovery->Report(Progress());
    last_report_ = now;
  }
  for (size_t t = 0; t < tables.size(); ++t) {
    KVRequestOptions opts;
    opts.table_id = tables[t].id;
    last_pushes_.push_back(kv_.Push(step->rows.keys[t],
                                    SArray<float>(std::move(grads_[t])), opts));
  }
  if (in_clock_) last_pushes_.push_back(kv_.Clock(clock + 1));
  ++batches_;
  clock_ = clock + 1;
  CountTrained(*step);
  ExportTrained(*step);
  const int64_t every = job_.checkpoint().every_batches();
  if (every > 0 && po_->my_rank() == 0 && options_.control != nullptr &&
      batches_ % every == 0) {
    options_.control->RequestCheckpoint("every_batches");
  }
  return absl::OkStatus();
}

void Trainer::MaybeReportProgress(bool force) {
  absl::Time now = absl::Now();
  absl::Duration interval = absl::Seconds(job_.train().progress_interval_s());
  if (!options_.worker_progress_lines) return;
  if (!force && now - last_progress_ < interval) return;
  last_progress_ = now;
  double elapsed = absl::ToDoubleSeconds(now - start_);
  double rate = elapsed > 0 ? loss_.total_examples() / elapsed : 0;
  Print(absl::StrFormat(
      "progress worker=%d epoch=%d batches=%d examples=%d examples_per_s=%.0f "
      "train_logloss=%.5f elapsed_s=%.1f",
      po_->my_rank(), epoch_ + 1, batches_, loss_.total_examples(), rate,
      loss_.window_logloss(), elapsed));
}

// The evaluating worker (the leader: worker 0, or the lowest live rank
// when workers died) gathers every live worker's counts.
absl::Status Trainer::GatherStats(const pb::RecoveryReply& end,
                                  TrainResult* result) {
  if (po_->my_rank() != end.leader()) {
    int ts = stats_.Request(
        0, absl::StrCat(result->train_examples, " ", result->train_seconds),
        WorkerRankToId(end.leader()));
    return stats_.Wait(ts, options_.timeout);
  }
  const int others = po_->num_workers() - 1 - end.deaths_size();
  absl::MutexLock lock(&stats_mu_);
  auto all = [this, others]() ABSL_SHARED_LOCKS_REQUIRED(stats_mu_) -> bool {
    return stats_reports_ >= others;
  };
  if (!stats_mu_.AwaitWithTimeout(absl::Condition(&all), options_.timeout)) {
    return absl::DeadlineExceededError("workers did not report their counts");
  }
  result->total_train_examples = result->train_examples + stats_examples_;
  // The dead workers' examples up to their last report count too.
  for (const pb::WorkerDeath& d : end.deaths()) {
    result->total_train_examples += d.examples_trained();
  }
  double seconds = std::max(result->train_seconds, stats_max_seconds_);
  result->examples_per_s =
      seconds > 0 ? result->total_train_examples / seconds : 0;
  return absl::OkStatus();
}

// Trains until every piece held is exhausted and its pushes acknowledged.
absl::Status Trainer::TrainLoop() {
  Step* cur = &step_a_;
  Step* next = &step_b_;
  int64_t clock = clock_;
  PETREL_ASSIGN_OR_RETURN(bool have, Prepare(clock, cur));
  while (have) {
    PETREL_ASSIGN_OR_RETURN(bool have_next, Prepare(clock + 1, next));
    PETREL_RETURN_IF_ERROR(Compute(clock, cur));
    ++clock;
    MaybeReportProgress(false);
    PETREL_ASSIGN_OR_RETURN(bool stop,
                            MaybeEvaluate(*cur, have_next ? next : nullptr));
    // The batch prepared next is dropped (its pulls only read).
    if (stop || (have_next && StopRequested())) break;
    std::swap(cur, next);
    have = have_next;
  }
  return WaitPushes();
}

bool Trainer::StopRequested() const {
  return (validator_ != nullptr && validator_->stopped()) ||
         (options_.recovery != nullptr && options_.recovery->stop_training());
}

absl::StatusOr<bool> Trainer::MaybeEvaluate(const Step& step,
                                            const Step* next) {
  if (validator_ == nullptr || step.source != 0) return false;
  const int every = job_.train().eval_every_batches();
  const bool at_every = every > 0 && batches_ % every == 0;
  // The end of one of worker 0's epochs (with validation data; the test
  // files are evaluated at the end of training anyway).
  const bool epoch_end =
      HasValidation(job_) &&
      (next == nullptr ||
       (next->source == 0 && next->prepared->epoch != step.prepared->epoch));
  if (!at_every && !epoch_end) return false;
  PETREL_ASSIGN_OR_RETURN(
      bool stop, validator_->Evaluate(step.prepared->epoch + 1, batches_));
  training_metrics_.Evaluated(validator_->last_eval().logloss,
                              validator_->last_eval().auc);
  // The best model's checkpoint: its pause, before training on. Bounded,
  // for a scheduler that takes no checkpoints (no checkpoint directory).
  if (validator_->checkpoint_requested() && options_.control != nullptr) {
    if (options_.control->AwaitPauseRequest(absl::Seconds(5))) {
      PETREL_RETURN_IF_ERROR(MaybePause());
    } else {
      LOG_FIRST_N(WARNING, 1) << "the scheduler did not take the \"best\" "
                                 "checkpoint within 5 s; training goes on";
    }
  }
  return stop;
}

// Out of the clock: asks the scheduler for more (data of workers that
// died) and trains it, until the scheduler says the job is finished.
absl::StatusOr<pb::RecoveryReply> Trainer::TrainReassigned() {
  pb::RecoveryReply end;
  if (options_.recovery == nullptr) return end;  // leader 0, nobody died
  in_clock_ = false;
  while (true) {
    PETREL_ASSIGN_OR_RETURN(
        end, options_.recovery->Done(Progress(), options_.timeout));
    if (end.finished() || end.pieces_size() == 0) return end;
    for (const pb::DataPiece& p : end.pieces()) {
      PETREL_RETURN_IF_ERROR(AddSource(p));
    }
    PETREL_RETURN_IF_ERROR(TrainLoop());
  }
}

void Trainer::PrintFinal(const pb::RecoveryReply& end, const EvalResult& eval,
                         const TrainResult& result) {
  std::string deaths;
  const std::string kept =
      validator_ != nullptr ? validator_->Summary() : std::string();
  if (end.deaths_size() > 0) {
    std::vector<std::string> ranks;
    int64_t twice = 0;
    for (const pb::WorkerDeath& d : end.deaths()) {
      ranks.push_back(absl::StrCat(d.rank()));
      twice += d.trained_twice();
    }
    deaths = absl::StrCat(" dead_workers=", absl::StrJoin(ranks, ","),
                          " redistributed=", end.redistributed(),
                          " trained_twice=", twice);
  }
  Print(absl::StrFormat(
      "final test_logloss=%.4f test_auc=%.4f examples_per_s=%.0f "
      "train_examples=%d test_examples=%d train_logloss=%.4f%s%s",
      eval.logloss, eval.auc, result.examples_per_s,
      result.total_train_examples, eval.examples, result.train_logloss, kept,
      deaths));
}

absl::StatusOr<TrainResult> Trainer::Run() {
  PETREL_RETURN_IF_ERROR(Start());
  start_ = last_progress_ = absl::Now();
  PETREL_RETURN_IF_ERROR(TrainLoop());
  if (options_.control != nullptr) options_.control->SetFinished(Position());
  // Leave the clock so nobody waits for this worker any more.
  PETREL_RETURN_IF_ERROR(kv_.Wait(kv_.Clock(-1), options_.timeout));
  PETREL_ASSIGN_OR_RETURN(pb::RecoveryReply end, TrainReassigned());
  TrainResult result;
  result.train_examples = examples_before_ + loss_.total_examples();
  result.train_seconds = absl::ToDoubleSeconds(absl::Now() - start_);
  result.train_logloss = loss_.total_logloss();
  MaybeReportProgress(true);
  PETREL_RETURN_IF_ERROR(GatherStats(end, &result));
  PETREL_RETURN_IF_ERROR(po_->Barrier(kWorkerGroup, options_.timeout));
  if (po_->my_rank() != end.leader()) return result;
  PETREL_RETURN_IF_ERROR(
      CheckTrainedSomething(job_, result.total_train_examples));
  PETREL_ASSIGN_OR_RETURN(EvalResult eval,
                          Evaluate(job_, &kv_, model_.get(), options_.timeout));
  training_metrics_.Evaluated(eval.logloss, eval.auc);
  result.test_logloss = eval.logloss;
  result.test_auc = eval.auc;
  result.test_examples = eval.examples;
  if (options_.recovery != nullptr) {
    pb::EvalReport report;
    report.set_dataset("test");
    report.set_epoch(epoch_ + 1);
    report.set_batch(batches_);
    report.set_logloss(eval.logloss);
    report.set_auc(eval.auc);
    report.set_examples(eval.examples);
    // Acknowledged before the job ends, so that it reaches the CSV.
    options_.recovery->ReportEval(report, absl::Seconds(5));
  }
  PrintFinal(end, eval, result);
  return result;
}

}  // namespace

absl::StatusOr<TrainResult> RunTrainer(const TrainerOptions& options,
                                       Postoffice* postoffice) {
  TrainerOptions resolved = options;
  PETREL_RETURN_IF_ERROR(ResolveTrainDefaults(&resolved.job));
  // Every worker selects the same crosses from the same rows.
  resolved.crosses_selected =
      SelectsCrosses(resolved.job.model()) &&
      resolved.job.data().format() == pb::DataConfig::FORMAT_CRITEO;
  WorkerControl* control = resolved.control;
  PETREL_RETURN_IF_ERROR(SelectCrossesForJob(&resolved.job, [control] {
                           return control != nullptr &&
                                  control->stop_reason().has_value();
                         }).status());
  if (!resolved.print) {
    resolved.print = [](const std::string& line) {
      std::printf("%s\n", line.c_str());
      std::fflush(stdout);
    };
  }
  Trainer trainer(resolved, postoffice);
  return trainer.Run();
}

}  // namespace petrel
