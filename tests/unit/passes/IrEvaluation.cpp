#include "tests/unit/passes/IrEvaluation.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

#include <algorithm>
#include <set>

namespace lowbit::testing {

using namespace mlir;

static std::optional<int64_t> lastIteration(scf::ForOp loop, const Env &env) {
  std::optional<int64_t> lo = evaluate(loop.getLowerBound(), env),
                         hi = evaluate(loop.getUpperBound(), env),
                         step = evaluate(loop.getStep(), env);
  if (!lo || !hi || !step || *step <= 0 || *hi <= *lo)
    return std::nullopt;
  return *lo + (*hi - *lo - 1) / *step * *step;
}

std::optional<std::pair<Value, Env>> origin(Value value, Env env) {
  for (;;) {
    if (auto argument = dyn_cast<BlockArgument>(value)) {
      auto loop = dyn_cast<scf::ForOp>(argument.getOwner()->getParentOp());
      if (!loop || argument.getArgNumber() == 0)
        return std::make_pair(value, env);
      auto at = env.iteration.find(loop);
      std::optional<int64_t> lo = evaluate(loop.getLowerBound(), env),
                             step = evaluate(loop.getStep(), env);
      if (at == env.iteration.end() || !lo || !step)
        return std::nullopt;
      unsigned carried = argument.getArgNumber() - 1;
      if (at->second == *lo) {
        env.iteration.erase(loop);
        value = loop.getInitArgs()[carried];
      } else {
        at->second -= *step;
        value = loop.getBody()->getTerminator()->getOperand(carried);
      }
      continue;
    }
    Operation *op = value.getDefiningOp();
    unsigned result = cast<OpResult>(value).getResultNumber();
    if (auto loop = dyn_cast<scf::ForOp>(op)) {
      std::optional<int64_t> last = lastIteration(loop, env);
      if (!last)
        return std::nullopt;
      env.iteration[loop] = *last;
      value = loop.getBody()->getTerminator()->getOperand(result);
      continue;
    }
    if (auto branch = dyn_cast<scf::IfOp>(op)) {
      std::optional<int64_t> condition = evaluate(branch.getCondition(), env);
      if (!condition)
        return std::nullopt;
      Block *taken = *condition ? branch.thenBlock() : branch.elseBlock();
      value = taken->getTerminator()->getOperand(result);
      continue;
    }
    return std::make_pair(value, env);
  }
}

std::optional<int64_t> evaluate(Value value, const Env &env) {
  auto found = origin(value, env);
  if (!found)
    return std::nullopt;
  auto [source, at] = *found;
  if (auto argument = dyn_cast<BlockArgument>(source)) {
    auto loop = dyn_cast<scf::ForOp>(argument.getOwner()->getParentOp());
    if (!loop)
      return std::nullopt;
    auto it = at.iteration.find(loop);
    return it == at.iteration.end() ? std::nullopt : std::optional<int64_t>(it->second);
  }
  Operation *op = source.getDefiningOp();
  auto operand = [&](unsigned i) { return evaluate(op->getOperand(i), at); };
  if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
    if (auto integer = dyn_cast<IntegerAttr>(constant.getValue()))
      return integer.getValue().getSExtValue();
    return std::nullopt;
  }
  if (auto coord = dyn_cast<lb::ThreadCoordOp>(op)) {
    auto it = at.coords.find(coord.getCoord());
    return it == at.coords.end() ? std::nullopt : std::optional<int64_t>(it->second);
  }
  if (auto select = dyn_cast<arith::SelectOp>(op)) {
    std::optional<int64_t> condition = operand(0);
    if (!condition)
      return std::nullopt;
    return *condition ? operand(1) : operand(2);
  }
  if (op->getNumOperands() != 2)
    return std::nullopt;
  std::optional<int64_t> a = operand(0), b = operand(1);
  if (!a || !b)
    return std::nullopt;
  if (isa<arith::AddIOp>(op))
    return *a + *b;
  if (isa<arith::SubIOp>(op))
    return *a - *b;
  if (isa<arith::MulIOp>(op))
    return *a * *b;
  if (isa<arith::DivUIOp>(op))
    return *b == 0 ? std::nullopt : std::optional<int64_t>(*a / *b);
  if (isa<arith::RemUIOp>(op))
    return *b == 0 ? std::nullopt : std::optional<int64_t>(*a % *b);
  if (isa<arith::MinUIOp>(op))
    return std::min(*a, *b);
  if (isa<arith::MaxUIOp>(op))
    return std::max(*a, *b);
  if (auto cmp = dyn_cast<arith::CmpIOp>(op)) {
    switch (cmp.getPredicate()) {
    case arith::CmpIPredicate::eq: return *a == *b;
    case arith::CmpIPredicate::ne: return *a != *b;
    case arith::CmpIPredicate::ult:
    case arith::CmpIPredicate::slt: return *a < *b;
    case arith::CmpIPredicate::ule:
    case arith::CmpIPredicate::sle: return *a <= *b;
    case arith::CmpIPredicate::ugt:
    case arith::CmpIPredicate::sgt: return *a > *b;
    case arith::CmpIPredicate::uge:
    case arith::CmpIPredicate::sge: return *a >= *b;
    }
  }
  return std::nullopt;
}

bool runsIn(Operation *op, const Env &env) {
  for (Operation *child = op, *parent = op->getParentOp(); parent;
       child = parent, parent = parent->getParentOp()) {
    auto branch = dyn_cast<scf::IfOp>(parent);
    if (!branch)
      continue;
    std::optional<int64_t> condition = evaluate(branch.getCondition(), env);
    if (!condition)
      return false;
    bool inThen = child->getParentRegion() == &branch.getThenRegion();
    if (inThen != (*condition != 0))
      return false;
  }
  return true;
}

// Every assignment of the loops around `op` (outermost first) to the
// iterations `pick` takes of each one's first, step and last.
static std::vector<Env>
assignLoops(Operation *op, const Env &base,
            llvm::function_ref<std::vector<int64_t>(int64_t, int64_t, int64_t)> pick) {
  std::vector<scf::ForOp> loops;
  for (Operation *parent = op->getParentOp(); parent; parent = parent->getParentOp())
    if (auto loop = dyn_cast<scf::ForOp>(parent))
      loops.insert(loops.begin(), loop);
  std::vector<Env> envs = {base};
  for (scf::ForOp loop : loops) {
    std::vector<Env> next;
    for (const Env &env : envs) {
      std::optional<int64_t> lo = evaluate(loop.getLowerBound(), env),
                             step = evaluate(loop.getStep(), env), last = lastIteration(loop, env);
      if (!lo || !step || !last)
        continue; // a loop that does not run here
      for (int64_t i : pick(*lo, *step, *last)) {
        Env with = env;
        with.iteration[loop] = i;
        next.push_back(with);
      }
    }
    envs = std::move(next);
  }
  return envs;
}

std::vector<Env> loopEnvs(Operation *op, const Env &base) {
  return assignLoops(op, base, [](int64_t lo, int64_t step, int64_t last) {
    std::set<int64_t> picks = {lo, std::min(lo + step, last), last};
    return std::vector<int64_t>(picks.begin(), picks.end());
  });
}

std::vector<Env> allRuns(Operation *op, const Env &base) {
  std::vector<Env> runs;
  for (Env &env : assignLoops(op, base, [](int64_t lo, int64_t step, int64_t last) {
         std::vector<int64_t> all;
         for (int64_t i = lo; i <= last; i += step)
           all.push_back(i);
         return all;
       }))
    if (runsIn(op, env))
      runs.push_back(std::move(env));
  return runs;
}

} // namespace lowbit::testing
