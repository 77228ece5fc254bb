"""`zoo.silent`, the zoo check that what `prepare_model` still converts has a finding: an op
of a method bound in forward's place is covered by the MIG115 that names the method where it
is bound (timm's fasternet), an op of an unnamed method is not."""

from __future__ import annotations

import textwrap

from zoo import FixRun, ModelResult, ZooRun, fix, silent

SOURCE = textwrap.dedent(
    """\
    import torch
    from torch import nn


    class Partial(nn.Module):
        def __init__(self, dim, kind):
            super().__init__()
            self.conv = nn.Conv2d(dim // 2, dim // 2, 3, padding=1)
            if kind == "split_cat":
                self.forward = self.forward_split_cat
            else:
                raise NotImplementedError

        def forward_split_cat(self, x):
            x1, x2 = torch.split(x, [x.shape[1] // 2] * 2, dim=1)
            x1 = self.conv(x1)
            return torch.cat((x1, x2), 1)


    class Other(nn.Module):
        def forward(self, x):
            y = x


            return y
    """
)


def test_an_op_of_a_method_bound_as_forward_is_covered_by_its_mig115(tmp_path):
    package = tmp_path / "timm"
    (package / "models").mkdir(parents=True)
    path = package / "models" / "net.py"
    path.write_text(SOURCE, encoding="utf-8")
    second = fix([package / "models"], write=False)
    assert [(f.code, f.line, f.op) for f in second.left] == [("MIG115", 10, "forward_split_cat")]
    cat, other = SOURCE.splitlines().index("        return torch.cat((x1, x2), 1)") + 1, 26
    sites = [["torch.cat", [f"{path}:{cat}"]], ["torch.add", [f"{path}:{other}"]]]
    model = ModelResult("net", {"error": None}, {"error": None, "prepare": {"sites": sites}})
    run = ZooRun("timm", package, FixRun(), second, [], [model], {})
    assert silent(run) == [f"net: torch.add at timm/models/net.py:{other}"]
