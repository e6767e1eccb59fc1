// Storage types for the two 16-bit floats, usable from host code with no CUDA headers.
//
// They are plain bit containers with conversions to and from float. Arithmetic is always done
// in float: primitives load a 16-bit value, widen it, compute, and narrow once on store.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace oneflite {

namespace internal {

inline uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}
inline float BitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

// d rounded to a float toward zero, with the lowest mantissa bit set when that was inexact
// ("round to odd"). A float so rounded, then rounded to nearest into a type of at most 22
// mantissa bits, gives exactly the nearest value to d: the odd bit remembers that d was not
// on a tie, so double rounding cannot go wrong.
inline float RoundToOddFloat(double d) {
  float f = static_cast<float>(d);
  if (f != f) { return f; }  // NaN
  if (static_cast<double>(f) == d) { return f; }
  if (std::fabs(static_cast<double>(f)) > std::fabs(d)) {
    f = std::nextafter(f, 0.0f);  // rounded away from zero: step back toward it
  }
  return BitsFloat(FloatBits(f) | 1u);
}

}  // namespace internal

// IEEE 754 binary16: 1 sign bit, 5 exponent bits, 10 mantissa bits.
struct float16 {
  uint16_t bits = 0;

  float16() = default;
  explicit float16(float f) : bits(FromFloat(f)) {}
  // One rounding from double (not two, as through a float).
  explicit float16(double d) : bits(FromFloat(internal::RoundToOddFloat(d))) {}
  explicit operator float() const { return ToFloat(bits); }

  static float ToFloat(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t exponent = (h >> 10) & 0x1fu;
    uint32_t mantissa = h & 0x3ffu;
    if (exponent == 0x1f) {  // inf or NaN: keep the payload
      return internal::BitsFloat(sign | 0x7f800000u | (mantissa << 13));
    }
    if (exponent != 0) {  // normal: rebias 15 -> 127
      return internal::BitsFloat(sign | ((exponent + 112) << 23) | (mantissa << 13));
    }
    if (mantissa == 0) { return internal::BitsFloat(sign); }
    // Subnormal half: every one is a normal float, so value = mantissa * 2^-24 exactly.
    const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
    return sign ? -magnitude : magnitude;
  }

  // Round to nearest, ties to even, as hardware conversion does.
  static uint16_t FromFloat(float f) {
    const uint32_t u = internal::FloatBits(f);
    const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
    const uint32_t abs = u & 0x7fffffffu;
    if (abs >= 0x7f800000u) {  // inf or NaN; NaN stays a quiet NaN
      return sign | (abs > 0x7f800000u ? 0x7e00u : 0x7c00u);
    }
    if (abs >= 0x477ff000u) { return sign | 0x7c00u; }  // rounds past 65504: overflow to inf
    if (abs < 0x38800000u) {  // below the smallest normal half (2^-14): subnormal or zero
      // Scale so the half subnormal grid (2^-24) becomes integers, then let the FPU round.
      const float scaled = internal::BitsFloat(abs) * 16777216.0f;  // * 2^24
      return sign | static_cast<uint16_t>(NearbyIntEven(scaled));
    }
    // Normal: drop 13 mantissa bits with round-to-nearest-even, rebias 127 -> 15.
    const uint32_t rounded = abs + 0xfffu + ((abs >> 13) & 1u);
    return sign | static_cast<uint16_t>((rounded - (112u << 23)) >> 13);
  }

 private:
  static uint32_t NearbyIntEven(float x) {
    const uint32_t whole = static_cast<uint32_t>(x);
    const float frac = x - static_cast<float>(whole);
    if (frac > 0.5f || (frac == 0.5f && (whole & 1u))) { return whole + 1; }
    return whole;
  }
};

// bfloat16: the upper half of a float32 (1 sign, 8 exponent, 7 mantissa bits).
struct bfloat16 {
  uint16_t bits = 0;

  bfloat16() = default;
  explicit bfloat16(float f) : bits(FromFloat(f)) {}
  // One rounding from double (not two, as through a float).
  explicit bfloat16(double d) : bits(FromFloat(internal::RoundToOddFloat(d))) {}
  explicit operator float() const { return ToFloat(bits); }

  static float ToFloat(uint16_t b) { return internal::BitsFloat(static_cast<uint32_t>(b) << 16); }

  // Round to nearest, ties to even; NaN stays a quiet NaN.
  static uint16_t FromFloat(float f) {
    const uint32_t u = internal::FloatBits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) { return static_cast<uint16_t>((u >> 16) | 0x0040u); }
    return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  }
};

static_assert(sizeof(float16) == 2 && sizeof(bfloat16) == 2);

}  // namespace oneflite
