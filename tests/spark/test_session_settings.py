"""The settings of a session panes creates follow where it runs (``panes.spark.settings``): one machine gets
slots-sized shuffles, no UI and a 2 GiB driver; a cluster keeps Spark's own defaults; the executors get the
switches panes reads in its workers. (No session starts here.)"""

from __future__ import annotations

import os

import pytest

from panes.cli.explain import settings_lines
from panes.spark.settings import COMMON_CONFIG, ROCKSDB, is_local, local_slots, session_settings


@pytest.mark.parametrize(("master", "slots"), [("local", 1), ("local[2]", 2), ("local[8]", 8), ("local[4, 3]", 4)])
def test_one_machine_gets_as_many_shuffle_partitions_as_slots_no_ui_and_a_small_driver(master: str, slots: int) -> None:
    assert session_settings(master, environment={}) == {
        **COMMON_CONFIG,
        "spark.sql.shuffle.partitions": str(slots),
        "spark.default.parallelism": str(slots),
        "spark.ui.enabled": "false",
        "spark.driver.memory": "2g",
    }


def test_local_star_counts_this_machines_cpus() -> None:
    assert local_slots("local[*]") == (os.cpu_count() or 1)
    assert session_settings("local[*]", environment={})["spark.sql.shuffle.partitions"] == str(os.cpu_count() or 1)


@pytest.mark.parametrize(
    "master", ["spark://10.0.0.1:7077", "yarn", "k8s://https://host:6443", "local-cluster[2, 4, 1024]"]
)
def test_a_cluster_keeps_sparks_own_defaults(master: str) -> None:
    assert not is_local(master)
    settings = session_settings(master, environment={})
    assert settings == COMMON_CONFIG
    assert settings["spark.sql.streaming.stateStore.providerClass"] == ROCKSDB
    for left_to_spark in (
        "spark.sql.shuffle.partitions",
        "spark.default.parallelism",
        "spark.ui.enabled",
        "spark.driver.memory",
    ):
        assert left_to_spark not in settings


def test_the_shard_keepers_switch_reaches_the_executors_of_a_cluster() -> None:
    on = session_settings("spark://host:7077", environment={"PANES_SHARD_KEEPERS": "0"})
    assert on["spark.executorEnv.PANES_SHARD_KEEPERS"] == "0"
    assert "spark.executorEnv.PANES_SHARD_KEEPERS" not in session_settings("spark://host:7077", environment={})


def test_a_non_local_master_has_no_local_slots() -> None:
    with pytest.raises(ValueError, match="not a local master"):
        local_slots("spark://host:7077")


def test_panes_explain_lists_every_setting_for_one_machine_and_for_a_cluster() -> None:
    text = "\n".join(settings_lines("local[2]"))
    for key, value in session_settings("local[2]").items():
        assert f"  {key}={value}" in text
    cluster = text[text.index("on a cluster") :]
    assert "spark.ui.enabled" not in cluster and "spark.sql.shuffle.partitions" not in cluster
