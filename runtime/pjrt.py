"""The one module that touches jaxlib/jax's PJRT internals: clients, compiling, transfers.

jaxlib ships a PJRT client, but ``Client.compile_and_load`` and its transfer helpers are not
public API. Every use of them lives here, so a jaxlib upgrade touches one file (MLIR set-up,
the other private jaxlib surface, is ``frontend/jaxlib_mlir.py``); ``pyproject.toml`` pins the
tested jax/jaxlib range (0.10.2).

Platforms: ``cpu``, ``cuda``, ``rocm``, ``tpu`` are PJRT platform names; ``gpu`` is accepted
as an alias for whichever of cuda/rocm is present.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from onnx_stablehlo.errors import CompileError, DeviceNotFoundError, ExecutionError

# XLA's C++ logging is chatty at INFO; keep it to warnings unless the user set it.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")

# XLA CPU flags this project chooses, each added to XLA_FLAGS unless the user set that flag
# (XLA reads XLA_FLAGS once, when the first backend starts, so this happens when this module
# first asks for a client; lowering alone leaves the environment as it is):
# - YNNPACK for dots only, not convolutions: XLA's own convolutions are faster here, and
#   YNNPACK's fusions around batched dots slowed MiniLM at batch 32 (measured on 2 cores:
#   ResNet-50 40 -> 26 ms, MobileNetV2 9.6 -> 6.6 ms, MiniLM 32x128 413 -> 295 ms, 8x128 and
#   1x16 unchanged; bench/minilm.py and bench/weights.py). The flag exists in the pinned
#   jaxlib 0.10.2. ONNX_STABLEHLO_XLA_DEFAULTS=0 keeps XLA's own defaults.
XLA_CPU_DEFAULTS = ("--xla_cpu_experimental_ynn_fusion_type=individual_dot",)


def _add_xla_flag_defaults() -> None:
    if os.environ.get("ONNX_STABLEHLO_XLA_DEFAULTS", "1") == "0":
        return
    flags = os.environ.get("XLA_FLAGS", "")
    for flag in XLA_CPU_DEFAULTS:
        if flag.split("=", 1)[0] not in flags:
            flags = f"{flags} {flag}".strip()
    os.environ["XLA_FLAGS"] = flags


__all__ = [
    "PLATFORMS",
    "Device",
    "get_device",
    "jax_free_cpu_device",
    "executor_for_avals",
    "available_platforms",
    "compile_module",
    "to_device",
    "transfer_of",
    "execute",
    "executor_of",
    "to_host",
    "hlo_text",
    "is_device_array",
    "is_on",
]

PLATFORMS = ("cpu", "cuda", "rocm", "tpu")


class Device:
    """One PJRT device: the client of its platform and the device handle.

    Attributes:
        platform: the PJRT platform name (``cpu``, ``cuda``, ``rocm``, ``tpu``).
        index: the device index within the platform.
    """

    jax_free = False
    """True for :func:`jax_free_cpu_device`'s device: its arrays carry :class:`HostAval` avals."""

    def __init__(self, platform: str, index: int, client: Any, handle: Any) -> None:
        self.platform = platform
        self.index = index
        self._client = client
        self._handle = handle

    def __repr__(self) -> str:
        return f"Device({self.platform}:{self.index})"

    @functools.cached_property
    def sharding(self) -> Any:
        """jax's ``SingleDeviceSharding`` of this device (what transfers to it are placed by)."""
        if self.jax_free:
            return _jax_free_sharding_type()(self._handle)
        import jax

        return jax.sharding.SingleDeviceSharding(self._handle)

    @property
    def key(self) -> tuple[str, int]:
        """A hashable identity used in executable cache keys."""
        return (self.platform, self.index)


_lock = threading.Lock()


def available_platforms() -> list[str]:
    """Returns the PJRT platforms that can be initialized on this machine (``cpu`` always)."""
    found = []
    for platform in PLATFORMS:
        try:
            _client(platform)
        except DeviceNotFoundError:
            continue
        found.append(platform)
    return found


def _prefer_inline_cpu_execution() -> None:
    """Makes jax's CPU client, when it is made here, run each execution on the calling thread.

    With jax's default (``jax_cpu_enable_async_dispatch``), PJRT CPU hands every execution that
    is not "cheap" to a worker thread and the caller waits for it. In a tight loop the worker is
    still spinning, but a caller that does anything between calls pays a thread wake-up each
    time: measured on this 2-core VM (``bench/overhead.py --gap-us 300``), a 64x4 logistic
    regression took 140-220 us per ``run`` against 40-80 us back to back, and onnxruntime 13-30
    us either way. Inline execution removes the hand-off (0 futex calls per call under strace,
    against 6-9). Not applied when jax's backends already exist (the user's jax made its CPU
    client first) or when ``ONNX_STABLEHLO_CPU_ASYNC_DISPATCH=1``.
    """
    if os.environ.get("ONNX_STABLEHLO_CPU_ASYNC_DISPATCH", "0") == "1":
        return
    import jax
    from jax._src import xla_bridge

    if not xla_bridge.backends_are_initialized():
        jax.config.update("jax_cpu_enable_async_dispatch", False)


@functools.cache
def _client_or_exception(platform: str) -> tuple[Any, Exception | None]:
    _add_xla_flag_defaults()
    _prefer_inline_cpu_execution()
    import jax.extend.backend as jax_backend

    try:
        return jax_backend.get_backend(platform), None
    except Exception as exc:  # jax raises RuntimeError for an absent platform
        return None, exc


def _client(platform: str) -> Any:
    with _lock:
        client, exc = _client_or_exception(platform)
    if client is None:
        raise DeviceNotFoundError(f"PJRT platform '{platform}' is not available ({exc})")
    return client


def get_device(spec: str = "cpu") -> Device:
    """Resolves ``'cpu'``, ``'cuda'``, ``'cuda:1'``, ``'gpu'``, ``'tpu'`` ... to a device.

    Raises:
        DeviceNotFoundError: the platform is unknown or absent, or the index is out of range;
            the message lists the available platforms.
    """
    if not isinstance(spec, str):
        raise DeviceNotFoundError(
            f"device must be a name such as 'cpu', 'cuda' or 'cuda:1', got {spec!r}; "
            f"available here: {', '.join(available_platforms())}"
        )
    name, _, index_text = spec.partition(":")
    name = name.strip().lower()
    index = int(index_text) if index_text.strip().isdigit() else 0
    candidates = ("cuda", "rocm") if name == "gpu" else (name,)
    if name != "gpu" and name not in PLATFORMS:
        raise DeviceNotFoundError(
            f"unknown device '{spec}': expected one of {', '.join(PLATFORMS)} (optionally ':N'); "
            f"available here: {', '.join(available_platforms())}"
        )
    for platform in candidates:
        try:
            client = _client(platform)
        except DeviceNotFoundError:
            continue
        devices = client.local_devices()
        if index >= len(devices):
            raise DeviceNotFoundError(
                f"device '{spec}': platform {platform} has {len(devices)} device(s)"
            )
        return Device(platform, index, client, devices[index])
    raise DeviceNotFoundError(
        f"device '{spec}' is not available; available platforms: "
        f"{', '.join(available_platforms())}"
    )


class HostAval:
    """What jaxlib's C++ transfers and result handlers read of an aval (shape, dtype,
    weak_type): jax's ``ShapedArray`` without importing jax, for :func:`jax_free_cpu_device`."""

    __slots__ = ("shape", "dtype", "weak_type")

    def __init__(self, shape: Sequence[int], dtype: Any) -> None:
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        self.weak_type = False

    @property
    def ndim(self) -> int:
        return len(self.shape)


@functools.cache
def _jax_free_sharding_type() -> type:
    """jaxlib's C++ ``SingleDeviceSharding`` with the two members its transfers read, which jax
    itself adds in Python when it is imported (``jax._src.sharding_impls``)."""
    from jaxlib import _jax, xla_client

    class JaxFreeSingleDeviceSharding(_jax.SingleDeviceSharding):
        memory_kind = property(lambda self: self._memory_kind)

        def _to_xla_hlo_sharding(self, num_dimensions: int) -> Any:
            return xla_client.HloSharding.replicate()

    return JaxFreeSingleDeviceSharding


@functools.cache
def _jax_free_cpu_client() -> Any:
    _add_xla_flag_defaults()
    try:
        from jaxlib import xla_client

        # Executions on the calling thread, as _prefer_inline_cpu_execution arranges for jax's client.
        return xla_client.make_cpu_client(asynchronous=os.environ.get("ONNX_STABLEHLO_CPU_ASYNC_DISPATCH", "0") == "1")
    except Exception:  # a jaxlib without it: warm starts take jax's client
        return None


def jax_free_cpu_device() -> Device | None:
    """The CPU device of a PJRT client made by jaxlib alone, without importing jax (0.7-1.1 s).

    A warm start (``runtime/warm_start.py``) runs its stored executable on it: transfers
    (``to_device``, ``transfer_of``) give its arrays :class:`HostAval` avals, results come from
    :func:`executor_for_avals`, and ``to_host`` reads them through the buffer protocol. None
    when jax is already imported (its CPU client is then shared, as for every other model) or
    this jaxlib lacks a piece of it; ``tests/test_warm_start.py`` fails when an upgrade moves one.
    """
    if "jax" in sys.modules or _device_put_fast_path() is None:
        return None
    with _lock:
        client = _jax_free_cpu_client()
    if client is None:
        return None
    device = Device("cpu", 0, client, client.local_devices()[0])
    device.jax_free = True
    return device


_DEFAULT_CACHE: Any = object()


def compile_module(module_text: str | bytes, device: Device, *, cache: Any = _DEFAULT_CACHE) -> Any:
    """Compiles a StableHLO module to a loaded PJRT executable on ``device``.

    Args:
        module_text: the StableHLO module, as text or as MLIR bytecode (what
            ``runtime/executables.py`` hands over: no print and no text parse).
        device: where the executable runs.
        cache: an :class:`~onnx_stablehlo.runtime.executable_cache.ExecutableCache`, or None for
            none; by default the process's on-disk cache (``executable_cache.default_cache``:
            ``ONNX_STABLEHLO_EXECUTABLE_CACHE``). A hit deserializes the stored executable
            instead of compiling; an entry PJRT cannot deserialize is deleted and rebuilt.

    Raises:
        CompileError: XLA rejected the module (message carries XLA's first lines).
    """
    from jaxlib import _jax

    if cache is _DEFAULT_CACHE:
        from onnx_stablehlo.runtime.executable_cache import default_cache

        cache = default_cache()
    key = None
    if cache is not None:
        key = cache.key(module_text, _cache_key_parts(device))
        payload = cache.load(key)
        if payload is not None:
            try:
                return device._client.deserialize_executable(
                    payload, _jax.DeviceList((device._handle,)), _jax.CompileOptions()
                )
            except Exception:  # written by an incompatible build, or damaged past the checksum
                cache.discard(key)
    try:
        executable = device._client.compile_and_load(
            module_text, _jax.DeviceList((device._handle,)), _jax.CompileOptions()
        )
    except Exception as exc:
        first = str(exc).strip().splitlines()[:6]
        raise CompileError("PJRT compile failed: " + " | ".join(first)) from exc
    if cache is not None and key is not None:
        try:
            payload = executable.serialize()
        except Exception:  # an executable PJRT cannot serialize is simply not cached
            payload = None
        if payload is not None:
            cache.store(key, bytes(payload))
    return executable


def _cache_key_parts(device: Device) -> tuple[str, ...]:
    """What besides the module text changes the compiled code (see ``executable_cache``)."""
    import jaxlib

    from onnx_stablehlo.runtime.executable_cache import host_fingerprint

    return (
        device.platform,
        str(device.index),  # the device an executable was compiled for (it is loaded onto it)
        str(getattr(device._handle, "device_kind", "")),
        str(getattr(device._client, "platform_version", "")),
        f"jaxlib {jaxlib.__version__}",
        "XLA_FLAGS=" + os.environ.get("XLA_FLAGS", ""),
        host_fingerprint(),
    )


_MAPPED_MIN_BYTES = 1 << 26
"""Memory-mapped arrays from this size on are copied out block by block (smaller ones: plain copy)."""

_BLOCK_BYTES = 1 << 26


def _file_mapping(array: np.ndarray) -> Any:
    """The ``mmap.mmap`` an array is a view of (an onnx-ir external-data tensor), else None."""
    import mmap

    if array.nbytes < _MAPPED_MIN_BYTES:
        return None
    base = array.base
    for _ in range(8):
        if base is None:
            return None
        if isinstance(base, mmap.mmap):
            return base
        if isinstance(base, memoryview):
            base = base.obj
        else:
            base = getattr(base, "base", None)
    return None


def _copy_out_of_mapping(array: np.ndarray, mapping: Any) -> np.ndarray:
    """A 64-byte aligned copy of ``array``, made block by block; each block's pages of the
    file mapping are released (``MADV_DONTNEED``) once copied, so the peak resident size is
    one copy plus one block."""
    import mmap

    storage = np.empty(array.nbytes + 64, np.uint8)
    start = (-storage.ctypes.data) % 64
    owned = storage[start : start + array.nbytes].view(array.dtype).reshape(array.shape)
    source, target = array.reshape(-1).view(np.uint8), owned.reshape(-1).view(np.uint8)
    map_start = np.frombuffer(mapping, np.uint8).ctypes.data if len(mapping) else 0
    page = mmap.PAGESIZE
    for begin in range(0, source.size, _BLOCK_BYTES):
        end = min(begin + _BLOCK_BYTES, source.size)
        target[begin:end] = source[begin:end]
        if hasattr(mapping, "madvise") and hasattr(mmap, "MADV_DONTNEED"):
            offset = source[begin:].ctypes.data - map_start
            aligned = offset - offset % page
            mapping.madvise(mmap.MADV_DONTNEED, aligned, min(end - begin + offset - aligned, len(mapping) - aligned))
    return owned


def to_device(array: np.ndarray, device: Device) -> Any:
    """Copies a host array to ``device``; the result stays there until dropped.

    The device always gets its own copy: on CPU a transfer may otherwise alias host memory,
    and the arrays handed in here can be views of memory owned elsewhere (an onnx-ir tensor's
    raw bytes, a memory-mapped external-data file). On CPU a large memory-mapped array is
    copied block by block into a buffer made here, releasing the file's pages as it goes, and
    the device aliases that buffer: a model over 2 GB then holds its weights once (measured:
    peak RSS 1.12x the weights of tools/build_large.py's 2.25 GB model, 2.09x before). 64-bit arrays stay 64-bit whether or not
    jax's x64 mode is on. The transfer goes through jaxlib's ``batched_device_put`` (about 4 us
    per array on CPU); where this jaxlib lacks it, through ``jax.device_put`` (about 20 us).
    """
    array = np.asarray(array, order="C")  # (ascontiguousarray would make a 0-d array 1-d)
    if not array.dtype.isnative:  # big-endian bytes: the device reads native order
        array = array.astype(array.dtype.newbyteorder("="))
    put = _device_put_fast_path()
    mapping = _file_mapping(array) if device.platform == "cpu" else None
    if put is not None and mapping is not None:
        # A memory-mapped external-data tensor on CPU: copy it block by block into a buffer we
        # own, dropping each block's file pages once copied, and let the device alias that
        # buffer (it keeps a reference): one copy of the weight in memory, not two.
        owned = _copy_out_of_mapping(array, mapping)
        aval, sharding = _aval_of(device, owned.shape, owned.dtype), device.sharding
        try:
            return put(aval, sharding, [owned], [device._handle], committed=True, force_copy=False, enable_x64=True)
        except TypeError:
            array = owned
    if put is not None:
        aval, sharding = _aval_of(device, array.shape, array.dtype), device.sharding
        try:
            return put(aval, sharding, [array], [device._handle], committed=True, force_copy=True, enable_x64=True)
        except TypeError:  # a jaxlib whose batched_device_put takes other arguments
            pass
    import jax

    owned = np.array(array, copy=True, order="C")
    with jax.enable_x64(True):
        return jax.device_put(owned, device._handle)


@functools.cache
def _device_put_fast_path() -> Any:
    """jaxlib's ``batched_device_put(aval, sharding, xs, devices, committed, force_copy)``, or None."""
    try:
        from jaxlib import _jax

        return _jax.batched_device_put
    except (ImportError, AttributeError):
        return None


@functools.lru_cache(maxsize=1024)
def _aval(shape: tuple[int, ...], dtype: np.dtype) -> Any:
    from jax._src import core

    return core.ShapedArray(shape, dtype)


def _aval_of(device: Device, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    return HostAval(shape, dtype) if device.jax_free else _aval(tuple(shape), np.dtype(dtype))


def transfer_of(shape: tuple[int, ...], dtype: np.dtype, device: Device) -> Callable[[np.ndarray], Any]:
    """A function copying C-contiguous, native-order host arrays of ``shape`` and ``dtype`` to
    ``device`` (``to_device`` with the aval, sharding and jaxlib entry point looked up once:
    about 3x less Python per call; a ``CallPlan`` makes one per input)."""
    put = _device_put_fast_path()
    if put is None or device.platform != "cpu":
        return lambda array: to_device(array, device)
    aval, sharding, handles = _aval_of(device, tuple(shape), np.dtype(dtype)), device.sharding, [device._handle]
    try:
        from jaxlib import _jax

        # (aval, sharding, xs, devices, committed, force_copy, host_buffer_semantics, enable_x64)
        semantics = _jax.HostBufferSemantics.ZERO_COPY  # the default; a copy is forced anyway
        probe = put(aval, sharding, [np.zeros(shape, dtype)], handles, True, True, semantics, True)
        if probe.aval.dtype != np.dtype(dtype):
            raise TypeError(f"batched_device_put gave {probe.aval.dtype} for {dtype}")
    except (TypeError, AttributeError):  # a jaxlib whose batched_device_put takes other arguments
        return lambda array: to_device(array, device)

    def transfer(array: np.ndarray) -> Any:
        if array.nbytes >= _MAPPED_MIN_BYTES:  # possibly a memory-mapped weight: see to_device
            return to_device(array, device)
        return put(aval, sharding, [array], handles, True, True, semantics, True)

    return transfer


def executor_of(executable: Any, results: Sequence[Any]) -> Callable[[Sequence[Any]], list[Any]]:
    """A function running ``executable`` on device-resident arguments, for results shaped like
    ``results`` (device arrays an earlier ``execute`` of it returned).

    The results are built by jaxlib's C++ result handlers (``consume_with_handlers``, as
    ``jax.jit``'s dispatch does) instead of ``execute``'s per-result Python wrapping.

    Raises (the returned function):
        ExecutionError: PJRT failed at run time.
    """
    try:
        from jaxlib import xla_client

        handlers = [
            xla_client.array_result_handler(r.aval, r.sharding, committed=True, _skip_checks=True) for r in results
        ]
    except Exception:  # a jaxlib without these: the plain path
        return lambda arguments: execute(executable, arguments)
    return _handled_executor(executable, handlers)


def executor_for_avals(executable: Any, avals: Sequence[tuple[Any, Sequence[int]]], device: Device) -> Callable[[Sequence[Any]], list[Any]]:
    """``executor_of`` for results of known ``(numpy dtype, shape)`` avals, without a first
    execution (``execute`` makes jax avals, so a :func:`jax_free_cpu_device` needs this one)."""
    from jaxlib import xla_client

    handlers = [
        xla_client.array_result_handler(_aval_of(device, tuple(shape), np.dtype(dtype)), device.sharding,
                                        committed=True, _skip_checks=True)
        for dtype, shape in avals
    ]
    return _handled_executor(executable, handlers)


def _handled_executor(executable: Any, handlers: list[Any]) -> Callable[[Sequence[Any]], list[Any]]:
    run = executable.execute_sharded

    def executor(arguments: Sequence[Any]) -> list[Any]:
        try:
            return run(arguments).consume_with_handlers(handlers)
        except Exception as exc:
            lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
            raise ExecutionError("PJRT execution failed: " + " | ".join(lines[:4])) from exc

    return executor


def execute(executable: Any, arguments: Sequence[Any]) -> list[Any]:
    """Runs ``executable`` on device-resident ``arguments``; returns device arrays.

    Raises:
        ExecutionError: PJRT failed at run time.
    """
    try:
        return list(executable.execute(list(arguments)))
    except Exception as exc:
        lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
        raise ExecutionError("PJRT execution failed: " + " | ".join(lines[:4])) from exc


def hlo_text(executable: Any) -> str:
    """XLA's optimized HLO of a compiled executable, as text.

    Each instruction keeps ``metadata={op_name="..."}`` from the ``loc("<onnx node>")`` of the
    StableHLO op it came from, when the module text was printed with its locations (XLA falls
    back to ``source_line`` of the text otherwise). ``onnx_stablehlo.report`` maps profiled
    instructions and fusions back to ONNX nodes with it.
    """
    return "\n".join(module.to_string() for module in executable.hlo_modules())


def is_device_array(value: Any) -> bool:
    """Whether ``value`` is a PJRT device array (what ``execute`` and ``to_device`` return)."""
    return isinstance(value, _array_type())


def is_on(value: Any, device: Device) -> bool:
    """Whether ``value`` is a device array placed on ``device`` alone (usable without a copy)."""
    if value.__class__ is not _array_type():
        return False
    return value.sharding == device.sharding


@functools.cache
def _array_type() -> type:
    from jaxlib import _jax

    return _jax.ArrayImpl


_NUMPY_MAX_DIMS = 64


def to_host(arrays: Sequence[Any]) -> list[np.ndarray]:
    """Copies device arrays back to numpy arrays that own their memory and are writable, as
    onnxruntime's outputs are (``np.asarray`` of a device array is a read-only view of the
    device buffer on CPU, so a caller's in-place ``logits -= logits.max()`` would fail). The
    copy costs one memcpy per output (about 1 ms for a 6 MB MiniLM 32x128 hidden state).

    Raises:
        ExecutionError: a result has more dims than numpy holds (64; a rewired graph that
            broadcasts rank up, fuzz seed 50 #47972).
    """
    host = []
    for index, array in enumerate(arrays):
        aval = getattr(array, "aval", None)
        jax_free = aval.__class__ is HostAval  # jax_free_cpu_device's: read by the buffer protocol, in C++
        rank = len(aval.shape if jax_free else getattr(array, "shape", ()))
        if rank > _NUMPY_MAX_DIMS:
            raise ExecutionError(f"output {index} has {rank} dims; numpy arrays hold at most {_NUMPY_MAX_DIMS}")
        # (jax's Python methods on the array type are not used for those: a thread importing jax
        # meanwhile leaves them half-installed, raising NotImplementedError)
        host.append(np.array(memoryview(array), copy=True) if jax_free else np.array(array))
    return host
