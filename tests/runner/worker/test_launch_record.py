"""runner.worker.launch_record on plain data: CUPTI's records and loaded images as CUPTI hands
them (stand-ins for its objects), real cubins, NumPy arrays for the instance's. The recorder's
CUPTI side runs in tests/runner/worker/test_launch_record_gpu.py."""

from __future__ import annotations

import ctypes
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from runner.profile import cubin
from runner.worker.launch_record import (
    LaunchRecorder,
    NoKernel,
    Unavailable,
    _ModuleData,
    code_of,
    held,
    image_code,
    launch_config,
    method_code,
    signature,
)

CUBINS = Path(__file__).parents[1] / "fixtures" / "cubin"


def record(name: str = "ka", **fields: int) -> SimpleNamespace:
    values = {"grid_x": 64, "grid_y": 1, "grid_z": 1, "block_x": 256, "block_y": 1,
              "block_z": 1, "dynamic_shared_memory": 0, "static_shared_memory": 1024,
              "registers_per_thread": 32, "start": 0}  # fmt: skip
    return SimpleNamespace(name=name, **{**values, **fields})


def test_a_kernel_record_gives_its_launch_configuration_under_either_naming() -> None:
    assert launch_config(record(grid_x=8, dynamic_shared_memory=512)) == {
        "kernel": "ka", "grid": [8, 1, 1], "block": [256, 1, 1], "dynamic_shared": 512,
        "static_shared": 1024, "registers": 32,
    }  # fmt: skip
    c_names = SimpleNamespace(name="kb", gridX=2, gridY=3, gridZ=1, blockX=32, blockY=4,
                              blockZ=1, dynamicSharedMemory=0, staticSharedMemory=0,
                              registersPerThread=16)  # fmt: skip
    assert launch_config(c_names)["grid"] == [2, 3, 1]
    incomplete = SimpleNamespace(name="kc", grid_x=1, grid_y=1, grid_z=1)
    with pytest.raises(Unavailable, match="block_x"):
        launch_config(incomplete)


def images(*names: str) -> list[tuple[dict[str, str], bytes]]:
    out = []
    for name in names:
        raw = (CUBINS / f"{name}.cubin").read_bytes()
        out.append((image_code(raw), raw))
    return out


def test_a_kernels_code_is_its_own_sections_in_the_loaded_image_that_defines_it() -> None:
    kernels = cubin.kernel_hashes((CUBINS / "two_kernels.cubin").read_bytes())
    ka, kb = sorted(kernels)  # the cubin's (mangled) entry names
    before, after = images("two_kernels"), images("kb_changed")
    assert code_of(ka, before) == code_of(ka, after)  # the other kernel changed, not this one
    assert code_of(kb, before) != code_of(kb, after)
    assert code_of("never_loaded", before) is None
    # Both versions loaded in one process: the key names both, never one of them by chance.
    both = code_of(kb, before + after)
    assert both is not None and both != code_of(kb, before) and code_of(kb, before) in both
    # An image that is no cubin (PTX, a fatbin): the whole image where the name appears.
    ptx = b".version 8.0\n.target sm_90\n.entry jit_kernel()"
    assert code_of("jit_kernel", [({}, ptx)]) is not None
    assert code_of("jit_kernel", [({}, ptx)]) != code_of("jit_kernel", [({}, ptx + b" ")])


class Instance:
    """A workload instance: an input, a pristine copy, an output the launch writes, scratch."""

    def __init__(self, n: int = 4096, scale: float = 2.0) -> None:
        self.x = np.arange(n, dtype=np.float32)
        self.x0 = self.x.copy()
        self.out = np.full(n, np.nan, np.float32)
        self.scratch = np.empty(n // 64, np.float32)
        self.scale, self.name = scale, "saxpy"

    def launch(self) -> None:
        self.out[:] = self.x * self.scale
        self.scratch[:] = 1.0


class Recorder:
    """What LaunchRecorder gives `signature`: CUPTI's records of the launch, the images."""

    def __init__(self, records: list[Any], loaded: list[tuple[dict[str, str], bytes]]) -> None:
        self.records, self.images, self.problem = records, loaded, ""
        self.transfers = 0

    def kernels_of(self, launch: Any, synchronize: Any) -> list[dict[str, Any]]:
        launch()
        synchronize()
        return [launch_config(r) for r in self.records]


def test_the_signature_keys_inputs_by_content_and_what_the_launch_wrote_by_shape() -> None:
    ka = sorted(cubin.kernel_hashes((CUBINS / "two_kernels.cubin").read_bytes()))[0]
    recorder = Recorder([record(ka)], images("two_kernels"))
    first = signature(Instance(), recorder, lambda: None)
    assert set(first["inputs"]) == {"x", "x0"}  # unchanged by the launch: what it computes from
    assert set(first["written"]) == {"out", "scratch"}
    assert first["written"]["scratch"] == {"shape": [64], "dtype": "float32"}
    assert first["scalars"] == {"name": "'saxpy'", "scale": "2.0"}
    assert first["kernels"][0]["kernel"] == ka and first["code"][ka]
    # Scratch that held other garbage before the launch: the same signature.
    again = Instance()
    again.scratch[:] = -7.0
    assert signature(again, recorder, lambda: None) == first
    changed = Instance()
    changed.x[5] += 1.0
    assert signature(changed, recorder, lambda: None)["inputs"] != first["inputs"]
    assert signature(Instance(scale=3.0), recorder, lambda: None)["scalars"] != first["scalars"]


def test_a_signature_that_cannot_be_known_says_why() -> None:
    with pytest.raises(Unavailable, match="no kernel"):
        signature(Instance(), Recorder([], images("two_kernels")), lambda: None)
    with pytest.raises(Unavailable, match="no loaded module holds the code of mystery"):
        signature(Instance(), Recorder([record("mystery")], images("two_kernels")), lambda: None)
    broken = Recorder([record("ka")], images("two_kernels"))
    broken.problem = "a loaded module could not be read (ValueError: x)"
    with pytest.raises(Unavailable, match="could not be read"):
        signature(Instance(), broken, lambda: None)


def test_a_launch_of_copies_alone_ran_no_kernel_and_says_so() -> None:
    """A contiguous copy is a cudaMemcpy: CUPTI records copies and no kernel, which is a fact
    (nothing for ncu), not a signature CUPTI failed to give."""
    copies = Recorder([], images("two_kernels"))
    copies.transfers = 32
    with pytest.raises(NoKernel, match="no kernel, only 32 memory copies or sets"):
        signature(Instance(), copies, lambda: None)
    with pytest.raises(Unavailable) as missed:
        signature(Instance(), Recorder([], images("two_kernels")), lambda: None)
    assert not isinstance(missed.value, NoKernel)


class _Cupti:
    """cupti-python's activity API as kernels_of uses it: records queued until a flush."""

    ActivityKind = SimpleNamespace(CONCURRENT_KERNEL=10, MEMCPY=1, MEMSET=2)

    def __init__(self, during_launch: list[Any], refuse: tuple[int, ...] = ()) -> None:
        self.during_launch, self.refuse = during_launch, refuse
        self.enabled: set[int] = set()
        self.queued: list[Any] = []
        self.recorder: LaunchRecorder | None = None

    def activity_enable(self, kind: int) -> None:
        if kind in self.refuse:
            raise RuntimeError("CUPTI_ERROR_NOT_SUPPORTED")
        self.enabled.add(kind)

    def activity_disable(self, kind: int) -> None:
        self.enabled.discard(kind)

    def launch(self) -> None:
        self.queued += [a for a in self.during_launch if a.kind in self.enabled]

    def activity_flush_all(self, _: int) -> None:
        queued, self.queued = self.queued, []
        if queued and self.recorder is not None:
            self.recorder._completed(queued)


def _recorder(cupti: _Cupti) -> LaunchRecorder:
    recorder = LaunchRecorder.__new__(LaunchRecorder)  # no process-wide subscription
    recorder.cupti, recorder.images, recorder.records, recorder.problem = cupti, [], [], ""
    recorder.launched, recorder.transfers = [], 0
    recorder._transfer_kinds = {1: 1, 2: 2}
    cupti.recorder = recorder
    return recorder


def test_the_recorder_counts_the_copies_and_sets_of_the_launch_and_only_of_it() -> None:
    kernel = SimpleNamespace(kind=10, **vars(record("ka", start=5)))
    copy, memset = SimpleNamespace(kind=1, start=1), SimpleNamespace(kind=2, start=2)
    cupti = _Cupti([copy, copy, memset])
    recorder = _recorder(cupti)
    assert recorder.kernels_of(cupti.launch, lambda: None) == []
    assert recorder.transfers == 3 and cupti.enabled == set()  # every kind off again
    cupti.during_launch = [kernel, copy]
    assert [k["kernel"] for k in recorder.kernels_of(cupti.launch, lambda: None)] == ["ka"]
    assert recorder.transfers == 1
    refused = _Cupti([copy, kernel], refuse=(1, 2))  # a CUPTI without them: kernels as before
    recorder = _recorder(refused)
    assert [k["kernel"] for k in recorder.kernels_of(refused.launch, lambda: None)] == ["ka"]
    assert recorder.transfers == 0


def test_the_launch_methods_code_is_its_bytecode_and_constants_not_its_lines() -> None:
    class A:
        def launch(self) -> float:
            return 0.5

    class B:
        def launch(self) -> float:

            return 0.5

    class C:
        def launch(self) -> float:
            return 0.25

    assert method_code(A()) == method_code(B())  # moved a line down: the same code
    assert method_code(A()) != method_code(C())
    assert method_code(object()) is None


def test_a_variant_the_workload_loaded_itself_is_its_code_not_others_of_that_name() -> None:
    kb = sorted(cubin.kernel_hashes((CUBINS / "two_kernels.cubin").read_bytes()))[1]
    earlier, own = images("two_kernels"), images("kb_changed")
    loaded = earlier + own  # another workload's variant first, then this one's
    assert code_of(kb, loaded, fresh=len(earlier)) == code_of(kb, own)
    assert code_of(kb, loaded, fresh=len(loaded)) == code_of(kb, loaded)  # loaded none itself


class Group:
    """An object of the test's own package that holds state (as an optimizer group does)."""

    def __init__(self) -> None:
        self.m = np.zeros(8, np.float32)
        self.step = 3


class Library:
    """A suite's kernel library: its build's paths and seconds differ with every fresh build."""

    def __init__(self, build_dir: str) -> None:
        self.build = {"dir": build_dir, "compile_s": 0.83, "cubins": {"a.cu": f"{build_dir}/a"}}
        self.functions = {"ka": object()}


class Nested:
    def __init__(self) -> None:
        x = np.arange(16, dtype=np.float32)
        self.inputs = {"x": x, "seed": 7}
        self.dev = {"x": x}  # the same array: counted once
        self.out = {"y": np.zeros(16, np.float32)}
        self.parts = [np.ones(4, np.float32)]
        self.group = Group()
        self.foreign = SimpleNamespace(hidden=np.ones(2))  # another package's object: not read
        self.lib = Library("/tmp/build-1")

    def launch(self) -> None:
        self.out["y"][:] = self.inputs["x"] * 2


def test_arrays_and_values_in_dicts_lists_and_own_objects_are_held() -> None:
    arrays, plain = held(Nested())
    assert sorted(arrays) == ["dev.x", "group.m", "out.y", "parts.0"]  # x under its first path
    assert plain == {"group.step": "3", "inputs.seed": "7"}
    ka = sorted(cubin.kernel_hashes((CUBINS / "two_kernels.cubin").read_bytes()))[0]
    recorder = Recorder([record(ka)], images("two_kernels"))
    first = signature(Nested(), recorder, lambda: None)
    assert set(first["written"]) == {"out.y"}
    other = Nested()
    other.inputs["x"][3] = -1.0  # an input held in a dict: another signature
    assert signature(other, recorder, lambda: None)["inputs"] != first["inputs"]
    seeded = Nested()
    seeded.inputs["seed"] = 8
    assert signature(seeded, recorder, lambda: None)["scalars"] != first["scalars"]
    rebuilt = Nested()
    rebuilt.lib = Library("/tmp/build-2")  # the same code built afresh elsewhere
    assert signature(rebuilt, recorder, lambda: None) == first


def test_an_instance_that_holds_too_much_has_no_signature() -> None:
    crowded = Nested()
    crowded.many = {str(i): i for i in range(5000)}
    with pytest.raises(Unavailable, match="more than 4096"):
        held(crowded)


def test_signatures_are_on_unless_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    from runner.worker import launch_record

    monkeypatch.setenv(launch_record.ENABLE_ENV, "0")
    assert launch_record.recorder_or_why() is None  # a check worker records nothing
    monkeypatch.delenv(launch_record.ENABLE_ENV, raising=False)
    assert launch_record.enabled()
    # On, without CUPTI here: the reason, never an exception into the check.
    assert isinstance(launch_record.recorder_or_why(), str)


def test_dict_keys_that_read_alike_do_not_compare_their_arrays() -> None:
    class Keys:
        def __init__(self) -> None:
            self.d = {1: np.ones(2), "1": np.zeros(2)}

    arrays, _ = held(Keys())
    assert len(arrays) == 2


class _ResourceData(ctypes.Structure):
    """CUpti_ResourceData (cupti_callbacks.h): a context, a stream, the resource's descriptor."""

    _fields_ = [("context", ctypes.c_void_p), ("stream", ctypes.c_void_p),
                ("resource_descriptor", ctypes.c_void_p)]  # fmt: skip


class _CuptiResourceData:
    """cupti-python's ResourceData.from_ptr as its stub declares it (an address, `readonly`)."""

    @staticmethod
    def from_ptr(ptr: int, readonly: bool = False) -> Any:
        data = _ResourceData.from_address(ptr)
        return SimpleNamespace(resource_descriptor=data.resource_descriptor or 0)


def test_a_loaded_modules_image_is_copied_whole_from_an_object_or_an_address() -> None:
    image = b"\x7fELF\0kernel\0with NUL bytes\0"
    buffer = ctypes.create_string_buffer(image, len(image))
    module = _ModuleData(module_id=7, size=len(image), image=ctypes.addressof(buffer))
    resource = _ResourceData(resource_descriptor=ctypes.addressof(module))
    recorder = LaunchRecorder.__new__(LaunchRecorder)
    recorder.cupti = SimpleNamespace(ResourceData=_CuptiResourceData)
    as_object = SimpleNamespace(resource_descriptor=ctypes.addressof(module))
    assert recorder._image(as_object) == image
    assert recorder._image(ctypes.addressof(resource)) == image  # the address of the data
    with pytest.raises(Unavailable, match="no module data"):
        recorder._image(SimpleNamespace(resource_descriptor=0))
    empty = _ModuleData(module_id=8, size=0, image=None)
    with pytest.raises(Unavailable, match="empty"):
        recorder._image(SimpleNamespace(resource_descriptor=ctypes.addressof(empty)))


class Pooled(Nested):
    """An output whose memory still holds the result a check computed in the same blocks."""

    def __init__(self) -> None:
        super().__init__()
        self.out["y"][:] = self.inputs["x"] * 2

    def poison(self) -> None:
        self.out["y"].view(np.uint32).fill(0x7FC00001)


def test_an_output_that_held_its_result_already_is_written_once_poisoned() -> None:
    ka = sorted(cubin.kernel_hashes((CUBINS / "two_kernels.cubin").read_bytes()))[0]
    recorder = Recorder([record(ka)], images("two_kernels"))
    pooled = signature(Pooled(), recorder, lambda: None)
    assert set(pooled["written"]) == {"out.y"} and "out.y" not in pooled["inputs"]
    fresh = Nested()
    fresh.poison = Pooled.poison.__get__(fresh)  # type: ignore[method-assign]
    assert signature(fresh, recorder, lambda: None) == pooled


def test_a_loaded_cubin_is_kept_as_its_kernels_hashes_and_anything_else_whole() -> None:
    recorder = LaunchRecorder.__new__(LaunchRecorder)
    recorder.images, recorder.problem = [], ""
    kept = []
    for raw in ((CUBINS / "two_kernels.cubin").read_bytes(), b"// PTX .entry kb\0"):
        buffer = ctypes.create_string_buffer(raw, len(raw))
        module = _ModuleData(module_id=1, size=len(raw), image=ctypes.addressof(buffer))
        kept.append(module)
        recorder._on_callback(
            None, 3, 6, SimpleNamespace(resource_descriptor=ctypes.addressof(module))
        )
    (hashes, none), (nothing, ptx) = recorder.images
    assert hashes == image_code((CUBINS / "two_kernels.cubin").read_bytes()) and none == b""
    assert nothing == {} and ptx == b"// PTX .entry kb\0" and not recorder.problem
    assert code_of("kb", recorder.images) is not None  # found by its name in the image kept whole


class TensorList:
    """A multi-tensor step's state (as kernels.ops.AdamWGroup): the tensors and a table of their
    addresses that its one launch reads them through."""

    def __init__(self, tensors: list[np.ndarray]) -> None:
        self.tensors = tensors
        self.ptrs = np.array([t.__array_interface__["data"][0] for t in tensors], np.uint64)


class MultiTensor:
    def __init__(self, pad: int = 0) -> None:
        keep = [np.empty(512 + i) for i in range(pad)]  # noqa: F841 (other addresses)
        self.dev = {f"p{i}": np.full(256, float(i), np.float32) for i in range(3)}
        self.group = TensorList([self.dev[f"p{i}"] for i in range(3)])

    def launch(self) -> None:
        for t in self.group.tensors:
            t += 1.0


def test_a_multi_tensor_launch_keeps_its_signature_wherever_its_tensors_were_allocated() -> None:
    ka = sorted(cubin.kernel_hashes((CUBINS / "two_kernels.cubin").read_bytes()))[0]
    recorder = Recorder([record(ka)], images("two_kernels"))
    first, moved = MultiTensor(), MultiTensor(pad=9)
    assert first.group.ptrs.tolist() != moved.group.ptrs.tolist()
    signed = signature(first, recorder, lambda: None)
    assert "group.ptrs" in signed["inputs"]
    assert signature(moved, recorder, lambda: None) == signed
    reordered = MultiTensor()
    reordered.group.ptrs[[0, 2]] = reordered.group.ptrs[[2, 0]]
    assert signature(reordered, recorder, lambda: None)["inputs"] != signed["inputs"]
