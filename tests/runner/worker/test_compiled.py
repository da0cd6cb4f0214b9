"""What the compiler made of a launch's kernels: CUPTI's record of each, and Triton's facts of
the version that ran (objects shaped as Triton 3's CompiledKernel and Autotuner; the real ones
on a GPU: tests/runner/suite/test_example_suite_torch.py)."""

from __future__ import annotations

import sys
import weakref
from types import ModuleType, SimpleNamespace

import pytest

from runner.worker.compiled import TritonKernels, compiled_kernels

H100 = SimpleNamespace(backend="cuda", arch=90, warp_size=32)


def version(name: str, warps: int, stages: int, shared: int, regs: int | None = 128):
    meta = SimpleNamespace(name=name, num_warps=warps, num_stages=stages, shared=shared,
                           target=H100)  # fmt: skip
    return SimpleNamespace(name=name, metadata=meta, n_regs=regs)


def record(name: str, threads: int, shared: int, regs: int = 128, local: int | None = 0) -> dict:
    out = {"kernel": name, "grid": [64, 1, 1], "block": [threads, 1, 1], "dynamic_shared": shared,
           "static_shared": 0, "registers": regs}  # fmt: skip
    return out | ({"local_bytes": local} if local is not None else {})


def test_the_version_that_ran_is_the_one_cupti_saw() -> None:
    """An autotuner compiled three configs under one name: warps and shared memory say which ran."""
    triton = TritonKernels([version("mm", 4, 3, 65536), version("mm", 8, 3, 98304),
                            version("mm", 8, 1, 32768)], [])  # fmt: skip
    assert triton.facts(record("mm", 256, 98304)) == {
        "compiler": "triton", "num_warps": 8, "num_stages": 3, "target": "cuda:90"}  # fmt: skip
    assert triton.facts(record("mm", 256, 32768))["num_stages"] == 1
    assert triton.facts(record("other", 256, 0)) == {}


def test_versions_that_cannot_be_told_apart_give_no_stages() -> None:
    """Two versions match the launch and differ in stages: no guess; the autotuner's choice,
    where there is one, settles it."""
    versions = [version("mm", 8, 2, 65536), version("mm", 8, 3, 65536)]
    assert TritonKernels(versions, []).facts(record("mm", 256, 65536)) == {"compiler": "triton"}
    tuner = SimpleNamespace(base_fn=SimpleNamespace(__name__="mm"),
                            best_config=SimpleNamespace(num_warps=8, num_stages=3))  # fmt: skip
    facts = TritonKernels(versions, [tuner]).facts(record("mm", 256, 65536))
    assert (facts["num_stages"], facts["num_warps"]) == (3, 8)
    assert "num_stages=3" in facts["config"]


def test_registers_cupti_saw_rule_out_a_version() -> None:
    versions = [version("mm", 8, 3, 65536, regs=96), version("mm", 8, 4, 65536, regs=168)]
    assert TritonKernels(versions, []).facts(record("mm", 256, 65536, regs=168))["num_stages"] == 4


def test_each_kernel_once_in_launch_order_with_what_cupti_recorded() -> None:
    launched = [record("b", 128, 1024, local=16), record("a", 256, 0, local=None),
                record("b", 128, 1024, local=16)]  # fmt: skip
    launched[1]["static_shared"] = 512
    assert compiled_kernels(launched) == [
        {"kernel": "b", "threads": 128, "registers": 128, "shared_bytes": 1024, "local_bytes": 16},
        {"kernel": "a", "threads": 256, "registers": 128, "shared_bytes": 512},
    ]
    assert compiled_kernels([]) == []


class CompiledKernel:
    """Shaped as Triton's: found among the process's objects by its type."""

    def __init__(self, name: str, warps: int, shared: int) -> None:
        self.name, self.n_regs = name, 128
        self.metadata = SimpleNamespace(name=name, num_warps=warps, num_stages=3, shared=shared,
                                        target=H100)  # fmt: skip


class Held:
    pass


@pytest.fixture
def triton_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    compiler = ModuleType("triton.compiler.compiler")
    compiler.CompiledKernel = CompiledKernel  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "triton.compiler.compiler", compiler)


def test_the_process_kernels_are_read_past_a_proxy_whose_object_is_gone(triton_loaded) -> None:
    """A weakref proxy to a collected object (torch.compile leaves them about) raises on
    isinstance; the walk goes by type and still finds the kernels."""
    held = Held()
    dead = [weakref.proxy(held)]
    del held
    with pytest.raises(ReferenceError):
        isinstance(dead[0], CompiledKernel)
    kernel = CompiledKernel("softmax_kernel", 4, 2048)
    facts = compiled_kernels([record("softmax_kernel", 128, 2048)])
    assert facts[0]["num_warps"] == 4 and facts[0]["compiler"] == "triton"
    assert dead and kernel


def test_triton_facts_that_cannot_be_read_leave_what_cupti_recorded(
    triton_loaded, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(cls: type) -> None:
        raise RuntimeError("Triton moved its objects")

    monkeypatch.setattr(TritonKernels, "in_process", classmethod(broken))
    assert compiled_kernels([record("k", 128, 0)]) == [
        {"kernel": "k", "threads": 128, "registers": 128, "shared_bytes": 0, "local_bytes": 0}
    ]


class CachingAutotuner:
    """Shaped as Inductor's: its kernel's JITFunction and a launcher per config it kept."""

    def __init__(self, name: str, *launchers: tuple[int, int, int, int]) -> None:
        self.fn = SimpleNamespace(__name__=name)
        self.launchers = []
        for warps, stages, shared, regs in launchers:

            def launcher() -> None:
                pass

            launcher.config = SimpleNamespace(num_warps=warps, num_stages=stages)  # type: ignore[attr-defined]
            launcher.shared, launcher.n_regs = shared, regs  # type: ignore[attr-defined]
            self.launchers.append(launcher)


@pytest.fixture
def inductor_loaded(triton_loaded, monkeypatch: pytest.MonkeyPatch) -> None:
    heuristics = ModuleType("torch._inductor.runtime.triton_heuristics")
    heuristics.CachingAutotuner = CachingAutotuner  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch._inductor.runtime.triton_heuristics", heuristics)


def test_a_kernel_inductor_launched_itself_has_its_launchers_facts(inductor_loaded) -> None:
    """Loaded from Inductor's cache, a kernel is launched from its cubin: no CompiledKernel of
    it is left, and its autotuner's launcher says what it was compiled with."""
    fused = CachingAutotuner("triton_per_fused_gelu_0", (8, 1, 4096, 40))
    two = CachingAutotuner("triton_red_fused_1", (4, 2, 1024, 32), (8, 2, 1024, 32))
    held = CompiledKernel("softmax_kernel", 4, 2048)  # Triton's own: read as it was
    shadow = CachingAutotuner("softmax_kernel", (16, 5, 2048, 128))
    facts = compiled_kernels([record("triton_per_fused_gelu_0", 256, 4096, regs=40),
                              record("triton_red_fused_1", 128, 1024, regs=32),
                              record("softmax_kernel", 128, 2048)])  # fmt: skip
    by_name = {f["kernel"]: f for f in facts}
    gelu = by_name["triton_per_fused_gelu_0"]
    assert (gelu["compiler"], gelu["num_warps"], gelu["num_stages"]) == ("triton", 8, 1)
    assert "num_stages=1" in gelu["config"] or "num_stages': 1" in gelu["config"]
    assert by_name["triton_red_fused_1"]["num_warps"] == 4  # the launch's 128 threads say which
    assert "config" not in by_name["triton_red_fused_1"]  # two launchers left: none was chosen
    assert by_name["softmax_kernel"]["num_warps"] == 4 and by_name["softmax_kernel"]["target"]
    assert fused and two and held and shadow
