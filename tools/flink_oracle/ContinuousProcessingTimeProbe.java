// Runs scenario 51 (tests/scenarios/51_continuous_processing_time_end_of_event_time_window) on real Flink, whose
// processing time is the wall clock: every time of the scenario is scaled by SCALE and shifted to a base B (a
// multiple of the window size, chosen when the job's first event passes), so that
// TumblingEventTimeWindows(10 * SCALE ms) with ContinuousProcessingTimeTrigger.of(5 * SCALE ms) sees the
// scenario's processing times: elements carry timestamps B + ts * SCALE; a {"processing_time": T} event waits
// until the wall clock passes B + T * SCALE (plus a margin). The waits happen in the source's task, before the
// keyBy, so the window operator's task is free to fire its processing-time timers meanwhile. No watermarks but
// the final one.
//
// After the scenario's events, a probe the scenario leaves out: one more element (value 9, timestamp B + 9 *
// SCALE) arrives once the window fired at its end, while it is still open (its cleanup is on event time); the run
// then waits two intervals before the input ends.
//
// Prints each firing (the scenario time it fired at: wall clock minus B, divided by SCALE, rounded down; the
// pane's values in order) and, on stderr, when each element left the source. Not run by oracle.py: its output
// depends on the wall clock (a loaded machine can delay an element past a fire time), not only on the events.
// Flink 2.3.0 printed [1, 3, 7] at 5 and [1, 3, 7, 8] at 10, and nothing for the probe element.
//
// Usage: javac -cp "<flink lib>/*" -d OUT ContinuousProcessingTimeProbe.java
//        java -cp "<flink lib>/*:OUT" ContinuousProcessingTimeProbe

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.api.java.tuple.Tuple3;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.windowing.ProcessWindowFunction;
import org.apache.flink.streaming.api.windowing.assigners.TumblingEventTimeWindows;
import org.apache.flink.streaming.api.windowing.triggers.ContinuousProcessingTimeTrigger;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;
import org.apache.flink.util.Collector;

public class ContinuousProcessingTimeProbe {
    static final long SCALE = 1000;
    static final long MARGIN = 400;
    static final String WAIT = "__wait__";
    static final List<String> FIRINGS = Collections.synchronizedList(new ArrayList<>());
    /** The base B, chosen by the first event (the job runs in this JVM). */
    static final AtomicLong BASE = new AtomicLong();

    /** (key, value, timestamp - B); a WAIT entry holds the scenario time to wait for, times SCALE, in its value
     * (the first one chooses B). */
    static Tuple3<String, Long, Long> element(String key, long value, long ts) {
        return Tuple3.of(key, value, ts);
    }

    public static final class Firings extends ProcessWindowFunction<Tuple3<String, Long, Long>, String, String, TimeWindow> {
        @Override
        public void process(String key, Context context, Iterable<Tuple3<String, Long, Long>> elements, Collector<String> out) {
            long base = BASE.get();
            List<Long> values = new ArrayList<>();
            for (Tuple3<String, Long, Long> element : elements) {
                values.add(element.f1);
            }
            long at = Math.floorDiv(context.currentProcessingTime() - base, SCALE);
            out.collect("{\"key\": \"" + key + "\", \"window\": [" + (context.window().getStart() - base) / SCALE + ", "
                    + (context.window().getEnd() - base) / SCALE + "], \"processing_time\": " + at
                    + ", \"watermark_is_min\": " + (context.currentWatermark() == Long.MIN_VALUE)
                    + ", \"values_in_order\": " + values + "}");
        }
    }

    public static final class Collecting implements Sink<String> {
        @Override
        public SinkWriter<String> createWriter(WriterInitContext context) {
            return new SinkWriter<String>() {
                @Override
                public void write(String element, SinkWriter.Context context) {
                    FIRINGS.add(element);
                }

                @Override
                public void flush(boolean endOfInput) {}

                @Override
                public void close() {}
            };
        }
    }

    public static void main(String[] args) throws Exception {
        long size = 10 * SCALE;
        List<Tuple3<String, Long, Long>> events = new ArrayList<>();
        events.add(element(WAIT, 0, 0)); // {"processing_time": 0}
        events.add(element("a", 1, 1 * SCALE));
        events.add(element("a", 3, 3 * SCALE));
        events.add(element("a", 7, 7 * SCALE));
        events.add(element(WAIT, 5 * SCALE, 0)); // {"processing_time": 5}
        events.add(element("a", 8, 8 * SCALE));
        events.add(element(WAIT, 10 * SCALE, 0)); // {"processing_time": 10}
        // the probe: an element of the still open window after its firing at the end, then two intervals
        events.add(element("a", 9, 9 * SCALE));
        events.add(element(WAIT, 20 * SCALE, 0));

        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(1);
        env.setBufferTimeout(0); // every record leaves the source's task at once, not when a buffer fills
        env.fromData(events)
                .map(event -> {
                    if (WAIT.equals(event.f0)) {
                        if (BASE.get() == 0) { // B: the start of a window at least a second ahead
                            long now = System.currentTimeMillis();
                            long next = (now / size + 1) * size;
                            BASE.set(next - now < 1000 ? next + size : next);
                        }
                        long wait = BASE.get() + event.f1 + MARGIN - System.currentTimeMillis();
                        if (wait > 0) {
                            Thread.sleep(wait);
                        }
                    } else {
                        System.err.println("probe: sent " + event.f1 + " at " + (System.currentTimeMillis() - BASE.get()));
                    }
                    return event;
                })
                .returns(Types.TUPLE(Types.STRING, Types.LONG, Types.LONG))
                .filter(event -> !WAIT.equals(event.f0))
                .assignTimestampsAndWatermarks(WatermarkStrategy.<Tuple3<String, Long, Long>>noWatermarks()
                        .withTimestampAssigner((event, previous) -> BASE.get() + event.f2))
                .keyBy(event -> event.f0, Types.STRING)
                .window(TumblingEventTimeWindows.of(Duration.ofMillis(size)))
                .trigger(ContinuousProcessingTimeTrigger.of(Duration.ofMillis(5 * SCALE)))
                .process(new Firings())
                .sinkTo(new Collecting());
        env.execute("continuous processing time probe");
        for (String firing : FIRINGS) {
            System.out.println(firing);
        }
    }
}
