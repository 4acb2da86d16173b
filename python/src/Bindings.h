// The three parts of lowbit._lowbit, one file each.
#pragma once

#include "core/checkpoint/KernelWeights.h"

#include <nanobind/nanobind.h>

namespace lowbit::python {

// Problem: the typed model (core/Problem.h), its one parse and one print.
void bindProblem(nanobind::module_ &m);
// KernelWeights, quantize and the checkpoint importers (core/formats,
// core/checkpoint), and the kernel-set spec printer (compiler/spec).
void bindWeights(nanobind::module_ &m);
// The problem a plan for `weights` is made for: the kernels' problem, with
// act_order set when the columns were sorted by group (the plan then gathers
// x by the permutation). KernelWeights.problem in Python is this one.
core::Problem planProblem(const checkpoint::KernelWeights &weights);
// Context and Plan over lowbit.h.
void bindRuntime(nanobind::module_ &m);

} // namespace lowbit::python
