// NumPy arrays out of the bindings and buffers into them. Inputs arrive as
// any DLPack or buffer-protocol array on the CPU (NumPy, torch CPU tensors);
// each is checked for its dtype, rank and contiguity before its bytes are
// read, so a wrong array is a ValueError that names the argument.
#pragma once

#include <nanobind/ndarray.h>

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <vector>

namespace lowbit::python {

using HostArray = nanobind::ndarray<nanobind::device::cpu>;

// A NumPy array that owns `data`.
template <typename T>
nanobind::ndarray<nanobind::numpy, T> toNumpy(std::vector<T> data,
                                              std::initializer_list<size_t> shape) {
  auto *owned = new std::vector<T>(std::move(data));
  nanobind::capsule owner(owned,
                          [](void *p) noexcept { delete static_cast<std::vector<T> *>(p); });
  return nanobind::ndarray<nanobind::numpy, T>(owned->data(), shape, owner);
}

// The same as a Python object. Properties return this: their default
// return policy (reference_internal) cannot apply to an array that owns its
// data.
template <typename T>
nanobind::object toNumpyObject(std::vector<T> data, std::initializer_list<size_t> shape) {
  return nanobind::cast(toNumpy(std::move(data), shape), nanobind::rv_policy::automatic);
}

// The element type an argument must have: its DLPack code and bits.
struct ElementType {
  nanobind::dlpack::dtype_code code;
  int bits;
  const char *name;
};
constexpr ElementType kInt32{nanobind::dlpack::dtype_code::Int, 32, "int32"};
constexpr ElementType kInt64{nanobind::dlpack::dtype_code::Int, 64, "int64"};
constexpr ElementType kUInt8{nanobind::dlpack::dtype_code::UInt, 8, "uint8"};
constexpr ElementType kFloat16{nanobind::dlpack::dtype_code::Float, 16, "float16"};
constexpr ElementType kFloat32{nanobind::dlpack::dtype_code::Float, 32, "float32"};
constexpr ElementType kFloat64{nanobind::dlpack::dtype_code::Float, 64, "float64"};

inline bool hasType(const HostArray &a, const ElementType &type) {
  return a.dtype().code == static_cast<uint8_t>(type.code) && a.dtype().bits == type.bits &&
         a.dtype().lanes == 1;
}

inline bool isContiguous(const HostArray &a) {
  int64_t expected = 1;
  for (size_t d = a.ndim(); d-- > 0;) {
    if (a.shape(d) != 1 && a.stride(d) != expected)
      return false;
    expected *= static_cast<int64_t>(a.shape(d));
  }
  return true;
}

// Checks `a` (named `what`) and returns its shape.
inline std::vector<size_t> checkArray(const HostArray &a, const char *what,
                                      std::initializer_list<ElementType> types, size_t ndim) {
  bool typed = false;
  std::string allowed;
  for (const ElementType &t : types) {
    typed = typed || hasType(a, t);
    allowed += (allowed.empty() ? "" : " or ") + std::string(t.name);
  }
  if (!typed)
    throw std::invalid_argument(std::string(what) + " must be " + allowed);
  if (a.ndim() != ndim)
    throw std::invalid_argument(std::string(what) + " must have " + std::to_string(ndim) +
                                " dimensions, it has " + std::to_string(a.ndim()));
  if (!isContiguous(a))
    throw std::invalid_argument(std::string(what) + " must be contiguous (row-major)");
  std::vector<size_t> shape;
  for (size_t d = 0; d < ndim; ++d)
    shape.push_back(a.shape(d));
  return shape;
}

// The array's elements as T (same size), copied.
template <typename T> std::vector<T> copyOf(const HostArray &a) {
  std::vector<T> out(a.size());
  if (a.size() > 0)
    std::memcpy(out.data(), a.data(), a.size() * sizeof(T));
  return out;
}

// An index array (int32 or int64) as int32, each value checked to fit.
inline std::vector<int32_t> indicesOf(const HostArray &a, const char *what) {
  if (hasType(a, kInt32))
    return copyOf<int32_t>(a);
  std::vector<int64_t> wide = copyOf<int64_t>(a);
  std::vector<int32_t> out;
  out.reserve(wide.size());
  for (int64_t v : wide) {
    if (v < INT32_MIN || v > INT32_MAX)
      throw std::invalid_argument(std::string(what) + " holds " + std::to_string(v) +
                                  ", which does not fit int32");
    out.push_back(static_cast<int32_t>(v));
  }
  return out;
}

} // namespace lowbit::python
