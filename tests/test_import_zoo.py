"""The zoo: one tiny model per layer family, in every format that can carry it — ONNX from the
TorchScript exporter and from the dynamo exporter, ``torch.save`` (``.pt``) and ``torch.export``
(``.pt2``) — imported and compared with the module evaluated in float64 (weights widen exactly).
Each (family, format) pair has its expected outcome: exact, or a one-line refusal saying why, so
coverage cannot regress silently. The tolerance 10⁻⁶ is far above float64 rounding and the float32
rounding of Python-float constants (a LeakyReLU slope), far below a wrong weight."""
from __future__ import annotations

import warnings
from fractions import Fraction

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")
from torch import nn  # noqa: E402

from exactform.formats import InputError  # noqa: E402
from exactform.importers import import_network, reference  # noqa: E402
from exactform.importers.verify import sample_points, self_check  # noqa: E402

pytestmark = [pytest.mark.filterwarnings("ignore::DeprecationWarning"),
              pytest.mark.filterwarnings("ignore::UserWarning"), pytest.mark.filterwarnings("ignore::FutureWarning")]
UNIT = [(Fraction(-1), Fraction(1))]
TOLERANCE = 1e-6


class Residual(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(4, 4), nn.Linear(4, 2)

    def forward(self, x):
        return self.b(x + torch.relu(self.a(x)))


class Concat(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b, self.c = nn.Linear(4, 3), nn.Linear(4, 2), nn.Linear(5, 2)

    def forward(self, x):
        return self.c(torch.cat([torch.relu(self.a(x)), nn.functional.leaky_relu(self.b(x), 0.2)], dim=1))


class BranchMax(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(4, 3), nn.Linear(4, 3)

    def forward(self, x):
        return torch.maximum(self.a(x), self.b(x)).amax(dim=1, keepdim=True)


class ViewPermute(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv, self.fc = nn.Conv1d(2, 3, 2), nn.Linear(6, 2)

    def forward(self, x):                                   # x: 1×6
        y = torch.relu(self.conv(x.view(1, 2, 3)))          # 1×3×2
        return self.fc(y.permute(0, 2, 1).reshape(1, -1))


FAMILIES = {
    "mlp": (lambda: nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Dropout(0.5), nn.Linear(6, 2)), (1, 4)),
    "conv1d": (lambda: nn.Sequential(nn.Conv1d(1, 2, 3, stride=2, padding=1), nn.ReLU(), nn.Flatten(),
                                     nn.Linear(16, 2)), (1, 1, 16)),
    "conv2d": (lambda: nn.Sequential(nn.Conv2d(2, 4, 3, padding=2, dilation=2, groups=2), nn.BatchNorm2d(4),
                                     nn.LeakyReLU(0.2), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16, 2)), (1, 2, 4, 4)),
    "padding": (lambda: nn.Sequential(nn.ZeroPad2d((1, 0, 1, 2)), nn.Conv2d(1, 2, 3, padding=1, padding_mode="reflect"),
                                      nn.ReLU(), nn.Flatten()), (1, 1, 3, 3)),
    "pools": (lambda: nn.Sequential(nn.Conv2d(1, 2, 2), nn.AvgPool2d(2, stride=1), nn.AdaptiveAvgPool2d(2),
                                    nn.ReLU(), nn.AdaptiveMaxPool2d(1), nn.Flatten()), (1, 1, 5, 5)),
    "global_pools": (lambda: nn.Sequential(nn.Conv2d(1, 2, 2), nn.ReLU(), nn.AdaptiveMaxPool2d(2),
                                           nn.AdaptiveAvgPool2d(1), nn.Flatten()), (1, 1, 5, 5)),
    "activations": (lambda: nn.Sequential(nn.Linear(4, 6), nn.PReLU(), nn.Linear(6, 6), nn.ReLU6(),
                                          nn.Linear(6, 6), nn.Hardtanh(-0.5, 0.5), nn.Linear(6, 4), nn.Hardsigmoid(),
                                          nn.Linear(4, 2)), (1, 4)),
    "dropout2d": (lambda: nn.Sequential(nn.Conv2d(1, 2, 2), nn.Dropout2d(0.3), nn.ReLU(), nn.Flatten()), (1, 1, 3, 3)),
    "conv_transpose": (lambda: nn.Sequential(nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1, output_padding=1),
                                             nn.ReLU(), nn.ConvTranspose2d(3, 1, 2, dilation=2), nn.Flatten()),
                       (1, 2, 2, 3)),
    "conv_transpose1d": (lambda: nn.Sequential(nn.ConvTranspose1d(2, 4, 3, stride=2, groups=2), nn.ReLU(),
                                               nn.Flatten()), (1, 2, 3)),
    "upsample": (lambda: nn.Sequential(nn.Conv2d(1, 2, 2), nn.Upsample(scale_factor=2), nn.ReLU(),
                                       nn.UpsamplingNearest2d(scale_factor=(1, 3)), nn.Flatten()), (1, 1, 3, 3)),
    "pixel_shuffle": (lambda: nn.Sequential(nn.Conv2d(1, 8, 1), nn.ReLU(), nn.PixelShuffle(2), nn.PixelUnshuffle(2),
                                            nn.PixelShuffle(2), nn.Flatten()), (1, 1, 2, 3)),
    "residual": (Residual, (1, 4)),
    "concat": (Concat, (1, 4)),
    "branch_max": (BranchMax, (1, 4)),
    "view_permute": (ViewPermute, (1, 6)),
    "softmax_head": (lambda: nn.Sequential(nn.Linear(4, 5), nn.ReLU(), nn.Linear(5, 3), nn.Softmax(dim=1)), (1, 4)),
    "log_softmax_head": (lambda: nn.Sequential(nn.Linear(4, 3), nn.LogSoftmax(dim=-1)), (1, 4)),
    "sigmoid_head": (lambda: nn.Sequential(nn.Linear(4, 3), nn.Sigmoid()), (1, 4)),
}
CUSTOM = {"residual", "concat", "branch_max", "view_permute"}
"""Modules with their own class: a ``.pt`` file of one needs that class, which unpickling would run."""
SOFTMAX = {"softmax_head", "log_softmax_head"}
NOT_PIECEWISE_LINEAR = {"sigmoid_head"}
FORMATS = ("onnx-torchscript", "onnx-dynamo", "pt", "pt2")
EXPORTER_LIMITS = {("pools", "onnx-torchscript"): "the TorchScript exporter has no rule for adaptive pooling whose "
                   "output size does not divide the input size (the .pt import then uses torch.export)"}
"""Pairs no file exists for: the exporter refuses the model (strict: a fixed exporter shows up)."""


def expected(family: str, fmt: str) -> str | None:
    """``None`` for an exact import, else a phrase the one-line refusal must contain."""
    if family in NOT_PIECEWISE_LINEAR:
        return "Sigmoid"
    if family in SOFTMAX:
        return "--strip-softmax"
    if fmt == "pt" and family in CUSTOM:
        return "exactform.from_torch"
    return None


def build(family):
    torch.manual_seed(3)
    make, shape = FAMILIES[family]
    model = make()
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            with torch.no_grad():
                m.running_mean.uniform_(-1, 1)
                m.running_var.uniform_(0.5, 2)
    return model.eval(), shape


def write(model, shape, fmt, folder) -> str:
    """``model`` in format ``fmt`` under ``folder``."""
    example = (torch.zeros(shape),)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if fmt == "onnx-torchscript":
            path = folder / "m.onnx"
            torch.onnx.export(model, example, str(path), dynamo=False, opset_version=17)
        elif fmt == "onnx-dynamo":
            path = folder / "m.onnx"
            torch.onnx.export(model, example, str(path), dynamo=True, verbose=False)
        elif fmt == "pt":
            path = folder / "m.pt"
            torch.save(model, path)
        else:
            path = folder / "m.pt2"
            torch.export.save(torch.export.export(model, example), path)
    return str(path)


def float64_outputs(model, shape, points):
    double = model.double()
    with torch.no_grad():
        return [double(torch.tensor([float(v) for v in p], dtype=torch.float64).reshape(shape)).ravel().tolist()
                for p in points]


CASES = [pytest.param(family, fmt, marks=[pytest.mark.xfail(raises=Exception, strict=True,
                                                            reason=EXPORTER_LIMITS[family, fmt])]
                      if (family, fmt) in EXPORTER_LIMITS else []) for family in sorted(FAMILIES) for fmt in FORMATS]


@pytest.mark.parametrize("family,fmt", CASES)
def test_zoo_family_imports_exactly_or_is_refused_in_one_line(tmp_path, family, fmt):
    model, shape = build(family)
    path = write(model, shape, fmt, tmp_path)
    refusal = expected(family, fmt)
    if refusal is not None:
        with pytest.raises(InputError) as e:
            import_network(path, UNIT, shape if fmt == "pt" else None)
        assert refusal in str(e.value) and "\n" not in str(e.value), str(e.value)
        return
    net = import_network(path, UNIT, shape if fmt == "pt" else None)
    points = sample_points(net.domain, 8)
    for exact, floats in zip(net.evaluate_batch(points), float64_outputs(model, shape, points), strict=True):
        assert len(exact) == len(floats)
        assert max(abs(float(e) - f) for e, f in zip(exact, floats)) < TOLERANCE


@pytest.mark.parametrize("fmt", FORMATS)
def test_strip_softmax_gives_the_logits_and_says_so(tmp_path, fmt):
    model, shape = build("softmax_head")
    path = write(model, shape, fmt, tmp_path)
    net = import_network(path, UNIT, shape if fmt == "pt" else None, strip_softmax=True)
    logits = model[:-1]
    points = sample_points(net.domain, 6)
    for exact, floats in zip(net.evaluate_batch(points), float64_outputs(logits, shape, points), strict=True):
        assert max(abs(float(e) - f) for e, f in zip(exact, floats)) < TOLERANCE
    assert len(net.provenance) == 1 and "Softmax" in net.provenance[0] and "argmax" in net.provenance[0]
    assert self_check(net, reference(path, shape if fmt == "pt" else None, strip_softmax=True)).ok
    assert net.to_json()["provenance"] == list(net.provenance)
