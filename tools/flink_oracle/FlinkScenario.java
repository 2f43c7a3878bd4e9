// Runs one scenario file through Apache Flink's own DataStream API and operators, and prints what the operator
// emitted, one JSON line per output, in emission order. Driven by tools/flink_oracle/oracle.py, which numbers the
// lines and writes the expected file. Two kinds of scenario (the config's "kind"):
//
// - "window" (the default; tests/scenarios, the shared conformance examples): a keyed window with the scenario's
//   assigner, trigger, evictor, lateness and late side output; a process window function records each pane whole.
//   A scenario of panes' own triggers gives the Flink trigger that stands in for its trigger (and accumulation
//   mode) in its "flink_trigger" entry, which may name a hand-written trigger of OracleTriggers.java.
// - "keyed_timers" (tests/scenarios/timers): a KeyedProcessFunction that, per element, deletes the event-time
//   timers listed in its "delete" and registers those in its "timers", and records the element; per timer, it
//   records the timer and, for an even timer time with "on_timer_offset_ms" set, registers one more timer that
//   much later (an odd offset: that one registers nothing).
//
// Usage: java -cp <flink jars>:<classes> FlinkScenario SCENARIO.json
//
// A window scenario whose config has "mode": "BATCH" runs in Flink's BATCH execution mode (sorted inputs, only the
// final watermark); every other one in STREAMING mode.
//
// Parallelism 1, one chain from the operator to the collecting sinks, so outputs are recorded in
// the order the operator emitted them. Watermarks follow the scenario format: per element for bounded
// out-of-orderness and monotonous (max_ts - max_ooo - 1, after the element), marker events for punctuated ones,
// none for "none"; the bounded source ends with Long.MAX_VALUE.

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

import org.apache.flink.api.common.RuntimeExecutionMode;
import org.apache.flink.api.common.eventtime.Watermark;
import org.apache.flink.api.common.eventtime.WatermarkGenerator;
import org.apache.flink.api.common.eventtime.WatermarkOutput;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.api.java.tuple.Tuple6;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.flink.streaming.api.TimerService;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.KeyedStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.datastream.WindowedStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.windowing.ProcessWindowFunction;
import org.apache.flink.streaming.api.windowing.assigners.EventTimeSessionWindows;
import org.apache.flink.streaming.api.windowing.assigners.GlobalWindows;
import org.apache.flink.streaming.api.windowing.assigners.SlidingEventTimeWindows;
import org.apache.flink.streaming.api.windowing.assigners.TumblingEventTimeWindows;
import org.apache.flink.streaming.api.windowing.assigners.WindowAssigner;
import org.apache.flink.streaming.api.windowing.evictors.CountEvictor;
import org.apache.flink.streaming.api.windowing.evictors.Evictor;
import org.apache.flink.streaming.api.windowing.evictors.TimeEvictor;
import org.apache.flink.streaming.api.windowing.triggers.ContinuousEventTimeTrigger;
import org.apache.flink.streaming.api.windowing.triggers.CountTrigger;
import org.apache.flink.streaming.api.windowing.triggers.EventTimeTrigger;
import org.apache.flink.streaming.api.windowing.triggers.PurgingTrigger;
import org.apache.flink.streaming.api.windowing.triggers.Trigger;
import org.apache.flink.streaming.api.windowing.windows.GlobalWindow;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;
import org.apache.flink.streaming.api.windowing.windows.Window;
import org.apache.flink.util.Collector;
import org.apache.flink.util.OutputTag;

public class FlinkScenario {
    /** (key, value, timestamp, seq) and the timers it registers and deletes; a punctuated scenario's watermark
     * travels as key MARKER, value W. */
    public static final class Event extends Tuple6<String, Long, Long, Integer, long[], long[]> implements Stamped {
        public Event() {}

        Event(String key, long value, long ts, int seq, long[] timers, long[] deletes) {
            super(key, value, ts, seq, timers, deletes);
        }

        @Override
        public boolean marker() {
            return MARKER.equals(f0);
        }

        @Override
        public long markerWatermark() {
            return f1;
        }

        @Override
        public long time() {
            return f2;
        }
    }

    /** What the scenario's watermark rule reads from an event: a watermark marker and the watermark it carries,
     * or an element's timestamp. */
    public interface Stamped {
        boolean marker();

        long markerWatermark();

        long time();
    }

    static long[] times(JsonNode list) {
        long[] out = new long[list == null ? 0 : list.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = list.get(i).asLong();
        }
        return out;
    }

    /** The keyed_timers scenarios' function (see the header). */
    public static final class TimerRecorder extends KeyedProcessFunction<String, Event, String> {
        private final Long onTimerOffset;

        TimerRecorder(Long onTimerOffset) {
            this.onTimerOffset = onTimerOffset;
        }

        @Override
        public void processElement(Event event, Context ctx, Collector<String> out) {
            applyTimers(event.f4, event.f5, ctx.timerService());
            ObjectNode line = JSON.createObjectNode();
            line.put("at", "element");
            line.put("key", event.f0);
            line.put("value", event.f1);
            line.put("ts", ctx.timestamp());
            line.put("seq", event.f3);
            line.put("watermark", ctx.timerService().currentWatermark());
            out.collect(line.toString());
        }

        @Override
        public void onTimer(long timestamp, OnTimerContext ctx, Collector<String> out) {
            out.collect(timer(ctx.getCurrentKey(), ctx.timestamp(), timestamp, ctx.timeDomain().toString(),
                    ctx.timerService(), onTimerOffset));
        }
    }

    /** What an element of a timer scenario asks: delete the event-time timers it lists, then register its own. */
    static void applyTimers(long[] timers, long[] deletes, TimerService service) {
        for (long time : deletes) {
            service.deleteEventTimeTimer(time);
        }
        for (long time : timers) {
            service.registerEventTimeTimer(time);
        }
    }

    /** A firing timer as the scenarios record it; for an even time with an offset, one more timer that much later. */
    static String timer(String key, long timestamp, long time, String domain, TimerService service, Long offset) {
        ObjectNode line = JSON.createObjectNode();
        line.put("at", "timer");
        line.put("key", key);
        line.put("ts", timestamp);
        line.put("timer", time);
        line.put("domain", domain);
        line.put("watermark", service.currentWatermark());
        if (offset != null && time % 2 == 0) {
            service.registerEventTimeTimer(time + offset);
        }
        return line.toString();
    }

    static final String MARKER = "__watermark__";
    /** The kinds TwoInputScenario runs. */
    static final List<String> TWO_INPUT_KINDS =
            List.of("connected_timers", "broadcast_timers", "interval_join", "window_join", "window_co_group");
    static final List<String> EMITTED = Collections.synchronizedList(new ArrayList<>());
    static final ObjectMapper JSON = new ObjectMapper();

    /** The scenario's watermark rule, emitting only watermarks that increase. */
    public static final class ScenarioWatermarks<E extends Stamped> implements WatermarkGenerator<E> {
        private final String kind;
        private final long delay;
        private long maxTs = Long.MIN_VALUE;
        private long current = Long.MIN_VALUE;

        ScenarioWatermarks(String kind, long delay) {
            this.kind = kind;
            this.delay = delay;
        }

        private void emit(long watermark, WatermarkOutput output) {
            if (watermark > current) {
                current = watermark;
                output.emitWatermark(new Watermark(watermark));
            }
        }

        @Override
        public void onEvent(E event, long timestamp, WatermarkOutput output) {
            Long watermark = next(event);
            if (watermark != null) {
                emit(watermark, output);
            }
        }

        /** The watermark the rule gives after ``event`` (not necessarily higher than the current one), or null. */
        Long next(E event) {
            if (event.marker()) {
                return kind.equals("punctuated") ? event.markerWatermark() : null;
            }
            if (kind.equals("bounded_out_of_orderness") || kind.equals("monotonous")) {
                maxTs = Math.max(maxTs, event.time());
                return maxTs - delay - 1;
            }
            return null;
        }

        /** Whether the rule emits a watermark after ``event`` (one higher than any before), updating its state. */
        boolean advances(E event) {
            Long watermark = next(event);
            if (watermark != null && watermark > current) {
                current = watermark;
                return true;
            }
            return false;
        }

        @Override
        public void onPeriodicEmit(WatermarkOutput output) {}
    }

    /** Emits each pane whole, as the scenario files record it. */
    public static final class PaneFunction extends ProcessWindowFunction<Event, String, String, Window> {
        @Override
        public void process(String key, Context context, Iterable<Event> elements, Collector<String> out) {
            ObjectNode pane = JSON.createObjectNode();
            pane.put("kind", "main");
            pane.put("key", key);
            Window window = context.window();
            if (window instanceof TimeWindow) {
                pane.put("window_start", ((TimeWindow) window).getStart());
                pane.put("window_end", ((TimeWindow) window).getEnd());
            } else {
                pane.putNull("window_start");
                pane.putNull("window_end");
                pane.put("window_type", window instanceof GlobalWindow ? "global" : window.getClass().getSimpleName());
            }
            ArrayNode values = pane.putArray("values_in_order");
            ArrayNode seqs = pane.putArray("seqs_in_order");
            ArrayNode timestamps = pane.putArray("ts_in_order");
            for (Event event : elements) {
                values.add(event.f1);
                seqs.add(event.f3);
                timestamps.add(event.f2);
            }
            pane.put("watermark", context.currentWatermark());
            out.collect(pane.toString());
        }
    }

    /** Appends what reaches it to EMITTED (chained to the window operator: in emission order). */
    public static final class Collecting implements Sink<String> {
        @Override
        public SinkWriter<String> createWriter(WriterInitContext context) {
            return new SinkWriter<String>() {
                @Override
                public void write(String element, SinkWriter.Context context) {
                    EMITTED.add(element);
                }

                @Override
                public void flush(boolean endOfInput) {}

                @Override
                public void close() {}
            };
        }
    }

    static Duration ms(JsonNode spec, String field) {
        return Duration.ofMillis(spec.path(field).asLong(0));
    }

    static Trigger<Object, Window> trigger(JsonNode spec) {
        String kind = spec.get("type").asText();
        Trigger<?, ?> built;
        switch (kind) {
            case "count":
                built = CountTrigger.of(spec.get("count").asLong());
                break;
            case "purging":
                built = PurgingTrigger.of(trigger(spec.get("inner")));
                break;
            case "continuous_event_time":
                built = ContinuousEventTimeTrigger.of(ms(spec, "interval_ms"));
                break;
            case "event_time":
                built = EventTimeTrigger.create();
                break;
            case "oracle":
                built = OracleTriggers.build(spec.get("class").asText(), spec.path("args"));
                break;
            default:
                throw new IllegalArgumentException("no Flink trigger for the scenario trigger " + kind);
        }
        @SuppressWarnings("unchecked")
        Trigger<Object, Window> cast = (Trigger<Object, Window>) built;
        return cast;
    }

    static Evictor<Object, Window> evictor(JsonNode spec) {
        boolean after = spec.path("do_evict_after").asBoolean(false);
        Evictor<?, ?> built;
        switch (spec.get("type").asText()) {
            case "count":
                built = CountEvictor.of(spec.get("max_count").asLong(), after);
                break;
            case "time":
                built = TimeEvictor.of(ms(spec, "window_ms"), after);
                break;
            default:
                throw new IllegalArgumentException("no Flink evictor for " + spec);
        }
        @SuppressWarnings("unchecked")
        Evictor<Object, Window> cast = (Evictor<Object, Window>) built;
        return cast;
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    static WindowedStream<Event, String, Window> window(KeyedStream<Event, String> keyed, JsonNode spec) {
        switch (spec.get("type").asText()) {
            case "count_tumbling":
                return (WindowedStream) keyed.countWindow(spec.get("size").asLong());
            case "count_sliding":
                return (WindowedStream) keyed.countWindow(spec.get("size").asLong(), spec.get("slide").asLong());
            default:
                return (WindowedStream) keyed.window((WindowAssigner) assigner(spec));
        }
    }

    /** The scenario's window assigner, other than the count windows (which are windowed streams, not assigners). */
    static WindowAssigner<Object, ? extends Window> assigner(JsonNode spec) {
        String kind = spec.get("type").asText();
        switch (kind) {
            case "tumbling_event_time":
                return TumblingEventTimeWindows.of(ms(spec, "size_ms"), ms(spec, "offset_ms"));
            case "sliding_event_time":
                return SlidingEventTimeWindows.of(ms(spec, "size_ms"), ms(spec, "slide_ms"), ms(spec, "offset_ms"));
            case "event_time_session":
                return EventTimeSessionWindows.withGap(ms(spec, "gap_ms"));
            case "global":
                return GlobalWindows.create();
            case "global_end_of_stream":
                return GlobalWindows.createWithEndOfStreamTrigger();
            default:
                throw new IllegalArgumentException("no Flink assigner for " + kind);
        }
    }

    public static void main(String[] args) throws Exception {
        JsonNode scenario = JSON.readTree(new java.io.File(args[0]));
        JsonNode config = scenario.get("config");
        if (TWO_INPUT_KINDS.contains(config.path("kind").asText("window"))) {
            TwoInputScenario.run(scenario);
            return;
        }
        List<Event> events = new ArrayList<>();
        int seq = 0;
        for (JsonNode event : scenario.get("events")) {
            if (event.has("processing_time")) {
                throw new IllegalArgumentException("processing time is the wall clock in a Flink job: not replayable");
            }
            if (event.has("watermark")) {
                long watermark = event.get("watermark").asLong();
                events.add(new Event(MARKER, watermark, watermark, seq, new long[0], new long[0]));
            } else {
                events.add(new Event(event.get("key").asText(), event.get("value").asLong(), event.get("ts").asLong(), seq,
                        times(event.get("timers")), times(event.get("delete"))));
            }
            seq++;
        }
        JsonNode watermarkSpec = config.get("watermark");
        String watermarkKind = watermarkSpec.get("type").asText();
        long delay = watermarkKind.equals("bounded_out_of_orderness") ? watermarkSpec.get("max_ooo_ms").asLong() : 0;

        Configuration configuration = new Configuration();
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(configuration);
        env.setParallelism(1);
        env.getConfig().setAutoWatermarkInterval(0);
        if (config.path("mode").asText("STREAMING").equals("BATCH")) {
            env.setRuntimeMode(RuntimeExecutionMode.BATCH);
        }
        DataStream<Event> stamped = env.fromData(events)
                .assignTimestampsAndWatermarks(WatermarkStrategy.<Event>forGenerator(context -> new ScenarioWatermarks<Event>(watermarkKind, delay))
                        .withTimestampAssigner((event, previous) -> event.f2))
                .filter(event -> !MARKER.equals(event.f0));
        KeyedStream<Event, String> keyed = stamped.keyBy(event -> event.f0, Types.STRING);
        if (config.path("kind").asText("window").equals("keyed_timers")) {
            JsonNode offset = config.get("on_timer_offset_ms");
            keyed.process(new TimerRecorder(offset == null || offset.isNull() ? null : offset.asLong()))
                    .sinkTo(new Collecting());
            run(env);
            return;
        }
        WindowedStream<Event, String, Window> windowed = window(keyed, config.get("assigner"));
        // a scenario of panes' own triggers (composites, accumulation modes) names the Flink trigger that stands in
        JsonNode triggerSpec = scenario.has("flink_trigger") ? scenario.get("flink_trigger") : config.get("trigger");
        if (triggerSpec != null && !triggerSpec.isNull()) {
            windowed = windowed.trigger(trigger(triggerSpec));
        }
        JsonNode evictorSpec = config.get("evictor");
        if (evictorSpec != null && !evictorSpec.isNull()) {
            windowed = windowed.evictor(evictor(evictorSpec));
        }
        long lateness = config.path("allowed_lateness_ms").asLong(0);
        if (lateness > 0) {
            windowed = windowed.allowedLateness(Duration.ofMillis(lateness));
        }
        OutputTag<Event> late = new OutputTag<Event>("late-data") {};
        boolean sideOutput = config.path("late_side_output").asBoolean(false);
        if (sideOutput) {
            windowed = windowed.sideOutputLateData(late);
        }
        SingleOutputStreamOperator<String> panes = windowed.process(new PaneFunction());
        panes.sinkTo(new Collecting());
        if (sideOutput) {
            panes.getSideOutput(late)
                    .map(event -> {
                        ObjectNode element = JSON.createObjectNode();
                        element.put("kind", "late");
                        element.put("key", event.f0);
                        element.put("value", event.f1);
                        element.put("ts", event.f2);
                        element.put("seq", event.f3);
                        return element.toString();
                    })
                    .sinkTo(new Collecting());
        }
        run(env);
    }

    static void run(StreamExecutionEnvironment env) throws Exception {
        env.execute("panes flink oracle");
        for (String line : EMITTED) {
            System.out.println(line);
        }
    }
}
