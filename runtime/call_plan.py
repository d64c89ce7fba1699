"""``CallPlan``: what ``CompiledModel.run`` needs to repeat a checked call without checking again.

``CompiledModel`` keeps one per recent feed-shape signature (while ``Executables``' LRU keeps
its specialization) and tries the last one used first.

A call whose feeds are numpy arrays (or, for ``run_device``, device arrays on the model's
device) with the same names, dtypes and shapes as the last checked call passes the same checks,
so it goes straight to the transfers and PJRT. Everything that does not change between such
calls is looked up once, when the plan is built: the per-input transfer functions (aval,
sharding and jaxlib entry point bound, ``pjrt.transfer_of``), the argument order, the weights
on the device and the executor with its C++ result handlers (``pjrt.executor_of``). Tiny MLP
(``bench/overhead.py``): ``run`` 130-180 us -> about 35-60 us per call on the loaded 2-core
machine.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from onnx_stablehlo.errors import RuntimeCheckError
from onnx_stablehlo.runtime import pjrt

__all__ = ["CallPlan", "raise_failed_checks"]


class CallPlan:
    """The executable, argument order and device constants of one checked call.

    Built (:meth:`build`) after a checked call when every input and output is a plain tensor,
    the model runs as one module, nothing is specialized on input values and there is no
    bucketing.
    """

    __slots__ = ("inputs", "order", "constants", "executable", "check_messages", "device", "spec", "_execute", "_count")

    def __init__(self, inputs, order, constants, executable, check_messages, device, execute, spec=None) -> None:
        self.inputs = inputs  # (name, numpy dtype, shape, transfer) per @main input, in order
        self.order = order  # the names @main takes, in order
        self.constants = constants  # weights and hoisted weights on the device
        self.executable = executable
        self.check_messages = check_messages  # run-time checks: their flags are the last result
        self.device = device
        self.spec = spec  # the Specialization it runs
        self._execute = execute
        self._count = len(inputs)

    @staticmethod
    def build(
        spec: Any, arrays: Mapping[str, Any], constants: list[Any], results: Sequence[Any], device: pjrt.Device,
        *, plain: bool,
    ) -> CallPlan | None:
        """The plan of a call of ``spec`` with ``arrays`` that returned the device arrays
        ``results``, or None when ``plain`` is false or a value is not a native-order numpy
        tensor (``plain``: one module, no bucketing, no value specialization, every graph
        input a tensor)."""
        artifact = spec.artifact
        if (
            not plain
            or any(layout.kind != "tensor" for layout in artifact.input_layouts + artifact.output_layouts)
            or any(type(arrays[n]) is not np.ndarray or not arrays[n].dtype.isnative for n in artifact.input_names)
        ):
            return None
        inputs = tuple(
            (n, arrays[n].dtype, arrays[n].shape, pjrt.transfer_of(arrays[n].shape, arrays[n].dtype, device))
            for n in artifact.input_names
        )
        execute = pjrt.executor_of(spec.executable, results)
        return CallPlan(
            inputs, tuple(artifact.input_names), list(constants), spec.executable, artifact.check_messages, device,
            execute, spec,
        )

    def run(self, feeds: Mapping[str, Any]) -> list[np.ndarray] | None:
        """The host outputs of a call with ``feeds`` (run-time checks raised), or None when the
        feeds differ from the plan's (the caller then takes the checked path)."""
        if len(feeds) != self._count:
            return None
        arguments = []
        for name, dtype, shape, transfer in self.inputs:
            array = feeds.get(name)
            if array.__class__ is not np.ndarray or array.dtype != dtype or array.shape != shape:
                return None
            if not array.flags.c_contiguous:
                array = np.ascontiguousarray(array)
            arguments.append(transfer(array))
        results = pjrt.to_host(self._execute(arguments + self.constants))
        if self.check_messages:
            raise_failed_checks(self.check_messages, results.pop())
        return results

    def run_device(self, feeds: Mapping[str, Any]) -> list[Any] | None:
        """The device outputs of a call with ``feeds`` (numpy arrays or device arrays on the
        plan's device, used without a copy), or None when the feeds differ from the plan's."""
        if len(feeds) != self._count:
            return None
        arguments = []
        for name, dtype, shape, transfer in self.inputs:
            array = feeds.get(name)
            if getattr(array, "dtype", None) != dtype or array.shape != shape:  # None, a list, another dtype
                return None
            if array.__class__ is np.ndarray:
                arguments.append(transfer(array if array.flags.c_contiguous else np.ascontiguousarray(array)))
            elif pjrt.is_on(array, self.device):
                arguments.append(array)
            else:
                return None
        return self.device_results(self._execute(arguments + self.constants))

    def device_results(self, results: list[Any]) -> list[Any]:
        """The outputs of a device-resident call, after its run-time checks (copied to the host)."""
        if self.check_messages:
            results = list(results)
            raise_failed_checks(self.check_messages, pjrt.to_host([results.pop()])[0])
        return results


def raise_failed_checks(messages: Sequence[str], flags: Any) -> None:
    """Raises ``RuntimeCheckError`` naming every run-time check whose flag is false."""
    failed = [m for m, ok in zip(messages, np.asarray(flags).reshape(-1)) if not ok]
    if failed:
        raise RuntimeCheckError(failed)
