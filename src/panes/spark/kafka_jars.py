"""Where panes finds Spark's Kafka connector for the sessions it creates: the jars ``scripts/spark-kafka.sh``
fetched into ``<cache>/spark-kafka/<version>/jars`` (cache as ``class_archive.cache_dir``: ``$PANES_CACHE_DIR``,
else ``$XDG_CACHE_HOME/panes``, else ``~/.cache/panes``).

:func:`connector_jars` picks the release of the installed PySpark when it is cached, else the newest cached release
of the same major version (Maven Central may not serve a new Spark's connector yet; a release differs from Spark's
own version only in its minor or patch number then, and panes' tests run Spark's 4.2 connector on Spark 4.3), and
nothing for another major version. ``create_session`` adds them to ``spark.jars`` unless the configuration names a
Kafka connector itself (``spark.jars`` or ``spark.jars.packages`` mentioning ``spark-sql-kafka``) or
``PANES_SPARK_KAFKA_JARS=off``. Jars given through ``spark.jars`` are loaded by Spark's own class loader after the
JVM started: they are not on the JVM's class path, so the driver's class-data-sharing archive
(``class_archive``) still fits.
"""

from __future__ import annotations

import os
from pathlib import Path

SWITCH = "PANES_SPARK_KAFKA_JARS"
"""Environment variable: ``off`` keeps created sessions from loading the cached connector."""


def _release(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in text.split("."))
    except ValueError:
        return ()


def connector_jars(spark_version: str | None = None) -> list[str]:
    """The cached connector's jars for ``spark_version`` (default: the installed PySpark's), ``[]`` when none fits or
    ``PANES_SPARK_KAFKA_JARS=off``."""
    if os.environ.get(SWITCH, "").lower() == "off":
        return []
    from panes.spark.class_archive import cache_dir

    if spark_version is None:
        try:
            import pyspark

            spark_version = pyspark.__version__
        except ImportError:
            return []
    folder = cache_dir() / "spark-kafka"
    if not folder.is_dir():
        return []
    wanted = _release(spark_version)
    cached = [p for p in folder.iterdir() if (p / ".complete").is_file() and _release(p.name)]
    exact = [p for p in cached if _release(p.name) == wanted]
    same_major = sorted(
        (p for p in cached if wanted and _release(p.name)[:1] == wanted[:1]), key=lambda p: _release(p.name)
    )
    chosen: Path | None = exact[0] if exact else (same_major[-1] if same_major else None)
    if chosen is None:
        return []
    return sorted(str(jar) for jar in (chosen / "jars").glob("*.jar"))


def with_connector(settings: dict[str, str]) -> dict[str, str]:
    """``settings`` with the cached connector's jars added to ``spark.jars`` (see the module docstring)."""
    named = settings.get("spark.jars", "") + settings.get("spark.jars.packages", "")
    if "spark-sql-kafka" in named:
        return settings
    jars = connector_jars()
    if not jars:
        return settings
    given = [entry for entry in settings.get("spark.jars", "").split(",") if entry]
    return {**settings, "spark.jars": ",".join([*given, *jars])}
