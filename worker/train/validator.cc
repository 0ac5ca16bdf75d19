#include "worker/train/validator.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

#include "base/status_macros.h"
#include "checkpoint/checkpoint_dir.h"
#include "worker/data/data_options.h"
#include "worker/train/evaluator.h"

namespace petrel {

Validator::Validator(ValidatorOptions options)
    : options_(std::move(options)),
      validation_(HasValidation(*options_.job)),
      rule_(options_.job->train().early_stopping()) {}

absl::StatusOr<bool> Validator::Evaluate(int epoch, int64_t batch) {
  // An eval_every_batches point at an epoch's end: once.
  if (batch == last_batch_ || stopped_) return stopped_;
  last_batch_ = batch;
  checkpoint_requested_ = false;
  const pb::JobConfig& job = *options_.job;
  const bool with_fields = options_.model->needs_fields();
  PETREL_ASSIGN_OR_RETURN(
      ReaderOptions ro, validation_ ? ValidationReaderOptions(job, with_fields)
                                    : TestReaderOptions(job, with_fields));
  PETREL_ASSIGN_OR_RETURN(
      EvalResult eval,
      EvaluateOn(ro, job.train().batch_size(), options_.kv, options_.model,
                 options_.timeout,
                 validation_ ? "the validation data" : "the test files"));
  last_eval_ = eval;
  pb::EvalReport report;
  report.set_dataset(validation_ ? "validation" : "test");
  report.set_epoch(epoch);
  report.set_batch(batch);
  report.set_logloss(eval.logloss);
  report.set_auc(eval.auc);
  report.set_examples(eval.examples);
  std::string note;
  if (validation_) {
    EarlyStopping::Verdict v = rule_.Add(eval.logloss, eval.auc, epoch, batch);
    report.set_improved(v.improved && rule_.enabled());
    if (v.improved && rule_.enabled()) {
      note = " best";
      if (options_.control != nullptr && !job.checkpoint().dir().empty()) {
        options_.control->RequestCheckpoint(kBestCheckpointReason);
        checkpoint_requested_ = true;
      }
    }
    if (v.stop) {
      stopped_ = true;
      const EarlyStopping::Best& best = rule_.best();
      report.set_stop_training(true);
      report.set_reason(absl::StrFormat(
          "validation %s did not improve for %d evaluations; the best, "
          "%.5f, was at epoch %d batch %d",
          rule_.metric_name(), rule_.evaluations_since_best(), best.value,
          best.epoch, best.batch));
      note = " stop";
    }
  }
  options_.print(absl::StrFormat(
      "eval %s epoch=%d batch=%d logloss=%.5f auc=%.5f examples=%d%s",
      report.dataset(), epoch, batch, eval.logloss, eval.auc, eval.examples,
      note));
  if (stopped_)
    options_.print(absl::StrCat("early stopping: ", report.reason()));
  if (options_.recovery != nullptr) {
    // A stop waits for the acknowledgement, so that the scheduler tells
    // the others before this worker leaves.
    options_.recovery->ReportEval(
        report, stopped_ ? absl::Seconds(5) : absl::ZeroDuration());
  }
  return stopped_;
}

std::string Validator::Summary() const {
  if (!rule_.enabled() || !validation_ || !rule_.best().seen) return "";
  const EarlyStopping::Best& best = rule_.best();
  return absl::StrFormat(
      " early_stopped=%d kept_epoch=%d kept_batch=%d "
      "best_valid_%s=%.5f",
      stopped_ ? 1 : 0, best.epoch, best.batch, rule_.metric_name(),
      best.value);
}

}  // namespace petrel
