"""A second Kafka client for the tests: librdkafka (confluent-kafka) producers, driven line by line.

Reads one JSON command per stdin line and answers each `sync` with a line `ok <n>` on stdout (n
counts the commands done), so a test can interleave its own checks with the writes:

  {"op": "producers", "bootstrap": "H:P", "topic": T, "transactional": [true, false, ...],
   "compression": "none|gzip|snappy|lz4|zstd", "id": "run-unique prefix"}
  {"op": "begin"|"commit"|"abort"|"flush", "p": i}
  {"op": "send", "p": i, "partition": n, "key": s|null, "value": s|null, "headers": [[k, v|null]]}
  {"op": "sync"}

Producer i is transactional when transactional[i] is true (transactional.id "<id>-<i>"), else
idempotent. Any failure is printed as `error <message>` and ends the process with status 1.
"""
import json
import sys

from confluent_kafka import Producer

producers = []


def main() -> None:
    done = 0
    for line in sys.stdin:
        if not line.strip():
            continue
        cmd = json.loads(line)
        op = cmd["op"]
        if op == "producers":
            for i, transactional in enumerate(cmd["transactional"]):
                conf = {
                    "bootstrap.servers": cmd["bootstrap"],
                    "compression.type": cmd.get("compression", "none"),
                    "linger.ms": 5,
                    "enable.idempotence": True,
                }
                if transactional:
                    conf["transactional.id"] = f'{cmd["id"]}-{i}'
                p = Producer(conf)
                if transactional:
                    p.init_transactions(30)
                producers.append((p, cmd["topic"]))
        elif op == "begin":
            producers[cmd["p"]][0].begin_transaction()
        elif op == "commit":
            producers[cmd["p"]][0].commit_transaction(30)
        elif op == "abort":
            producers[cmd["p"]][0].abort_transaction(30)
        elif op == "flush":
            left = producers[cmd["p"]][0].flush(30)
            if left:
                raise RuntimeError(f"{left} records not delivered")
        elif op == "send":
            p, topic = producers[cmd["p"]]
            headers = [(k, None if v is None else v.encode()) for k, v in cmd.get("headers", [])]
            key = cmd.get("key")
            value = cmd.get("value")
            p.produce(
                topic,
                partition=cmd["partition"],
                key=None if key is None else key.encode(),
                value=None if value is None else value.encode(),
                headers=headers or None,
            )
        elif op == "sync":
            print(f"ok {done}", flush=True)
        else:
            raise ValueError(f"unknown op {op!r}")
        done += 1


try:
    main()
except Exception as err:  # noqa: BLE001 - reported to the test, which fails on it
    print(f"error {err}", flush=True)
    sys.exit(1)
