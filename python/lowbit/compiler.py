"""Compile and tune entry points: the `lowbit` command-line tool, where it is
installed (on PATH, or named by LOWBIT_CLI). The compiler needs LLVM/MLIR
and the tuner a GPU; the Python package itself needs neither, so on a
machine without the tool these say so instead of failing halfway.
"""
import os
import shutil
import subprocess
import tempfile
from typing import Iterable, Optional, Sequence, Union

from . import _lowbit


class CompilerNotInstalled(RuntimeError):
    pass


def cli() -> str:
    """The path of the `lowbit` tool, or CompilerNotInstalled saying how to get it."""
    path = os.environ.get("LOWBIT_CLI") or shutil.which("lowbit")
    if not path or not os.access(path, os.X_OK):
        raise CompilerNotInstalled(
            "the lowbit compiler is not installed here: build it from the repository "
            "(scripts/configure.sh builds build/bin/lowbit) and put it on PATH or set "
            "LOWBIT_CLI. Kernels compiled elsewhere work here: pass their database to "
            "lowbit.set_databases(system_db=...)")
    return path


def available() -> bool:
    try:
        cli()
        return True
    except CompilerNotInstalled:
        return False


def _run(args: Sequence[str]) -> str:
    done = subprocess.run([cli(), *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise _lowbit.LowbitError(f"lowbit {' '.join(args)} failed ({done.returncode}):\n"
                                  f"{done.stderr.strip() or done.stdout.strip()}")
    return done.stdout


def write_spec(problems: Iterable[_lowbit.Problem], path: Union[str, os.PathLike],
               archs: Sequence[str] = ("sm_90a",), comment: str = "") -> str:
    """Writes the kernel-set spec for `problems` (unnamed ones become p0, p1, ...)."""
    named = [p if p.name else p.with_name(f"p{i}") for i, p in enumerate(problems)]
    text = _lowbit.kernel_set_spec(named, list(archs), comment)
    with open(path, "w") as out:
        out.write(text)
    return os.fspath(path)


def compile(problems: Union[Iterable[_lowbit.Problem], str, os.PathLike],
            database: Union[str, os.PathLike], archs: Sequence[str] = ("sm_90a",)) -> str:
    """`lowbit compile` for problems (or a spec file) into `database` (*.db);
    returns its path."""
    database = os.fspath(database)
    if not database.endswith(".db"):
        raise ValueError(f"database must name a *.db file, got {database}")
    if isinstance(problems, (str, os.PathLike)):
        _run(["compile", os.fspath(problems), "-o", database])
        return database
    with tempfile.TemporaryDirectory() as scratch:
        spec = write_spec(problems, os.path.join(scratch, "spec.toml"), archs)
        _run(["compile", spec, "-o", database])
    return database


def tune(spec: Union[str, os.PathLike], database: Union[str, os.PathLike],
         m: Optional[str] = None, budget_seconds: Optional[float] = None,
         extra: Sequence[str] = ()) -> str:
    """`lowbit tune --spec SPEC --db DATABASE` (on a GPU host, or with
    extra=["--compile-only"] without one); returns the tool's report."""
    args = ["tune", "--spec", os.fspath(spec), "--db", os.fspath(database)]
    if m is not None:
        args += ["--m", m]
    if budget_seconds is not None:
        args += ["--budget", str(budget_seconds)]
    return _run([*args, *extra])
