#!/usr/bin/env bash
# A real Apache Kafka broker for panes' Kafka tests and examples: one node that is both broker and KRaft
# controller (no ZooKeeper), on loopback ports, with topic auto-creation off.
#
#   bash scripts/kafka.sh start [DIR]   start a broker whose files (data, log, settings) are in DIR (new, empty, or
#                                       one kafka.sh used before: it is emptied) and print its bootstrap address
#                                       (127.0.0.1:PORT) on standard output, alone on its line; a broker already
#                                       running in DIR is reused (its address printed again)
#   bash scripts/kafka.sh stop [DIR]    stop it (SIGTERM, SIGKILL after 30 s) and remove DIR
#   bash scripts/kafka.sh status [DIR]  print "running 127.0.0.1:PORT (pid N)" and exit 0, or "not running", exit 1
#
# DIR defaults to $PANES_KAFKA_DIR, else <temp dir>/panes-kafka. The broker's jars are fetched from Maven Central
# by Maven once per version into ~/.cache/panes/kafka/<version>/libs ($PANES_KAFKA_CACHE instead of
# ~/.cache/panes/kafka); $PANES_KAFKA_VERSION picks the version (default below). The broker runs with
# $PANES_KAFKA_HEAP (default -Xmx512m) and logs to DIR/kafka.log. `start` waits up to $PANES_KAFKA_START_TIMEOUT
# seconds (default 90) for the broker to serve; when it does not, the end of its log goes to standard error and
# the exit code is 1. $PANES_KAFKA_PORT puts the broker on that port (e.g. 9092, where Flink's examples look for
# it) instead of a free one the script picks. Needs java (17 or later), mvn (the first time) and python3 (to pick free ports).
set -euo pipefail

VERSION=${PANES_KAFKA_VERSION:-4.4.0}
SCALA=2.13
CACHE=${PANES_KAFKA_CACHE:-$HOME/.cache/panes/kafka}/$VERSION
LIBS=$CACHE/libs
HEAP=${PANES_KAFKA_HEAP:--Xmx512m}
START_TIMEOUT=${PANES_KAFKA_START_TIMEOUT:-90}

say() { echo "kafka.sh: $*" >&2; }
fail() {
    say "$*"
    exit 1
}

broker_dir() { echo "${1:-${PANES_KAFKA_DIR:-${TMPDIR:-/tmp}/panes-kafka}}"; }

# -- the jars, fetched once ------------------------------------------

fetch() {
    if [ -f "$CACHE/.complete" ]; then
        return
    fi
    command -v mvn >/dev/null || fail "mvn is needed once to fetch Kafka $VERSION's jars (apt-get install maven)"
    say "fetching Apache Kafka $VERSION (kafka_$SCALA and what it runs with) into $LIBS, once"
    local work
    work=$(mktemp -d)
    # the broker, and log4j 2 with its SLF4J binding so the broker's log says what it does (Kafka's own
    # distribution ships the same)
    cat >"$work/pom.xml" <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>panes</groupId>
  <artifactId>kafka-broker-libs</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka_$SCALA</artifactId>
      <version>$VERSION</version>
    </dependency>
    <dependency>
      <groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-slf4j-impl</artifactId>
      <version>2.24.3</version>
    </dependency>
    <dependency>
      <groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-core</artifactId>
      <version>2.24.3</version>
    </dependency>
  </dependencies>
</project>
EOF
    rm -rf "$CACHE.partial"
    mkdir -p "$CACHE.partial"
    if ! mvn -B -q -f "$work/pom.xml" dependency:copy-dependencies -DincludeScope=runtime \
        -DoutputDirectory="$CACHE.partial/libs" >"$work/mvn.log" 2>&1; then
        tail -n 30 "$work/mvn.log" >&2
        rm -rf "$work" "$CACHE.partial"
        fail "Maven could not fetch org.apache.kafka:kafka_$SCALA:$VERSION (see above); set PANES_KAFKA_VERSION to another 4.x version"
    fi
    rm -rf "$work"
    touch "$CACHE.partial/.complete"
    rm -rf "$CACHE"
    mv "$CACHE.partial" "$CACHE"
}

# -- one broker ------------------------------------------

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

running_pid() {
    local dir=$1 pid
    [ -f "$dir/kafka.pid" ] || return 1
    pid=$(cat "$dir/kafka.pid")
    kill -0 "$pid" 2>/dev/null || return 1
    echo "$pid"
}

serves() {
    # the port accepts connections and the broker said it started (its listeners accept before it serves)
    local dir=$1 port=$2
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || return 1
    grep -q "Kafka Server started" "$dir/kafka.log" 2>/dev/null
}

start() {
    local dir pid
    dir=$(broker_dir "${1:-}")
    if pid=$(running_pid "$dir"); then
        say "a broker already runs in $dir (pid $pid)"
        cat "$dir/address"
        return
    fi
    command -v java >/dev/null || fail "java (17 or later) is needed to run the broker"
    if [ -d "$dir" ] && [ -n "$(ls -A "$dir")" ] && [ ! -f "$dir/server.properties" ]; then
        fail "$dir is not empty and holds no broker of kafka.sh: give a new or empty directory (it is emptied)"
    fi
    fetch
    rm -rf "$dir"
    mkdir -p "$dir/data"
    dir=$(cd "$dir" && pwd)
    local port controller
    port=${PANES_KAFKA_PORT:-$(free_port)}
    controller=$(free_port)
    while [ "$controller" = "$port" ]; do controller=$(free_port); done
    # log.retention.ms=-1: no record is ever deleted for its age. The tests write records stamped near 1970, and
    # with a time limit (Kafka's default is 7 days) the broker's retention check (30 s after start, then every 5
    # minutes) deletes them from under a reader; measured: a one-hour limit emptied such a partition at the first
    # check. The broker lives as long as one test run, so its disk use stays small.
    cat >"$dir/server.properties" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$controller
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$controller
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$dir/data
auto.create.topics.enable=false
num.partitions=1
num.network.threads=2
num.io.threads=2
background.threads=2
num.recovery.threads.per.data.dir=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
log.retention.ms=-1
EOF
    cat >"$dir/log4j2.properties" <<EOF
rootLogger.level=INFO
rootLogger.appenderRef.out.ref=out
appender.out.type=Console
appender.out.name=out
appender.out.layout.type=PatternLayout
appender.out.layout.pattern=[%d] %p %m (%c)%n
logger.kafka.name=org.apache.kafka
logger.kafka.level=INFO
logger.state.name=state.change.logger
logger.state.level=WARN
EOF
    local java_options=("$HEAP" -Xss1m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true
        "-Dlog4j2.configurationFile=$dir/log4j2.properties")
    local cluster_id
    # a random id in Kafka's form (URL-safe base64 of 16 bytes), never starting with '-', which the tool's
    # argument parser would take for an option (Kafka's own Uuid.randomUuid avoids it the same way)
    cluster_id=$(python3 -c '
import base64, uuid
text = "-"
while text.startswith("-"):
    text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
print(text)')
    if ! java "${java_options[@]}" -cp "$LIBS/*" kafka.tools.StorageTool format -t "$cluster_id" \
        -c "$dir/server.properties" >"$dir/format.log" 2>&1; then
        cat "$dir/format.log" >&2
        fail "formatting the KRaft log directory $dir/data failed (see above)"
    fi
    nohup java "${java_options[@]}" -cp "$LIBS/*" kafka.Kafka "$dir/server.properties" \
        >"$dir/kafka.log" 2>&1 </dev/null &
    pid=$!
    echo "$pid" >"$dir/kafka.pid"
    echo "127.0.0.1:$port" >"$dir/address"
    local deadline=$((SECONDS + START_TIMEOUT))
    until serves "$dir" "$port"; do
        if ! kill -0 "$pid" 2>/dev/null; then
            tail -n 40 "$dir/kafka.log" >&2
            fail "the broker (pid $pid) exited while starting; its log is $dir/kafka.log (the end is above)"
        fi
        if [ $SECONDS -ge $deadline ]; then
            tail -n 40 "$dir/kafka.log" >&2
            kill "$pid" 2>/dev/null || true
            fail "the broker did not serve on 127.0.0.1:$port within ${START_TIMEOUT} s; its log is $dir/kafka.log (the end is above)"
        fi
        sleep 0.2
    done
    say "broker pid $pid serves on 127.0.0.1:$port (files in $dir)"
    echo "127.0.0.1:$port"
}

stop() {
    local dir pid
    dir=$(broker_dir "${1:-}")
    if pid=$(running_pid "$dir"); then
        kill "$pid" 2>/dev/null || true
        local deadline=$((SECONDS + 30))
        while kill -0 "$pid" 2>/dev/null; do
            if [ $SECONDS -ge $deadline ]; then
                say "the broker (pid $pid) did not stop within 30 s: killed"
                kill -9 "$pid" 2>/dev/null || true
                break
            fi
            sleep 0.2
        done
        say "stopped the broker (pid $pid)"
    else
        say "no broker runs in $dir"
    fi
    if [ -f "$dir/server.properties" ]; then
        rm -rf "$dir"
    fi
}

status() {
    local dir pid
    dir=$(broker_dir "${1:-}")
    if pid=$(running_pid "$dir"); then
        echo "running $(cat "$dir/address") (pid $pid)"
    else
        echo "not running"
        return 1
    fi
}

case "${1:-}" in
start | stop | status) "$@" ;;
fetch) fetch ;;
*) fail "usage: bash scripts/kafka.sh start|stop|status [DIR]" ;;
esac
