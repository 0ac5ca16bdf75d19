// The job-config flags every node binary shares (--config, --checkpoint_dir,
// --restore_from), defined once so that one program can run in every role
// (petrel-worker as a scheduler or server when DMLC_ROLE says so) with the
// same command line. Part of the flags module of node binaries: linked into
// executables only, never into a library.
#ifndef PETREL_JOB_JOB_FLAGS_H_
#define PETREL_JOB_JOB_FLAGS_H_

#include "gflags/gflags.h"

DECLARE_string(config);
DECLARE_string(checkpoint_dir);
DECLARE_string(restore_from);

#endif  // PETREL_JOB_JOB_FLAGS_H_
