// lowbit._lowbit: the runtime's C ABI (Context, Plan), the typed problem
// model, and the formats library's quantizers and checkpoint importers, for
// the Python package (python/lowbit). Everything here calls the libraries;
// nothing packs, quantizes or decodes on its own.
#include "Bindings.h"
#include "Errors.h"

#include <nanobind/nanobind.h>

namespace nb = nanobind;

namespace lowbit::python {

void check(lowbit_status status, const char *call) {
  if (status == LOWBIT_STATUS_SUCCESS)
    return;
  throw StatusError(status, std::string(call) + " failed (" + lowbit_status_string(status) +
                                "): " + lowbit_last_error());
}

} // namespace lowbit::python

NB_MODULE(_lowbit, m) {
  m.doc() = "lowbit's runtime, typed problem model and formats library";
  m.attr("__version__") = lowbit_version_string();

  // LowbitError(RuntimeError) with .status, the lowbit_status of the call.
  // The module owns the type; the translator borrows it (an owning static
  // would outlive the interpreter).
  static nb::handle lowbitError =
      PyErr_NewException("lowbit._lowbit.LowbitError", PyExc_RuntimeError, nullptr);
  m.attr("LowbitError") = nb::steal(lowbitError);
  nb::register_exception_translator([](const std::exception_ptr &thrown, void *) {
    try {
      std::rethrow_exception(thrown);
    } catch (const lowbit::python::StatusError &e) {
      nb::object error = lowbitError(e.what());
      error.attr("status") = static_cast<int>(e.status());
      PyErr_SetObject(lowbitError.ptr(), error.ptr());
    }
  });

  lowbit::python::bindProblem(m);
  lowbit::python::bindWeights(m);
  lowbit::python::bindRuntime(m);
}
