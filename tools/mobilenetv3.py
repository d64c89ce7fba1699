"""MobileNetV3-Small and -Large as PyTorch modules, written from the paper's tables.

Source: A. Howard, M. Sandler, G. Chu, L.-C. Chen, B. Chen, M. Tan, W. Wang, Y. Zhu, R. Pang,
V. Vasudevan, Q. V. Le, H. Adam, "Searching for MobileNetV3", ICCV 2019 (arXiv:1905.02244):
Table 1 (MobileNetV3-Large) and Table 2 (MobileNetV3-Small), Section 5.2 (h-swish) and 5.3
(squeeze-and-excite), Figure 4 (the bottleneck with squeeze-and-excite).

Each ``bneck`` row of a table is one :class:`Bottleneck`: an optional 1x1 expansion to ``exp
size`` channels (none when ``exp size`` equals the input width, as in the first row of both
tables), a ``k x k`` depthwise convolution with the row's stride, the squeeze-and-excite block
where the row has ``SE``, and a linear 1x1 projection to ``#out``; every convolution is followed
by BatchNorm, the first two by the row's nonlinearity (``RE``: ReLU, ``HS``: h-swish). The
residual connection of MobileNetV2 is kept where the stride is 1 and the width does not change.
The squeeze-and-excite block is global average pooling, a 1x1 convolution to a quarter of the
expansion width ("fixed to be 1/4 of the number of channels in expansion layer", Section 5.3),
ReLU, a 1x1 convolution back, and hard sigmoid ``ReLU6(x + 3) / 6``; h-swish is
``x * ReLU6(x + 3) / 6`` (Section 5.2). The rows marked ``NBN`` (the last two 1x1 convolutions,
after the 7x7 pooling) have no BatchNorm and a bias. SE is applied in the ``bneck`` rows marked
with it only.

Every convolution weight is He-normal (``kaiming_normal_``, fan in, ReLU gain), every bias zero,
so that the unnormalized head (the ``NBN`` rows) keeps the features' scale and the logits come
out of order 1 (PyTorch's default initialization shrinks them to about 0.04); the builder seeds
``torch.manual_seed`` and calibrates the BatchNorm statistics. There is no dropout (the tables
have none), so training and evaluation modes differ only in BatchNorm. torch is imported at
module level: import this module lazily.
"""

from __future__ import annotations

import torch
from torch import nn

# (kernel, exp size, #out, SE, NL, stride) of each bneck row; NL is "RE" (ReLU) or "HS" (h-swish).
SMALL_BNECK = (
    (3, 16, 16, True, "RE", 2),
    (3, 72, 24, False, "RE", 2),
    (3, 88, 24, False, "RE", 1),
    (5, 96, 40, True, "HS", 2),
    (5, 240, 40, True, "HS", 1),
    (5, 240, 40, True, "HS", 1),
    (5, 120, 48, True, "HS", 1),
    (5, 144, 48, True, "HS", 1),
    (5, 288, 96, True, "HS", 2),
    (5, 576, 96, True, "HS", 1),
    (5, 576, 96, True, "HS", 1),
)
"""Table 2 (MobileNetV3-Small), the bneck rows."""

LARGE_BNECK = (
    (3, 16, 16, False, "RE", 1),
    (3, 64, 24, False, "RE", 2),
    (3, 72, 24, False, "RE", 1),
    (5, 72, 40, True, "RE", 2),
    (5, 120, 40, True, "RE", 1),
    (5, 120, 40, True, "RE", 1),
    (3, 240, 80, False, "HS", 2),
    (3, 200, 80, False, "HS", 1),
    (3, 184, 80, False, "HS", 1),
    (3, 184, 80, False, "HS", 1),
    (3, 480, 112, True, "HS", 1),
    (3, 672, 112, True, "HS", 1),
    (5, 672, 160, True, "HS", 2),
    (5, 960, 160, True, "HS", 1),
    (5, 960, 160, True, "HS", 1),
)
"""Table 1 (MobileNetV3-Large), the bneck rows."""

VARIANTS = {  # name: (bneck rows, last conv2d 1x1 width, NBN conv2d 1x1 width)
    "small": (SMALL_BNECK, 576, 1024),
    "large": (LARGE_BNECK, 960, 1280),
}


def _nonlinearity(name: str) -> nn.Module:
    return nn.ReLU() if name == "RE" else nn.Hardswish()


def _conv_bn(in_channels: int, out_channels: int, kernel: int, stride: int = 1, groups: int = 1) -> list[nn.Module]:
    padding = (kernel - 1) // 2
    return [
        nn.Conv2d(in_channels, out_channels, kernel, stride, padding, groups=groups, bias=False),
        nn.BatchNorm2d(out_channels),
    ]


class SqueezeExcite(nn.Module):
    """Global average pool, 1x1 conv to ``channels // 4``, ReLU, 1x1 conv back, hard sigmoid, scale."""

    def __init__(self, channels: int):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.reduce = nn.Conv2d(channels, channels // 4, 1)
        self.relu = nn.ReLU()
        self.expand = nn.Conv2d(channels // 4, channels, 1)
        self.gate = nn.Hardsigmoid()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.gate(self.expand(self.relu(self.reduce(self.pool(x)))))


class Bottleneck(nn.Module):
    """One ``bneck`` row: [1x1 expand, NL], depthwise k x k, NL, [SE], 1x1 project; residual at stride 1."""

    def __init__(self, in_channels: int, kernel: int, expand: int, out: int, se: bool, nl: str, stride: int):
        super().__init__()
        layers: list[nn.Module] = []
        if expand != in_channels:
            layers += [*_conv_bn(in_channels, expand, 1), _nonlinearity(nl)]
        layers += [*_conv_bn(expand, expand, kernel, stride, groups=expand), _nonlinearity(nl)]
        if se:
            layers.append(SqueezeExcite(expand))
        layers += _conv_bn(expand, out, 1)
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and in_channels == out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.body(x)
        return x + y if self.residual else y


class MobileNetV3(nn.Module):
    """MobileNetV3-Small or -Large image classifier: ``pixel_values`` (N, 3, H, W) -> logits (N, classes)."""

    def __init__(self, variant: str = "small", num_classes: int = 1000):
        super().__init__()
        rows, last_width, head_width = VARIANTS[variant]
        layers: list[nn.Module] = [*_conv_bn(3, 16, 3, stride=2), nn.Hardswish()]  # conv2d 3x3, 16, HS, s2
        width = 16
        for kernel, expand, out, se, nl, stride in rows:
            layers.append(Bottleneck(width, kernel, expand, out, se, nl, stride))
            width = out
        layers += [*_conv_bn(width, last_width, 1), nn.Hardswish()]  # conv2d 1x1, HS
        self.features = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)  # pool 7x7 at 224
        self.head = nn.Sequential(
            nn.Conv2d(last_width, head_width, 1),  # conv2d 1x1, NBN, HS
            nn.Hardswish(),
            nn.Conv2d(head_width, num_classes, 1),  # conv2d 1x1, NBN, k
            nn.Flatten(1),
        )
        for module in self.modules():
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, mode="fan_in", nonlinearity="relu")
                if module.bias is not None:
                    nn.init.zeros_(module.bias)

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        return self.head(self.pool(self.features(pixel_values)))
