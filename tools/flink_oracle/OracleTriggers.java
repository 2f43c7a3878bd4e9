// Hand-written triggers in Flink's own Trigger API that stand in for panes' composite triggers, so that real Flink
// can produce the expected output of a composite-trigger scenario (tests/scenarios/6*). Each one follows, state for
// state and timer for timer, the Python trigger of the same name in tests/composite_oracles.py:
//
//   CountOrEndOfWindow(n)          AnyOf(CountTrigger.of(n), EventTimeTrigger())
//   EarlyAndLate(early, late)      AfterWatermark(early=CountTrigger.of(early), late=CountTrigger.of(late))
//   CountAndEndOfWindow(n)         AllOf(CountTrigger.of(n), EventTimeTrigger())
//   CountThenEndOfWindow(n, false) AfterEach(CountTrigger.of(n), EventTimeTrigger())
//   CountThenEndOfWindow(n, true)  Repeatedly(AfterEach(CountTrigger.of(n), EventTimeTrigger()))
//   CountUntilEndOfWindow(n)       OrFinally(CountTrigger.of(n), EventTimeTrigger())
//
// A scenario names one in its "flink_trigger" entry, {"type": "oracle", "class": NAME, "args": [...]}, possibly
// inside Flink's own triggers ({"type": "purging", "inner": ...} for discarding accumulation); FlinkScenario builds
// it with build() below. Each trigger fires at the window's end only for the timer at window.maxTimestamp(): the
// window operator also calls onEventTime for its cleanup timer, which must fire nothing.

import org.apache.flink.api.common.functions.ReduceFunction;
import org.apache.flink.api.common.state.ReducingState;
import org.apache.flink.api.common.state.ReducingStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.streaming.api.windowing.triggers.Trigger;
import org.apache.flink.streaming.api.windowing.triggers.TriggerResult;
import org.apache.flink.streaming.api.windowing.windows.Window;

public final class OracleTriggers {
    private OracleTriggers() {}

    /** The trigger a scenario's {"type": "oracle", "class": ..., "args": [...]} names. */
    static Trigger<Object, Window> build(String name, JsonNode args) {
        switch (name) {
            case "CountOrEndOfWindow":
                return new CountOrEndOfWindow(args.get(0).asLong());
            case "EarlyAndLate":
                return new EarlyAndLate(args.get(0).asLong(), args.get(1).asLong());
            case "CountAndEndOfWindow":
                return new CountAndEndOfWindow(args.get(0).asLong());
            case "CountThenEndOfWindow":
                return new CountThenEndOfWindow(args.get(0).asLong(), args.get(1).asBoolean());
            case "CountUntilEndOfWindow":
                return new CountUntilEndOfWindow(args.get(0).asLong());
            default:
                throw new IllegalArgumentException("no oracle trigger named " + name);
        }
    }

    /** Sums longs (element counts). */
    static final class Sum implements ReduceFunction<Long> {
        @Override
        public Long reduce(Long a, Long b) {
            return a + b;
        }
    }

    /** Whether either flag was set. */
    static final class Either implements ReduceFunction<Boolean> {
        @Override
        public Boolean reduce(Boolean a, Boolean b) {
            return a || b;
        }
    }

    static ReducingStateDescriptor<Long> counter(String name) {
        return new ReducingStateDescriptor<>(name, new Sum(), Long.class);
    }

    static ReducingStateDescriptor<Boolean> flag(String name) {
        return new ReducingStateDescriptor<>(name, new Either(), Boolean.class);
    }

    /** Counts one more element in ``state`` and says whether the count reached ``n`` (then starting it again). */
    static boolean countReaches(ReducingState<Long> state, long n) throws Exception {
        state.add(1L);
        if (state.get() >= n) {
            state.clear();
            return true;
        }
        return false;
    }

    static boolean isSet(Boolean value) {
        return value != null && value;
    }

    /** Whether the watermark has reached the window's end. */
    static boolean pastTheEnd(Window window, Trigger.TriggerContext ctx) {
        return window.maxTimestamp() <= ctx.getCurrentWatermark();
    }

    /** Registers the end's timer again for a merged window that has not ended. */
    static void endTimerAfterMerge(Window window, Trigger.OnMergeContext ctx) {
        if (window.maxTimestamp() > ctx.getCurrentWatermark()) {
            ctx.registerEventTimeTimer(window.maxTimestamp());
        }
    }

    /** Fires every n elements, at the window's end, and at every element that comes after the end. */
    public static final class CountOrEndOfWindow extends Trigger<Object, Window> {
        private final long n;
        private final ReducingStateDescriptor<Long> count = counter("count");

        CountOrEndOfWindow(long n) {
            this.n = n;
        }

        @Override
        public TriggerResult onElement(Object element, long timestamp, Window window, TriggerContext ctx)
                throws Exception {
            boolean late = pastTheEnd(window, ctx);
            if (!late) {
                ctx.registerEventTimeTimer(window.maxTimestamp());
            }
            boolean counted = countReaches(ctx.getPartitionedState(count), n);
            return late || counted ? TriggerResult.FIRE : TriggerResult.CONTINUE;
        }

        @Override
        public TriggerResult onEventTime(long time, Window window, TriggerContext ctx) {
            return time == window.maxTimestamp() ? TriggerResult.FIRE : TriggerResult.CONTINUE;
        }

        @Override
        public TriggerResult onProcessingTime(long time, Window window, TriggerContext ctx) {
            return TriggerResult.CONTINUE;
        }

        @Override
        public boolean canMerge() {
            return true;
        }

        @Override
        public void onMerge(Window window, OnMergeContext ctx) {
            ctx.mergePartitionedState(count);
            endTimerAfterMerge(window, ctx);
        }

        @Override
        public void clear(Window window, TriggerContext ctx) {
            ctx.deleteEventTimeTimer(window.maxTimestamp());
            ctx.getPartitionedState(count).clear();
        }

        @Override
        public String toString() {
            return "CountOrEndOfWindow(" + n + ")";
        }
    }

    /** Before the window's end fires every ``early`` elements; at the end fires and forgets the early count; after
     * it fires every ``late`` elements. */
    public static final class EarlyAndLate extends Trigger<Object, Window> {
        private final long early;
        private final long late;
        private final ReducingStateDescriptor<Long> earlyCount = counter("early");
        private final ReducingStateDescriptor<Long> lateCount = counter("late");

        EarlyAndLate(long early, long late) {
            this.early = early;
            this.late = late;
        }

        @Override
        public TriggerResult onElement(Object element, long timestamp, Window window, TriggerContext ctx)
                throws Exception {
            boolean after = pastTheEnd(window, ctx);
            if (!after) {
                ctx.registerEventTimeTimer(window.maxTimestamp());
            }
            ReducingState<Long> count = ctx.getPartitionedState(after ? lateCount : earlyCount);
            return countReaches(count, after ? late : early) ? TriggerResult.FIRE : TriggerResult.CONTINUE;
        }

        @Override
        public TriggerResult onEventTime(long time, Window window, TriggerContext ctx) {
            if (time != window.maxTimestamp()) {
                return TriggerResult.CONTINUE;
            }
            ctx.getPartitionedState(earlyCount).clear();
            return TriggerResult.FIRE;
        }

        @Override
        public TriggerResult onProcessingTime(long time, Window window, TriggerContext ctx) {
            return TriggerResult.CONTINUE;
        }

        @Override
        public boolean canMerge() {
            return true;
        }

        @Override
        public void onMerge(Window window, OnMergeContext ctx) {
            ctx.mergePartitionedState(earlyCount);
            ctx.mergePartitionedState(lateCount);
            endTimerAfterMerge(window, ctx);
        }

        @Override
        public void clear(Window window, TriggerContext ctx) {
            ctx.deleteEventTimeTimer(window.maxTimestamp());
            ctx.getPartitionedState(earlyCount).clear();
            ctx.getPartitionedState(lateCount).clear();
        }

        @Override
        public String toString() {
            return "EarlyAndLate(" + early + ", " + late + ")";
        }
    }

    /** Fires once both "n elements counted" and "the window's end passed" happened since its last firing. */
    public static final class CountAndEndOfWindow extends Trigger<Object, Window> {
        private final long n;
        private final ReducingStateDescriptor<Long> count = counter("count");
        private final ReducingStateDescriptor<Boolean> counted = flag("counted");
        private final ReducingStateDescriptor<Boolean> ended = flag("ended");

        CountAndEndOfWindow(long n) {
            this.n = n;
        }

        private TriggerResult both(TriggerContext ctx) throws Exception {
            ReducingState<Boolean> countedState = ctx.getPartitionedState(counted);
            ReducingState<Boolean> endedState = ctx.getPartitionedState(ended);
            if (isSet(countedState.get()) && isSet(endedState.get())) {
                countedState.clear();
                endedState.clear();
                return TriggerResult.FIRE;
            }
            return TriggerResult.CONTINUE;
        }

        @Override
        public TriggerResult onElement(Object element, long timestamp, Window window, TriggerContext ctx)
                throws Exception {
            if (pastTheEnd(window, ctx)) {
                ctx.getPartitionedState(ended).add(true);
            } else {
                ctx.registerEventTimeTimer(window.maxTimestamp());
            }
            if (countReaches(ctx.getPartitionedState(count), n)) {
                ctx.getPartitionedState(counted).add(true);
            }
            return both(ctx);
        }

        @Override
        public TriggerResult onEventTime(long time, Window window, TriggerContext ctx) throws Exception {
            if (time != window.maxTimestamp()) {
                return TriggerResult.CONTINUE;
            }
            ctx.getPartitionedState(ended).add(true);
            return both(ctx);
        }

        @Override
        public TriggerResult onProcessingTime(long time, Window window, TriggerContext ctx) {
            return TriggerResult.CONTINUE;
        }

        @Override
        public boolean canMerge() {
            return true;
        }

        @Override
        public void onMerge(Window window, OnMergeContext ctx) {
            ctx.mergePartitionedState(count);
            ctx.mergePartitionedState(counted);
            ctx.mergePartitionedState(ended);
            endTimerAfterMerge(window, ctx);
        }

        @Override
        public void clear(Window window, TriggerContext ctx) {
            ctx.deleteEventTimeTimer(window.maxTimestamp());
            ctx.getPartitionedState(count).clear();
            ctx.getPartitionedState(counted).clear();
            ctx.getPartitionedState(ended).clear();
        }

        @Override
        public String toString() {
            return "CountAndEndOfWindow(" + n + ")";
        }
    }

    static final int COUNTING = 0;
    static final int AT_THE_END = 1;
    static final int DONE = 2;

    /** Counts elements until the n-th fires; then waits for the window's end (an element seen while waiting
     * registers the end's timer, one that comes after the end fires at once), fires there, and stops (with
     * ``repeat``, counts again). Windows do not merge. */
    public static final class CountThenEndOfWindow extends Trigger<Object, Window> {
        private final long n;
        private final boolean repeat;
        private final ReducingStateDescriptor<Long> count = counter("count");
        private final ValueStateDescriptor<Integer> phase = new ValueStateDescriptor<>("phase", Integer.class);
        /** Whether the end's timer was registered while waiting for the end (only such a timer fires). */
        private final ValueStateDescriptor<Boolean> waiting = new ValueStateDescriptor<>("waiting", Boolean.class);

        CountThenEndOfWindow(long n, boolean repeat) {
            this.n = n;
            this.repeat = repeat;
        }

        private TriggerResult finish(TriggerContext ctx) throws Exception {
            ctx.getPartitionedState(waiting).clear();
            ctx.getPartitionedState(phase).update(repeat ? COUNTING : DONE);
            return TriggerResult.FIRE;
        }

        @Override
        public TriggerResult onElement(Object element, long timestamp, Window window, TriggerContext ctx)
                throws Exception {
            ValueState<Integer> phaseState = ctx.getPartitionedState(phase);
            int current = phaseState.value() == null ? COUNTING : phaseState.value();
            if (current == COUNTING) {
                if (!countReaches(ctx.getPartitionedState(count), n)) {
                    return TriggerResult.CONTINUE;
                }
                phaseState.update(AT_THE_END);
                return TriggerResult.FIRE;
            }
            if (current == DONE) {
                return TriggerResult.CONTINUE;
            }
            if (pastTheEnd(window, ctx)) {
                return finish(ctx);
            }
            ctx.registerEventTimeTimer(window.maxTimestamp());
            ctx.getPartitionedState(waiting).update(true);
            return TriggerResult.CONTINUE;
        }

        @Override
        public TriggerResult onEventTime(long time, Window window, TriggerContext ctx) throws Exception {
            if (time != window.maxTimestamp() || !isSet(ctx.getPartitionedState(waiting).value())) {
                return TriggerResult.CONTINUE;
            }
            return finish(ctx);
        }

        @Override
        public TriggerResult onProcessingTime(long time, Window window, TriggerContext ctx) {
            return TriggerResult.CONTINUE;
        }

        @Override
        public void clear(Window window, TriggerContext ctx) {
            ctx.deleteEventTimeTimer(window.maxTimestamp());
            ctx.getPartitionedState(count).clear();
            ctx.getPartitionedState(phase).clear();
            ctx.getPartitionedState(waiting).clear();
        }

        @Override
        public String toString() {
            return "CountThenEndOfWindow(" + n + ", " + repeat + ")";
        }
    }

    /** Fires every n elements until the window's end, fires there (or, for a window whose first element came after
     * its end, at that element) and never again. */
    public static final class CountUntilEndOfWindow extends Trigger<Object, Window> {
        private final long n;
        private final ReducingStateDescriptor<Long> count = counter("count");
        private final ValueStateDescriptor<Boolean> done = new ValueStateDescriptor<>("done", Boolean.class);

        CountUntilEndOfWindow(long n) {
            this.n = n;
        }

        private TriggerResult end(TriggerContext ctx) throws Exception {
            ctx.getPartitionedState(done).update(true);
            ctx.getPartitionedState(count).clear();
            return TriggerResult.FIRE;
        }

        @Override
        public TriggerResult onElement(Object element, long timestamp, Window window, TriggerContext ctx)
                throws Exception {
            if (isSet(ctx.getPartitionedState(done).value())) {
                return TriggerResult.CONTINUE;
            }
            if (pastTheEnd(window, ctx)) {
                return end(ctx);
            }
            ctx.registerEventTimeTimer(window.maxTimestamp());
            return countReaches(ctx.getPartitionedState(count), n) ? TriggerResult.FIRE : TriggerResult.CONTINUE;
        }

        @Override
        public TriggerResult onEventTime(long time, Window window, TriggerContext ctx) throws Exception {
            if (time != window.maxTimestamp() || isSet(ctx.getPartitionedState(done).value())) {
                return TriggerResult.CONTINUE;
            }
            return end(ctx);
        }

        @Override
        public TriggerResult onProcessingTime(long time, Window window, TriggerContext ctx) {
            return TriggerResult.CONTINUE;
        }

        @Override
        public void clear(Window window, TriggerContext ctx) {
            ctx.deleteEventTimeTimer(window.maxTimestamp());
            ctx.getPartitionedState(count).clear();
            ctx.getPartitionedState(done).clear();
        }

        @Override
        public String toString() {
            return "CountUntilEndOfWindow(" + n + ")";
        }
    }
}
