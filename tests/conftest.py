"""Fixtures shared by every test folder."""
import pytest
import torch


@pytest.fixture(scope="module")
def one_thread():
    """Tiny models on a shared CPU: extra intra-op threads only contend. Restores the count afterwards."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
