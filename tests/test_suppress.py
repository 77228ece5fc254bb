"""Suppressions (`# noqa`, `# migrator: skip[CODE]`), --add-noqa, --report-unused-noqa and the
ruff-like flags of `fix` and `check`, run as a user runs them."""

from __future__ import annotations

from test_cli import MODEL, SHARED_CONV, migrator

SHARED_LINE = "        return self.conv(self.conv(x))"
RELU_LINE = "        return F.relu(self.conv(x))"
REUSED_RELU = """import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = nn.ReLU()

    def forward(self, x):
        x = self.act(x)
        return self.act(x)  # noqa: MIG003
"""


def check(tmp_path, text, *args):
    (tmp_path / "net.py").write_text(text)
    return migrator("check", "net.py", *args, cwd=tmp_path)


def test_noqa_forms_suppress_the_finding_on_their_line(tmp_path):
    for comment in (
        "# noqa",
        "# noqa: MIG103",
        "# noqa: MIG101, MIG103",
        "# NOQA:MIG103 E501",
        "# migrator: skip[MIG103]",
    ):
        result = check(tmp_path, SHARED_CONV.replace(SHARED_LINE, f"{SHARED_LINE}  {comment}"))
        assert (result.returncode, result.stdout) == (0, ""), comment
    for comment in ("# noqa: MIG101", "# migrator: skip[MIG101]", "# noqa: E501"):
        result = check(tmp_path, SHARED_CONV.replace(SHARED_LINE, f"{SHARED_LINE}  {comment}"))
        assert "MIG103" in result.stdout and result.returncode == 1, comment


def test_unused_suppressions_are_reported_on_request(tmp_path):
    text = SHARED_CONV.replace(SHARED_LINE, f"{SHARED_LINE}  # noqa: MIG101, MIG103")
    assert check(tmp_path, text).returncode == 0
    result = check(tmp_path, text, "--report-unused-noqa")
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        "net.py:10:41: MIG100 unused suppression `# noqa: MIG101, MIG103`: nothing to suppress "
        "for MIG101"
    ]
    used = MODEL.replace(RELU_LINE, f"{RELU_LINE}  # noqa: MIG001")
    assert check(tmp_path, used, "--report-unused-noqa").returncode == 0
    bare = SHARED_CONV.replace("super().__init__()", "super().__init__()  # noqa")
    assert check(tmp_path, bare, "--report-unused-noqa").returncode == 1  # MIG103 only


def test_suppressed_fix_is_not_made(tmp_path):
    text = MODEL.replace(RELU_LINE, f"{RELU_LINE}  # noqa: MIG001")
    (tmp_path / "net.py").write_text(text)
    result = migrator("fix", "net.py", cwd=tmp_path)
    assert (tmp_path / "net.py").read_text() == text and result.returncode == 0
    (tmp_path / "net.py").write_text(REUSED_RELU)
    migrator("fix", "net.py", cwd=tmp_path)
    assert "        return self.act(x)  # noqa: MIG003\n" in (tmp_path / "net.py").read_text()


def test_the_line_a_finding_is_on_counts(tmp_path):
    split = MODEL.replace(RELU_LINE, "        return F.relu(\n            self.conv(x))")
    on_last = split.replace("self.conv(x))", "self.conv(x))  # noqa: MIG001")
    assert "net.py:11:16: MIG001" in check(tmp_path, on_last).stdout
    on_first = split.replace("F.relu(", "F.relu(  # noqa: MIG001")
    assert check(tmp_path, on_first).returncode == 0


def test_add_noqa_is_idempotent_and_keeps_bytes(tmp_path):
    text = (
        "# -*- coding: latin-1 -*-\n# caf\xe9\n"
        + SHARED_CONV.replace(SHARED_LINE, f"{SHARED_LINE}  # noqa: E501")
        + MODEL.split("\n\n\n", 1)[1].replace("class Net", "class Other")
    )
    raw = text.replace("\n", "\r\n").encode("latin-1")
    (tmp_path / "net.py").write_bytes(raw)
    (tmp_path / "net.py").write_bytes(
        raw.replace(
            b"import torch.nn as nn", b"import torch.nn as nn\r\nimport torch.nn.functional as F", 1
        )
    )
    first = migrator("check", "--add-noqa", ".", cwd=tmp_path)
    assert first.returncode == 0 and "added 2 noqa code(s) to 1 file(s)" in first.stderr
    written = (tmp_path / "net.py").read_bytes()
    assert b"\xe9" in written and written.count(b"\r\n") == written.count(b"\n")
    assert b"# noqa: E501, MIG103\r\n" in written and b"# noqa: MIG001\r\n" in written
    assert migrator("check", ".", cwd=tmp_path).returncode == 0
    again = migrator("check", "--add-noqa", ".", cwd=tmp_path)
    assert "added 0 noqa" in again.stderr and (tmp_path / "net.py").read_bytes() == written


def test_statistics_exit_zero_quiet_verbose(tmp_path):
    (tmp_path / "a.py").write_text(MODEL)
    (tmp_path / "b.py").write_text(MODEL)
    (tmp_path / "c.py").write_text(SHARED_CONV)
    stats = migrator("check", ".", "--statistics", cwd=tmp_path)
    assert stats.returncode == 1
    assert [line.split("\t")[:2] for line in stats.stdout.splitlines()] == [
        ["    2", "MIG001"],
        ["    1", "MIG103"],
    ]
    assert "[*]" in stats.stdout.splitlines()[0]
    assert migrator("check", ".", "--exit-zero", cwd=tmp_path).returncode == 0
    verbose = migrator("check", "a.py", "-v", cwd=tmp_path)
    assert "a.py: settings from the defaults" in verbose.stderr
    quiet = migrator("fix", ".", "--check", "-q", cwd=tmp_path)
    assert quiet.returncode == 1 and quiet.stderr == "" and "would fix" not in quiet.stdout
    diff = migrator("fix", "a.py", "--diff", "--check", cwd=tmp_path)
    assert diff.returncode == 1 and "+++ b/a.py" in diff.stdout
    assert (tmp_path / "a.py").read_text() == MODEL
    assert migrator("fix", "a.py", "--exit-zero", cwd=tmp_path).returncode == 0
    assert (tmp_path / "a.py").read_text() != MODEL
