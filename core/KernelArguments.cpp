#include "core/KernelArguments.h"

namespace lowbit::core {

std::vector<KernelArgument> kernelArguments(const Problem &problem, const Schedule &schedule) {
  std::vector<KernelArgument> arguments{KernelArgument::Activations};
  if (problem.activationScale != ActivationScale::None)
    arguments.push_back(KernelArgument::ActivationScales);
  arguments.push_back(KernelArgument::Weights);
  arguments.push_back(KernelArgument::Scales);
  if (problem.scheme.hasZeros())
    arguments.push_back(KernelArgument::Zeros);
  arguments.push_back(KernelArgument::Output);
  arguments.push_back(KernelArgument::Rows);
  if (schedule.streamK())
    arguments.push_back(KernelArgument::Workspace);
  return arguments;
}

void *KernelParameterValues::address(KernelArgument argument) {
  switch (argument) {
  case KernelArgument::Activations: return &x;
  case KernelArgument::ActivationScales: return &xScales;
  case KernelArgument::Weights: return &w;
  case KernelArgument::Scales: return &scales;
  case KernelArgument::Zeros: return &zeros;
  case KernelArgument::Output: return &y;
  case KernelArgument::Rows: return &rows;
  case KernelArgument::Workspace: return &workspace;
  }
  return nullptr;
}

const char *kernelArgumentName(KernelArgument argument) {
  switch (argument) {
  case KernelArgument::Activations:
    return "x";
  case KernelArgument::ActivationScales:
    return "x_scales";
  case KernelArgument::Weights:
    return "packed_w";
  case KernelArgument::Scales:
    return "scales";
  case KernelArgument::Zeros:
    return "zeros";
  case KernelArgument::Output:
    return "y";
  case KernelArgument::Rows:
    return "M";
  case KernelArgument::Workspace: return "workspace";
  }
  return "?";
}

} // namespace lowbit::core
