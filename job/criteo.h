// The shape of Criteo display-advertising data, which the reader
// (worker/data/criteo_reader.h), feature hashing (worker/data/feature_hash.h)
// and the MLP layout (job/model_layout.h) must all agree on: one label column,
// 13 integer columns, then 26 categorical columns. Every column after the label
// is one field (integer fields 0..12, categorical 13..38), and the integer
// columns are also the numeric features.
//
// Thread safety: constants only.
#ifndef PETREL_JOB_CRITEO_H_
#define PETREL_JOB_CRITEO_H_

namespace petrel {

inline constexpr int kCriteoIntegerFields = 13;
inline constexpr int kCriteoCategoricalFields = 26;
inline constexpr int kCriteoFields =
    kCriteoIntegerFields + kCriteoCategoricalFields;
inline constexpr int kCriteoNumeric = kCriteoIntegerFields;
// Columns of a TSV line: the label, then every field.
inline constexpr int kCriteoColumns = 1 + kCriteoFields;

}  // namespace petrel

#endif  // PETREL_JOB_CRITEO_H_
