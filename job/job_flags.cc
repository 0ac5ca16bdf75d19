#include "job/job_flags.h"

DEFINE_string(config, "",
              "The job config (protobuf text format, proto/job.proto): the "
              "tables and optimizers a server holds, the model and data a "
              "worker trains (--job=train), the checkpoints the scheduler "
              "coordinates; its num_servers/num_workers are the defaults of "
              "--num_servers/--num_workers. Give every process the same one. "
              "Default empty: a plain key-value store, no checkpoints.");
DEFINE_string(checkpoint_dir, "",
              "Where checkpoints go (with --config); overrides "
              "checkpoint.dir. Default empty.");
DEFINE_string(restore_from, "",
              "A checkpoint directory or 'latest' (in the checkpoint "
              "directory) the job continues from (with --config); overrides "
              "checkpoint.restore_from. Default empty.");
