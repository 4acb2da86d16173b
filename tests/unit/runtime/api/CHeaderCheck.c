/* Compiled as strict C99 (-std=c99 -pedantic -Wall -Wextra -Werror) by the
 * test build: lowbit.h must stay plain C for host applications. The function
 * is called from CApiTest so this object is really linked, not just built. */
#include "lowbit/lowbit.h"

int lowbit_c_header_check(void);

int lowbit_c_header_check(void) {
  lowbit_problem problem = {0};
  lowbit_context_options options = {0};
  lowbit_choice choice = {0};
  lowbit_weights weights = {0};
  lowbit_status status = LOWBIT_STATUS_SUCCESS;
  problem.struct_size = sizeof problem;
  problem.activation = LOWBIT_DTYPE_F16;
  problem.weight = LOWBIT_WEIGHT_UINT4;
  problem.granularity = LOWBIT_GRANULARITY_GROUP;
  problem.zero = LOWBIT_ZERO_NONE;
  options.struct_size = sizeof options;
  choice.struct_size = sizeof choice;
  weights.struct_size = sizeof weights;
  (void)status;
  return LOWBIT_VERSION == 100 * (100 * LOWBIT_VERSION_MAJOR + LOWBIT_VERSION_MINOR) +
                               LOWBIT_VERSION_PATCH &&
         problem.struct_size > 0 && options.struct_size > 0 && choice.struct_size > 0 &&
         weights.struct_size > 0;
}
