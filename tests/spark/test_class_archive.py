"""The driver JVM's class archive (``panes.spark.class_archive``): where it is kept, when a created session uses
it, and that a JVM given it maps its classes instead of loading them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from panes.spark import class_archive
from panes.spark.class_archive import archive_path, java_options


def fake_java(root: Path, name: str) -> Path:
    home = root / name
    (home / "bin").mkdir(parents=True)
    (home / "lib").mkdir()
    (home / "bin" / "java").write_text("#!/bin/sh\n")
    (home / "lib" / "modules").write_text(name)
    return home


def test_the_archive_is_kept_per_java_runtime_and_spark_installation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PANES_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("JAVA_HOME", str(fake_java(tmp_path, "jdk-a")))
    first = archive_path()
    assert first is not None and first.parent == tmp_path / "cache" and first.suffix == ".jsa"
    assert archive_path() == first  # the same runtime and jars: the same archive
    monkeypatch.setenv("JAVA_HOME", str(fake_java(tmp_path, "jdk-b")))
    assert archive_path() not in (None, first)  # another Java runtime
    spark = tmp_path / "spark"
    (spark / "jars").mkdir(parents=True)
    (spark / "jars" / "spark-core_2.13-9.9.9.jar").write_text("")
    monkeypatch.setenv("SPARK_HOME", str(spark))
    other = archive_path()
    assert other is not None and other.name.startswith("spark-jvm-9.9.9-")  # another Spark installation
    copy = tmp_path / "venv-2" / "spark"
    (copy / "jars").mkdir(parents=True)
    (copy / "jars" / "spark-core_2.13-9.9.9.jar").write_text("")
    monkeypatch.setenv("SPARK_HOME", str(copy))
    assert archive_path() not in (None, other)  # the same jars in another folder: another class path
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-such-jdk"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert archive_path() is None and java_options("-Dx=1") == "-Dx=1"  # no Java: nothing to add


def test_a_created_session_adds_the_archive_only_when_it_exists_and_nothing_else_chose(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PANES_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("JAVA_HOME", str(fake_java(tmp_path, "jdk")))
    monkeypatch.delenv(class_archive.SWITCH, raising=False)
    path = archive_path()
    assert path is not None
    assert java_options("") == "" and java_options("-Dx=1") == "-Dx=1"  # no archive yet
    path.parent.mkdir(parents=True)
    path.write_bytes(b"archive")
    assert java_options("") == f"-XX:SharedArchiveFile={path}"
    assert java_options("-Dx=1") == f"-Dx=1 -XX:SharedArchiveFile={path}"
    mine = "-XX:SharedArchiveFile=/elsewhere.jsa"
    assert java_options(mine) == mine  # the session's own archive stays
    assert java_options("-XX:ArchiveClassesAtExit=/x.jsa") == "-XX:ArchiveClassesAtExit=/x.jsa"
    monkeypatch.setenv(class_archive.SWITCH, "off")
    assert java_options("-Dx=1") == "-Dx=1"


PROBE = """
import sys
from panes.spark import create_session
logging = {"spark.driver.extraJavaOptions": "-Xlog:class+load=info:file=" + sys.argv[1]}
spark = create_session(config=logging, log_file=sys.argv[2])
assert spark.range(5).count() == 5
spark.stop()
"""


@pytest.mark.spark
def test_a_created_session_maps_its_classes_from_the_archive(tmp_path: Path) -> None:
    """The archive is built when missing (as ``scripts/bootstrap.sh`` does), then a fresh session's JVM loads most
    of its classes from it: the class-loading log names the archive (``top``) as their source."""
    path = class_archive.build()
    assert path is not None and path.is_file()
    loads = tmp_path / "classes.log"
    env = {key: value for key, value in os.environ.items() if key != class_archive.SWITCH}
    subprocess.run(
        [sys.executable, "-c", PROBE, str(loads), str(tmp_path / "spark.log")], env=env, check=True, timeout=300
    )
    lines = loads.read_text().splitlines()
    from_archive = [line for line in lines if "shared objects file (top)" in line]
    assert len(from_archive) > len(lines) // 2, f"{len(from_archive)} of {len(lines)} classes from the archive"
