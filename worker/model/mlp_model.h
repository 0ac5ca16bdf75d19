// The embedding + MLP model (model.kind KIND_MLP), optionally Wide & Deep.
//
// For example i: each field's embeddings (table kEmbeddingTable, dim d)
// pooled by sum or mean (kernels/embedding.h), concatenated with the
// numeric features, through the hidden ReLU layers and an output layer of
// width 1 (weights and biases from dense table kMlpTable, laid out as
// job/model_layout.h says); with `wide`, the LR logit over the same keys
// (table kLinearTable, bias last) is added. The loss is sigmoid
// cross-entropy; gradients are sums over the batch. With model.dropout,
// each training batch multiplies every hidden layer's output (after its
// ReLU) by a mask of 0 and 1 / (1 - dropout) (worker/model/dropout_mask.h, a
// new one per batch) and its gradient by the same mask; Predict uses no mask.
// Dropout runs on the CPU only (CreateMlpModel refuses it on CUDA).
//
// The same code runs on the CPU and on a GPU through the device-neutral
// kernels: on CUDA the batch and the pulled rows go through pinned host
// buffers to the device on the context's stream, and the gradients come
// back the same way. The first layer is two GEMMs (pooled embeddings and
// numeric features against the two row blocks of its W), so the input is
// never concatenated.
//
// Thread safety: not thread-safe (one per trainer thread).
#ifndef PETREL_WORKER_MODEL_MLP_MODEL_H_
#define PETREL_WORKER_MODEL_MLP_MODEL_H_

#include <memory>

#include "absl/status/statusor.h"

#include "kernels/device.h"
#include "proto/job.pb.h"
#include "worker/model/model.h"

namespace petrel {

// InvalidArgument for an invalid model config (job/model_layout.h).
absl::StatusOr<std::unique_ptr<Model>> CreateMlpModel(const pb::JobConfig& job,
                                                      const Device& device);

}  // namespace petrel

#endif  // PETREL_WORKER_MODEL_MLP_MODEL_H_
