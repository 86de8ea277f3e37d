"""A steady write load over many topics: librdkafka (confluent-kafka), for bench/partitions.ts.

  python steady-producer.py '<json>'
    {"bootstrap": "H:P", "topics": [T, ...], "partitions": P, "recordBytes": R,
     "recordsPerSec": N, "seconds": S, "lingerMs": 5, "batchBytes": 16384}

Writes N records per second in total for S seconds (S = 0: one record into every partition, as
fast as it goes), dealt round-robin over every partition of every topic, each record R bytes of
value stamped with the producer's create time. Kept on pace in 10 ms steps; a step it is late for
is written at once (the pace does not drift). Waits until all are acknowledged and prints one JSON
line: {"records", "seconds", "mibPerSec", "failed", "latencyP50Ms", "latencyP99Ms", "latencyMaxMs"}
— latency from produce() to the source's acknowledgement (librdkafka's msg.latency()), the part
of a mirror's measured lag that is the source's own. Any delivery error makes it exit 1.
"""
import json
import os
import sys
import time

from confluent_kafka import Producer


def main() -> None:
    cfg = json.loads(sys.argv[1])
    producer = Producer(
        {
            "bootstrap.servers": cfg["bootstrap"],
            "linger.ms": cfg.get("lingerMs", 5),
            "batch.size": cfg.get("batchBytes", 16384),
            "enable.idempotence": True,
            "queue.buffering.max.kbytes": 1048576,
            "queue.buffering.max.messages": 1000000,
        }
    )
    targets = [(t, p) for t in cfg["topics"] for p in range(cfg["partitions"])]
    value = os.urandom(cfg["recordBytes"])
    failed = []
    latencies = []

    def delivered(err, msg) -> None:
        if err is not None:
            failed.append(str(err))
        else:
            latencies.append(msg.latency())

    def produce(i: int) -> None:
        topic, partition = targets[i % len(targets)]
        while True:
            try:
                producer.produce(topic, value, partition=partition, on_delivery=delivered)
                return
            except BufferError:
                producer.poll(0.01)

    started = time.monotonic()
    seconds = cfg["seconds"]
    if seconds == 0:
        total = len(targets)
        for i in range(total):
            produce(i)
    else:
        total = cfg["recordsPerSec"] * seconds
        sent = 0
        while sent < total:
            due = min(total, int((time.monotonic() - started) * cfg["recordsPerSec"]) + 1)
            while sent < due:
                produce(sent)
                sent += 1
            producer.poll(0)
            time.sleep(0.01)
    # A saturated source broker (2,000 partitions on 2 cores) may take minutes to take what is queued.
    left = producer.flush(300)
    elapsed = time.monotonic() - started
    latencies.sort()

    def quantile(q: float) -> float:
        return round(1000 * latencies[min(len(latencies) - 1, int(q * len(latencies)))], 1) if latencies else -1

    out = {
        "records": total - left,
        "seconds": round(elapsed, 3),
        "mibPerSec": round(total * cfg["recordBytes"] / 2**20 / elapsed, 2),
        "failed": len(failed),
        "latencyP50Ms": quantile(0.5),
        "latencyP99Ms": quantile(0.99),
        "latencyMaxMs": quantile(1.0),
    }
    print(json.dumps(out), flush=True)
    if left or failed:
        print(f"{left} records not delivered; errors: {failed[:5]}", file=sys.stderr)
        sys.exit(1)


main()
