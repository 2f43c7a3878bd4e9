#!/usr/bin/env bash
# Spark's own Kafka connector for panes' Spark runner: fetches its jars from Maven Central once into a cache, where
# panes' create_session finds them (panes.spark.kafka.jars) and puts them on a created session's spark.jars.
#
#   bash scripts/spark-kafka.sh [fetch]   fetch the jars once (a cache that is complete is kept) and print their
#                                         folder on standard output
#   bash scripts/spark-kafka.sh path      print the folder and exit 0 when its jars are there, else exit 1
#
# The jars: org.apache.spark:spark-sql-kafka-0-10_2.13 and spark-token-provider-kafka-0-10_2.13 of
# $PANES_SPARK_KAFKA_VERSION (default: the installed pyspark's version when Maven Central serves it, else the newest
# one it serves that panes knows, below), with the kafka-clients and commons-pool2 versions that release's pom names
# (their own dependencies, zstd, lz4, snappy, slf4j, are Spark's already). Cache:
# ${PANES_CACHE_DIR:-$XDG_CACHE_HOME/panes or ~/.cache/panes}/spark-kafka/<version>/ (jars and a .complete mark).
# Needs mvn and the venv's python (to read pyspark's version); PYTHON overrides the interpreter.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PYTHON=${PYTHON:-$ROOT/.venv/bin/python}
[ -x "$PYTHON" ] || PYTHON=python3
# releases of the connector to try, newest first, when Maven Central does not serve pyspark's own version
KNOWN=("4.2.0" "4.1.1" "4.0.0")

say() { echo "spark-kafka.sh: $*" >&2; }
fail() {
    say "$*"
    exit 1
}

base=${PANES_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/panes}
base=$base/spark-kafka

spark_version() { "$PYTHON" -c 'import pyspark; print(pyspark.__version__)'; }

complete_folder() {
    # the folder of a complete cache for the first version given that has one
    local v
    for v in "$@"; do
        if [ -f "$base/$v/.complete" ]; then
            echo "$base/$v"
            return 0
        fi
    done
    return 1
}

candidates() {
    if [ -n "${PANES_SPARK_KAFKA_VERSION:-}" ]; then
        echo "$PANES_SPARK_KAFKA_VERSION"
        return
    fi
    spark_version
    printf '%s\n' "${KNOWN[@]}"
}

fetch_version() {
    local version=$1 work pom_path clients pool
    work=$(mktemp -d)
    # the connector's pom names the client and pool versions it was built with
    if ! mvn -B -q dependency:get -Dtransitive=false \
        -Dartifact="org.apache.spark:spark-sql-kafka-0-10_2.13:$version:pom" >"$work/get.log" 2>&1; then
        rm -rf "$work"
        return 1
    fi
    pom_path=$HOME/.m2/repository/org/apache/spark/spark-sql-kafka-0-10_2.13/$version/spark-sql-kafka-0-10_2.13-$version.pom
    clients=$(grep -A2 '<artifactId>kafka-clients</artifactId>' "$pom_path" | sed -n 's:.*<version>\(.*\)</version>.*:\1:p' | head -1)
    pool=$(grep -A2 '<artifactId>commons-pool2</artifactId>' "$pom_path" | sed -n 's:.*<version>\(.*\)</version>.*:\1:p' | head -1)
    [ -n "$clients" ] && [ -n "$pool" ] || {
        rm -rf "$work"
        fail "cannot read the kafka-clients and commons-pool2 versions from $pom_path"
    }
    say "fetching Spark's Kafka connector $version (kafka-clients $clients, commons-pool2 $pool) into $base/$version, once"
    dep() { echo "<dependency><groupId>$1</groupId><artifactId>$2</artifactId><version>$3</version><exclusions><exclusion><groupId>*</groupId><artifactId>*</artifactId></exclusion></exclusions></dependency>"; }
    cat >"$work/pom.xml" <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>panes</groupId>
  <artifactId>spark-kafka-libs</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    $(dep org.apache.spark spark-sql-kafka-0-10_2.13 "$version")
    $(dep org.apache.spark spark-token-provider-kafka-0-10_2.13 "$version")
    $(dep org.apache.kafka kafka-clients "$clients")
    $(dep org.apache.commons commons-pool2 "$pool")
  </dependencies>
</project>
EOF
    rm -rf "$base/$version.partial"
    mkdir -p "$base/$version.partial"
    if ! mvn -B -q -f "$work/pom.xml" dependency:copy-dependencies -DincludeScope=runtime \
        -DoutputDirectory="$base/$version.partial/jars" >"$work/mvn.log" 2>&1; then
        tail -n 20 "$work/mvn.log" >&2
        rm -rf "$work" "$base/$version.partial"
        return 1
    fi
    rm -rf "$work"
    echo "$version" >"$base/$version.partial/.complete"
    rm -rf "${base:?}/$version"
    mv "$base/$version.partial" "$base/$version"
}

fetch() {
    local wanted=() version folder
    mapfile -t wanted < <(candidates)
    if folder=$(complete_folder "${wanted[@]}"); then
        echo "$folder"
        return
    fi
    command -v mvn >/dev/null || fail "mvn is needed once to fetch Spark's Kafka connector (apt-get install maven)"
    for version in "${wanted[@]}"; do
        if fetch_version "$version"; then
            echo "$base/$version"
            return
        fi
        say "Maven Central does not serve spark-sql-kafka-0-10_2.13 $version; trying the next"
    done
    fail "no version of spark-sql-kafka-0-10_2.13 could be fetched (tried ${wanted[*]}); set PANES_SPARK_KAFKA_VERSION"
}

case "${1:-fetch}" in
fetch) fetch ;;
path)
    mapfile -t wanted < <(candidates)
    complete_folder "${wanted[@]}" || exit 1
    ;;
*) fail "usage: spark-kafka.sh [fetch|path]" ;;
esac
