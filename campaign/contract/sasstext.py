"""What an ir/*.sass file holds: nvdisasm's output of a cubin without its debug sections.

Both sides use it: the IR capture writes a cell's .sass files through `sass_code`, and
`campaign.judging.irevidence` drops debug sections again before it fingerprints one.
"""
from __future__ import annotations

import re

# nvdisasm prints every ELF section of a cubin under a banner: //----- .text.add_kernel -----
_SASS_BANNER = re.compile(r"^//-+\s+(\S+)\s+-+\s*$")
# Sections that hold no machine code and differ for identical code: .debug_line names
# the kernel's source file (generated kernels live in the cell's own cache folder) and
# .nv_debug_ptx_txt embeds the PTX text, which TRITON_DEFAULT_FP_FUSION=0 changes
# (add.f16x2 -> add.rn.f16x2) while the instructions stay the same (measured, sm_90).
_SASS_DEBUG_SECTION = re.compile(r"^\.(nv_)?debug")


def sass_code(text: str) -> str:
    """nvdisasm's output without its debug sections: the code, .nv.info attributes
    (register count, stack size) and symbols. The capture writes this, and the
    fingerprint drops debug sections again in case a file holds them."""
    kept, debug = [], False
    for line in text.splitlines():
        banner = _SASS_BANNER.match(line)
        if banner:
            debug = bool(_SASS_DEBUG_SECTION.match(banner.group(1)))
        if not debug:
            kept.append(line)
    return "\n".join(kept) + "\n"
