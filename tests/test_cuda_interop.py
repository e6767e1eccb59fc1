"""CUDA interop: DLPack with torch and cupy (zero-copy, stream-ordered both ways), and a
primitive backend written in Python serving CUDA tensors through DLPack."""

from __future__ import annotations

import numpy as np
import pytest

import oneflite
import oneflite.nn.functional as F

pytestmark = pytest.mark.skipif(not oneflite.cuda.is_available(), reason="no CUDA GPU")


def test_torch_cuda_tensors_cross_dlpack_both_ways_without_copies() -> None:
    torch = pytest.importorskip("torch")
    x = oneflite.tensor(np.arange(12.0).reshape(3, 4), device="cuda")
    tx = torch.from_dlpack(x)
    assert tx.is_cuda and tx.data_ptr() == x.data_ptr()
    back = oneflite.from_dlpack(tx)
    assert back.is_cuda and back.data_ptr() == x.data_ptr()
    np.testing.assert_array_equal(back.cpu().numpy(), np.arange(12.0).reshape(3, 4))


def test_torch_reads_a_oneflite_result_only_after_oneflite_wrote_it() -> None:
    # No synchronization by hand: __dlpack__(stream=torch's) makes torch's stream wait for
    # oneflite's, so torch never reads the output before the softmax kernel has written it.
    torch = pytest.importorskip("torch")
    g = torch.Generator(device="cuda").manual_seed(0)
    source = torch.randn(8192, 4096, device="cuda", generator=g)
    expected = torch.softmax(source.double(), dim=1)
    for _ in range(3):
        y = F.softmax(oneflite.from_dlpack(source), dim=1)
        got = torch.from_dlpack(y).double()
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)


def test_oneflite_reads_a_torch_result_only_after_torch_wrote_it() -> None:
    # from_dlpack passes oneflite's stream to the producer, which orders its pending work
    # (the randn and the multiply below) before anything oneflite queues.
    torch = pytest.importorskip("torch")
    for seed in range(3):
        g = torch.Generator(device="cuda").manual_seed(seed)
        source = torch.randn(4096, 8192, device="cuda", generator=g) * 4
        y = F.log_softmax(oneflite.from_dlpack(source), dim=1)
        expected = torch.log_softmax(source.double(), dim=1)
        torch.testing.assert_close(torch.from_dlpack(y).double(), expected, rtol=1e-5,
                                   atol=1e-5)


def test_cupy_arrays_cross_dlpack_both_ways() -> None:
    cupy = pytest.importorskip("cupy")
    a = cupy.asarray(np.random.default_rng(1).standard_normal((257, 1025)), dtype=cupy.float32)
    x = oneflite.from_dlpack(a)
    assert x.is_cuda and x.data_ptr() == a.data.ptr
    y = cupy.from_dlpack(F.softmax(x, dim=1))
    host = cupy.asnumpy(a).astype(np.float64)
    e = np.exp(host - host.max(axis=1, keepdims=True))
    np.testing.assert_allclose(cupy.asnumpy(y), e / e.sum(axis=1, keepdims=True), rtol=1e-5,
                               atol=1e-7)


def test_a_python_backend_serves_cuda_tensors_through_torch() -> None:
    torch = pytest.importorskip("torch")

    @oneflite.primitive.register("softmax", device="cuda", dtypes=[oneflite.float32],
                                 name="torch_on_cuda")
    def torch_on_cuda(x: oneflite.Tensor, y: oneflite.Tensor) -> None:
        assert x.is_cuda and y.is_cuda
        torch.from_dlpack(y).copy_(torch.softmax(torch.from_dlpack(x), dim=1))

    try:
        values = np.random.default_rng(2).standard_normal((33, 1025))
        x = oneflite.tensor(values, dtype=oneflite.float32, device="cuda")
        with oneflite.trace() as t:
            y = F.softmax(x, dim=1)
        assert "backend 'torch_on_cuda'" in str(t)
        e = np.exp(values - values.max(axis=1, keepdims=True))
        np.testing.assert_allclose(y.cpu().to(oneflite.float64).numpy(),
                                   e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)
        # float16 is not among its dtypes: the built-in CUDA backend serves it.
        with oneflite.trace() as t:
            F.softmax(x.to(oneflite.float16), dim=1)
        assert "backend 'cuda'" in str(t)
    finally:
        oneflite.primitive.unregister("softmax", "torch_on_cuda", device="cuda")
