"""What one launch of a workload ran on the GPU, as a check worker sees it: the signature that
decides whether an earlier commit's ncu section still holds (runner.profile.launch_key).

- The kernels, in order, with their launch configuration (grid, block, dynamic and static shared
  memory, registers per thread), from CUPTI's kernel activity records of one launch.
- The code of each kernel, from the modules the process loaded: CUPTI calls back on every module
  load (cuModuleLoad* from CuPy, NVRTC, Triton; the runtime's lazily loaded fatbins of an
  extension or a library) with the module's image, and runner.profile.cubin hashes each kernel's
  own sections in it. A kernel found in no loaded image has no known code.
- The inputs: every array the instance holds (NumPy or CuPy arrays, torch tensors, as attributes
  or in its dicts, lists and objects of the suite's own package: `held`), its shape, dtype and
  checksum (runner.worker.checksums) taken before the launch, after the suite's `poison()`;
  an array the launch wrote (its checksum moved) is an output or scratch space, kept by shape
  and dtype only: what it held before does not decide what the kernels do. A table of pointers
  into the instance's other arrays (a multi-tensor launch's list) is read by what it points at,
  not by its addresses, which differ with every process (runner.worker.pointers).
- The plain values it holds the same way (numbers, strings: scalars a launch may pass, a seed)
  and the code of its `launch` method (constants written into it).

The instance is prepared as the profile worker prepares it (seed 0, its inputs drawn where a
timing process draws them: runner.measure.sampling), so the signature describes the launch ncu
profiles. Anything CUPTI does not give (no cupti-python, a record without a field, an image that
cannot be read) makes the signature unavailable, with the reason: the run then falls back to the
commit's files (runner.profile.reuse), never to a guess.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
from typing import Any

from runner.profile import cubin
from runner.worker.checksums import kind
from runner.worker.pointers import fingerprints

LAUNCH_FIELDS = {  # key -> the record's attribute names (cupti-python's, then the C API's)
    "grid": (("grid_x", "gridX"), ("grid_y", "gridY"), ("grid_z", "gridZ")),
    "block": (("block_x", "blockX"), ("block_y", "blockY"), ("block_z", "blockZ")),
    "dynamic_shared": (("dynamic_shared_memory", "dynamicSharedMemory"),),
    "static_shared": (("static_shared_memory", "staticSharedMemory"),),
    "registers": (("registers_per_thread", "registersPerThread"),),
}
# Read where CUPTI gives them, for what the compiler made of a kernel (runner.worker.compiled);
# not part of the signature, which stays what it was.
EXTRA_FIELDS = {"local_bytes": ("local_memory_per_thread", "localMemoryPerThread")}
PLAIN = (bool, int, float, str, type(None))
MAX_DEPTH = 4  # containers and own objects read below an attribute
MAX_HELD = 4096
# On since the recorder ran on an H100 (2026-12-06, issue 33); off, a check records no
# signature and reuse goes by the files.
ENABLE_ENV = "KERNELWATCH_LAUNCH_SIGNATURES"


def enabled() -> bool:
    return os.environ.get(ENABLE_ENV, "1").strip().lower() not in ("0", "no", "false", "off")


class _ModuleData(ctypes.Structure):
    """CUpti_ModuleResourceData (cupti_callbacks.h): the image may hold NUL bytes."""

    _fields_ = [("module_id", ctypes.c_uint32), ("size", ctypes.c_size_t),
                ("image", ctypes.c_void_p)]  # fmt: skip


class Unavailable(Exception):
    """A part of the signature CUPTI did not give; the message says which."""


class NoKernel(Unavailable):
    """The launch ran no kernel, only memory copies or sets (a contiguous `copy_` is a
    cudaMemcpy): nothing for ncu to profile."""


def _field(record: Any, names: tuple[str, ...]) -> int:
    for name in names:
        value = getattr(record, name, None)
        if value is not None:
            return int(value)
    raise Unavailable(f"CUPTI's kernel record has no {names[0]}")


def launch_config(record: Any) -> dict[str, Any]:
    """One kernel record as the signature keeps it."""
    out: dict[str, Any] = {"kernel": str(record.name)}
    for key, fields in LAUNCH_FIELDS.items():
        values = [_field(record, names) for names in fields]
        out[key] = values if len(values) > 1 else values[0]
    return out


def extra_facts(record: Any) -> dict[str, int]:
    """What else the record says of the kernel (EXTRA_FIELDS), where it says it."""
    out = {}
    for key, names in EXTRA_FIELDS.items():
        try:
            out[key] = _field(record, names)
        except Unavailable:
            continue
    return out


def image_code(image: bytes) -> dict[str, str]:
    """Kernel (mangled) name -> the hash of its code in a loaded image: per kernel in a cubin;
    for an image that is not one (PTX, a fatbin), the whole image's hash under the names that
    appear in it is left to `code_of`."""
    return cubin.kernel_hashes(image) or {}


def code_of(kernel: str, images: list[tuple[dict[str, str], bytes]], fresh: int = 0) -> str | None:
    """The hash of `kernel`'s code in the images loaded so far: in those the workload loaded
    itself (from index `fresh` on: a variant compiled for it, under a name other workloads'
    variants share) where one holds it, else in every earlier one that does (two versions
    loaded in one process are both keys); None where no image holds it."""
    own = _code_in(kernel, images[fresh:])
    return own if own is not None or not fresh else _code_in(kernel, images[:fresh])


def _code_in(kernel: str, images: list[tuple[dict[str, str], bytes]]) -> str | None:
    found = sorted({hashes[kernel] for hashes, _ in images if kernel in hashes})
    if not found:
        needle = kernel.encode()
        found = sorted({hashlib.sha256(raw).hexdigest() for hashes, raw in images
                        if not hashes and needle in raw})  # fmt: skip
    return "+".join(found) if found else None


def held(instance: Any) -> tuple[dict[str, Any], dict[str, str]]:
    """The arrays and the plain values (numbers, strings) the instance holds, by path: its
    attributes, what dicts, lists and tuples among them hold, and the attributes of objects of
    the suite's own package (a `dev` dict of inputs, an optimizer group's state), MAX_DEPTH
    deep; an array held twice counts once, under its first path in sorted order. Objects of
    other packages (a module, a library's handle, a compiled function) are not read. An object
    of the suite's own package that holds no array is a service, not state (the suite's kernel
    library and its build: paths and compile seconds that differ with every fresh build, and
    say of the code only what its hash says): its plain values are left out."""
    home = type(instance).__module__.split(".")[0]
    arrays: dict[str, Any] = {}
    plain: dict[str, str] = {}
    seen: set[int] = set()
    taken: list[str] = []  # every array and value read, to bound the walk

    def walk(path: str, value: Any, depth: int, values: dict[str, str]) -> None:
        if isinstance(value, PLAIN) or (id(value) not in seen and kind(value) is not None):
            taken.append(path)
            if len(taken) > MAX_HELD:
                raise Unavailable(f"the instance holds more than {MAX_HELD} arrays and values")
        if isinstance(value, PLAIN):
            values[path] = repr(value)
            return
        if id(value) in seen:
            return
        seen.add(id(value))
        if kind(value) is not None:
            arrays[path] = value
            return
        if depth == 0:
            return
        own = values
        if isinstance(value, dict):
            named = ((k if isinstance(k, str) else f"[{k!r}]", v) for k, v in value.items())
            items = sorted(named, key=lambda kv: kv[0])  # by name alone: values may not compare
        elif isinstance(value, (list, tuple)):
            items = [(str(i), v) for i, v in enumerate(value)]
        elif (type(value).__module__.split(".")[0] == home and hasattr(value, "__dict__")
              and not isinstance(value, type)):  # fmt: skip
            items, own = sorted(vars(value).items()), {}
        else:
            return
        had = len(arrays)
        for key, item in items:
            walk(f"{path}.{key}", item, depth - 1, own)
        if own is not values and len(arrays) > had:  # an object that holds state: its values
            values.update(own)

    for name, value in sorted(vars(instance).items()):
        walk(name, value, MAX_DEPTH, plain)
    return arrays, plain


def method_code(instance: Any, name: str = "launch") -> str | None:
    """A digest of a method's bytecode, constants and names (no line numbers)."""
    code = getattr(getattr(type(instance), name, None), "__code__", None)
    if code is None:
        return None
    parts = [code.co_code, repr(code.co_consts).encode(), repr(code.co_names).encode()]
    return hashlib.sha256(b"\0".join(parts)).hexdigest()


class LaunchRecorder:
    """CUPTI's module-load callbacks for the whole process (subscribed before any module loads)
    and its kernel records around one launch."""

    def __init__(self) -> None:
        from cupti import cupti

        self.cupti = cupti
        self.images: list[tuple[dict[str, str], bytes]] = []
        self.records: list[tuple[int, dict[str, Any]]] = []  # (start, launch configuration)
        # The last launch's kernels in order, each with its extra facts (EXTRA_FIELDS).
        self.launched: list[dict[str, Any]] = []
        self.transfers = 0  # memory copies and sets of the last launch
        self._transfer_kinds = _kinds(cupti, "MEMCPY", "MEMSET")
        self.problem = ""
        self.subscriber = cupti.subscribe(self._on_callback, None)
        domain = cupti.CallbackDomain.RESOURCE
        cupti.enable_callback(1, self.subscriber, domain,
                              cupti.CallbackIdResource.MODULE_LOADED)  # fmt: skip
        cupti.activity_register_callbacks(self._requested, self._completed)

    def _on_callback(self, userdata: Any, domain: Any, cbid: Any, cbdata: Any) -> None:
        try:
            image = self._image(cbdata)
            hashes = image_code(image)
            # A cubin is kept as its kernels' hashes alone: a process that loads a library's
            # modules (torch's) would otherwise hold every image for its lifetime.
            self.images.append((hashes, b"" if hashes else image))
        except Exception as exc:  # a callback must not raise into the driver
            self.problem = f"a loaded module could not be read ({type(exc).__name__}: {exc})"

    def _image(self, cbdata: Any) -> bytes:
        """A copy of the module's image: CUpti_ResourceData (cupti-python may hand over its
        address instead) -> its CUpti_ModuleResourceData, valid only during the callback."""
        if not hasattr(cbdata, "resource_descriptor"):  # an address (from_ptr has no owner)
            cbdata = self.cupti.ResourceData.from_ptr(int(getattr(cbdata, "ptr", cbdata)))
        if not cbdata.resource_descriptor:
            raise Unavailable("no module data")
        module = _ModuleData.from_address(int(cbdata.resource_descriptor))
        if not module.image or not module.size:
            raise Unavailable("an empty module image")
        return ctypes.string_at(module.image, module.size)

    def _requested(self) -> tuple[int, int]:
        return 4 << 20, 0

    def _completed(self, activities: list[Any]) -> None:
        # A record is read here, while its buffer is CUPTI's to hand over.
        kind = int(self.cupti.ActivityKind.CONCURRENT_KERNEL)
        for a in activities:
            if int(a.kind) in self._transfer_kinds:
                self.transfers += 1
            if int(a.kind) != kind:
                continue
            try:
                self.records.append((int(a.start), {**launch_config(a), **extra_facts(a)}))
            except Unavailable as exc:
                self.problem = str(exc)

    def kernels_of(self, launch: Any, synchronize: Any) -> list[dict[str, Any]]:
        """The launch configuration of every kernel `launch()` ran, in order."""
        synchronize()
        self.cupti.activity_flush_all(1)
        self.records, self.transfers = [], 0
        self.cupti.activity_enable(self.cupti.ActivityKind.CONCURRENT_KERNEL)
        # Copies and sets are counted only to tell a launch of no kernel from one CUPTI missed.
        transfers = [k for k in self._transfer_kinds.values()
                     if _toggled(self.cupti.activity_enable, k)]  # fmt: skip
        try:
            launch()
            synchronize()
        finally:
            self.cupti.activity_disable(self.cupti.ActivityKind.CONCURRENT_KERNEL)
            for k in transfers:
                _toggled(self.cupti.activity_disable, k)
            self.cupti.activity_flush_all(1)
        self.launched = [config for _, config in sorted(self.records, key=lambda r: r[0])]
        if self.problem:
            raise Unavailable(self.problem)
        extra = set(EXTRA_FIELDS)
        return [{k: v for k, v in c.items() if k not in extra} for c in self.launched]


def signature(
    instance: Any, recorder: LaunchRecorder, synchronize: Any, fresh: int = 0
) -> dict[str, Any]:
    """What decides the counters of `instance.launch()` (module docstring); `fresh`: the number
    of images loaded before the instance was prepared. Raises Unavailable with the reason
    where a part cannot be known."""
    if recorder.problem:
        raise Unavailable(recorder.problem)
    # Outputs filled with the suite's poison first: a fresh output holds whatever its memory
    # pool handed back, often the result a check just computed in the same blocks, which the
    # launch leaves unchanged (it would read as an input, with a checksum of chance).
    poison = getattr(instance, "poison", None)
    if callable(poison):
        poison()
        synchronize()
    arrays, scalars = held(instance)
    before = fingerprints(arrays)
    kernels = recorder.kernels_of(instance.launch, synchronize)
    after = fingerprints(held(instance)[0])
    if not kernels and recorder.transfers:
        raise NoKernel(f"the launch ran no kernel, only {recorder.transfers} memory copies or "
                       "sets: nothing for ncu to profile")  # fmt: skip
    if not kernels:
        raise Unavailable("CUPTI recorded no kernel of the launch")
    code = {k["kernel"]: code_of(k["kernel"], recorder.images, fresh) for k in kernels}
    unknown = sorted(k for k, c in code.items() if c is None)
    if unknown:
        raise Unavailable(f"no loaded module holds the code of {', '.join(unknown[:3])}")
    inputs, written = {}, {}
    for name, was in before.items():
        now = after.get(name)
        if now == was:
            inputs[name] = was
        elif was is not None:
            written[name] = {"shape": was["shape"], "dtype": was["dtype"]}
    return {"kernels": kernels, "code": code, "inputs": inputs, "written": written,
            "scalars": scalars, "launch_code": method_code(instance)}  # fmt: skip


def _kinds(cupti: Any, *names: str) -> dict[int, Any]:
    """The activity kinds of these names that this cupti-python has, by their number."""
    kinds = (getattr(cupti.ActivityKind, n, None) for n in names)
    return {int(k): k for k in kinds if k is not None}


def _toggled(switch: Any, kind: int) -> bool:
    """`switch(kind)` (activity_enable or _disable); False where CUPTI refused it."""
    try:
        switch(kind)
    except Exception:
        return False
    return True


def _one_line(exc: BaseException) -> str:
    """The exception's kind and the first line it says (what a log line has room for)."""
    first = next(iter(str(exc).strip().splitlines()), "")
    return f"{type(exc).__name__} ({first})" if first else type(exc).__name__


def recorder_or_why() -> LaunchRecorder | str | None:
    """A check worker's recorder, subscribed before the process loads any module; or the
    reason there is none; None where signatures are off ($KERNELWATCH_LAUNCH_SIGNATURES)."""
    if not enabled():
        return None
    try:
        return LaunchRecorder()
    except Exception as exc:  # no cupti-python, or CUPTI refused: reuse falls back to the files
        return f"no CUPTI recorder ({_one_line(exc)})"


def launch_signature(w: Any, recorder: LaunchRecorder | str | None) -> dict:
    """The signature of the launch ncu profiles (the workload prepared as the profile worker
    prepares it: seed 0, inputs where a timing process draws them, whatever the check did), or
    {"unavailable": why}."""
    if not isinstance(recorder, LaunchRecorder):
        return {"unavailable": recorder or "no CUPTI recorder"}
    import cupy

    from runner.measure.sampling import prepare, timing_inputs

    recorder.launched = []  # never an earlier workload's
    try:
        loaded = len(recorder.images)  # what this workload loads itself comes after
        instance = prepare(w, 0, timing_inputs("cuda"))
        try:
            return signature(instance, recorder, cupy.cuda.Device().synchronize, loaded)
        finally:
            instance.close()
    except NoKernel as exc:
        return {"unavailable": str(exc), "no_kernel": True}
    except Unavailable as exc:
        return {"unavailable": str(exc)}
    except Exception as exc:  # the check passed: a signature is never worth failing it
        return {"unavailable": f"the signature's launch failed ({_one_line(exc)})"}
