#include "worker/data/reader.h"

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"

#include "worker/data/feature_hash.h"
#include "worker/testing/temp_file.h"

namespace petrel {
namespace {

ReaderOptions Options(DataFormat format, std::vector<std::string> files,
                      int rank = 0, int workers = 1) {
  ReaderOptions options;
  options.format = format;
  options.files = std::move(files);
  options.worker_rank = rank;
  options.num_workers = workers;
  options.read_buffer_bytes = 64;  // exercise refills and growth
  return options;
}

// All examples of a reader as "label:key,key,..." strings, read in batches
// of `batch_size`; checks that every batch but the last is full.
std::vector<std::string> ReadAll(Reader* reader, int batch_size) {
  std::vector<std::string> examples;
  Batch batch;
  bool saw_partial = false;
  while (true) {
    absl::StatusOr<bool> more = reader->Next(batch_size, &batch);
    EXPECT_TRUE(more.ok()) << more.status();
    if (!more.ok() || !*more) break;
    EXPECT_FALSE(saw_partial) << "a partial batch before the end";
    saw_partial = batch.size() < static_cast<size_t>(batch_size);
    EXPECT_LE(batch.size(), static_cast<size_t>(batch_size));
    for (size_t i = 0; i < batch.size(); ++i) {
      std::vector<uint64_t> keys(batch.keys.begin() + batch.offsets[i],
                                 batch.keys.begin() + batch.offsets[i + 1]);
      examples.push_back(
          absl::StrCat(batch.labels[i], ":", absl::StrJoin(keys, ",")));
    }
  }
  EXPECT_EQ(batch.size(), 0u);
  return examples;
}

std::string LibsvmLines(int begin, int end) {
  std::string text;
  for (int i = begin; i < end; ++i) {
    absl::StrAppend(&text, i % 2 ? "+1" : "-1", " ", i, ":1 ", 1000 + i,
                    ":0.5\n");
  }
  return text;
}

TEST(ReaderTest, ThreeWorkersReadEveryExampleOnce) {
  std::string last = LibsvmLines(40, 57);
  last.pop_back();  // no trailing newline
  const std::vector<std::string> files = {
      WriteTempFile("a", LibsvmLines(0, 30)),
      WriteTempFile("b", LibsvmLines(30, 40)), WriteTempFile("c", last)};
  std::vector<std::string> all =
      ReadAll(OpenReader(Options(DataFormat::kLibsvm, files))->get(), 7);
  ASSERT_EQ(all.size(), 57u);
  EXPECT_EQ(all[0], "0:0,1000");
  EXPECT_EQ(all[55], "1:55,1055");
  EXPECT_EQ(all[56], "0:56,1056");
  std::vector<std::string> joined;
  for (int rank = 0; rank < 3; ++rank) {
    auto reader = OpenReader(Options(DataFormat::kLibsvm, files, rank, 3));
    ASSERT_TRUE(reader.ok()) << reader.status();
    std::vector<std::string> share = ReadAll(reader->get(), 4);
    EXPECT_GT(share.size(), 10u) << "rank " << rank;
    joined.insert(joined.end(), share.begin(), share.end());
  }
  EXPECT_EQ(joined, all);
}

TEST(ReaderTest, CriteoSharesCoverTheFile) {
  std::string text;
  for (int i = 0; i < 50; ++i) {
    std::vector<std::string> fields(40);
    fields[0] = i % 3 ? "0" : "1";
    fields[1] = absl::StrCat(i);
    fields[14] = absl::StrCat("c", i);
    absl::StrAppend(&text, absl::StrJoin(fields, "\t"), "\n");
  }
  const std::string file = WriteTempFile("criteo", text);
  std::vector<std::string> all =
      ReadAll(OpenReader(Options(DataFormat::kCriteo, {file}))->get(), 16);
  ASSERT_EQ(all.size(), 50u);
  EXPECT_EQ(all[7], absl::StrCat("0:", CriteoIntegerKey(0, 7), ",",
                                 HashFeature(13, "c7")));
  std::vector<std::string> joined;
  for (int rank = 0; rank < 3; ++rank) {
    auto reader = OpenReader(Options(DataFormat::kCriteo, {file}, rank, 3));
    ASSERT_TRUE(reader.ok());
    std::vector<std::string> share = ReadAll(reader->get(), 5);
    joined.insert(joined.end(), share.begin(), share.end());
  }
  EXPECT_EQ(joined, all);
}

TEST(ReaderTest, RewindReadsTheShareAgain) {
  const std::string file = WriteTempFile("r", LibsvmLines(0, 20));
  auto reader = OpenReader(Options(DataFormat::kLibsvm, {file}, 1, 2));
  ASSERT_TRUE(reader.ok());
  std::vector<std::string> first = ReadAll(reader->get(), 3);
  EXPECT_GT(first.size(), 5u);
  EXPECT_LT(first.size(), 15u);
  ASSERT_TRUE((*reader)->Rewind().ok());
  EXPECT_EQ(ReadAll(reader->get(), 6), first);
}

TEST(ReaderTest, MalformedLineNamesFileAndLine) {
  // The bad line is in the second worker's share, which starts mid-file.
  const std::string file = WriteTempFile(
      "bad", LibsvmLines(0, 12) + "1 4:x\n" + LibsvmLines(13, 20));
  auto reader = OpenReader(Options(DataFormat::kLibsvm, {file}, 1, 2));
  ASSERT_TRUE(reader.ok());
  Batch batch;
  absl::StatusOr<bool> more;
  do {
    more = (*reader)->Next(2, &batch);
  } while (more.ok() && *more);
  EXPECT_EQ(more.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(more.status().message(),
            absl::StrCat(file,
                         ":13: value 'x' of index 4 is not a finite "
                         "float"));
}

TEST(ReaderTest, CriteoMalformedLineNamesFileAndLine) {
  std::vector<std::string> fields(40);
  fields[0] = "1";
  const std::string good = absl::StrJoin(fields, "\t") + "\n";
  const std::string file = WriteTempFile("bad", good + good + "1\t2\n" + good);
  auto reader = OpenReader(Options(DataFormat::kCriteo, {file}));
  ASSERT_TRUE(reader.ok());
  Batch batch;
  absl::StatusOr<bool> more = (*reader)->Next(10, &batch);
  EXPECT_EQ(more.status().message(),
            absl::StrCat(file,
                         ":3: line has 2 tab-separated fields, "
                         "expected 40"));
}

TEST(ReaderTest, SkipsAndCountsMalformedLines) {
  const std::string file = WriteTempFile(
      "skip", "1 1:1\n2 1:1\n\n0 2:2\n1 x:1\n# comment\n0 3:3 4:oops\n1 5:5");
  ReaderOptions options = Options(DataFormat::kLibsvm, {file});
  options.skip_malformed = true;
  auto reader = OpenReader(options);
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ(ReadAll(reader->get(), 2),
            (std::vector<std::string>{"1:1", "0:2", "1:5"}));
  EXPECT_EQ((*reader)->malformed_lines(), 3);
  ASSERT_TRUE((*reader)->Rewind().ok());
  ReadAll(reader->get(), 2);
  EXPECT_EQ((*reader)->malformed_lines(), 6);
}

// A Criteo line with label, integer column I1 and categorical column C1.
std::string CriteoLine(int label, const std::string& i1,
                       const std::string& c1) {
  std::vector<std::string> fields(40);
  fields[0] = absl::StrCat(label);
  fields[1] = i1;
  fields[14] = c1;
  return absl::StrJoin(fields, "\t") + "\n";
}

TEST(ReaderTest, CriteoFieldsAndNumericStayAlignedAcrossSkipsAndBatches) {
  // Line 3 fails after I1 was parsed (I2 is not an integer), leaving a
  // half-parsed example that must vanish from every part of the batch.
  std::string bad = CriteoLine(1, "9", "bad");
  bad.replace(bad.find("\t\t"), 2, "\tx\t");
  const std::string file = WriteTempFile(
      "fields", CriteoLine(1, "0", "a") + CriteoLine(0, "", "b") + bad +
                    CriteoLine(1, "20", "") + CriteoLine(0, "3", "d"));
  ReaderOptions options = Options(DataFormat::kCriteo, {file});
  options.skip_malformed = true;
  options.with_fields = true;
  options.with_numeric = true;
  auto reader = OpenReader(options);
  ASSERT_TRUE(reader.ok());
  std::vector<uint32_t> fields;
  std::vector<float> numeric_i1;
  Batch batch;
  for (int batches = 0; (*reader)->Next(3, &batch).value_or(false); ++batches) {
    ASSERT_LT(batches, 2);
    ASSERT_EQ(batch.fields.size(), batch.nnz());
    ASSERT_EQ(batch.num_numeric, 13);
    ASSERT_EQ(batch.numeric.size(), batch.size() * 13);
    fields.insert(fields.end(), batch.fields.begin(), batch.fields.end());
    for (size_t i = 0; i < batch.size(); ++i) {
      numeric_i1.push_back(batch.numeric[i * 13]);
      EXPECT_EQ(batch.numeric[i * 13 + 1], 0.0f);  // I2 always missing
    }
  }
  EXPECT_EQ((*reader)->malformed_lines(), 1);
  EXPECT_EQ(fields, (std::vector<uint32_t>{0, 13, 13, 0, 0, 13}));
  EXPECT_EQ(numeric_i1, (std::vector<float>{0.0f, 0.0f, std::log1p(20.0f),
                                            std::log1p(3.0f)}));
  EXPECT_EQ(batch.size(), 0u);
  EXPECT_TRUE(batch.fields.empty() && batch.numeric.empty());
}

TEST(ReaderTest, FieldsAndNumericAreOffByDefault) {
  const std::string file = WriteTempFile("plain", CriteoLine(1, "5", "a"));
  auto reader = OpenReader(Options(DataFormat::kCriteo, {file}));
  ASSERT_TRUE(reader.ok());
  Batch batch;
  ASSERT_TRUE((*reader)->Next(4, &batch).value_or(false));
  EXPECT_EQ(batch.nnz(), 2u);
  EXPECT_TRUE(batch.fields.empty());
  EXPECT_TRUE(batch.numeric.empty());
  EXPECT_EQ(batch.num_numeric, 0);
}

TEST(ReaderTest, TruncatedFileIsDataLoss) {
  const std::string file = WriteTempFile("t", LibsvmLines(0, 50));
  auto reader = OpenReader(Options(DataFormat::kLibsvm, {file}));
  ASSERT_TRUE(reader.ok());
  ASSERT_EQ(truncate(file.c_str(), 100), 0);
  Batch batch;
  absl::StatusOr<bool> more;
  do {
    more = (*reader)->Next(8, &batch);
  } while (more.ok() && *more);
  EXPECT_EQ(more.status().code(), absl::StatusCode::kDataLoss);
}

// The first error of reading `file` to the end with `options`.
absl::Status FirstError(ReaderOptions options) {
  auto reader = OpenReader(options);
  if (!reader.ok()) return reader.status();
  Batch batch;
  absl::StatusOr<bool> more;
  do {
    more = (*reader)->Next(2, &batch);
  } while (more.ok() && *more);
  return more.status();
}

TEST(ReaderTest, NonFiniteValuesAreMalformedNamingFileAndLine) {
  for (const char* bad : {"nan", "NaN", "inf", "-inf", "1e39"}) {
    const std::string file =
        WriteTempFile("nonfinite", absl::StrCat("1 1:1\n0 2:", bad, "\n"));
    absl::Status s = FirstError(Options(DataFormat::kLibsvm, {file}));
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(s.message(), absl::StrCat(file, ":2: value '", bad,
                                        "' of index 2 is not a finite float"));
  }
}

TEST(ReaderTest, ValuesAboveMaxAbsValueAreRejectedSkippedOrClipped) {
  const std::string file =
      WriteTempFile("huge", "1 1:1\n0 2:1e20\n1 3:-2e6 4:0.5\n0 5:1e6\n");
  ReaderOptions options = Options(DataFormat::kLibsvm, {file});
  options.max_abs_value = 1e6f;
  absl::Status s = FirstError(options);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            absl::StrCat(file,
                         ":2: value 1e+20 of index 2 is above "
                         "data.max_abs_value 1e+06 in magnitude "
                         "(data.out_of_range: OUT_OF_RANGE_CLIP clips "
                         "it)"));
  options.skip_malformed = true;
  auto reader = OpenReader(options);
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ(ReadAll(reader->get(), 3),
            (std::vector<std::string>{"1:1", "0:5"}));
  EXPECT_EQ((*reader)->malformed_lines(), 2);
  options.skip_malformed = false;
  options.clip_out_of_range = true;
  options.max_abs_value = 100;
  reader = OpenReader(options);
  ASSERT_TRUE(reader.ok());
  Batch batch;
  ASSERT_TRUE((*reader)->Next(10, &batch).ok());
  EXPECT_EQ(batch.values, (std::vector<float>{1, 100, -100, 0.5f, 100}));
}

// The default limit, 1e9, keeps raw counts and sizes and refuses what
// would overflow the optimizers' accumulated squares.
TEST(ReaderTest, DefaultMaxAbsValueIsOneBillion) {
  const std::string file = WriteTempFile("large", "1 1:5e8 2:-1e9\n0 3:2e9\n");
  ReaderOptions options = Options(DataFormat::kLibsvm, {file});
  absl::Status s = FirstError(options);
  EXPECT_EQ(s.message(),
            absl::StrCat(file,
                         ":2: value 2e+09 of index 3 is above "
                         "data.max_abs_value 1e+09 in magnitude "
                         "(data.out_of_range: OUT_OF_RANGE_CLIP clips "
                         "it)"));
}

TEST(ReaderTest, RejectsBadOptions) {
  const std::string file = WriteTempFile("ok", "1 1:1\n");
  EXPECT_EQ(OpenReader(Options(DataFormat::kLibsvm, {})).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      OpenReader(Options(DataFormat::kCriteo, {file}, 3, 3)).status().code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      OpenReader(Options(DataFormat::kLibsvm, {file + "x"})).status().code(),
      absl::StatusCode::kNotFound);
  auto reader = OpenReader(Options(DataFormat::kLibsvm, {file}));
  ASSERT_TRUE(reader.ok());
  Batch batch;
  EXPECT_EQ((*reader)->Next(0, &batch).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace petrel
