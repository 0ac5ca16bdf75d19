#include "job/checkpoint_protocol.h"

#include "gtest/gtest.h"

namespace petrel {
namespace {

TEST(CheckpointProtocolTest, WorkerPositionRoundTrips) {
  pb::WorkerPosition p;
  p.set_rank(3);
  p.set_epoch(1);
  p.set_examples_in_epoch(4096);
  p.set_clock(17);
  absl::StatusOr<pb::WorkerPosition> back =
      DecodeWorkerPosition(EncodeWorkerPosition(p));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->rank(), 3);
  EXPECT_EQ(back->examples_in_epoch(), 4096);
  EXPECT_EQ(back->clock(), 17);
}

TEST(CheckpointProtocolTest, RejectsMalformedPosition) {
  EXPECT_EQ(DecodeWorkerPosition("not base64 !").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(CheckpointProtocolTest, SaveReplyCarriesFilesOrTheError) {
  pb::CheckpointManifest m;
  m.add_files()->set_name("table-0.server-1");
  absl::StatusOr<pb::CheckpointManifest> ok =
      DecodeSaveReply(EncodeSaveReply(m));
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->files(0).name(), "table-0.server-1");

  absl::StatusOr<pb::CheckpointManifest> err = DecodeSaveReply(
      EncodeSaveReply(absl::UnavailableError("/ckpt/x: No space left")));
  EXPECT_EQ(err.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(err.status().message(), "/ckpt/x: No space left");
}

TEST(CheckpointProtocolTest, RejectsMalformedSaveReply) {
  for (const char* body : {"", "OK", "OK !!", "ERROR", "ERROR x y",
                           "ERROR 99 too big", "ERROR 0 ok"}) {
    EXPECT_EQ(DecodeSaveReply(body).status().code(),
              absl::StatusCode::kInvalidArgument)
        << body;
  }
}

}  // namespace
}  // namespace petrel
