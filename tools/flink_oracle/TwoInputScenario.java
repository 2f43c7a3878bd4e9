// Runs a two-input scenario file (tests/scenarios/two_input) through Apache Flink's own two-input operators and
// prints what the operator emitted, one JSON line per output, in emission order (FlinkScenario.main hands these
// kinds over). Three kinds (the config's "kind"):
//
// - "connected_timers": two keyed streams connected, a KeyedCoProcessFunction that, per element of either side,
//   deletes the event-time timers listed in its "delete", registers those in its "timers" and records the element
//   with its side; per timer it records the timer (and, for an even time with "on_timer_offset_ms" set, registers
//   one more that much later).
// - "broadcast_timers": side 1 keyed, side 2 broadcast, a KeyedBroadcastProcessFunction: side 1's elements as
//   above, side 2's recorded with the watermark they saw ("at": "broadcast").
// - "interval_join": side 1 joined with side 2 on the key between "lower_ms" and "upper_ms" (each bound inclusive
//   unless "lower_inclusive" / "upper_inclusive" is false), a ProcessJoinFunction recording each pair with the
//   context's timestamps, and, with "late_side_outputs", each side's late elements.
// - "window_join" and "window_co_group": side 1 joined (co-grouped) with side 2 on the key in the scenario's
//   windows ("assigner", "allowed_lateness_ms"), through Flink's JoinedStreams / CoGroupedStreams; a JoinFunction
//   records each pair, a CoGroupFunction each key's two groups, each with the timestamp of the record it emitted.
//
// Each side has its own punctuated watermarks, {"watermark": W, "side": S} entries; the operator's watermark is the
// minimum of its two inputs'. A scenario whose config has "mode": "BATCH" runs in Flink's BATCH execution mode
// (sorted inputs, the watermarks ignored), without the gate below: there the order is the sort's.
//
// One source reads the events in order; each side is a filter of it with its own timestamp and watermark
// assigner. Which input a two-input task reads next is not fixed in Flink (it depends on which network buffer
// arrives first), so a gate makes the order the scenario's: the source hands on event n only once the operator
// has processed everything before it (each element, and each watermark the event makes its side emit), counted by
// the operator itself (a subclass of Flink's operator counting after each call). A window join is a window
// operator over the union of the two sides, which sees only the smaller of their watermarks: there the count is
// of each element (its window assigner, wrapped, counts it) and each advance of that watermark (counted by the
// operator chained after the window operator, which receives it once the window operator has processed it). The end of input is gated too: a
// scenario ends with side 1's watermark Long.MAX_VALUE, then side 2's (left to the sources' own end, which input's
// end arrives first would be a race, and with it the watermark the last timers see).

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.flink.api.common.ExecutionConfig;
import org.apache.flink.api.common.RuntimeExecutionMode;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.CoGroupFunction;
import org.apache.flink.api.common.functions.JoinFunction;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.java.tuple.Tuple7;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.flink.streaming.api.datastream.BroadcastStream;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.KeyedStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.co.KeyedBroadcastProcessFunction;
import org.apache.flink.streaming.api.functions.co.KeyedCoProcessFunction;
import org.apache.flink.streaming.api.functions.co.ProcessJoinFunction;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.api.operators.co.CoBroadcastWithKeyedOperator;
import org.apache.flink.streaming.api.operators.co.IntervalJoinOperator;
import org.apache.flink.streaming.api.operators.co.KeyedCoProcessOperator;
import org.apache.flink.streaming.api.transformations.TwoInputTransformation;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.api.windowing.assigners.MergingWindowAssigner;
import org.apache.flink.streaming.api.windowing.assigners.WindowAssigner;
import org.apache.flink.streaming.api.windowing.triggers.Trigger;
import org.apache.flink.streaming.api.windowing.windows.Window;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.util.Collector;
import org.apache.flink.util.OutputTag;

public class TwoInputScenario {
    /** (side, key, value, timestamp, seq, timers, deletes); a watermark marker has key MARKER and value W. */
    public static final class SidedEvent extends Tuple7<Integer, String, Long, Long, Integer, long[], long[]>
            implements FlinkScenario.Stamped {
        public SidedEvent() {}

        SidedEvent(int side, String key, long value, long ts, int seq, long[] timers, long[] deletes) {
            super(side, key, value, ts, seq, timers, deletes);
        }

        @Override
        public boolean marker() {
            return FlinkScenario.MARKER.equals(f1);
        }

        @Override
        public long markerWatermark() {
            return f2;
        }

        @Override
        public long time() {
            return f3;
        }
    }

    /** How many inputs (elements and watermarks, either side) the operator has processed. */
    static final AtomicLong PROCESSED = new AtomicLong();
    /** For each event (by seq), how many inputs the operator must have processed before the source hands it on. */
    static long[] before = new long[0];

    static void processed() {
        PROCESSED.incrementAndGet();
    }

    /** Lets event n through once the operator processed everything the events before it gave it. */
    static SidedEvent gate(SidedEvent event) throws InterruptedException {
        long wanted = before[event.f4];
        while (PROCESSED.get() < wanted) {
            Thread.sleep(0, 200_000);
        }
        return event;
    }

    // -- the operators, counting what they processed ------------------------------------------------------------

    public static final class CountingCoProcess extends KeyedCoProcessOperator<String, SidedEvent, SidedEvent, String> {
        CountingCoProcess(KeyedCoProcessFunction<String, SidedEvent, SidedEvent, String> function) {
            super(function);
        }

        @Override
        public void processElement1(StreamRecord<SidedEvent> element) throws Exception {
            super.processElement1(element);
            processed();
        }

        @Override
        public void processElement2(StreamRecord<SidedEvent> element) throws Exception {
            super.processElement2(element);
            processed();
        }

        @Override
        public void processWatermark1(Watermark mark) throws Exception {
            super.processWatermark1(mark);
            processed();
        }

        @Override
        public void processWatermark2(Watermark mark) throws Exception {
            super.processWatermark2(mark);
            processed();
        }
    }

    public static final class CountingBroadcast extends CoBroadcastWithKeyedOperator<String, SidedEvent, SidedEvent, String> {
        CountingBroadcast(KeyedBroadcastProcessFunction<String, SidedEvent, SidedEvent, String> function,
                List<MapStateDescriptor<?, ?>> descriptors) {
            super(function, descriptors);
        }

        @Override
        public void processElement1(StreamRecord<SidedEvent> element) throws Exception {
            super.processElement1(element);
            processed();
        }

        @Override
        public void processElement2(StreamRecord<SidedEvent> element) throws Exception {
            super.processElement2(element);
            processed();
        }

        @Override
        public void processWatermark1(Watermark mark) throws Exception {
            super.processWatermark1(mark);
            processed();
        }

        @Override
        public void processWatermark2(Watermark mark) throws Exception {
            super.processWatermark2(mark);
            processed();
        }
    }

    public static final class CountingIntervalJoin extends IntervalJoinOperator<String, SidedEvent, SidedEvent, String> {
        CountingIntervalJoin(long lower, long upper, boolean lowerInclusive, boolean upperInclusive,
                OutputTag<SidedEvent> leftLate, OutputTag<SidedEvent> rightLate, TypeSerializer<SidedEvent> serializer,
                ProcessJoinFunction<SidedEvent, SidedEvent, String> function) {
            super(lower, upper, lowerInclusive, upperInclusive, leftLate, rightLate, serializer, serializer, function);
        }

        @Override
        public void processElement1(StreamRecord<SidedEvent> element) throws Exception {
            super.processElement1(element);
            processed();
        }

        @Override
        public void processElement2(StreamRecord<SidedEvent> element) throws Exception {
            super.processElement2(element);
            processed();
        }

        @Override
        public void processWatermark1(Watermark mark) throws Exception {
            super.processWatermark1(mark);
            processed();
        }

        @Override
        public void processWatermark2(Watermark mark) throws Exception {
            super.processWatermark2(mark);
            processed();
        }
    }

    /** A window assigner counting each element it assigns (the window operator's first step for every element,
     * late or not). */
    public static class CountingAssigner extends WindowAssigner<Object, Window> {
        final WindowAssigner<Object, Window> assigner;

        CountingAssigner(WindowAssigner<Object, Window> assigner) {
            this.assigner = assigner;
        }

        @Override
        public Collection<Window> assignWindows(Object element, long timestamp, WindowAssignerContext context) {
            processed();
            return assigner.assignWindows(element, timestamp, context);
        }

        @Override
        public Trigger<Object, Window> getDefaultTrigger() {
            return assigner.getDefaultTrigger();
        }

        @Override
        public TypeSerializer<Window> getWindowSerializer(ExecutionConfig config) {
            return assigner.getWindowSerializer(config);
        }

        @Override
        public boolean isEventTime() {
            return assigner.isEventTime();
        }
    }

    /** The same for a merging assigner (sessions), which the window operator must see as merging. */
    public static final class CountingMergingAssigner extends MergingWindowAssigner<Object, Window> {
        private final CountingAssigner counting;

        CountingMergingAssigner(MergingWindowAssigner<Object, Window> assigner) {
            this.counting = new CountingAssigner(assigner);
        }

        @Override
        public Collection<Window> assignWindows(Object element, long timestamp, WindowAssignerContext context) {
            return counting.assignWindows(element, timestamp, context);
        }

        @Override
        public void mergeWindows(Collection<Window> windows, MergeCallback<Window> callback) {
            ((MergingWindowAssigner<Object, Window>) counting.assigner).mergeWindows(windows, callback);
        }

        @Override
        public Trigger<Object, Window> getDefaultTrigger() {
            return counting.getDefaultTrigger();
        }

        @Override
        public TypeSerializer<Window> getWindowSerializer(ExecutionConfig config) {
            return counting.getWindowSerializer(config);
        }

        @Override
        public boolean isEventTime() {
            return counting.isEventTime();
        }
    }

    @SuppressWarnings("unchecked")
    static WindowAssigner<Object, Window> counting(JsonNode spec) {
        WindowAssigner<Object, Window> assigner = (WindowAssigner<Object, Window>) (WindowAssigner<?, ?>) FlinkScenario.assigner(spec);
        if (assigner instanceof MergingWindowAssigner) {
            return new CountingMergingAssigner((MergingWindowAssigner<Object, Window>) assigner);
        }
        return new CountingAssigner(assigner);
    }

    /** Chained after the window operator: adds each record's timestamp to it, and counts each watermark, which
     * reaches it once the window operator has processed it. */
    public static final class Stamping extends AbstractStreamOperator<String> implements OneInputStreamOperator<String, String> {
        @Override
        public void processElement(StreamRecord<String> element) throws Exception {
            ObjectNode line = (ObjectNode) FlinkScenario.JSON.readTree(element.getValue());
            line.put("ts", element.getTimestamp());
            output.collect(element.replace(line.toString()));
        }

        @Override
        public void processWatermark(Watermark mark) throws Exception {
            super.processWatermark(mark);
            processed();
        }
    }

    // -- the recording functions ----------------------------------------------------------------------------------

    static ObjectNode element(String at, SidedEvent event, long timestamp, long watermark) {
        ObjectNode line = FlinkScenario.JSON.createObjectNode();
        line.put("at", at);
        line.put("side", event.f0);
        line.put("key", event.f1);
        line.put("value", event.f2);
        line.put("ts", timestamp);
        line.put("seq", event.f4);
        line.put("watermark", watermark);
        return line;
    }

    public static final class CoTimerRecorder extends KeyedCoProcessFunction<String, SidedEvent, SidedEvent, String> {
        private final Long offset;

        CoTimerRecorder(Long offset) {
            this.offset = offset;
        }

        private void record(SidedEvent event, Context ctx, Collector<String> out) {
            FlinkScenario.applyTimers(event.f5, event.f6, ctx.timerService());
            out.collect(element("element", event, ctx.timestamp(), ctx.timerService().currentWatermark()).toString());
        }

        @Override
        public void processElement1(SidedEvent event, Context ctx, Collector<String> out) {
            record(event, ctx, out);
        }

        @Override
        public void processElement2(SidedEvent event, Context ctx, Collector<String> out) {
            record(event, ctx, out);
        }

        @Override
        public void onTimer(long time, OnTimerContext ctx, Collector<String> out) {
            out.collect(FlinkScenario.timer(ctx.getCurrentKey(), ctx.timestamp(), time, ctx.timeDomain().toString(),
                    ctx.timerService(), offset));
        }
    }

    public static final class BroadcastTimerRecorder
            extends KeyedBroadcastProcessFunction<String, SidedEvent, SidedEvent, String> {
        private final Long offset;

        BroadcastTimerRecorder(Long offset) {
            this.offset = offset;
        }

        @Override
        public void processElement(SidedEvent event, ReadOnlyContext ctx, Collector<String> out) {
            FlinkScenario.applyTimers(event.f5, event.f6, ctx.timerService());
            out.collect(element("element", event, ctx.timestamp(), ctx.timerService().currentWatermark()).toString());
        }

        @Override
        public void processBroadcastElement(SidedEvent event, Context ctx, Collector<String> out) {
            out.collect(element("broadcast", event, ctx.timestamp(), ctx.currentWatermark()).toString());
        }

        @Override
        public void onTimer(long time, OnTimerContext ctx, Collector<String> out) {
            out.collect(FlinkScenario.timer(ctx.getCurrentKey(), ctx.timestamp(), time, ctx.timeDomain().toString(),
                    ctx.timerService(), offset));
        }
    }

    public static final class PairRecorder extends ProcessJoinFunction<SidedEvent, SidedEvent, String> {
        @Override
        public void processElement(SidedEvent left, SidedEvent right, Context ctx, Collector<String> out) {
            ObjectNode line = FlinkScenario.JSON.createObjectNode();
            line.put("at", "join");
            line.put("key", left.f1);
            line.put("left", left.f4);
            line.put("right", right.f4);
            line.put("left_ts", ctx.getLeftTimestamp());
            line.put("right_ts", ctx.getRightTimestamp());
            line.put("ts", ctx.getTimestamp());
            out.collect(line.toString());
        }
    }

    public static final class JoinRecorder implements JoinFunction<SidedEvent, SidedEvent, String> {
        @Override
        public String join(SidedEvent left, SidedEvent right) {
            ObjectNode line = FlinkScenario.JSON.createObjectNode();
            line.put("at", "join");
            line.put("key", left.f1);
            line.put("left", left.f4);
            line.put("right", right.f4);
            line.put("left_ts", left.f3);
            line.put("right_ts", right.f3);
            return line.toString();
        }
    }

    public static final class CoGroupRecorder implements CoGroupFunction<SidedEvent, SidedEvent, String> {
        @Override
        public void coGroup(Iterable<SidedEvent> first, Iterable<SidedEvent> second, Collector<String> out) {
            ObjectNode line = FlinkScenario.JSON.createObjectNode();
            line.put("at", "co_group");
            String key = null;
            ArrayNode left = line.putArray("left");
            for (SidedEvent event : first) {
                key = event.f1;
                left.add(event.f4);
            }
            ArrayNode right = line.putArray("right");
            for (SidedEvent event : second) {
                key = event.f1;
                right.add(event.f4);
            }
            line.put("key", key);
            out.collect(line.toString());
        }
    }

    static String late(SidedEvent event) {
        ObjectNode line = FlinkScenario.JSON.createObjectNode();
        line.put("at", "late");
        line.put("side", event.f0);
        line.put("key", event.f1);
        line.put("value", event.f2);
        line.put("ts", event.f3);
        line.put("seq", event.f4);
        return line.toString();
    }

    // -- the job ------------------------------------------------------------------------------------------------

    static List<SidedEvent> events(JsonNode scenario) {
        List<SidedEvent> events = new ArrayList<>();
        int seq = 0;
        for (JsonNode event : scenario.get("events")) {
            int side = event.get("side").asInt();
            if (side != 1 && side != 2) {
                throw new IllegalArgumentException("an event's side is 1 or 2: " + event);
            }
            if (event.has("watermark")) {
                long watermark = event.get("watermark").asLong();
                events.add(new SidedEvent(side, FlinkScenario.MARKER, watermark, watermark, seq, new long[0], new long[0]));
            } else {
                events.add(new SidedEvent(side, event.get("key").asText(), event.get("value").asLong(),
                        event.get("ts").asLong(), seq, FlinkScenario.times(event.get("timers")),
                        FlinkScenario.times(event.get("delete"))));
            }
            seq++;
        }
        return events;
    }

    /** Whether the last two events are side 1's watermark Long.MAX_VALUE, then side 2's. */
    static boolean endsSideBySide(List<SidedEvent> events) {
        int n = events.size();
        return n >= 2 && ends(events.get(n - 2), 1) && ends(events.get(n - 1), 2);
    }

    private static boolean ends(SidedEvent event, int side) {
        return event.marker() && event.f0 == side && event.markerWatermark() == Long.MAX_VALUE;
    }

    /** The gate's counts: what the operator has processed once every event before n has reached it. */
    static long[] countsBefore(List<SidedEvent> events, boolean combined) {
        long[] watermarks = {Long.MIN_VALUE, Long.MIN_VALUE};
        long[] counts = new long[events.size()];
        long count = 0;
        long operatorWatermark = Long.MIN_VALUE;
        for (SidedEvent event : events) {
            counts[event.f4] = count;
            if (!event.marker()) {
                count++;
            } else if (event.markerWatermark() > watermarks[event.f0 - 1]) {  // a punctuated side's watermark
                watermarks[event.f0 - 1] = event.markerWatermark();
                long smaller = Math.min(watermarks[0], watermarks[1]);
                // a two-input operator counts each side's watermark; a window join's operator sees the smaller
                if (!combined || smaller > operatorWatermark) {
                    count++;
                    operatorWatermark = Math.max(operatorWatermark, smaller);
                }
            }
        }
        return counts;
    }

    static DataStream<SidedEvent> side(DataStream<SidedEvent> all, int side, String kind, long delay) {
        return all.filter(event -> event.f0 == side)
                .assignTimestampsAndWatermarks(WatermarkStrategy.<SidedEvent>forGenerator(
                                context -> new FlinkScenario.ScenarioWatermarks<SidedEvent>(kind, delay))
                        .withTimestampAssigner((event, previous) -> event.f3))
                .filter(event -> !event.marker());
    }

    static Long offset(JsonNode config) {
        JsonNode offset = config.get("on_timer_offset_ms");
        return offset == null || offset.isNull() ? null : offset.asLong();
    }

    static void run(JsonNode scenario) throws Exception {
        JsonNode config = scenario.get("config");
        List<SidedEvent> events = events(scenario);
        JsonNode watermarkSpec = config.get("watermark");
        String watermarkKind = watermarkSpec.get("type").asText();
        if (!watermarkKind.equals("punctuated") || !endsSideBySide(events)) {
            throw new IllegalArgumentException("a two-input scenario has punctuated watermarks and ends with side 1's "
                    + "watermark Long.MAX_VALUE, then side 2's: which input ends first is a race in Flink otherwise");
        }
        long delay = 0;
        String kind = config.get("kind").asText();
        boolean batch = config.path("mode").asText("STREAMING").equals("BATCH");
        // in BATCH execution an operator reads its input only once the input has ended (sorted): nothing to gate
        before = batch ? new long[events.size()] : countsBefore(events, kind.startsWith("window_"));

        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(new Configuration());
        env.setParallelism(1);
        env.setBufferTimeout(0);
        if (batch) {
            env.setRuntimeMode(RuntimeExecutionMode.BATCH);
        }
        env.getConfig().setAutoWatermarkInterval(0);
        DataStream<SidedEvent> all = env.fromData(events).map(TwoInputScenario::gate).returns(SidedEvent.class);
        DataStream<SidedEvent> first = side(all, 1, watermarkKind, delay);
        DataStream<SidedEvent> second = side(all, 2, watermarkKind, delay);
        KeyedStream<SidedEvent, String> keyedFirst = first.keyBy(event -> event.f1, Types.STRING);
        switch (kind) {
            case "connected_timers":
                keyedFirst.connect(second.keyBy(event -> event.f1, Types.STRING))
                        .transform("connected timers", Types.STRING, new CountingCoProcess(new CoTimerRecorder(offset(config))))
                        .sinkTo(new FlinkScenario.Collecting());
                break;
            case "broadcast_timers": {
                MapStateDescriptor<String, Long> descriptor = new MapStateDescriptor<>("broadcast", Types.STRING, Types.LONG);
                BroadcastStream<SidedEvent> broadcast = second.broadcast(descriptor);
                TwoInputTransformation<SidedEvent, SidedEvent, String> transformation = new TwoInputTransformation<>(
                        keyedFirst.getTransformation(), broadcast.getTransformation(), "broadcast timers",
                        new CountingBroadcast(new BroadcastTimerRecorder(offset(config)), List.of(descriptor)),
                        Types.STRING, 1);
                transformation.setStateKeySelectors(keyedFirst.getKeySelector(), null);
                transformation.setStateKeyType(keyedFirst.getKeyType());
                env.addOperator(transformation);
                new DataStream<>(env, transformation).sinkTo(new FlinkScenario.Collecting());
                break;
            }
            case "interval_join": {
                boolean sideOutputs = config.path("late_side_outputs").asBoolean(false);
                OutputTag<SidedEvent> leftLate = new OutputTag<SidedEvent>("left-late") {};
                OutputTag<SidedEvent> rightLate = new OutputTag<SidedEvent>("right-late") {};
                TypeSerializer<SidedEvent> serializer = TypeInformation.of(SidedEvent.class)
                        .createSerializer(env.getConfig().getSerializerConfig());
                SingleOutputStreamOperator<String> joined = keyedFirst
                        .connect(second.keyBy(event -> event.f1, Types.STRING))
                        .transform("interval join", Types.STRING, new CountingIntervalJoin(
                                config.get("lower_ms").asLong(), config.get("upper_ms").asLong(),
                                config.path("lower_inclusive").asBoolean(true), config.path("upper_inclusive").asBoolean(true),
                                sideOutputs ? leftLate : null, sideOutputs ? rightLate : null, serializer, new PairRecorder()));
                joined.sinkTo(new FlinkScenario.Collecting());
                if (sideOutputs) {
                    joined.getSideOutput(leftLate).map(TwoInputScenario::late).returns(Types.STRING).sinkTo(new FlinkScenario.Collecting());
                    joined.getSideOutput(rightLate).map(TwoInputScenario::late).returns(Types.STRING).sinkTo(new FlinkScenario.Collecting());
                }
                break;
            }
            case "window_join":
            case "window_co_group": {
                WindowAssigner<Object, Window> assigner = counting(config.get("assigner"));
                Duration lateness = Duration.ofMillis(config.path("allowed_lateness_ms").asLong(0));
                DataStream<String> records;
                if (kind.equals("window_join")) {
                    records = first.join(second).where(event -> event.f1, Types.STRING).equalTo(event -> event.f1, Types.STRING)
                            .window(assigner).allowedLateness(lateness).apply(new JoinRecorder(), Types.STRING);
                } else {
                    records = first.coGroup(second).where(event -> event.f1, Types.STRING).equalTo(event -> event.f1, Types.STRING)
                            .window(assigner).allowedLateness(lateness).apply(new CoGroupRecorder(), Types.STRING);
                }
                records.transform("stamping", Types.STRING, new Stamping()).sinkTo(new FlinkScenario.Collecting());
                break;
            }
            default:
                throw new IllegalArgumentException("not a two-input scenario kind: " + kind);
        }
        FlinkScenario.run(env);
    }
}
