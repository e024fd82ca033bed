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


def _torch2():
    try:
        import torch
    except ImportError:
        return None
    return torch if hasattr(torch, "compile") else None


def test_torch_compile_backend():
    """torch.compile(model, backend="kiln") runs the captured graph through
    Kiln, and gives PyTorch's eager output."""
    torch = _torch2()
    if torch is None:
        import pytest
        pytest.skip("no PyTorch 2.x: torch.compile(backend='kiln') is skipped")
    from kiln import torch_backend
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(8, 5)).eval()
    x = torch.randn(2, 3, 16, 16)
    before = dict(torch_backend.stats)
    compiled = torch.compile(model, backend="kiln")
    with torch.no_grad():
        want = model(x)
        got = compiled(x)
        again = compiled(x + 1)
        want_again = model(x + 1)
    assert torch_backend.stats["compiled_graphs"] > before["compiled_graphs"]
    assert torch_backend.stats["kiln_calls"] >= before["kiln_calls"] + 2
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(again.numpy(), want_again.numpy(), rtol=1e-4, atol=1e-5)


def test_torch_compile_backend_falls_back_for_training():
    """A graph that must be differentiable runs eagerly, with a warning that
    says why, and gradients still flow."""
    torch = _torch2()
    if torch is None:
        import pytest
        pytest.skip("no PyTorch 2.x: torch.compile(backend='kiln') is skipped")
    import warnings
    from kiln import torch_backend
    torch._dynamo.reset()
    model = torch.nn.Linear(4, 3)
    before = dict(torch_backend.stats)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y = torch.compile(model, backend="kiln")(torch.randn(2, 4))
    y.sum().backward()
    assert model.weight.grad is not None
    assert torch_backend.stats["eager_graphs"] > before["eager_graphs"]
    assert any("torch.no_grad()" in str(w.message) for w in caught)


def test_backend_name_found_without_importing_kiln():
    """backend="kiln" resolves through the package's torch_dynamo_backends
    entry point in a process that never imports kiln itself."""
    torch = _torch2()
    if torch is None:
        import pytest
        pytest.skip("no PyTorch 2.x: torch.compile(backend='kiln') is skipped")
    import os
    import subprocess
    import sys
    code = ("import sys, torch\n"
            "m = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU()).eval()\n"
            "x = torch.randn(2, 4)\n"
            "with torch.no_grad():\n"
            "    y = torch.compile(m, backend='kiln')(x)\n"
            "    assert torch.allclose(y, m(x), rtol=1e-5, atol=1e-6)\n"
            "print(sys.modules['kiln.torch_backend'].stats['kiln_calls'])\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "1"
