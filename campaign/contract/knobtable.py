"""The knobs a switch cell may set, each with the values its reader parses: the positive list.

A cell sets the switch (``switch.name``) and the variables declared beside it (``switch.also``);
every one of them must be a row here, however it is declared: a reason admits a knob the list
holds, never a variable it does not (`campaign.contract.cellenv_rules` refuses the rest, by name
where it knows why). A row is a knob a compiler or a library reads to change the code it makes or
how it runs it -- nothing that names a file, a folder, a program, a module or a plugin -- and its
value grammar is its reader's own:

- Triton's bools: 1/true/on and 0/false/off in any ASCII case, the words every Triton reader reads
  alike. The C++ ``getBoolEnv`` (DISABLE_MMA_V3 and the other C++-only knobs) reads every other value
  as off, so ``"1✓"`` would run a candidate that is its baseline -- a null campaign nobody asked
  for -- and Python's ``getenv_bool`` (``triton.knobs.env_bool``) reads yes/y as on, which C++
  reads as off. Refused here, exactly as spelled.
- An integer is ASCII decimal digits: what ``int()``, ``std::stoi`` and LLVM's ``getAsInteger``
  all read the same way (``int()`` alone takes ``" 1_5"`` and other digits too).
- A word is one of the values the reader takes (TRITON_F32_DEFAULT: the dot precisions of
  Triton's CUDA and HIP options).

The rows are held against the installed triton by tests/contract/test_knob_table.py: every env
knob of ``triton.knobs`` and every name of the C++ cache-invalidating list is a row here or refused
with its reason, and no Triton row names a variable triton does not read (a misspelling).
To add a knob: a row in `KNOBS` with its grammar and its reader, then the test.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

# Linux refuses one NAME=value over 128 KiB at exec (MAX_ARG_STRLEN), and all of a process's
# arguments and variables together over a quarter of its stack. Every grammar here takes a few
# bytes (the longest legitimate value, an LLVM option list, is under 100): 4 KiB names a runaway
# value at validate, long before the exec that would fail on it in every cell.
MAX_VALUE_BYTES = 4096
_INTEGER = re.compile(r"[0-9]{1,9}")
_OPTIONS = re.compile(r"[a-z][a-z0-9-]*(,[a-z][a-z0-9-]*)*")


@dataclass(frozen=True)
class Grammar:
    kind: str                        # bool, int, word, or bool or LLVM options (DISABLE_LLVM_OPT)
    words: tuple[str, ...] = ()

    def parses(self, value: str) -> bool:
        flag = value.isascii() and value.lower() in BOOL_WORDS
        if self.kind == "bool":
            return flag
        if self.kind == "int":
            return bool(_INTEGER.fullmatch(value))
        if self.kind == "options":
            return flag or bool(_OPTIONS.fullmatch(value))
        return value in self.words

    def expected(self, reader: str) -> str:
        if self.kind == "bool":
            return f"a bool {reader} parses: use 0/1/true/false/on/off"
        if self.kind == "int":
            return f"an integer {reader} parses: use decimal digits 0-9 (at most 9), e.g. 15"
        if self.kind == "options":
            return (f"a bool {reader} parses (0/1/true/false/on/off) nor a comma list of LLVM "
                    "option names (disable-lsr,...)")
        return f"a value {reader} takes: use {', '.join(self.words)}"


BOOL_WORDS = ("0", "1", "true", "false", "on", "off")
BOOL = Grammar("bool")
INT = Grammar("int")
ZERO_ONE = Grammar("word", ("0", "1"))
TRITON = "Triton"
FLAGTREE = "FlagTree"


@dataclass(frozen=True)
class Knob:
    name: str
    grammar: Grammar
    reader: str        # who parses it: Triton, FlagTree, FlagGems, the CUDA driver ...


def _rows(reader: str, grammar: Grammar, *names: str) -> tuple[Knob, ...]:
    return tuple(Knob(name, grammar, reader) for name in names)


KNOBS = {knob.name: knob for knob in (
    # Triton 3.6: triton.knobs (compilation, autotuning, runtime, language, nvidia, amd, proton) and
    # the C++ knobs of its cache-invalidating list. Read at compile time unless said otherwise.
    *_rows(TRITON, BOOL, "DISABLE_MMA_V3", "DISABLE_MMA_V5", "DISABLE_PTXAS_OPT", "TRITON_DEFAULT_FP_FUSION",
           "TRITON_ALWAYS_COMPILE", "TRITON_DISABLE_LINE_INFO", "TRITON_ENABLE_ASAN", "TRITON_DEBUG",
           "TRITON_FRONT_END_DEBUGGING", "TRITON_ALLOW_NON_CONSTEXPR_GLOBALS", "TRITON_PRINT_AUTOTUNING",
           "LLVM_EXTRACT_DI_LOCAL_VARIABLES", "ALLOW_LHS_TMEM_LAYOUT_CONVERSION", "TRITON_PREFER_TMEM_16x256_LAYOUT",
           "TRITON_ENABLE_EXPERIMENTAL_CONSAN", "MLIR_ENABLE_TIMING", "LLVM_ENABLE_TIMING",
           "MLIR_DISABLE_MULTITHREADING", "AMDGCN_USE_BUFFER_OPS", "AMDGCN_USE_BUFFER_ATOMICS",
           "AMDGCN_ANALYZE_SMALL_TENSOR_RANGE", "AMDGCN_SCALARIZE_PACKED_FOPS", "TRITON_HIP_USE_ASYNC_COPY",
           "TRITON_HIP_USE_BLOCK_PINGPONG", "TRITON_HIP_USE_IN_THREAD_TRANSPOSE", "TRITON_PROTON_DISABLE",
           "TRITON_ENABLE_NVTX"),
    Knob("DISABLE_LLVM_OPT", Grammar("options"), TRITON),
    Knob("TRITON_F32_DEFAULT", Grammar("word", ("ieee", "tf32", "tf32x3", "bf16x3", "bf16x6")), TRITON),
    Knob("USE_IR_LOC", Grammar("word", ("ttir", "ttgir")), TRITON),
    # FlagTree (flaggems-facts §6): knobs.nvidia.rlc_enhance and its phase mask, the vendors' own
    # RLC pairs, and knobs.autotuning.adjust_block_size (on by default: it rewrites BLOCK_* of autotune configs).
    *_rows(FLAGTREE, BOOL, "FLAGTREE_AABS", "FLAGTREE_RLC_ENHANCE", "FLAGTREE_MUSA_RLC_ENHANCE",
           "FLAGTREE_HCU_RLC_ENHANCE", "FLAGTREE_PPU_RLC_ENHANCE", "FLAGTREE_METAX_RLC_ENHANCE"),
    *_rows(FLAGTREE, INT, "FLAGTREE_RLC_PHASE_MASK", "FLAGTREE_MUSA_RLC_PHASE_MASK", "FLAGTREE_HCU_RLC_PHASE_MASK",
           "FLAGTREE_PPU_RLC_PHASE_MASK", "FLAGTREE_METAX_RLC_PHASE_MASK"),
    # FlagGems reads it at import: "1" turns FlagTune's search on (pinned to "0": only as the switch)
    Knob("USE_FLAGTUNE", ZERO_ONE, "FlagGems"),
    # the vendors' runtimes: launch and module-loading behaviour, no file, no program
    *_rows("the CUDA driver", ZERO_ONE, "CUDA_LAUNCH_BLOCKING", "CUDA_FORCE_PTX_JIT", "CUDA_DISABLE_PTX_JIT",
           "CUDA_CACHE_DISABLE"),
    Knob("CUDA_MODULE_LOADING", Grammar("word", ("LAZY", "EAGER")), "the CUDA driver"),
    Knob("CUDA_DEVICE_MAX_CONNECTIONS", INT, "the CUDA driver"),
    *_rows("the HIP runtime", ZERO_ONE, "HIP_LAUNCH_BLOCKING", "AMD_SERIALIZE_COPY"),
    Knob("AMD_SERIALIZE_KERNEL", Grammar("word", ("0", "1", "2", "3")), "the HIP runtime"),
    Knob("MUSA_LAUNCH_BLOCKING", ZERO_ONE, "the MUSA runtime"),
)}

_OUTPUT = "it prints the compiler's own debug output into every cell's logs; the campaign captures IR itself (switch.ir_stage)"
# Knobs the readers know that no cell may set, with why (beside `cellenv_rules.NEVER`, whose
# variables load code). Each is a knob of the installed triton's table that is not a row above.
REFUSED = {
    "TRITON_STORE_BINARY_ONLY": "Triton then keeps only the binary: the cells' IR, what the campaign compares, "
                                "is never written",
    "TRITON_CACHE_AUTOTUNING": "Triton's own autotune cache would choose configs outside the campaign's "
                               "recording and replay",
    "PTXAS_OPTIONS": "free-form ptxas arguments (an --options-file reads more from a file the manifest does not show)",
    "TRITON_MOCK_PTX_VERSION": "it makes Triton claim a PTX version its ptxas may not have",
    "TRITON_INSTRUMENTATION_MODE": "it makes Triton instrument kernels with profiler code the manifest does not show",
    "TRITON_REDIS_HOST": "a remote cache's address: a cell compiles into its own cache only",
    "TRITON_REDIS_PORT": "a remote cache's address: a cell compiles into its own cache only",
    "TRITON_REDIS_KEY_FORMAT": "a remote cache's key format: a cell compiles into its own cache only",
    "TRITON_DUMP_PTXAS_LOG": _OUTPUT, "TRITON_ENABLE_LLVM_DEBUG": _OUTPUT, "TRITON_LLVM_DEBUG_ONLY": _OUTPUT,
    "MLIR_ENABLE_DIAGNOSTICS": _OUTPUT, "MLIR_ENABLE_DUMP": _OUTPUT, "LLVM_IR_ENABLE_DUMP": _OUTPUT,
    "NVPTX_ENABLE_DUMP": _OUTPUT, "AMDGCN_ENABLE_DUMP": _OUTPUT, "TRITON_DUMP_MIR": _OUTPUT,
}


def value_problem(name: str, value: str) -> str | None:
    """Why a row's ``value`` is not one its reader parses as meant (or is too long to exec), or None."""
    size = len(value.encode("utf-8", "surrogatepass"))
    if size > MAX_VALUE_BYTES:
        return (f"{name}: a value of {size:,} bytes is over the {MAX_VALUE_BYTES:,}-byte limit of a cell "
                "variable (the OS refuses one over 128 KiB at exec; no knob takes more than a few bytes)")
    knob = KNOBS.get(name)
    if knob is None or knob.grammar.parses(value):
        return None
    return f"{name}: {value!r} is not {knob.grammar.expected(knob.reader)}"
