#include "checkpoint/root_lock.h"

#include <string>
#include <thread>

#include <sys/wait.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "checkpoint/checkpoint_dir.h"

namespace petrel {
namespace {

using ::testing::HasSubstr;

std::string Root(const std::string& name) {
  const std::string root =
      absl::StrCat(::testing::TempDir(), "/root_lock_test_", getpid(), name);
  EXPECT_TRUE(CheckWritableDir(root).ok());
  return root;
}

TEST(CheckpointRootLockTest, ASecondHolderIsRefusedNamingTheFirst) {
  const std::string root = Root("second");
  absl::StatusOr<std::unique_ptr<CheckpointRootLock>> first =
      CheckpointRootLock::Acquire(root);
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<std::unique_ptr<CheckpointRootLock>> second =
      CheckpointRootLock::Acquire(root);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(second.status().message(),
              HasSubstr(absl::StrCat("scheduler pid ", getpid(), " on ")));
  EXPECT_THAT(second.status().message(), HasSubstr("is in use by another job"));
  // Released with its holder: the next one gets it.
  first->reset();
  EXPECT_TRUE(CheckpointRootLock::Acquire(root).ok());
  // Not a checkpoint: listing and retention pass it by.
  EXPECT_TRUE(ListCheckpoints(root).value().empty());
  EXPECT_TRUE(RetainCheckpoints(root, 1).ok());
}

// A holder that goes within the wait hands the root over.
TEST(CheckpointRootLockTest, WaitsForAHolderThatIsOnItsWayOut) {
  const std::string root = Root("wait");
  absl::StatusOr<std::unique_ptr<CheckpointRootLock>> first =
      CheckpointRootLock::Acquire(root);
  ASSERT_TRUE(first.ok()) << first.status();
  absl::Notification trying;
  absl::StatusOr<std::unique_ptr<CheckpointRootLock>> second;
  std::thread waiter([&] {
    trying.Notify();
    second = CheckpointRootLock::Acquire(root, absl::Seconds(60));
  });
  trying.WaitForNotification();
  first->reset();
  waiter.join();
  EXPECT_TRUE(second.ok()) << second.status();
}

// The kernel releases the lock of a process that dies without a word
// (kill -9): a restarted job finds the root free.
TEST(CheckpointRootLockTest, AKilledHoldersLockIsReleased) {
  const std::string root = Root("killed");
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto lock = CheckpointRootLock::Acquire(root);
    const char byte = lock.ok() ? 1 : 0;
    if (write(ready[1], &byte, 1) != 1) _exit(1);
    pause();  // until killed
    _exit(0);
  }
  close(ready[1]);
  char byte = 0;
  ASSERT_EQ(read(ready[0], &byte, 1), 1);
  ASSERT_EQ(byte, 1);
  EXPECT_EQ(CheckpointRootLock::Acquire(root).status().code(),
            absl::StatusCode::kFailedPrecondition);
  kill(child, SIGKILL);
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
  EXPECT_TRUE(CheckpointRootLock::Acquire(root).ok());
  close(ready[0]);
}

TEST(CheckpointRootLockTest, AMissingRootIsUnavailableNamingIt) {
  absl::StatusOr<std::unique_ptr<CheckpointRootLock>> lock =
      CheckpointRootLock::Acquire("/nonexistent-petrel-root");
  ASSERT_FALSE(lock.ok());
  EXPECT_EQ(lock.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(lock.status().message(),
              HasSubstr("/nonexistent-petrel-root/LOCK"));
}

}  // namespace
}  // namespace petrel
