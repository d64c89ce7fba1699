"""``CallPlan``: what ``CompiledModel.run`` needs to repeat its last call without checking again.

A call whose feeds are numpy arrays (or, for ``run_device``, device arrays on the model's
device) with the same names, dtypes and shapes as the last checked call passes the same checks,
so it goes straight to the transfers and PJRT (about 60 us less per call than the checked path
on a tiny model).
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

    __slots__ = ("inputs", "order", "constants", "executable", "check_messages")

    def __init__(self, inputs, order, constants, executable, check_messages) -> None:
        self.inputs = inputs  # name -> (numpy dtype, shape), every graph input
        self.order = order  # the names @main takes, in order
        self.constants = constants  # weights and hoisted weights on the device
        self.executable = executable
        self.check_messages = check_messages  # run-time checks: their flags are the last result

    @staticmethod
    def build(spec: Any, arrays: Mapping[str, Any], constants: list[Any], *, plain: bool) -> CallPlan | None:
        """The plan of a call of ``spec`` with ``arrays``, or None when ``plain`` is false or a
        value is not a numpy tensor (``plain``: one module, no bucketing, no value specialization,
        every graph input a tensor)."""
        artifact = spec.artifact
        if (
            not plain
            or any(layout.kind != "tensor" for layout in artifact.input_layouts + artifact.output_layouts)
            or any(type(arrays[n]) is not np.ndarray for n in artifact.input_names)
        ):
            return None
        inputs = {n: (arrays[n].dtype, arrays[n].shape) for n in artifact.input_names}
        return CallPlan(inputs, tuple(artifact.input_names), list(constants), spec.executable, artifact.check_messages)

    def device_results(self, results: list[Any]) -> list[Any]:
        """The outputs of a device-resident call, after its run-time checks (copied to the host)."""
        if self.check_messages:
            results = list(results)
            raise_failed_checks(self.check_messages, pjrt.to_host([results.pop()])[0])
        return results

    def arguments(self, feeds: Mapping[str, Any], device: pjrt.Device, device_arrays: bool = False) -> list[Any] | None:
        """The executable's arguments for ``feeds``, or None when they differ from the plan's."""
        inputs = self.inputs
        if len(feeds) != len(inputs):
            return None
        for name, (dtype, shape) in inputs.items():
            array = feeds.get(name)
            if array is None or array.__class__ is not np.ndarray and not (device_arrays and pjrt.is_on(array, device)):
                return None
            if array.dtype != dtype or array.shape != shape:
                return None
        put = pjrt.to_device
        return [
            put(a, device) if (a := feeds[name]).__class__ is np.ndarray else a for name in self.order
        ] + self.constants


def raise_failed_checks(messages: Sequence[str], flags: Any) -> None:
    """Raises ``RuntimeCheckError`` naming every run-time check whose flag is false."""
    failed = [m for m, ok in zip(messages, np.asarray(flags).reshape(-1)) if not ok]
    if failed:
        raise RuntimeCheckError(failed)
