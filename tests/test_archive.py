"""Submission archives are read without trusting them: hostile ones are refused whole and nothing
is written outside the temporary folder; the genuine runs' archives read as they are."""

from __future__ import annotations

import gzip
import io
import os
import tarfile
from pathlib import Path

import pytest

from edgetui.parsers.submission_archive import ArchiveRefused, Limits, extract_archive, read_archive

ROOT = Path(__file__).resolve().parents[1]
GENUINE = ROOT / "sample_runs" / "genuine" / "runs" / "real-stats-20261201180500" / "tiny_stats"


def _tar(path: Path, members: list[tuple[tarfile.TarInfo, bytes]]) -> Path:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for info, data in members:
            if info.isreg():
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            else:
                tar.addfile(info)
    path.write_bytes(buf.getvalue())
    return path


def _file(name: str, data: bytes = b"x = 1\n") -> tuple[tarfile.TarInfo, bytes]:
    return tarfile.TarInfo(name), data


def _link(name: str, target: str, sym: bool = True) -> tuple[tarfile.TarInfo, bytes]:
    i = tarfile.TarInfo(name)
    i.type = tarfile.SYMTYPE if sym else tarfile.LNKTYPE
    i.linkname = target
    return i, b""


def _dev(name: str) -> tuple[tarfile.TarInfo, bytes]:
    i = tarfile.TarInfo(name)
    i.type = tarfile.CHRTYPE
    i.devmajor, i.devminor = 1, 3
    return i, b""


HOSTILE = {
    "dotdot": [_file("ok.py"), _file("../escaped.py")],
    "absolute": [_file("ok.py"), _file("/tmp/edgetui-absolute-escape.py")],
    "symlink out": [_file("ok.py"), _link("out", "../../etc")],
    "absolute symlink": [_link("pw", "/etc/passwd")],
    "hard link out": [_link("h", "../outside.py", sym=False)],
    "device": [_file("ok.py"), _dev("null")],
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_archives_are_refused_and_nothing_is_written(tmp_path, case):
    arc = _tar(tmp_path / "submission.tar.gz", HOSTILE[case])
    dest = tmp_path / "a" / "b"
    dest.mkdir(parents=True)
    before = sorted(p for p in tmp_path.rglob("*"))
    with pytest.raises(ArchiveRefused) as e:
        extract_archive(arc, dest)
    msg = str(e.value)
    assert "\n" not in msg and str(arc) in msg and "refused" in msg
    assert sorted(p for p in tmp_path.rglob("*")) == before  # not even ok.py
    assert not Path("/tmp/edgetui-absolute-escape.py").exists()
    with pytest.raises(ArchiveRefused):
        read_archive(arc)


def test_too_many_files_and_a_gzip_bomb_are_refused_while_reading(tmp_path):
    many = _tar(tmp_path / "many.tar.gz", [_file(f"f{i}.py", b"") for i in range(10_000)])
    with pytest.raises(ArchiveRefused, match="more than 2,000 members"):
        read_archive(many)
    # a gzip bomb: a 1 GiB member that compresses to about a megabyte; refused after reading
    # at most the limit (the member's declared size is the first thing that gives it away)
    bomb = tmp_path / "bomb.tar.gz"
    info = tarfile.TarInfo("zeros.bin")
    info.size = 1 << 30
    with gzip.open(bomb, "wb", compresslevel=9) as gz:
        gz.write(info.tobuf(format=tarfile.PAX_FORMAT))
        chunk = b"\0" * (1 << 20)
        for _ in range(1 << 10):
            gz.write(chunk)
    assert bomb.stat().st_size < 4 << 20
    with pytest.raises(ArchiveRefused, match="1,073,741,824 bytes"):
        read_archive(bomb)
    # a bomb no member's size gives away: a 64 MiB PAX header (tarfile reads it into memory
    # before handing the member over); the stream itself is cut off at the limit
    raw = tmp_path / "raw.tar.gz"
    small = tarfile.TarInfo("small.py")
    small.pax_headers = {"comment": "a" * (64 << 20)}
    with gzip.open(raw, "wb", compresslevel=9) as gz:
        gz.write(small.tobuf(format=tarfile.PAX_FORMAT))
    with pytest.raises(ArchiveRefused, match="decompressed"):
        read_archive(raw, Limits(max_bytes=8 << 20))
    # something that is not an archive at all
    (tmp_path / "junk.tar.gz").write_bytes(b"\x1f\x8b not really gzip")
    with pytest.raises(ArchiveRefused, match="not a readable tar.gz"):
        read_archive(tmp_path / "junk.tar.gz")


def test_a_genuine_submission_archive_reads_as_its_files(tmp_path):
    arc = GENUINE / "submissions" / "agent-5" / "submission.tar.gz"
    files = read_archive(arc)
    with tarfile.open(arc) as t:
        names = sorted(m.name for m in t.getmembers() if m.isreg())
        first = t.extractfile(names[0]).read().decode()
    assert sorted(files) == names and files[names[0]] == first
    # a binary member is listed without text; links inside the folder are fine
    arc2 = _tar(
        tmp_path / "ok.tar.gz", [_file("a/b.py", b"print(1)\n"), _file("blob.bin", b"\0\1\2"), _link("a/c.py", "b.py")]
    )
    files = read_archive(arc2)
    assert files["a/b.py"] == "print(1)\n" and files["blob.bin"] is None and "a/c.py" not in files
    assert not any(n.startswith("edgetui-archive-") for n in os.listdir(tmp_path))
