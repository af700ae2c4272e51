"""The PTX of the timer's own helper kernels (:mod:`wfbench_core.gpu.gpu_rounds` runs them): the empty kernel of
the launch floor, the gate every round starts behind and the clock probe that brackets each side."""

from collections.abc import Sequence

__all__ = [  # internal to wfbench, not the plugin API (README: Layout)
    "CLOCK_KERNEL", "CLOCK_PTX", "EMPTY", "GATE_KERNEL", "GATE_PTX", "empty_ptx",
]

EMPTY = "wfbench_empty"  # the empty kernel's label in the rounds (the launch floor)
_PARAM_TYPES = {"ptr": "u64", "i32": "s32", "i64": "s64", "f32": "f32", "f64": "f64"}  # a case parameter's kind


def empty_ptx(kinds: Sequence[str] = ()) -> str:
    """The empty kernel, taking parameters of ``kinds`` (a case's: ``ptr``, ``i32``, ``i64``, ``f32``, ``f64``), so
    that its launches cost the host what a launch with the case's arguments costs."""
    params = ", ".join(f".param .{_PARAM_TYPES[kind]} p{i}" for i, kind in enumerate(kinds))
    return f""".version 7.5
.target sm_75
.address_size 64

.visible .entry {EMPTY}({params})
{{
    ret;
}}
"""


GATE_KERNEL = "wfbench_gate"
GATE_PTX = """\
.version 7.5
.target sm_75
.address_size 64

.visible .entry wfbench_gate(.param .u64 flag, .param .u64 timeout_ns)
{
    .reg .pred  %p<3>;
    .reg .b32   %r<3>;
    .reg .b64   %rd<6>;

    ld.param.u64    %rd1, [flag];
    ld.param.u64    %rd2, [timeout_ns];
    mov.u64         %rd3, %globaltimer;
$L_wait:
    ld.volatile.global.u32  %r1, [%rd1];
    setp.ne.u32     %p1, %r1, 0;
    @%p1 bra        $L_open;
    mov.u64         %rd4, %globaltimer;
    sub.s64         %rd5, %rd4, %rd3;
    setp.lt.u64     %p2, %rd5, %rd2;
    @%p2 bra        $L_wait;
    mov.u32         %r2, 1;
    st.volatile.global.u32  [%rd1+4], %r2;
$L_open:
    ret;
}
"""


CLOCK_KERNEL = "wfbench_clock"
CLOCK_PTX = """\
.version 7.5
.target sm_75
.address_size 64

.visible .entry wfbench_clock(.param .u64 out, .param .u64 slot)
{
    .reg .pred  %p<2>;
    .reg .b32   %r<2>;
    .reg .b64   %rd<7>;

    mov.u32         %r1, %smid;
    setp.ne.u32     %p1, %r1, 0;
    @%p1 bra        $L_done;
    ld.param.u64    %rd1, [out];
    ld.param.u64    %rd2, [slot];
    shl.b64         %rd3, %rd2, 4;
    add.s64         %rd4, %rd1, %rd3;
    mov.u64         %rd5, %globaltimer;
    mov.u64         %rd6, %clock64;
    st.volatile.global.u64  [%rd4], %rd5;
    st.volatile.global.u64  [%rd4+8], %rd6;
$L_done:
    ret;
}
"""
