"""Fixtures shared by every test folder."""
import os

import pytest
import torch

# app/guard.py turns an exception escaping a page into a short message for the user; under test it re-raises, so a
# page that fails still fails its test (tests/app/test_page_guard.py checks the guard itself with this unset).
os.environ.setdefault("ATTENTION_LAB_RAISE_ERRORS", "1")


@pytest.fixture(scope="module")
def one_thread():
    """Tiny models on a shared CPU: extra intra-op threads only contend. Restores the count afterwards."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
