"""What a query does before its first micro-batch: the fingerprint kept without a Spark job on a local checkpoint,
the Python workers started ahead of the query (``panes.spark.session.warm_python_workers``), and what they import
PySpark from (``panes.spark.worker_daemon``)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from panes.datastream.fingerprint import STATE_FORMAT, JobFingerprint
from panes.spark.restarts import FOLDER, load_fingerprint, store_fingerprint
from panes.spark.session import _WARMED, SPARK_SITE, driver_path, warm_python_workers
from panes.spark.worker_daemon import archives_of_installation

pytestmark = pytest.mark.spark


def fingerprint(shards: str) -> JobFingerprint:
    return JobFingerprint(STATE_FORMAT, "test", {"num_shards": shards}, ())


def test_a_fingerprint_on_a_local_checkpoint_is_written_whole_and_read_back_by_spark(
    spark: Any, tmp_path: Path
) -> None:
    checkpoint = str(tmp_path / "checkpoint")
    jobs_before = len(spark.sparkContext.statusTracker().getJobIdsForGroup())
    store_fingerprint(spark, checkpoint, fingerprint("4"))
    assert len(spark.sparkContext.statusTracker().getJobIdsForGroup()) == jobs_before  # no Spark job
    folders = sorted(os.listdir(os.path.join(checkpoint, FOLDER)))
    assert len(folders) == 1 and folders[0].startswith("start=")  # no hidden staging folder left
    store_fingerprint(spark, "file:" + checkpoint, fingerprint("8"))  # a file: URL is a local path too
    loaded = load_fingerprint(spark, checkpoint)
    assert loaded is not None and loaded.settings == {"num_shards": "8"}  # the newest of the two


def test_driver_paths() -> None:
    class Classic:
        pass

    assert driver_path(Classic(), "/tmp/x") == "/tmp/x"
    assert driver_path(Classic(), "file:/tmp/x") == "/tmp/x"
    assert driver_path(Classic(), "file:///tmp/x") == "/tmp/x"
    assert driver_path(Classic(), "hdfs://nn/x") is None


def test_workers_are_warmed_once_per_application(spark: Any) -> None:
    thread = warm_python_workers(spark)
    if thread is not None:  # this session's first query may have warmed it already
        thread.join(timeout=120)
        assert not thread.is_alive()
    assert spark.sparkContext.applicationId in _WARMED
    assert warm_python_workers(spark) is None


def _worker_imports(batches: Iterator[Any]) -> Iterator[Any]:
    import sys

    import pyarrow as pa
    import pyspark

    archives = [entry for entry in sys.path if entry.endswith((".zip", ".jar")) and os.path.exists(entry)]
    for _ in batches:
        yield pa.RecordBatch.from_pylist([{"pyspark": pyspark.__file__, "archives": archives}])


def test_workers_import_the_installed_pyspark_not_its_archive(spark: Any) -> None:
    """``panes.spark.worker_daemon``: with PySpark installed from PyPI, Spark's workers find the installation's
    compiled modules, and none of the archives Spark put first on their path is left there."""
    import pyspark

    rows = spark.range(2, numPartitions=2).mapInArrow(_worker_imports, "pyspark string, archives array<string>")
    installed = os.path.realpath(pyspark.__file__)
    for row in rows.collect():
        assert os.path.realpath(row.pyspark) == installed
        assert not [entry for entry in row.archives if "pyspark" in entry or entry.endswith(".jar")]


def test_only_archives_inside_the_installed_pyspark_are_dropped(tmp_path: Path) -> None:
    site = tmp_path / "site-packages"
    (site / "pyspark" / "python" / "lib").mkdir(parents=True)
    (site / "pyspark" / "jars").mkdir()
    (site / "pyspark" / "__init__.py").write_text("")
    inside = [str(site / "pyspark" / "python" / "lib" / "pyspark.zip"), str(site / "pyspark" / "jars" / "core.jar")]
    elsewhere = str(tmp_path / "other" / "pyspark.zip")
    assert archives_of_installation([*inside, elsewhere, str(site)]) == inside
    # no installed PySpark beside the archives (a cluster's Python without it): the path stays
    assert archives_of_installation([*inside, elsewhere, str(tmp_path / "empty")]) == []
    assert archives_of_installation([str(site)]) == []


def test_the_spark_site_frees_a_process_path_and_runs_the_sitecustomize_it_shadows(tmp_path: Path) -> None:
    """``spark_site/sitecustomize.py`` in a fresh interpreter: PySpark's archive first on ``PYTHONPATH`` (as
    Spark puts it), the folder next, and another ``sitecustomize`` after it."""
    import subprocess
    import sys

    import pyspark

    archive = os.path.join(os.path.dirname(pyspark.__file__), "python", "lib", "pyspark.zip")
    other = tmp_path / "other"
    other.mkdir()
    (other / "sitecustomize.py").write_text("import os\nos.environ['SHADOWED_RAN'] = 'yes'\n")
    script = "import os, sys, pyspark; print(repr((pyspark.__file__, sys.path, os.environ.get('SHADOWED_RAN'))))"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([archive, SPARK_SITE, str(other)])}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    imported, path, shadowed = eval(out.stdout)
    assert os.path.realpath(imported) == os.path.realpath(pyspark.__file__)
    assert archive not in path and SPARK_SITE in path
    assert shadowed == "yes"


def _data_source_process(out: str) -> Any:
    from pyspark.sql.datasource import DataSource

    class ReportsItsPath(DataSource):
        """Its ``schema`` runs in a Python process Spark starts on the driver without the workers' daemon."""

        @classmethod
        def name(cls) -> str:
            return "reports_its_path"

        def schema(self) -> str:
            import json
            import sys

            import pyspark

            with open(self.options["out"], "w") as report:
                json.dump({"pyspark": pyspark.__file__, "path": sys.path}, report)
            return "x long"

    return ReportsItsPath


def test_python_processes_the_driver_starts_import_the_installed_pyspark(spark: Any, tmp_path: Path) -> None:
    """The processes Spark starts on the driver for a Python data source (not from the daemon) have the spark
    site on their path, and import the installed PySpark, not its archive."""
    import json

    import pyspark

    out = tmp_path / "report.json"
    spark.dataSource.register(_data_source_process(str(out)))
    assert spark.read.format("reports_its_path").option("out", str(out)).load().columns == ["x"]
    report = json.loads(out.read_text())
    assert os.path.realpath(report["pyspark"]) == os.path.realpath(pyspark.__file__)
    assert SPARK_SITE in report["path"]
    assert not [entry for entry in report["path"] if entry.endswith("pyspark.zip")]
