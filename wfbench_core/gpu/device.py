"""The GPU face of wfbench: one CUDA context and stream, and everything done with them.

Every module that touches the GPU (the timer, its rounds, the correctness checks, the roofline yardsticks,
the profiler's and the sanitizer's launchers, the nvbench cross-check) does it through a :class:`Device`:

- **context and stream**: numba-cuda's context and one explicit stream, which cuda.core's launches share;
- **module load**: PTX to a :class:`Kernel` (a CUDA error is a classified
  :class:`~wfbench_core.compiling.faults.KernelFault`, see :meth:`Device.faults`);
- **arguments and launch**: a case's parameters as kernel arguments, launches on the stream (or on another
  library's stream, for nvbench), CUDA graphs captured from launches and replayed;
- **memory**: device buffers, mapped host memory, copies in both directions, memset, prompt frees;
- **events**: recorded on the stream, elapsed milliseconds between two of them;
- **environment and arch**: what the GPU and its libraries are, and the ``sm_XX`` to build for.

A :class:`Device` opens the driver on first use (``Device()``), or drives the parts it is given
(:class:`Driver`; the tests' stand-in driver uses this). numba-cuda, cuda.core and cuda.bindings are imported
lazily: importing this module needs no GPU.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import platform
import socket
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import attrs
import numpy as np

from wfbench_core.compiling.faults import LOAD_FAILURE, OUT_OF_RESOURCES, Fault, KernelFault, classify, launch_limits
from wfbench_core.errors import NoGpuError, WfbenchError
from wfbench_core.record.results import Environment, KernelAttrs, sm_arch

# internal to wfbench, not the plugin API (README: Layout)
__all__ = ["Device", "Driver", "Kernel", "gpu_unavailable_reason", "jit_errors", "jit_log"]

_SCALAR_TYPES = {"i32": ctypes.c_int32, "i64": ctypes.c_int64, "f32": ctypes.c_float, "f64": ctypes.c_double}


def gpu_unavailable_reason() -> str | None:
    """None when a CUDA GPU and driver are usable here, else one line saying why not."""
    try:
        from numba import cuda
    except ImportError:
        return "numba-cuda is not installed here: pip install 'wfbench[gpu]' on the GPU host"
    try:
        if not cuda.is_available():
            return "no NVIDIA GPU or CUDA driver found on this machine"  # each command adds where to go instead
    except Exception as exc:  # any driver failure means no GPU for us
        return f"the CUDA driver is not usable here ({type(exc).__name__}: {exc})"
    return None


@attrs.frozen
class Driver:
    """The parts a :class:`Device` drives: numba-cuda's ``cuda`` module, a context, one stream, and cuda.core's
    ``launch``, ``LaunchConfig`` and the same stream as cuda.core sees it; ``wrap_stream`` makes another
    library's stream (a handle) a stream ``launch`` takes."""

    cuda: Any
    context: Any
    stream: Any
    launch: Callable[..., None]
    launch_config: Callable[..., Any]
    launch_stream: Any
    wrap_stream: Callable[[int], Any] = lambda handle: handle
    jit_log: Callable[[str, str], str] = lambda ptx, arch: ""  # what the JIT says about PTX that did not load
    memset: Callable[[Any, int, Any], None] | None = None  # (buffer, byte, stream); None: numba-cuda's

    @classmethod
    def open(cls) -> Driver:
        reason = gpu_unavailable_reason()
        if reason:
            raise NoGpuError(reason)
        from numba import cuda

        try:
            from cuda.core import LaunchConfig, Stream, launch
        except ImportError:  # cuda-core < 0.4
            from cuda.core.experimental import LaunchConfig, Stream, launch
        stream = cuda.stream()
        # cuda.core launches go to the same stream numba's events are recorded on (numba owns it)
        return cls(cuda, cuda.current_context(), stream, launch, LaunchConfig, Stream.from_handle(int(stream.handle)),
                   Stream.from_handle, jit_log)


@attrs.frozen(eq=False)
class Kernel:
    """A kernel loaded from PTX; its module stays loaded as long as this is referenced."""

    name: str
    module: Any = attrs.field(repr=False)
    function: Any = attrs.field(repr=False)

    def resources(self) -> KernelAttrs:
        """What the driver says about the kernel: registers, local and static shared bytes, thread limit."""
        a = self.function.attrs
        return KernelAttrs(registers=int(a.regs), local_bytes=int(a.local), shared_bytes=int(a.shared),
                           max_threads=int(a.maxthreads))


class Device:
    """One GPU context and stream (see the module docstring)."""

    def __init__(self, driver: Driver | None = None) -> None:
        self._driver = driver

    @property
    def _d(self) -> Driver:
        if self._driver is None:
            self._driver = Driver.open()  # NoGpuError: one line saying why not
        return self._driver

    def open(self) -> Device:
        """Open the driver now (a missing GPU is a :class:`NoGpuError` here rather than at first use)."""
        _ = self._d
        return self

    # -- what the GPU is ---------------------------------------------------------------------------

    def _attr(self, name: str, default: int = 0) -> int:
        return int(getattr(self._d.context.device, name, default))

    @property
    def sm_count(self) -> int:
        return self._attr("MULTIPROCESSOR_COUNT")

    @property
    def l2_bytes(self) -> int:
        return self._attr("L2_CACHE_SIZE")

    @property
    def ordinal(self) -> int:
        """The device's index among this process's GPUs (what nvbench's ``--devices`` takes)."""
        return self._attr("id")

    def free_bytes(self) -> int:
        return int(self._d.context.get_memory_info()[0])

    def arch(self) -> str:
        return sm_arch(tuple(self._d.context.device.compute_capability))

    def pci_bus_id(self) -> str | None:
        dev = self._d.context.device
        try:
            return f"{int(dev.PCI_DOMAIN_ID):08x}:{int(dev.PCI_BUS_ID):02x}:{int(dev.PCI_DEVICE_ID):02x}.0"
        except Exception:
            return None

    def environment(self) -> Environment:
        dev = self._d.context.device
        cc = dev.compute_capability
        env: dict[str, Any] = {
            "gpu_name": dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name),
            "compute_capability": f"{cc[0]}.{cc[1]}",
            "sm_count": self.sm_count,
            "l2_bytes": self.l2_bytes,
            "host": socket.gethostname(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "numba_cuda_version": _dist_version("numba-cuda"),
            "cuda_core_version": _dist_version("cuda-core"),
        }
        from wfbench_core.gpu.nvml import facts

        env.update(facts(self.pci_bus_id()))
        return Environment(**env)

    # -- modules and faults ------------------------------------------------------------------------

    def load(self, ptx: str, kernel: str, *, case_id: str, config: str = "canonical", label: str = "") -> Kernel:
        """Load ``kernel`` from ``ptx`` into the context; a failure is a :class:`KernelFault` naming the side, with
        the JIT's own words where the PTX did not load (cuda.core loads a module lazily: at its first kernel)."""
        try:
            module = self._d.context.create_module_ptx(ptx)
        except Exception as exc:  # only CUDA errors are converted; anything else propagates
            fault = classify(exc)
            if fault is None:
                raise
            raise KernelFault(case_id, config, label, self._load_fault(fault, ptx, kernel), "load") from None
        try:
            fn = module.get_function(kernel)
        except Exception as exc:  # name the side and kernel, keep the driver's words
            fault = attrs.evolve(classify(exc) or Fault(LOAD_FAILURE, False), kind=LOAD_FAILURE)
            raise KernelFault(case_id, config, label, self._load_fault(fault, ptx, kernel), "load") from None
        return Kernel(kernel, module, fn)

    def _load_fault(self, fault: Fault, ptx: str, kernel: str) -> Fault:
        """The fault of a load, with what it means: the kernel is not in the PTX, or what the JIT said."""
        if fault.name == "CUDA_ERROR_NOT_FOUND":
            return attrs.evolve(fault, detail=f"kernel {kernel!r} not found in its PTX")
        if fault.kind != LOAD_FAILURE:
            return fault
        try:
            log = jit_errors(self._d.jit_log(ptx, self.arch()))
        except Exception:  # the JIT's words are a courtesy; the class stands without them
            log = ""
        detail = f"the JIT says: {log}" if log else f"kernel {kernel!r}: the driver did not load its PTX (no JIT log)"
        return attrs.evolve(fault, detail=detail)

    @contextlib.contextmanager
    def faults(self, case_id: str, config: str, label: str, action: str, kernel: Kernel | None = None,
               geometry: Any = None) -> Iterator[None]:
        """Turn a CUDA error inside the block into a classified :class:`KernelFault` (one line)."""
        try:
            yield
        except KernelFault:
            raise
        except Exception as exc:  # only CUDA errors are converted; anything else propagates
            fault = classify(exc)
            if fault is None:
                raise
            if kernel is not None and geometry is not None and fault.code in (1, 701):
                detail = self._over_limits(kernel, geometry)
                if detail:
                    fault = attrs.evolve(fault, kind=OUT_OF_RESOURCES, detail=detail)
            raise KernelFault(case_id, config, label, fault, action) from None

    def _over_limits(self, kernel: Kernel, geo: Any) -> str:
        """Which per-block resource a launch that the driver refused asks too much of ("" if unknown)."""
        try:
            a = kernel.resources()
            return launch_limits(threads=int(np.prod(geo.block)), dynamic_shared=int(geo.shared_bytes),
                                 registers=a.registers, static_shared=a.shared_bytes, max_threads=a.max_threads,
                                 max_shared_per_block=self._attr("MAX_SHARED_MEMORY_PER_BLOCK"),
                                 max_registers_per_block=self._attr("MAX_REGISTERS_PER_BLOCK"))
        except Exception:  # the detail is a courtesy; the class stands without it
            return ""

    # -- arguments and launches --------------------------------------------------------------------

    @staticmethod
    def args(case: Any, bufs: Mapping[str, Any], scalars: Mapping[str, Any]) -> list[Any]:
        """The kernel arguments of ``case.params``: device pointers of ``bufs``, typed ``scalars``."""
        out: list[Any] = []
        for p in case.params:
            if p.kind == "ptr":
                out.append(ctypes.c_uint64(Device.address(bufs[p.name])))
            else:
                out.append(_SCALAR_TYPES[p.kind](scalars[p.name].item()))
        return out

    @staticmethod
    def null_args(case: Any) -> list[Any]:
        """The argument list of ``case.params`` with null pointers and zero scalars (for a kernel that reads none)."""
        return [ctypes.c_uint64(0) if p.kind == "ptr" else _SCALAR_TYPES[p.kind](0) for p in case.params]

    @staticmethod
    def address(buf: Any) -> int:
        """The device address of a buffer (mapped host memory: the address the device sees)."""
        return int(buf.device_ctypes_pointer.value or 0)

    def config(self, grid: Any, block: Any, shared_bytes: int = 0) -> Any:
        return self._d.launch_config(grid=grid, block=block, shmem_size=shared_bytes)

    def launch(self, kernel: Kernel, config: Any, args: Any, stream: Any = None) -> None:
        """One launch on the device's stream, or on ``stream`` (made by :meth:`wrap_stream`)."""
        self._d.launch(self._d.launch_stream if stream is None else stream, config, kernel.function.kernel, *args)

    def wrap_stream(self, handle: int) -> Any:
        """Another library's CUDA stream (its handle), as :meth:`launch` takes it."""
        return self._d.wrap_stream(handle)

    def launcher(self, kernel: Kernel, config: Any, args: Any) -> Callable[[], None]:
        """A call that makes one launch of ``kernel`` with ``args`` on the device's stream."""
        launch, stream, fn = self._d.launch, self._d.launch_stream, kernel.function.kernel

        def go() -> None:
            launch(stream, config, fn, *args)

        return go

    def case_launcher(self, kernel: Kernel, case: Any, config: str, args: Any) -> Callable[[], None]:
        """One launch of a side's kernel at the case's geometry for ``config``."""
        geo = case.launch(case.sizes[config])
        return self.launcher(kernel, self.config(geo.grid, geo.block, geo.shared_bytes), args)

    # -- memory ------------------------------------------------------------------------------------

    def to_device(self, host: np.ndarray) -> Any:
        return self._d.cuda.to_device(host, stream=self._d.stream)

    def empty(self, shape: Any, dtype: Any) -> Any:
        return self._d.cuda.device_array(shape, dtype=dtype, stream=self._d.stream)

    def mapped(self, n: int, dtype: Any) -> Any:
        """Host memory the device reads and writes (a host-side numpy array)."""
        return self._d.cuda.mapped_array(n, dtype=dtype)

    def copy_in(self, dst: Any, src: Any) -> None:
        """Copy host data or another device buffer of the same size into ``dst`` (queued on the stream)."""
        dst.copy_to_device(src, stream=self._d.stream)

    def read(self, bufs: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """Every buffer copied to the host, once the stream's work before the copies is done."""
        out = {name: buf.copy_to_host(stream=self._d.stream) for name, buf in bufs.items()}
        self.synchronize()
        return out

    def memset(self, buf: Any, byte: int) -> None:
        """Every byte of ``buf`` set to ``byte`` (queued on the stream)."""
        if self._d.memset is not None:
            self._d.memset(buf, byte, self._d.stream)
            return
        from numba.cuda.cudadrv.driver import device_memset

        device_memset(buf, byte, buf.nbytes, stream=self._d.stream)

    def stack_bytes(self) -> int:
        """The context's per-thread stack size in bytes (``CU_LIMIT_STACK_SIZE``): it lays out local memory."""
        from cuda.bindings import driver as cu

        _ = self._d  # the context is current
        return int(_driver_ok(cu.cuCtxGetLimit(cu.CUlimit.CU_LIMIT_STACK_SIZE), "cuCtxGetLimit"))

    def set_stack_bytes(self, n: int) -> None:
        """Set the per-thread stack size; the driver lays local memory out anew for it (once the stream's work
        before it is done)."""
        from cuda.bindings import driver as cu

        _ = self._d
        _driver_ok(cu.cuCtxSetLimit(cu.CUlimit.CU_LIMIT_STACK_SIZE, int(n)), f"setting the stack size to {n} bytes")

    def release(self) -> None:
        """Free dropped buffers now (numba defers frees; rotated buffer sets of a large case add up)."""
        deallocations = getattr(self._d.context, "deallocations", None)
        if deallocations is not None:
            deallocations.clear()

    # -- stream and events -------------------------------------------------------------------------

    def synchronize(self) -> None:
        self._d.stream.synchronize()

    def stream_handle(self) -> int:
        """The device's stream as a CUDA stream handle (a library ceiling queues its calls on it)."""
        return int(self._d.stream.handle)

    def event(self, timing: bool = True) -> Any:
        return self._d.cuda.event(timing=timing)

    def record(self, event: Any) -> None:
        event.record(self._d.stream)

    @staticmethod
    def elapsed_ms(start: Any, end: Any) -> float:
        return float(start.elapsed_time(end))

    # -- CUDA graphs -------------------------------------------------------------------------------

    def capture(self, enqueue: Callable[[], None]) -> tuple[Any, Any]:
        """Capture the launches ``enqueue`` makes on the stream as a graph, instantiated and uploaded:
        ``(graph, executable)``; give both back with :meth:`drop_graph`."""
        from cuda.bindings import driver as cu

        h = cu.CUstream(int(self._d.stream.handle))
        _driver_ok(cu.cuStreamBeginCapture(h, cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
                   "cuStreamBeginCapture")
        try:
            enqueue()
        except BaseException:
            cu.cuStreamEndCapture(h)  # leave the stream usable; the launch error is what counts
            raise
        graph = _driver_ok(cu.cuStreamEndCapture(h), "cuStreamEndCapture")
        try:
            graph_exec = _driver_ok(cu.cuGraphInstantiate(graph, 0), "cuGraphInstantiate")
        except WfbenchError:
            cu.cuGraphDestroy(graph)
            raise
        _driver_ok(cu.cuGraphUpload(graph_exec, h), "cuGraphUpload")  # not on the first timed replay
        return graph, graph_exec

    def replay(self, graph_exec: Any, times: int) -> None:
        from cuda.bindings import driver as cu

        h = cu.CUstream(int(self._d.stream.handle))
        for _ in range(times):
            _driver_ok(cu.cuGraphLaunch(graph_exec, h), "cuGraphLaunch")

    def profiled(self, enqueue: Callable[[], None]) -> None:
        """Run ``enqueue`` and wait for its work, between ``cuProfilerStart`` and ``cuProfilerStop``: a profiler
        started with its collection off (``ncu --profile-from-start off``) sees that work and nothing else."""
        from cuda.bindings import driver as cu

        _driver_ok(cu.cuProfilerStart(), "cuProfilerStart")
        try:
            enqueue()
            self.synchronize()
        finally:
            cu.cuProfilerStop()

    @staticmethod
    def drop_graph(graph: Any, graph_exec: Any) -> None:
        from cuda.bindings import driver as cu

        cu.cuGraphExecDestroy(graph_exec)
        cu.cuGraphDestroy(graph)


def jit_errors(log: str, most: int = 3) -> str:
    """The error lines of a JIT or ptxas log, one line ("ptxas error : Entry function 'k' uses too much shared
    data (0x40000 bytes, 0xe000 max)"); its first lines where none says error."""
    lines = [" ".join(ln.split()) for ln in log.splitlines() if ln.strip()]
    errors = [ln for ln in lines if "error" in ln.lower()] or lines
    return "; ".join(errors[:most]) + (f"; and {len(errors) - most} more" if len(errors) > most else "")


def jit_log(ptx: str, arch: str) -> str:
    """What the driver's JIT says about PTX that does not load ("" when it loads, or says nothing).

    The module is loaded once more with error-log buffers (``cuModuleLoadDataEx``); where that gives no
    words, cuda.core's linker assembles the PTX for ``arch`` and its error log is taken.
    """
    from cuda.bindings import driver as cu

    size = 1 << 16
    errors = bytearray(size)
    opt = cu.CUjit_option
    options = {opt.CU_JIT_ERROR_LOG_BUFFER: errors, opt.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES: size,
               opt.CU_JIT_LOG_VERBOSE: 1}
    image = ctypes.create_string_buffer(ptx.encode())
    log = ""
    try:
        err, module = cu.cuModuleLoadDataEx(ctypes.addressof(image), len(options), list(options),
                                            list(options.values()))
        if err == cu.CUresult.CUDA_SUCCESS:
            cu.cuModuleUnload(module)
            return ""
        log = errors.split(b"\0", 1)[0].decode(errors="replace").strip()
    except Exception:  # this binding would not take the buffers: the linker's log instead
        pass
    return log or _linker_log(ptx, arch)


def _linker_log(ptx: str, arch: str) -> str:
    try:
        from cuda.core import Linker, LinkerOptions, ObjectCode
    except ImportError:  # cuda-core < 0.4
        from cuda.core.experimental import Linker, LinkerOptions, ObjectCode
    linker = Linker(ObjectCode.from_ptx(ptx), options=LinkerOptions(arch=arch))
    failure = ""
    try:
        linker.link("cubin")
    except Exception as exc:  # the failure is expected; its log is what is wanted
        failure = str(exc)
    try:
        return str(linker.get_error_log() or "").strip() or failure
    finally:
        linker.close()


def _driver_ok(result: Any, what: str) -> Any:
    """Unpack a cuda.bindings driver call's ``(CUresult, value...)``; a failure is one clear error."""
    from cuda.bindings import driver as cu

    err = result[0] if isinstance(result, tuple) else result
    if err != cu.CUresult.CUDA_SUCCESS:
        name = cu.cuGetErrorName(err)[1]
        raise WfbenchError(f"{what} failed: {name.decode() if isinstance(name, bytes) else name}")
    if isinstance(result, tuple) and len(result) > 1:
        return result[1]
    return None


def _dist_version(name: str) -> str:
    try:
        from importlib.metadata import version

        return version(name)
    except Exception:
        return ""


os.environ.setdefault("NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS", "0")
