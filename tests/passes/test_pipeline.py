"""Pipeline parsing (good and bad strings), the pass manager, and the pass table."""

from __future__ import annotations

import dataclasses
import io
from typing import ClassVar

import pytest
from jaxlib.mlir import ir

from onnx_stablehlo.passes import (
    DEFAULT_PIPELINE,
    ModulePass,
    PassError,
    PassResult,
    Pipeline,
    PipelineParseError,
    VerificationError,
    get_pass_class,
    pass_names,
    run_pipeline,
)
from onnx_stablehlo.passes.mlir_pipeline import MlirPipelinePass
from onnx_stablehlo.passes.pipeline import PipelineStep
from onnx_stablehlo.passes.registry import all_pass_classes
from onnx_stablehlo.frontend import jaxlib_mlir

MODULE = """
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %one = stablehlo.constant dense<1.0> : tensor<4xf32>
  %a = stablehlo.multiply %x, %one : tensor<4xf32>
  %b = stablehlo.add %a, %a : tensor<4xf32>
  %c = stablehlo.add %a, %a : tensor<4xf32>
  %d = stablehlo.subtract %b, %c : tensor<4xf32>
  return %d : tensor<4xf32>
}
"""


def parse(text: str = MODULE) -> ir.Module:
    with jaxlib_mlir.make_mlir_context():
        return ir.Module.parse(text)


# Parsing ---------------------------------------------------------------------------------------


def test_parse_mixes_our_passes_and_upstream_ones():
    pipeline = Pipeline.parse("canonicalize-stablehlo,fold-constants{max-elements=1024},cse,func.func(cse)")
    assert [step.name for step in pipeline.steps] == ["canonicalize-stablehlo", "fold-constants", "cse", "func.func"]
    assert pipeline.steps[1].pass_.max_elements == 1024  # type: ignore[attr-defined]
    assert isinstance(pipeline.steps[2].pass_, MlirPipelinePass)
    assert pipeline.steps[3].label == "func.func(cse)"


def test_parse_options_of_every_type():
    pipeline = Pipeline.parse(
        "convert-precision{to=f16 ops=dot_general,convolution},strip-debug-info{keep-names},"
        'specialize-shapes{dims=batch=2,seq=16 func=main},mlir-pipeline{pipeline="canonicalize,cse"}'
    )
    convert, strip, specialize, mlir = (step.pass_ for step in pipeline.steps)
    assert (convert.to, convert.ops) == ("f16", ("dot_general", "convolution"))  # type: ignore[attr-defined]
    assert strip.keep_names is True  # type: ignore[attr-defined]  # bare option name means true
    assert specialize.bindings() == {"batch": 2, "seq": 16}  # type: ignore[attr-defined]
    assert mlir.pipeline == "canonicalize,cse"  # type: ignore[attr-defined]


@pytest.mark.parametrize("text", ["", "none", "  none  "])
def test_empty_pipelines(text):
    assert Pipeline.parse(text).steps == ()


def test_pipeline_text_round_trips():
    pipeline = Pipeline.parse("fold-constants{max-elements=8},canonicalize-stablehlo,fold-constants")
    texts = [step.pass_.pipeline_text() for step in pipeline.steps]
    assert texts == ["fold-constants{max-elements=8}", "canonicalize-stablehlo", "fold-constants"]
    assert Pipeline.parse(",".join(texts)).steps[0].pass_ == pipeline.steps[0].pass_


def test_default_pipeline_parses():
    assert len(Pipeline.parse(DEFAULT_PIPELINE).steps) >= 5


def test_unknown_pass_lists_the_known_ones():
    with pytest.raises(PipelineParseError) as info:
        Pipeline.parse("canonicalize-stablehlo,fold-constant")
    message = str(info.value)
    assert "unknown pass 'fold-constant'" in message
    assert "did you mean 'fold-constants'?" in message
    for name in pass_names():
        assert name in message
    assert "canonicalize, cse" in message  # upstream examples
    assert info.value.pass_name == "fold-constant"


def test_bad_option_name_names_the_option():
    with pytest.raises(PipelineParseError) as info:
        Pipeline.parse("fold-constants{max-elems=4}")
    assert str(info.value) == "pass 'fold-constants' has no option 'max-elems'; its options: max-elements"
    assert info.value.option == "max-elems"
    assert info.value.pass_name == "fold-constants"


@pytest.mark.parametrize(
    "text, expected",
    [
        ("fold-constants{max-elements=lots}", "option 'max-elements' expects an integer; got 'lots'"),
        ("fold-constants{max-elements=0}", "option 'max-elements' must be at least 1; got 0"),
        ("convert-precision{to=f8}", "option 'to' must be one of bf16, f16; got 'f8'"),
        ("convert-precision{ops=dot_general,add}", "option 'ops': unknown op add"),
        ("strip-debug-info{keep-names=maybe}", "option 'keep-names' expects true or false; got 'maybe'"),
        ("specialize-shapes{dims=batch}", "option 'dims': expected NAME=SIZE, got 'batch'"),
        ("mlir-pipeline{pipeline=bogus-pass}", "option 'pipeline': MLIR Textual PassPipeline Parser"),
    ],
)
def test_bad_option_values_name_the_option(text, expected):
    with pytest.raises(PipelineParseError, match=r"^pass '[a-z-]+': ") as info:
        Pipeline.parse(text)
    assert expected in str(info.value)


def test_bad_upstream_option_names_the_option():
    with pytest.raises(PipelineParseError) as info:
        Pipeline.parse("canonicalize{bogus=3}")
    assert str(info.value).startswith("upstream pass 'canonicalize' has no option 'bogus'")
    assert info.value.option == "bogus"


@pytest.mark.parametrize(
    "text, expected",
    [
        ("fold-constants{max-elements=4", "missing '}'"),
        ("fold-constants}", "unbalanced '}'"),
        ("cse,,canonicalize", "empty pass name"),
        ("fold-constants(cse)", "expected options as fold-constants{option=value ...}"),
        ('mlir-pipeline{pipeline="cse}', "missing '\"'"),
    ],
)
def test_malformed_pipelines(text, expected):
    with pytest.raises(PipelineParseError, match=None) as info:
        Pipeline.parse(text)
    assert expected in str(info.value)


# Running ---------------------------------------------------------------------------------------


def test_run_reports_per_pass_records_and_op_counts():
    module = parse()
    result = run_pipeline(module, "canonicalize-stablehlo,cse,canonicalize-stablehlo")
    assert [r.label for r in result.records] == ["canonicalize-stablehlo", "cse", "canonicalize-stablehlo"]
    assert result.records[0].result.modified is True
    assert result.records[0].result.statistics["MultiplyByOne"] == 1
    assert result.records[1].result.modified is None  # upstream: unknown
    assert result.records[2].result.statistics.get("SubtractOfSelf") is None  # float: kept
    assert result.ops_before["stablehlo.add"] == 2
    assert result.ops_after["stablehlo.add"] == 1  # merged by cse
    assert result.ops_after["stablehlo.multiply"] == 0
    assert result.modified is True


def test_print_ir_after_and_timing_go_to_out():
    module = parse()
    out = io.StringIO()
    run_pipeline(module, "canonicalize-stablehlo,cse", print_ir_after=["cse"], pass_timing=True, out=out)
    text = out.getvalue()
    assert "// -----// IR Dump After cse //----- //" in text
    assert "IR Dump After canonicalize-stablehlo" not in text
    assert "Pass execution timing report" in text and "ops: 7 -> 4" in text


def test_print_ir_after_all_prints_after_every_pass():
    out = io.StringIO()
    run_pipeline(parse(), "canonicalize-stablehlo,cse", print_ir_after_all=True, out=out)
    assert out.getvalue().count("IR Dump After") == 2


def test_print_ir_after_a_pass_not_in_the_pipeline_is_an_error():
    with pytest.raises(PipelineParseError, match="--print-ir-after names 'fold-constants'"):
        run_pipeline(parse(), "cse", print_ir_after=["fold-constants"])


@dataclasses.dataclass(frozen=True)
class BreakTypesPass(ModulePass):
    """Test pass: gives @main's argument a wrong type, so the module no longer verifies."""

    name: ClassVar[str] = "break-types"

    def run(self, module: ir.Module) -> PassResult:
        block = module.body.operations[0].regions[0].blocks[0]
        with module.context, ir.Location.unknown():
            block.arguments[0].set_type(ir.RankedTensorType.get([5], ir.F32Type.get()))
        return PassResult(modified=True)


@dataclasses.dataclass(frozen=True)
class CrashingPass(ModulePass):
    """Test pass: raises."""

    name: ClassVar[str] = "crash"

    def run(self, module: ir.Module) -> PassResult:
        raise ZeroDivisionError("boom")


def _pipeline(*passes: ModulePass) -> Pipeline:
    return Pipeline(tuple(PipelineStep(p.name, p.name, p) for p in passes))


def test_verification_failure_names_the_pass():
    with pytest.raises(VerificationError) as info:
        _pipeline(BreakTypesPass()).run(parse())
    assert info.value.pass_name == "break-types"
    assert "the module does not verify after pass 'break-types'" in str(info.value)
    assert info.value.diagnostics and "loc(" in info.value.diagnostics[0]


def test_no_verify_skips_the_verifier():
    module = parse()
    _pipeline(BreakTypesPass()).run(module, verify=False)  # no error


def test_a_crashing_pass_is_named():
    with pytest.raises(PassError, match=r"^pass 'crash' failed: ZeroDivisionError: boom$") as info:
        _pipeline(CrashingPass()).run(parse())
    assert isinstance(info.value.__cause__, ZeroDivisionError)


def test_input_that_does_not_verify_is_reported_before_any_pass():
    module = parse()
    BreakTypesPass().run(module)
    with pytest.raises(VerificationError, match="the input module does not verify"):
        run_pipeline(module, "canonicalize-stablehlo")


# The pass table ---------------------------------------------------------------------------------


def test_every_pass_is_a_frozen_dataclass_named_in_kebab_case_with_documented_options():
    classes = all_pass_classes()
    assert len([c for c in classes if c.name != "mlir-pipeline"]) >= 8
    for cls in classes:
        assert cls.name == cls.name.lower() and " " not in cls.name and "_" not in cls.name
        assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen  # type: ignore[attr-defined]
        assert cls.__doc__ and "->" in cls.__doc__ or cls.name == "mlir-pipeline", cls.name
        module_name = cls.__module__.rsplit(".", 1)[-1]
        assert module_name == cls.name.replace("-", "_")
        for option in cls.options():
            assert option.doc, f"{cls.name}: option {option.name} has no docstring"
        cls()  # defaults are valid


def test_get_pass_class_of_unknown_name_is_none():
    assert get_pass_class("no-such-pass") is None
