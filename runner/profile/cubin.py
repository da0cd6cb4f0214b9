"""The code of each kernel in a cubin (a CUDA ELF file), as a hash per kernel.

A cubin keeps each kernel's code and its own data in sections named after it (`.text.K`,
`.nv.constant0.K`, `.nv.info.K`, `.nv.shared.K`, `.rela.text.K`; a `__noinline__` device
function is copied into each caller's `.text.K`), and data that every kernel may read in
sections of no kernel (`.nv.constant3` for `__constant__` variables, `.nv.global.init`, a
device function of its own). A kernel's hash covers its own sections and those of no kernel,
and leaves out the sections of the other kernels and the module's bookkeeping (METADATA: the
symbol and string tables, the per-module `.nv.info` of stack and frame sizes, the call graph,
debug frames, notes), which change whenever any kernel does. So a commit that changes one kernel
of a file changes that kernel's hash only. Debug information (DEBUG: `-lineinfo`'s line tables,
on by default for Triton and Inductor kernels, `-G`'s variables, and their relocations) is left
out too: it names the source's path and lines, so the same code compiled in another checkout,
or below a line a commit added, would look changed; it changes nothing a kernel executes.
Kernels are the ELF's function symbols marked as entries (STO_CUDA_ENTRY). Anything that does
not parse as such a file gives None: the caller hashes the whole file instead.
"""

from __future__ import annotations

import hashlib
import struct

STO_CUDA_ENTRY = 0x10
STT_FUNC = 2
SHT_SYMTAB = 2
SHT_NOBITS = 8
METADATA = frozenset(
    {"", ".shstrtab", ".strtab", ".symtab", ".nv.info", ".nv.callgraph", ".debug_frame",
     ".rel.debug_frame", ".rela.debug_frame"}
)  # fmt: skip
DEBUG = (".debug_", ".nv_debug")  # name prefixes, after any ".rel"/".rela" of a relocation
_ELF64_LE = b"\x7fELF\x02\x01"


def _string(data: bytes, offset: int) -> str:
    end = data.index(b"\0", offset)
    return data[offset:end].decode(errors="replace")


def is_debug(section: str) -> bool:
    """Whether a section holds debug information (or its relocations) only."""
    for relocation in (".rela", ".rel"):
        if section.startswith(relocation + "."):
            section = section[len(relocation) :]
            break
    return section.startswith(DEBUG)


def kernel_hashes(data: bytes) -> dict[str, str] | None:
    """Kernel name -> hash of its code and the data it may read; None if not a 64-bit cubin."""
    if not data.startswith(_ELF64_LE):
        return None
    try:
        shoff = struct.unpack_from("<Q", data, 0x28)[0]
        entsize, count, names_index = struct.unpack_from("<HHH", data, 0x3A)
        headers = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * entsize)
                   for i in range(count)]  # fmt: skip
        names_at = headers[names_index][4]
        sections = [(_string(data, names_at + h[0]), h) for h in headers]
        entries: set[str] = set()
        for _, h in sections:
            if h[1] != SHT_SYMTAB:
                continue
            strings_at = headers[h[6]][4]
            for i in range(h[5] // 24):
                name, info, other = struct.unpack_from("<IBB", data, h[4] + i * 24)
                if info & 0xF == STT_FUNC and other & STO_CUDA_ENTRY:
                    entries.add(_string(data, strings_at + name))
    except (struct.error, IndexError, ValueError):
        return None
    if not entries:
        return None
    owned: dict[str, list[bytes]] = {e: [] for e in entries}
    shared: list[bytes] = []
    for name, h in sections:
        if name in METADATA or name.startswith(".note.") or is_debug(name):
            continue
        owners = [e for e in entries if name.endswith("." + e)]
        body = b"" if h[1] == SHT_NOBITS else data[h[4] : h[4] + h[5]]
        record = b"%s\0%d\0%d\0" % (name.encode(), h[1], h[5]) + body
        (owned[max(owners, key=len)] if owners else shared).append(record)
    common = b"".join(sorted(shared))
    return {
        e: hashlib.sha256(b"".join(sorted(owned[e])) + b"\1" + common).hexdigest()
        for e in sorted(entries)
    }
