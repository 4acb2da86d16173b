#!/usr/bin/env python3
"""Kill-safety of the commands that write a kernel database (issue 19).

`lowbit compile` and `lowbit tune --compile-only` are each killed with
SIGKILL at random points, several times. After each kill `lowbit db doctor`
must find the database healthy, a rerun must keep every kernel row that was
committed before the kill, and the rerun must finish the work: the same
kernels as an uninterrupted run into a fresh database.

Usage: kill_database_writers.py LOWBIT SPEC WORKDIR [KILLS]
LOWBIT_KILL_SEED picks the kill points (printed, so a failure can be rerun).
"""
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time

lowbit, spec, work = sys.argv[1:4]
kills = int(sys.argv[4]) if len(sys.argv) > 4 else 4
seed = int(os.environ.get("LOWBIT_KILL_SEED", str(random.randrange(1 << 30))))
rng = random.Random(seed)
print(f"seed {seed} (LOWBIT_KILL_SEED)")
os.makedirs(work, exist_ok=True)

# Three schedules keep each run to seconds.
schedules = [
    "#lb.schedule<family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>",
    "#lb.schedule<family = mma, tile = [16, 64, 256], warps = [1, 1], stages = 1, split_k = 4>",
    "#lb.schedule<family = gemv_tiled, tile = [1, 64, 128], warps = [1, 1], stages = 1, split_k = 8>",
]
writers = {
    "compile": lambda db: [lowbit, "compile", spec, "-o", db, "-j", "2"]
    + [arg for s in schedules for arg in ("--schedule", s)],
    "tune": lambda db: [lowbit, "tune", "--compile-only", "--spec", spec, "--arch", "sm_90a",
                        "--m", "1", "--max-candidates", "1", "--db", db],
}


def remove(db):
    for suffix in ("", "-wal", "-shm", "-journal"):
        if os.path.exists(db + suffix):
            os.remove(db + suffix)


def kernel_rows(db):
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return {row[0] for row in con.execute("SELECT id FROM kernels")}
    finally:
        con.close()


def run(command):
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if done.returncode != 0:
        sys.exit(f"FAILED: {' '.join(command)} exited {done.returncode}:\n{done.stdout[-2000:]}")
    return done.stdout


failures = 0
for name, command in writers.items():
    reference = os.path.join(work, f"{name}-reference.db")
    remove(reference)
    started = time.monotonic()
    run(command(reference))
    duration = time.monotonic() - started
    want = kernel_rows(reference)
    print(f"{name}: {len(want)} kernels uninterrupted in {duration:.1f} s")
    for attempt in range(kills):
        db = os.path.join(work, f"{name}-killed.db")
        remove(db)
        # Uniform over the run, so kills land before, during and between commits.
        at = rng.uniform(0.02, 0.95) * duration
        process = subprocess.Popen(command(db), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(at)
        process.send_signal(signal.SIGKILL)
        process.wait()
        before = set()
        if os.path.exists(db):
            run([lowbit, "db", "doctor", db])
            before = kernel_rows(db)
        run(command(db))
        after = kernel_rows(db)
        lost = before - after
        status = "ok"
        if lost or after != want:
            failures += 1
            status = f"FAILED: {len(lost)} rows lost, {len(want - after)} missing, {len(after - want)} extra"
        print(f"  killed at {at:.2f} s: {len(before)} rows survived, rerun has {len(after)}: {status}")
sys.exit(1 if failures else 0)
