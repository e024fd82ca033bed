"""kiln.compile of a torch.nn.Module (exported through torch.onnx), against
PyTorch's own output. Needs only numpy and torch besides kiln, so
check.sh also runs it with a Python that has torch but not pytest."""
import numpy as np

import kiln


def test_torch_module():
    try:
        import torch
    except ImportError:
        import pytest
        pytest.skip("PyTorch is not installed: the torch.nn.Module path is skipped")
    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.ReLU(), torch.nn.Linear(8, 4)).eval()
    x = torch.randn(2, 16)
    model = kiln.compile(module, example_inputs=(x,))
    with torch.no_grad():
        want = module(x).numpy()
    np.testing.assert_allclose(model(x.numpy()), want, rtol=1e-5, atol=1e-6)
