"""The benchmark harness behind scripts/bench: shardlog vs Apache Kafka, same machine,
same run, same clients (see shared PERF.md). perf/bench.py is the entry point.

  common     paths under perf/cache, constants, terminal output, BenchError, Result
  brokers    start/stop shardlog and Apache Kafka; broker CPU, peak RSS, connections
  clients    Java perf tools and rdkafka_performance: command lines, running, parsing
  workloads  the workloads and the run logic (Bench), machine limits, the profile
  limits     the limits workloads of issue 11 (--limits): unthrottled producers, idle
             connections, 10,000 partitions and a restart
  kproto     ApiVersions, Metadata and Produce on the wire, for what no perf tool reports
  idle       the process that holds the idle connections (python -m shardbench.idle)
  report     markdown, JSON and chart; targets, machine and version info
  cli        the flags and the run from start to result files
"""
