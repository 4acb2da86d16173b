"""Fixtures for the Python package's tests.

CPU tests (ctest `python_tests`) run the real package against lowbit's fake
CUDA driver (tests/unit/runtime/api/FakeDriver.cpp, LOWBIT_FAKE_CUDA), which
lets plans be made and weights packed without a GPU; the op then takes its
CPU path. GPU tests (marker `gpu`, ctest `python_gpu_tests`) need a CUDA
device and skip without one; a run that skipped them all exits 77, which
ctest reports as skipped.
"""
import ctypes
import os

import pytest

_fake_driver = os.environ.get("LOWBIT_FAKE_CUDA")
if _fake_driver:
    # lowbit dlopens libcuda.so.1: with the fake loaded first under that
    # soname, that is what it gets.
    ctypes.CDLL(_fake_driver, mode=os.RTLD_GLOBAL)

import lowbit  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA device")


@pytest.fixture(scope="session")
def database():
    path = os.environ.get("LOWBIT_PYTHON_TEST_DB")
    if not path or not os.path.exists(path):
        pytest.fail("LOWBIT_PYTHON_TEST_DB must name the database of tests/python/"
                    "python-tests.toml (ctest sets it)")
    lowbit.set_databases(system_db=path)
    return path


@pytest.fixture(scope="session")
def context(database):
    return lowbit.context(0)


def _cuda_available():
    try:
        import torch
        return torch.cuda.is_available()
    except Exception:
        return False


def pytest_collection_modifyitems(config, items):
    if _fake_driver or not _cuda_available():
        why = ("the fake driver is loaded (CPU run)" if _fake_driver
               else "no CUDA device here")
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(pytest.mark.skip(reason=f"GPU test: {why}"))


def pytest_sessionfinish(session, exitstatus):
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or exitstatus not in (0, 5):
        return
    ran = len(reporter.stats.get("passed", [])) + len(reporter.stats.get("failed", []))
    if ran == 0 and reporter.stats.get("skipped"):
        print("\nevery test skipped: no CUDA device")
        session.exitstatus = 77
