"""The two tiers of the test suite, written in one place so that they can be reviewed at a glance.

- The **quick tier** (``bash scripts/test.sh``): lint, types, every test that starts no Spark, and the Spark
  tests named in :data:`QUICK_SPARK`, each standing for a subsystem of the Spark runner, so that every subsystem
  runs at least once. It is the loop a contributor runs after a change; it stays under 10 minutes on two cores.
- The **full tier** (``bash scripts/test.sh --all``, what CI runs through ``.ci/run``, under 30 minutes): every
  Spark test. :data:`FULL_ONLY` says, file by file, why the rest of a file waits for the full run.
- Between the two, ``bash scripts/test.sh --ci``: the quick tier and every other Spark test except those in the
  files of :data:`REPEATS`, whose further tests repeat on other inputs what a quick test already checks on Spark
  (their reason says which).

:data:`QUICK_SPARK` names tests by their whole node id, parameters included: a new test, or a new parameter of
a listed one, joins the full tier (and ``--ci`` too, outside the files of :data:`REPEATS`) unless it is added here, so the
quick tier never grows by itself. ``tests/test_tiers.py`` checks that every name here is a collected Spark test,
that every file of Spark tests is either wholly quick or has its reason in :data:`FULL_ONLY`, and that every file
of :data:`REPEATS` has one. The conftest marks every Spark test that is not in :data:`QUICK_SPARK` ``full``, and
``repeats`` too in a file of :data:`REPEATS`; the markers ``deploy``, ``faults`` and ``soak`` stay outside every
tier.
"""

from __future__ import annotations

from pathlib import Path

import pytest

QUICK_SPARK_BY_FILE: dict[str, dict[str, str]] = {
    "tests/kafka/test_kafka_spark.py": {
        "test_a_bounded_job_gives_the_local_runners_results[python]": "Kafka read by panes' Python data source",
        "test_the_sink_writes_from_spark_tasks[EXACTLY_ONCE]": "the Kafka sink's transactions, written by Spark tasks",
    },
    "tests/postgres/test_jdbc_spark.py": {
        "test_upserts_and_retractions_from_spark_tasks_leave_the_local_runners_table": "the JDBC sink's transactions, written by Spark tasks",
    },
    "tests/spark/test_event_time_per_key_runners.py": {
        "test_each_key_gets_what_flink_gives_for_its_elements_alone[06_quiet_keys_close_their_windows-spark]": "event time per key, with quiet keys closing their windows at given processing times",
    },
    "tests/spark/test_conformance_both_runners.py": {
        "test_conformance_example[01_tumbling_ooo_lateness-spark]": "event-time windows with lateness and late data, element by element on Spark",
        "test_conformance_example[03_session_merge-spark]": "merging session windows",
        "test_conformance_example[62_after_watermark_early_and_late-spark]": "composite triggers with pane info",
        "test_conformance_example[68_retracting_late_firings-spark]": "retracting accumulation",
    },
    "tests/spark/test_spark_pipelines.py": {
        "test_keyed_process_function_with_state_and_timers": "keyed process functions: state and timers",
        "test_interval_join_of_two_watermarked_sources": "two watermarked inputs: the interval join",
    },
    "tests/spark/test_branching.py": {
        "test_every_sink_gets_its_records_on_spark_as_on_the_local_runner[main_and_side_outputs]": "side outputs as their own sinks",
        "test_every_sink_gets_its_records_on_spark_as_on_the_local_runner[keyed_then_sinks_before_and_after]": "branching plans: sinks before and after a keyed step",
    },
    "tests/spark/test_broadcast.py": {
        "test_broadcast_pipelines_on_spark": "broadcast state",
        "test_broadcast_over_bounded_input_on_spark": "broadcast state",
        "test_broadcast_in_batch_execution_on_spark": "broadcast state",
        "test_broadcast_pipeline_in_process_micro_batches": "broadcast state",
        "test_state_ttl_on_spark": "broadcast state",
        "test_a_shard_restored_from_its_log_keeps_its_broadcast_state": "broadcast state",
    },
    "tests/spark/test_two_input_scenarios_spark.py": {
        "test_a_two_input_scenario_on_spark[09_connected_timers_in_batch_mode]": "connected keyed streams in BATCH execution",
    },
    "tests/spark/test_timer_scenarios_spark.py": {
        "test_a_timer_scenario_on_spark[02_timers_with_bounded_out_of_orderness]": "event-time timers against Flink's output",
        "test_a_timer_scenario_on_spark[03_timers_in_batch_mode]": "timers in BATCH execution",
    },
    "tests/spark/test_batch_scenarios_spark.py": {
        "test_a_batch_scenario_on_spark[01_equal_timestamps_in_batch_mode]": "BATCH windows against Flink's output",
        "test_a_batch_scenario_on_spark[02_late_elements_kept_in_batch_mode]": "BATCH windows against Flink's output",
    },
    "tests/spark/test_file_connectors_spark.py": {
        "test_text_lines_in_and_out_as_on_the_local_runner": "file connectors (text in and out, a file per micro-batch)",
        "test_a_streaming_run_writes_each_micro_batch_to_its_folder[tasks-write]": "file connectors (text in and out, a file per micro-batch)",
        "test_a_streaming_run_writes_each_micro_batch_to_its_folder[foreach-batch]": "file connectors (text in and out, a file per micro-batch)",
    },
    "tests/spark/test_text_files_spark.py": {
        "test_bad_lines_reach_the_error_output_with_file_line_and_text_as_on_the_local_runner[json]": "JSON and CSV lines, bad lines to the error output",
        "test_bad_lines_reach_the_error_output_with_file_line_and_text_as_on_the_local_runner[csv]": "JSON and CSV lines, bad lines to the error output",
        "test_a_streaming_read_routes_the_same_bad_lines": "JSON and CSV lines, bad lines to the error output",
        "test_without_an_error_output_both_runners_fail_naming_the_file_and_line": "JSON and CSV lines, bad lines to the error output",
    },
    "tests/spark/test_error_outputs.py": {
        "test_an_error_output_of_timestamp_errors_writes_its_fixed_columns_on_spark[beside-the-stream]": "error outputs' columns",
        "test_an_error_output_of_timestamp_errors_writes_its_fixed_columns_on_spark[alone]": "an error output read alone",
        "test_outputs_that_received_nothing_exist_with_their_columns_on_spark[bounded]": "error outputs' columns",
        "test_outputs_that_received_nothing_exist_with_their_columns_on_spark[micro-batches]": "error outputs' columns",
        "test_error_records_name_the_step_alike_on_both_runners": "error records: one step name on both runners",
    },
    "tests/spark/test_failures.py": {
        "test_a_failing_job_raises_the_same_exception_on_both_runners[bad-record-in-a-keyed-step]": "failures: one exception on both runners",
        "test_a_failing_job_raises_the_same_exception_on_both_runners[bad-record-in-a-bounded-job]": "failures: one exception on both runners",
        "test_a_failing_job_raises_the_same_exception_on_both_runners[user-function-in-a-fused-step]": "failures: one exception on both runners",
        "test_a_value_refused_by_a_file_sink_raises_the_same_exception_on_both_runners": "failures: one exception on both runners",
    },
    "tests/spark/test_sink_schemas.py": {
        "test_a_declared_schema_is_kept_by_both_runners": "sink schemas: declared",
        "test_the_streams_type_is_the_sinks_schema": "sink schemas: the stream's type",
        "test_declared_output_types_are_checked_on_both_runners": "declared output types checked",
        "test_an_inferred_schema_is_kept_with_the_checkpoint_across_restarts": "an inferred schema kept across a restart",
    },
    "tests/spark/test_process_batch_spark.py": {
        "test_process_batch_gives_the_same_results_on_both_runners": "process_batch: window functions on columns",
        "test_a_dataframe_source_is_typed_when_the_job_is_built": "process_batch: window functions on columns",
        "test_in_batch_mode_a_columnar_window_takes_each_keys_elements_in_timestamp_order": "process_batch: window functions on columns",
    },
    "tests/spark/test_late_table_spark.py": {
        "test_spark_writes_the_late_table_the_local_runner_writes": "late data tables and reconciliation",
        "test_the_reconciliation_loop_on_spark_gives_the_batch_result_over_all_data": "late data tables and reconciliation",
        "test_reconcile_on_spark_with_early_firings_and_retractions[early]": "reconcile beside early firings",
    },
    "tests/spark/test_metrics.py": {
        "test_every_kind_of_step_counts_on_spark_what_it_counts_locally[bounded]": "step metrics",
    },
    "tests/spark/test_processing_time.py": {
        "test_spark_follows_the_batches_processing_times_as_the_local_runner": "processing time from the micro-batches",
    },
    "tests/spark/test_micro_batch_files.py": {
        "test_the_lists_come_from_files_as_they_come_from_the_data_source": "in-memory micro-batches read from files, and through the data source",
        "test_a_restart_reads_no_file_again_and_goes_on_with_the_next_list": "in-memory micro-batches from files: restarts",
        "test_a_checkpoint_the_data_source_wrote_stays_with_it": "in-memory micro-batches: a checkpoint the data source wrote",
    },
    "tests/spark/test_to_dataframe.py": {
        "test_bounded_input_gives_a_batch_dataframe": "results as a DataFrame (bounded)",
        "test_what_a_dataframe_cannot_hold_is_refused_with_what_to_do": "results as a DataFrame: refusals",
        "test_a_side_output_as_a_dataframe_with_a_declared_schema": "a side output as a DataFrame",
    },
    "tests/spark/test_spark_api.py": {
        "test_strategies_spark_cannot_follow_are_refused_with_the_reason": "Spark's own sinks and DataFrame sources",
        "test_a_streaming_dataframe_source_windowed_with_bad_records_on_the_error_output": "Spark's own sinks and DataFrame sources",
        "test_memory_foreach_batch_and_file_sinks": "Spark's own sinks and DataFrame sources",
    },
    "tests/spark/test_state_log.py": {
        "test_a_micro_batch_writes_the_state_it_changed_not_the_state_it_holds[columnar]": "the state store layout: columnar windows",
        "test_a_change_to_a_keys_map_state_writes_that_entry_not_the_map": "the state store layout: keyed map state",
    },
    "tests/spark/test_restart_and_bounded.py": {
        "test_a_bounded_spark_run_is_the_local_runner_with_its_input_as_one_step[01_tumbling_ooo_lateness]": "a bounded run's final watermark",
        "test_a_bounded_spark_run_is_the_local_runner_with_its_input_as_one_step[03_session_merge]": "a bounded run's final watermark: sessions",
    },
    "tests/spark/test_restart_fingerprints.py": {
        "test_a_restart_refuses_a_changed_window_and_runs_a_changed_map_on": "restarts from a checkpoint: what a changed job may keep",
    },
    "tests/spark/test_runtime_modes.py": {
        "test_batch_cases_on_spark": "BATCH execution",
        "test_batch_refuses_a_streaming_source_on_spark": "BATCH execution: refusals",
    },
    "tests/spark/test_finite_jobs.py": {
        "test_a_finite_input_without_watermarks_ends_the_job[keyed_reduce]": "finite input without watermarks",
        "test_a_finite_input_without_watermarks_ends_the_job[count_window]": "count windows over finite input",
    },
    "tests/spark/test_time_range.py": {
        "test_a_generated_watermark_beyond_the_range_fails_the_spark_job": "time range: watermarks",
        "test_a_record_beyond_the_range_fails_a_spark_job_without_an_error_output": "time range: records",
    },
    "tests/spark/test_reliability.py": {
        "test_failing_user_functions_are_routed_on_spark_as_on_the_local_runner": "failing user functions routed",
        "test_a_failing_function_without_an_error_output_fails_the_spark_job_naming_the_step": "failing user functions fail the job",
        "test_a_null_key_without_an_error_output_fails_the_spark_job_naming_the_field": "bad keys",
        "test_a_missing_input_path_fails_at_execute_naming_the_path_as_on_the_local_runner[False]": "a missing input path (bounded)",
        "test_a_missing_input_path_fails_at_execute_naming_the_path_as_on_the_local_runner[True]": "a missing input path (streaming)",
    },
    "tests/spark/test_microbatch_semantics.py": {
        "test_records_whose_key_cannot_be_read_go_to_the_error_output_of_the_keyed_step": "the keyed step's error output",
    },
    "tests/spark/test_startup.py": {
        "test_a_fingerprint_on_a_local_checkpoint_is_written_whole_and_read_back_by_spark": "start-up: workers and the driver's paths",
        "test_driver_paths": "start-up: workers and the driver's paths",
        "test_workers_are_warmed_once_per_application": "start-up: workers and the driver's paths",
        "test_workers_import_the_installed_pyspark_not_its_archive": "start-up: workers and the driver's paths",
        "test_only_archives_inside_the_installed_pyspark_are_dropped": "start-up: workers and the driver's paths",
        "test_the_spark_site_frees_a_process_path_and_runs_the_sitecustomize_it_shadows": "start-up: workers and the driver's paths",
        "test_python_processes_the_driver_starts_import_the_installed_pyspark": "start-up: workers and the driver's paths",
    },
    "tests/spark/test_class_archive.py": {
        "test_a_created_session_maps_its_classes_from_the_archive": "the driver's class archive",
    },
    "tests/spark/test_pyflink_print_spark.py": {
        "test_print_on_spark_shows_what_pyflink_printed": "print as PyFlink prints",
    },
    "tests/spark/test_cli_spark.py": {
        "test_explained_stages_are_the_translated_ones[late_data]": "panes explain against the translation",
        "test_explained_stages_are_the_translated_ones[count_windows]": "panes explain: count windows",
        "test_explained_stages_are_the_translated_ones[sessions]": "panes explain: sessions",
        "test_a_script_on_spark_shows_the_live_table_on_a_terminal[True]": "the live progress table",
        "test_a_print_in_a_user_function_on_local_spark_reaches_the_console": "a user function's print on the console",
    },
    "tests/spark/test_timers_and_watermarks.py": {
        "test_a_bounded_job_whose_sinks_receive_nothing_succeeds": "empty sinks of a bounded job",
        "test_a_keyed_broadcast_timer_in_batch_execution_reads_the_final_watermark": "broadcast timers in BATCH",
        "test_a_window_that_emits_only_at_the_end_of_input_sees_each_keys_elements_in_timestamp_order[STREAMING]": "sorted input for end-of-input windows",
    },
    "tests/spark/test_one_answer.py": {
        "test_a_bounded_file_job_counts_the_same_on_both_runners": "a bounded file job",
        "test_keyed_timers_over_a_collection_alert_the_same_on_both_runners[None]": "keyed timers over a collection",
    },
    "tests/spark/test_streaming_stop.py": {
        "test_stopping_over_a_source_that_does_not_end_needs_a_checkpoint": "stopping a streaming job: the refusal",
    },
    "tests/spark/test_two_jobs.py": {
        "test_a_second_job_under_a_running_jobs_name_is_refused_saying_how_to_name_it": "two jobs in one session: names",
    },
    "tests/spark/test_threads.py": {
        "test_a_job_started_from_another_thread_writes_what_it_writes_from_the_main_thread[file_sink]": "a job started from another thread: panes' Python data sources found in its session",
    },
    "tests/test_old_checkpoints.py": {
        "test_a_spark_checkpoint_of_state_format_4_is_refused_and_left_as_it_was": "a checkpoint of an older state format",
    },
}
"""File -> test (its name with its parameters) -> the subsystem of the Spark runner it stands for in the quick tier."""

QUICK_SPARK: frozenset[str] = frozenset(
    f"{file}::{test}" for file, tests in QUICK_SPARK_BY_FILE.items() for test in tests
)
"""The node ids of :data:`QUICK_SPARK_BY_FILE`."""

FULL_ONLY: dict[str, str] = {
    "tests/kafka/test_kafka_spark.py": "Spark's own Kafka connector, restarts and crashes of a streaming Kafka job (a JVM of its own), the other guarantees",
    "tests/kafka/test_pyflink_kafka_examples.py": "the shapes of Flink's Kafka examples written and read by Spark tasks repeat the Kafka sink and Python reader paths the quick Kafka tests run; the quick tier runs every shape on the local runner against the broker",
    "tests/kafka/test_kafka_watermarks_spark.py": "a Kafka source's watermark per partition on Spark (a lagging partition with both readers, an idle one): streaming queries restarted between writes (Spark's connector needs its jars); the quick tier runs the tracker's property test and the local runner's per-partition broker tests",
    "tests/kafka/test_kafka_watermarks_more_spark.py": "more per-partition watermark scenarios on Spark (a quiet partition, a second keyed step, a second watermarked input): the same split rows and tracker as test_kafka_watermarks_spark's, which --ci runs",
    "tests/postgres/test_jdbc_spark.py": "merged sessions, refused rows, an unreachable server and replays repeat the writer path of the quick upsert test; the replay and the kills before and after a writer's commit (a job in a JVM of its own, killed twice in turn) are restarts; reconcile through the sink repeats the quick reconcile loop (tests/spark/test_late_table_spark.py) and the writer path",
    "tests/deploy/test_standalone_cluster.py": "starts a standalone cluster (a master and a worker, each a JVM) and runs the demo on it (about two minutes)",
    "tests/spark/test_accounting.py": "hypothesis over Spark (a new stream per example, 1-1.5 min per window kind); the quick tier's accounting is the local runner's property test and the Spark error outputs",
    "tests/spark/test_branching.py": "the other plan shapes repeat the fused and keyed steps the two quick ones run",
    "tests/spark/test_cli_spark.py": "the `panes run` subprocess starts a JVM of its own (about a minute); the quiet pipe's table repeats the terminal one",
    "tests/spark/test_composite_triggers_spark.py": "the composite-trigger scenarios 61-68 check the same triggers against Flink's output; the quick tier runs two of them",
    "tests/spark/test_conformance_both_runners.py": "each scenario is a streaming query of several micro-batches (20-50 s); the quick tier keeps one per family (tumbling with lateness, sessions, composites, retractions) and every scenario runs on the local runner and the harness in the quick tier",
    "tests/spark/test_connect_in_ci.py": "starts a Spark Connect server (a JVM of its own, about 1.5 min)",
    "tests/spark/test_connected_keyed.py": "connected keyed streams run in the quick tier through the two-input scenario in BATCH and the interval join",
    "tests/spark/test_crash_points.py": "each point kills a job run in its own JVM and restarts it (the default three jobs 77-89, 26-32 and 27-29 s alone on two cores, the first paying the shared session's warm-up; the first run of the branching job also loses its executor Python and goes on); the quick tier restarts from checkpoints without a kill (restart fingerprints, a sink schema kept across a restart)",
    "tests/spark/test_end_again.py": "three Spark queries per reading (20-35 s each) on the restart path the quick restart from files takes (tests/spark/test_micro_batch_files.py), with the end of input delivered again",
    "tests/spark/test_event_time_per_key_runners.py": "each per-key scenario is a streaming query of many micro-batches (10-40 s) repeating on other windows the per-key path of the quick one (quiet keys); every scenario, the keyed-timer one included, runs on the harness (restored and rescaled at every step) and the local runner in the quick tier",
    "tests/spark/test_event_time_per_key_downstream.py": "a streaming and a bounded Spark job (half a minute): the watermark a window after a per-key window gets on Spark",
    "tests/spark/test_finite_jobs.py": "the other step kinds repeat the end-of-input path the two quick ones take",
    "tests/spark/test_joins.py": "window joins and co-groups in one job of a minute; their operators are a union and a window, which the quick tier runs",
    "tests/spark/test_late_table_spark.py": "reconcile beside retractions, over the default trigger on columns and over sessions repeats the quick early-firing case and reconciliation loop (the local runner reconciles sessions in every trigger and mode: tests/core/test_reconcile_properties.py)",
    "tests/spark/test_metrics.py": "the streaming and restart variants repeat the counters of the bounded one over several micro-batches; the file source's progress figures are checked quick on progress entries (tests/cli/test_true_figures.py)",
    "tests/spark/test_one_answer.py": "random jobs (hypothesis) and a timer job with many keys repeat, on drawn inputs, the windows, lateness and timers the conformance and timer scenarios check against Flink on Spark in the quick tier",
    "tests/spark/test_one_watermark_per_query.py": "a query of several independent pipelines over many micro-batches (a minute)",
    "tests/spark/test_reliability.py": "null keys over micro-batches and DataFrames repeat the bad-record paths the quick tier runs",
    "tests/spark/test_rescaling.py": "replays one job with three shard counts across restarts (five minutes)",
    "tests/spark/test_restart_fingerprints.py": "a restart from a checkpoint whose window state was written element by element (three queries on one checkpoint, half a minute) repeats the quick restart's fingerprint check with another state layout",
    "tests/spark/test_restart_and_bounded.py": "the sliding case and the bounded-against-streaming file job repeat the final-watermark path",
    "tests/spark/test_runtime_modes.py": "the STREAMING cases repeat the conformance scenarios at parallelism one",
    "tests/spark/test_sink_schemas.py": "the drifting-value cases repeat the schema checks of the quick ones with an error output",
    "tests/spark/test_soak.py": "a soak of 30 micro-batches watching worker memory (two minutes)",
    "tests/spark/test_spark_pipelines.py": "chained keyed steps over many micro-batches (a minute); the quick tier keeps a keyed step feeding a sink",
    "tests/spark/test_state_log.py": "the element-by-element window's state log repeats the columnar one's layout rule",
    "tests/spark/test_streaming_stop.py": "one job stopped by Ctrl-C, resumed and stopped by SIGTERM, then resumed to the end: three JVMs of its own (about 1.5 min)",
    "tests/spark/test_task_slots.py": "local[8] and the no-keeper run each start a JVM of their own over 9 micro-batches of 1,500 rows",
    "tests/spark/test_threads.py": "the ListSink variant writes through foreachBatch, which resolves no data source by name; the quick file-sink variant runs the same job from a thread through panes' own data source",
    "tests/spark/test_time_range.py": "windows at the edges of Spark's timestamps over many micro-batches",
    "tests/spark/test_timer_scenarios_spark.py": "the first timer scenario repeats the second's rules with more keys (a minute)",
    "tests/spark/test_timers_and_watermarks.py": "random timer registrations across many micro-batches (1.5 min) repeat the timer scenarios the quick tier checks against Flink on Spark, and watermark forwarding between keyed steps the chained keyed steps of tests/spark/test_spark_pipelines.py (CI)",
    "tests/spark/test_to_dataframe.py": "a streaming Parquet query and a result far beyond the driver's size limit (1-1.5 min each)",
    "tests/spark/test_two_jobs.py": "two streaming queries running at once in one session (half a minute); the quick tier runs the refusal of a second job under a running job's name",
    "tests/spark/test_two_input_scenarios_spark.py": "each two-input scenario is a streaming query of many micro-batches (about half a minute); the quick tier runs the BATCH one on Spark and every one on the harness and the local runner (tests/core/test_two_input_scenarios.py), and --ci two watermarked inputs on Spark against Flink in the joins (tests/spark/test_joins.py) and the interval join (tests/spark/test_spark_pipelines.py)",
}
"""File -> why its Spark tests (those not in :data:`QUICK_SPARK`) wait for the CI or the full tier."""

REPEATS: frozenset[str] = frozenset(
    {
        "tests/spark/test_conformance_both_runners.py",
        "tests/spark/test_composite_triggers_spark.py",
        "tests/spark/test_branching.py",
        "tests/spark/test_finite_jobs.py",
        "tests/spark/test_late_table_spark.py",
        "tests/spark/test_metrics.py",
        "tests/spark/test_reliability.py",
        "tests/spark/test_restart_and_bounded.py",
        "tests/spark/test_runtime_modes.py",
        "tests/spark/test_sink_schemas.py",
        "tests/spark/test_state_log.py",
        "tests/spark/test_timer_scenarios_spark.py",
        "tests/spark/test_connected_keyed.py",
        "tests/kafka/test_pyflink_kafka_examples.py",
        "tests/spark/test_timers_and_watermarks.py",
        "tests/spark/test_one_answer.py",
        "tests/spark/test_two_input_scenarios_spark.py",
        "tests/spark/test_event_time_per_key_runners.py",
        "tests/kafka/test_kafka_watermarks_more_spark.py",
    }
)
"""The files of :data:`FULL_ONLY` whose further tests repeat, on other inputs, what the quick tier checks on Spark
(each file's reason there says what): the full tier (``--all``, what CI runs) runs them, ``--ci`` does not. Every
scenario of the conformance and composite-trigger files still runs on the local runner and the operator harness in
the quick tier; what ``--ci`` leaves out is those scenarios' Spark runs beyond one per family. Measured: these files'
further tests took 736 of the 2,468 worker-seconds of a full run's Spark phase here on 2026-11-30 (``--durations=0``).
CI ran ``--ci`` until its time showed room for them (883 and 1,016 s at stops 54 and 55); ``.ci/run`` with ``--all``
took 1,311 s in a fresh clone here the same day, its Spark phase 1,092 s."""

SLOWEST_FIRST: tuple[str, ...] = (
    "tests/spark/test_crash_points.py",
    "tests/spark/test_conformance_both_runners.py",
    "tests/deploy/test_standalone_cluster.py",
    "tests/spark/test_rescaling.py",
    "tests/kafka/test_kafka_spark.py",
    "tests/spark/test_late_table_spark.py",
    "tests/spark/test_task_slots.py",
    "tests/spark/test_timers_and_watermarks.py",
    "tests/spark/test_two_input_scenarios_spark.py",
    "tests/postgres/test_jdbc_spark.py",
    "tests/spark/test_accounting.py",
    "tests/spark/test_connect_in_ci.py",
)
"""The files of Spark tests that took longest in a full run (``--durations=0``, summed per file), longest first.
The Spark phase hands whole files to its two processes (``--dist loadfile``) in collection order; these come
first (``order_slowest_first``), so that no long file starts last while the other process idles."""


def order_slowest_first(items: list[pytest.Item]) -> None:
    """Move the tests of :data:`SLOWEST_FIRST` to the front, in its order (the order within a file, and of the
    other files, is kept)."""
    rank = {path: index for index, path in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))


COLLECTED = pytest.StashKey[tuple[bool, dict[str, bool]]]()
"""What this run collected: whether the collection was whole (no ``-k``, only folders given) and every node id
with whether it is a Spark test."""


def record_collection(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Keep what was collected for ``tests/test_tiers.py`` (in ``config.stash``)."""
    whole = not config.option.keyword and all(Path(arg).is_dir() for arg in config.args)
    config.stash[COLLECTED] = (whole, {item.nodeid: item.get_closest_marker("spark") is not None for item in items})
