// lowbit.h: contexts.
#include "lowbit/lowbit.h"
#include "runtime/api/DeviceContext.h"

using namespace lowbit::api;

extern "C" {

lowbit_status lowbit_context_create(const lowbit_context_options *options,
                                    lowbit_context **out_context) {
  return guardEntryPoint("lowbit_context_create", [&]() -> lowbit_status {
    if (!out_context)
      return recordFailure(LOWBIT_STATUS_INVALID_ARGUMENT,
                           "lowbit_context_create: out_context is NULL");
    *out_context = nullptr;
    if (!options)
      return recordFailure(LOWBIT_STATUS_INVALID_ARGUMENT,
                           "lowbit_context_create: options is NULL");
    if (ApiStatus s = checkInputStructSize(options, options->struct_size,
                                           sizeof(lowbit_context_options),
                                           "lowbit_context_options");
        !s)
      return recordFailure(s.error());
    Result<std::shared_ptr<ContextState>> state = createContextState(*options);
    if (!state)
      return recordFailure(state.error().status,
                           "lowbit_context_create: " + state.error().message);
    *out_context = new lowbit_context{std::move(*state)};
    return LOWBIT_STATUS_SUCCESS;
  });
}

lowbit_status lowbit_context_destroy(lowbit_context *context) {
  return guardEntryPoint("lowbit_context_destroy", [&]() -> lowbit_status {
    delete context;
    return LOWBIT_STATUS_SUCCESS;
  });
}

} // extern "C"
