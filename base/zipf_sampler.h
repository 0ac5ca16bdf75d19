// ZipfSampler: draws k in [1, n] with P(k) proportional to k^-exponent, in
// O(1) expected time and O(1) memory whatever n, by rejection-inversion
// (W. Hörmann and G. Derflinger, "Rejection-inversion to generate variates
// from monotone discrete distributions", 1996). petrel-datagen draws
// categorical values with it, petrel-bench Zipf key streams.
//
// The caller brings the uniform source, so that each tool keeps its own
// generator (datagen's must give the same bytes on every platform).
//
// Thread safety: immutable after construction; Sample touches only the
// caller's source.
#ifndef PETREL_BASE_ZIPF_SAMPLER_H_
#define PETREL_BASE_ZIPF_SAMPLER_H_

#include <cstdint>

namespace petrel {

class ZipfSampler {
 public:
  // REQUIRES: n >= 1, exponent > 0.
  ZipfSampler(int64_t n, double exponent);

  // One draw in [1, n]; `uniform01()` returns doubles uniform in [0, 1).
  template <typename Uniform01>
  int64_t Sample(Uniform01&& uniform01) const {
    int64_t k = 0;
    while (!TryDraw(uniform01(), &k)) {
    }
    return k;
  }

  int64_t n() const { return n_; }
  double exponent() const { return exponent_; }

 private:
  // One rejection-inversion step from a uniform draw `u01`: true, with *k
  // set, when the step accepts.
  bool TryDraw(double u01, int64_t* k) const;
  double H(double x) const;
  double HIntegral(double x) const;
  double HIntegralInverse(double x) const;

  int64_t n_;
  double exponent_;
  double h_integral_x1_;
  double h_integral_n_;
  double s_;
};

}  // namespace petrel

#endif  // PETREL_BASE_ZIPF_SAMPLER_H_
