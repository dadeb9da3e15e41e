import warnings

# A CPU-only torch without numpy says so on import; nothing here uses numpy.
warnings.filterwarnings("ignore", "Failed to initialize NumPy", UserWarning)

import pytest  # noqa: E402
import torch  # noqa: E402


@pytest.fixture(autouse=True)
def _deterministic() -> None:
    torch.manual_seed(0)
