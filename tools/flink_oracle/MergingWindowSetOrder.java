// Replays the addWindow sequences of tests/core/test_merging_window_set.py on Flink's own MergingWindowSet
// (event-time session windows) and prints each merge (result, merged windows in iteration order, the result's
// state window, the state windows merged into it), state windows, and the persisted mapping's order: the
// values those tests expect, which depend on Java's HashMap/HashSet iteration and Flink's TimeWindow.hashCode.
//
// Usage: javac -cp '<flink lib>/*' -d OUT MergingWindowSetOrder.java && java -cp '<flink lib>/*:OUT' MergingWindowSetOrder

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;

import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.streaming.api.windowing.assigners.EventTimeSessionWindows;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;
import org.apache.flink.streaming.runtime.operators.windowing.MergingWindowSet;

public class MergingWindowSetOrder {
    /** List state in memory. */
    static final class Stored implements ListState<Tuple2<TimeWindow, TimeWindow>> {
        final List<Tuple2<TimeWindow, TimeWindow>> items = new ArrayList<>();

        public Iterable<Tuple2<TimeWindow, TimeWindow>> get() { return items; }
        public void add(Tuple2<TimeWindow, TimeWindow> value) { items.add(value); }
        public void update(List<Tuple2<TimeWindow, TimeWindow>> values) { items.clear(); items.addAll(values); }
        public void addAll(List<Tuple2<TimeWindow, TimeWindow>> values) { items.addAll(values); }
        public void clear() { items.clear(); }
    }

    static String w(TimeWindow window) {
        return "(" + window.getStart() + "," + window.getEnd() + ")";
    }

    static String ws(Collection<TimeWindow> windows) {
        StringBuilder out = new StringBuilder("[");
        for (TimeWindow window : windows) {
            out.append(out.length() > 1 ? " " : "").append(w(window));
        }
        return out.append("]").toString();
    }

    static final class Session {
        final Stored state = new Stored();
        final MergingWindowSet<TimeWindow> set;

        Session(long gap) throws Exception {
            set = new MergingWindowSet<>(EventTimeSessionWindows.withGap(Duration.ofMillis(gap)), state);
        }

        void add(long start, long end) throws Exception {
            TimeWindow result = set.addWindow(new TimeWindow(start, end), (mergeResult, merged, stateResult, mergedState) ->
                    System.out.println("  merge " + w(mergeResult) + " merged " + ws(merged) + " state " + w(stateResult)
                            + " merged state " + ws(mergedState)));
            System.out.println("add " + w(new TimeWindow(start, end)) + " -> " + w(result));
        }

        void state(long start, long end) {
            System.out.println("state window of " + w(new TimeWindow(start, end)) + " = " + w(set.getStateWindow(new TimeWindow(start, end))));
        }

        void persisted() throws Exception {
            set.persist();
            StringBuilder out = new StringBuilder("persisted");
            for (Tuple2<TimeWindow, TimeWindow> pair : state.items) {
                out.append(" ").append(w(pair.f0)).append("->").append(w(pair.f1));
            }
            System.out.println(out);
        }
    }

    public static void main(String[] args) throws Exception {
        System.out.println("# late merging of existing sessions");
        Session s = new Session(3);
        s.add(0, 3); s.add(5, 8); s.add(10, 13);
        s.add(8, 10);
        s.state(0, 3);
        s.add(5, 8); s.add(8, 10); s.add(10, 13);
        s.state(5, 13);
        s.add(3, 5);
        s.state(0, 13);

        System.out.println("# a new window covering several existing windows");
        s = new Session(3);
        s.add(1, 3); s.add(5, 8); s.add(10, 13);
        s.add(0, 13);
        s.state(0, 13);

        System.out.println("# merging many windows after a resize");
        s = new Session(10);
        for (int i = 0; i < 20; i++) {
            s.add(i * 100, i * 100 + 10);
        }
        s.add(300, 1050);
        s.state(300, 1050);
        s.persisted();

        System.out.println("# persist order");
        s = new Session(3);
        s.add(1, 2); s.add(17, 42);
        s.persisted();

        System.out.println("# a merge group with many hash collisions");
        s = new Session(1);
        for (long start : new long[] {150, 310, 910, 1130, 1930, 2550, 3570, 3740, 4310, 5360}) {
            s.add(start, start + 1);
        }
        s.add(0, 8000);
    }
}
