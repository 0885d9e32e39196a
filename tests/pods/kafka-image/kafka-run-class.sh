#!/bin/bash
# Kafka's launcher, reduced to the variables the chart's scripts set: $CLASSPATH before the
# distribution's jars (how the chart adds the callback jar), KAFKA_HEAP_OPTS, KAFKA_LOG4J_OPTS,
# KAFKA_GC_LOG_OPTS, KAFKA_OPTS; tools log warnings to stderr unless KAFKA_LOG4J_OPTS says.
home=/opt/kafka
# shellcheck disable=SC2086
exec java ${KAFKA_HEAP_OPTS:--Xmx256m} -XX:+UseSerialGC -Djava.awt.headless=true \
    ${KAFKA_GC_LOG_OPTS:-} ${KAFKA_LOG4J_OPTS:--Dlog4j2.configurationFile=$home/config/tools-log4j2.properties} \
    ${KAFKA_OPTS:-} -cp "${CLASSPATH:+$CLASSPATH:}$home/libs/*" "$@"
